"""Hunt 53: one false alarm and two gaps in the pitfall detectors.

- parameter-not-optimized (unoptimized_on_purpose.py), of an A3C worker whose shared optimizer's
  ``zero_grad()`` comes after its ``step()`` rather than before the backward: the gradients
  handed to the shared model (``shared_param._grad = param.grad``, or ``… = param.grad.clone()``)
  are gone by the run's end, so the shared model's gradients are read right after each of its
  steps (ungraded.py's ``had_gradient``), not at the end. Silent in both orders and both
  hand-offs; a local model whose gradients go nowhere is still told;
- activation-applied-twice (activation_twice.py), of ``torch.special.expit``,
  ``torch.special.softmax`` and ``torch.special.log_softmax``: the same activations under other
  names, which the detector did not see. Told now, the message naming the call as written
  (``F.sigmoid`` and ``x.sigmoid()`` reached it as sigmoid already);
- relu-units-dead (dead_relu.py): its message says "All N units" and never "most". It is said
  only where every unit is 0 for every sample: a layer with fewer than half its units dead is
  not said even where its gradient is exactly 0 (starved by a dead layer above), and the layer
  above is said with all its units.
"""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import recorded_silently, the_pitfall
from tests.engine.test_pitfall_hunt52c import A3C_WORKER, A3C_WORKER_CLONES


def _zero_grad_after_step(source: str) -> str:
    """``source`` with the shared optimizer's zero_grad() moved from before the backward to
    right after its step()."""
    moved = source.replace("    optimizer.zero_grad()\n", "").replace(
        "    optimizer.step()\n", "    optimizer.step()\n    optimizer.zero_grad()\n"
    )
    assert moved.count("optimizer.zero_grad()") == 1 and moved != source
    return moved


@pytest.mark.parametrize("order", ["zero_grad before backward", "zero_grad after step"])
@pytest.mark.parametrize(
    ("source", "line"),
    [(A3C_WORKER, 19), (A3C_WORKER_CLONES, 17)],
    ids=["_grad = grad", "grad = grad.clone()"],
)
def test_an_a3c_worker_is_silent_wherever_the_shared_optimizer_clears(
    source: str, line: int, order: str
) -> None:
    if order == "zero_grad after step":
        source = _zero_grad_after_step(source)
    recorded_silently(source)
    # the twin: the gradients are never handed over, the local model is never stepped
    twin = source.replace("    ensure_shared_grads(model, shared_model)\n", "")
    p = the_pitfall(twin, "parameter-not-optimized", line)
    assert p.title == "model is used but no optimizer holds its parameters"


