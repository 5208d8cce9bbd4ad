"""A false-alarm hunt on relu-units-dead and vanishing-gradients over 135 correct snippets:
ReLU nets that are healthy but unusual (one-hot and bag-of-words inputs, ReLU after batch and
layer norm, sparse images through convolutions, batches of one and two, losses that reach
exactly 0, perfect classifiers, hinge losses, pruned and masked layers, ``bias=False``, frozen
biases, ``ReLU(inplace=True)``, dropout, mixtures of experts, GANs, autoencoders, gradient
accumulation, every optimizer, schedulers down to 0, L-BFGS, shared layers, ReLU RNN cells,
fine-tuning with a frozen layer) and deep sigmoid or tanh nets that are correct (LSTMs and GRUs
by hand, SE blocks, GLU, gated residuals, swish and SiLU, tanh policies, Xavier init with
Adam, RMSprop and Adagrad, normalization between the sigmoids, residual stacks, a frozen or
pretrained first layer, runs of four steps, losses at 0 from the start, multi-task heads,
teacher and student, an encoder and decoder under two optimizers, stacked LSTMs and GRUs by
hand, PINNs with L-BFGS, planar flows, wide-and-deep). The corpus is
``pitfall_hunt51b_snippets.txt``; the false alarms found are written out below.

False alarms found, each now silent, its bug still told:

- relu-units-dead (dead_relu.py), of a mixture-of-experts expert that no token was routed to,
  called on an empty batch (``expert(x[picked])`` with no row picked): its ReLU's output has
  no sample, so "every unit 0 for every sample" was true of nothing and the zero gradient an
  empty batch gives was taken for a dead layer. A ReLU output with no element is not looked
  at; the layer is followed from its first call on a batch that has samples;
- relu-units-dead, of a forward run once before training to check shapes
  (``print(model(torch.zeros(1, 2)).shape)``), then a hinge or margin loss trained to exactly 0:
  the zeros were kept as the data to run through the layer, and with every bias below 0 they
  leave every unit 0, though the training data keeps units alive. Data that comes before the
  layer's first optimizer step replaces what came first (the shape check was no batch trained
  on), and a unit above 0 for some sample of any call before that step counts as alive (the
  zeros had left a second layer with no unit alive, and a loss at 0 from the start with no
  gradient: said dead from step 1). The same change finds a layer killed after such a check,
  which the zeros had hidden;
- vanishing-gradients (vanishing.py), of a deep sigmoid net whose first layer is held still on
  purpose in a param group with ``lr`` 0: a step at which the first weight's learning rate is
  0 is not counted (the first layer did not move because it was told not to).

Other kinds met on the way, each a true positive of the snippet as first written (rewritten):
parameter-without-gradient of an expert chosen by ``argmax`` alone, parameter-not-optimized
of a first layer left out of the optimizer, loss-diverging at lr 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import corpus, recorded_silently, the_pitfall

_SNIPPETS = corpus(Path(__file__).with_name("pitfall_hunt51b_snippets.txt"))


@pytest.mark.parametrize("name", sorted(_SNIPPETS))
def test_each_correct_snippet_of_the_corpus_stays_silent(name: str) -> None:
    recorded_silently(_SNIPPETS[name])


# a mixture of experts whose router sends no token to expert 0 (nor 2): each is still called,
# on an empty batch, and gets a gradient of zeros
EXPERT_WITHOUT_TOKENS = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(4, 3)
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)) for _ in range(3)])
    def forward(self, x):
        probs = self.gate(x).softmax(1)
        choice = probs.argmax(1)
        out = torch.zeros(x.shape[0], 1)
        for e, expert in enumerate(self.experts):
            picked = choice == e
            out[picked] = probs[picked, e:e + 1] * expert(x[picked])
        return out
model = MoE()
with torch.no_grad():
    model.gate.bias.copy_(torch.tensor([0.0, 3.0, 0.0]))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(40):
    X = torch.randn(16, 4)
    loss = F.mse_loss(model(X), X[:, :1])
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


def test_an_expert_called_on_empty_batches_is_not_a_dead_layer() -> None:
    recorded_silently(EXPERT_WITHOUT_TOKENS)


# two experts on inputs never scaled (0 to 100) at a learning rate one step overshoots with;
# expert 0 gets no sample at step 1 (its first call is on an empty batch), half of them after
EXPERTS_KILLED = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
experts = nn.ModuleList([nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1)) for _ in range(2)])
opt = torch.optim.SGD(experts.parameters(), lr=0.01)
X = torch.rand(64, 2) * 100
y = (X[:, :1] - X[:, 1:]) / 10
for step in range(60):
    route = torch.arange(64) < (0 if step == 0 else 32)
    out = torch.zeros(64, 1)
    out[route] = experts[0](X[route])
    out[~route] = experts[1](X[~route])
    loss = F.mse_loss(out, y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""


def test_an_expert_killed_after_an_empty_first_batch_is_still_told_from_its_first_samples() -> None:
    found = {p.line: p for p in q.pitfalls(record(EXPERTS_KILLED))}
    assert sorted(found) == [10, 11], found
    said = found[10]
    assert said.kind == "relu-units-dead"
    assert "All 16 units of the ReLU after experts.0.0 (run from line 10)" in said.message
    assert "They died in the update of step 5 (lr 0.01)" in said.message
    # counted at its first call with samples (step 2), not at the empty one of step 1
    assert "at step 2, 11 of the 16 units were above 0 for some sample" in said.message


_SIGMOID_STACK = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
mods = [nn.Linear(4, 32), nn.Sigmoid()]
for _ in range(8):
    mods += [nn.Linear(32, 32), nn.Sigmoid()]
model = nn.Sequential(*mods, nn.Linear(32, 1))
opt = torch.optim.SGD([{"params": model[0].parameters(), "lr": 0.0}, {"params": list(model.parameters())[2:]}], lr=0.1)
X = torch.randn(64, 4); y = (X[:, :1] > 0).float()
for step in range(20):{unfreeze}
    loss = F.binary_cross_entropy_with_logits(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# the first layer held still on purpose: its own param group at lr 0
FIRST_LAYER_AT_LR_ZERO = _SIGMOID_STACK.replace("{unfreeze}", "")
# the same first layer given the others' learning rate from step 6 on
FIRST_LAYER_UNFROZEN = _SIGMOID_STACK.replace(
    "{unfreeze}", '\n    if step == 5:\n        opt.param_groups[0]["lr"] = 0.1'
)


def test_a_first_layer_held_at_lr_zero_is_not_said_to_vanish() -> None:
    recorded_silently(FIRST_LAYER_AT_LR_ZERO)


def test_a_first_layer_trained_after_steps_at_lr_zero_is_said_over_its_trained_steps() -> None:
    said = the_pitfall(FIRST_LAYER_UNFROZEN, "vanishing-gradients", 12)
    assert "At step 6 model.0.weight's gradient is" in said.message
    assert "summed over the 15 steps" in said.message
    assert "the 9 sigmoids between them" in said.message


# a forward on zeros to check shapes, then a margin loss that reaches exactly 0 on separable data
# (every gradient 0 from step 2): fc1's bias starts at -0.5, so the zeros leave every unit 0
SHAPE_CHECK_THEN_MARGIN_AT_ZERO = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
nn.init.constant_(model[0].bias, -0.5)
print(model(torch.zeros(4, 2)).shape)
X = torch.cat([torch.randn(32, 2) + 4, torch.randn(32, 2) - 4]); y = torch.cat([torch.zeros(32), torch.ones(32)]).long()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(60):
    loss = F.multi_margin_loss(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""


def test_a_forward_on_zeros_before_training_is_not_the_data_the_units_are_judged_on() -> None:
    recorded_silently(SHAPE_CHECK_THEN_MARGIN_AT_ZERO)


# inputs never scaled (0 to 100) at a learning rate one step overshoots with, after a forward on
# zeros to check shapes (line 6)
SHAPE_CHECK_THEN_KILLED = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
X = torch.rand(256, 2) * 100
y = (X[:, :1] - X[:, 1:]) / 10
fc1, fc2 = nn.Linear(2, 16), nn.Linear(16, 1)
print(fc2(F.relu(fc1(torch.zeros(1, 2)))).shape)
opt = torch.optim.SGD(list(fc1.parameters()) + list(fc2.parameters()), lr=0.01)
for step in range(100):
    h = F.relu(fc1(X))
    loss = F.mse_loss(fc2(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
"""


def test_a_layer_killed_after_a_shape_check_is_told_at_its_training_forward() -> None:
    said = the_pitfall(SHAPE_CHECK_THEN_KILLED, "relu-units-dead", 9)
    assert "All 16 units of the ReLU after fc1 (run from line 9) are 0 for every sample from step 4 on" in (
        said.message
    )
    assert "at step 1, 10 of the 16 units were above 0 for some sample" in said.message


# the same check on zeros leaves both hidden layers with no unit alive (biases -0.5); the targets
# are the model's own outputs, so the loss is 0 and every gradient 0 from step 1
SHAPE_CHECK_THEN_LOSS_AT_ZERO = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
nn.init.constant_(model[0].bias, -0.5); nn.init.constant_(model[2].bias, -0.5)
print(model(torch.zeros(1, 2)).shape)
X = torch.randn(32, 2) * 3
with torch.no_grad():
    y = model(X)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(30):
    loss = F.mse_loss(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""


def test_units_alive_on_the_training_data_before_the_first_step_count_after_a_forward_on_zeros() -> None:
    recorded_silently(SHAPE_CHECK_THEN_LOSS_AT_ZERO)