# a classifier that already ends in nn.Sigmoid(), squashed again before BCELoss
_SIGMOID_MODEL = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(32, 4), torch.randint(0, 2, (32, 1)).float()
for step in range(5):
    pred = torch.special.expit(model(X))
    loss = nn.BCELoss()(pred, y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# a classifier that already ends in nn.Softmax(dim=1), normalised again before nll_loss
_SOFTMAX_MODEL = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(dim=1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
for step in range(5):
    pred = torch.special.log_softmax(model(X), dim=1)
    loss = F.nll_loss(pred, y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


def test_torch_special_expit_of_a_sigmoid_model_is_told_by_its_name() -> None:
    p = the_pitfall(_SIGMOID_MODEL, "activation-applied-twice", 7)
    assert p.title == "Sigmoid applied twice: every prediction is above 0.5"
    assert p.message.startswith(
        "Line 7 (pred = torch.special.expit(model(X))) applies torch.special.expit (a sigmoid) to the "
        "output of model, whose last layer is already nn.Sigmoid (model.3): sigmoid(sigmoid(x)) always "
        "lies between 0.5 and 0.731"
    )
    assert "BCELoss at line 8 can never fall below" in p.message
    assert p.fix.endswith("Or keep model.3 and drop the torch.special.expit at line 7.")
    # the near miss: the model's own logits through expit, once
    recorded_silently(_SIGMOID_MODEL.replace(", nn.Sigmoid())", ")"))


def test_expit_in_a_forward_then_torch_sigmoid_is_told_naming_expit() -> None:
    source = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
    def forward(self, x):
        return torch.special.expit(self.fc(x))
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(32, 4), torch.randint(0, 2, (32, 1)).float()
for step in range(5):
    pred = torch.sigmoid(model(X))
    loss = F.binary_cross_entropy(pred, y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""
    p = the_pitfall(source, "activation-applied-twice", 13)
    assert p.message.startswith(
        "Line 13 (pred = torch.sigmoid(model(X))) applies a sigmoid to the output of torch.special.expit "
        "(a sigmoid) at line 8, in model's forward:"
    )


def test_torch_special_log_softmax_of_a_softmax_model_is_told_by_its_name() -> None:
    p = the_pitfall(_SOFTMAX_MODEL, "activation-applied-twice", 7)
    assert p.title == "log_softmax of a softmax's output: the probabilities are squashed twice"
    assert p.message.startswith(
        "Line 7 (pred = torch.special.log_softmax(model(X), dim=1)) applies torch.special.log_softmax over "
        "dim 1 to the output of model, whose last layer is already nn.Softmax over the same dim (model.3)"
    )
    assert "nll_loss at line 8 can never fall below -log(0.58) = 0.55" in p.message
    # the near miss: log_softmax over the other dim (a softmax over one dim, then another)
    recorded_silently(_SOFTMAX_MODEL.replace("nn.Softmax(dim=1)", "nn.Softmax(dim=0)"))


def test_torch_special_softmax_of_a_softmax_model_is_told_by_its_name() -> None:
    source = _SOFTMAX_MODEL.replace(
        "torch.special.log_softmax(model(X), dim=1)", "torch.special.softmax(model(X), dim=1).log()"
    )
    p = the_pitfall(source, "activation-applied-twice", 7)
    assert p.title == "Softmax applied twice: the probabilities are squashed toward uniform"
    assert p.message.startswith(
        "Line 7 (pred = torch.special.softmax(model(X), dim=1).log()) applies torch.special.softmax over "
        "dim 1 to the output of model,"
    )


@pytest.mark.parametrize(
    "second",
    ["torch.sigmoid(model(X))", "F.sigmoid(model(X))", "model(X).sigmoid()", "torch.special.expit(model(X))"],
)
def test_every_spelling_of_sigmoid_is_told(second: str) -> None:
    source = _SIGMOID_MODEL.replace("torch.special.expit(model(X))", second)
    p = the_pitfall(source, "activation-applied-twice", 7)
    assert p.message.startswith(f"Line 7 (pred = {second}) applies ")


# two hidden layers: a quarter of fc1's units dead (bias -50), every unit of fc2 dead, so fc1
# gets exactly 0 gradient through fc2 although most of its units live
_STARVED = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
fc1, fc2, head = nn.Linear(6, 16), nn.Linear(16, 16), nn.Linear(16, 2)
with torch.no_grad():
    fc1.bias[:4] = -50.0
    fc2.bias.fill_(-50.0)
opt = torch.optim.SGD([*fc1.parameters(), *fc2.parameters(), *head.parameters()], lr=0.1)
X, y = torch.randn(64, 6), torch.randint(0, 2, (64,))
for step in range(10):
    h1 = F.relu(fc1(X))
    h2 = F.relu(fc2(h1))
    loss = F.cross_entropy(head(h2), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4), (h1 > 0).any(0).sum().item(), fc1.bias.grad.abs().sum().item())
"""


def test_a_layer_with_fewer_than_half_its_units_dead_is_never_said_as_dead() -> None:
    # fc1: 4 of its 16 units dead and a gradient of exactly 0 (printed: 12 alive, 0.0); only fc2,
    # whose every unit is 0, is said, and the message counts all its units
    p = the_pitfall(_STARVED, "relu-units-dead", 11)
    assert p.message.startswith(
        "All 16 units of the ReLU after fc2 (run from line 11) are 0 for every sample"
    )
    trace = record(_STARVED)
    assert q.stdout(trace).split()[1:] == ["12", "0.0"]
    # fc2 alive, fc1 as it was: a quarter dead, the rest learning, nothing said
    recorded_silently(_STARVED.replace("    fc2.bias.fill_(-50.0)\n", ""))
