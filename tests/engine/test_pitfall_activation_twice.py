"""activation-applied-twice: a model that already ends in nn.Sigmoid / nn.Softmax, and the loop
squashes its output again (``torch.sigmoid(model(x))`` before BCELoss, ``F.softmax`` or
``F.log_softmax`` of a softmax). Its numbers are checked against the same snippet run by
plain PyTorch; each silent near miss is one edit away from a snippet that is said."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from engine import queries as q
from engine import record
from engine.pitfalls import WATCHED_OPS
from engine.pitfalls.activation_twice import TWICE_READ_OPS
from tests.engine.snippets import recorded_silently, run_plain, the_pitfall

KIND = "activation-applied-twice"

SIGMOID_TWICE = """import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = torch.randn(64, 4)
y = (x[:, :1] > 0).float()
loss_fn = nn.BCELoss()
for step in range(50):
    opt.zero_grad()
    p = torch.sigmoid(model(x))
    loss = loss_fn(p, y)
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

# a model ending in nn.Softmax, then log_softmax and nll_loss as the tutorials pair them
LOG_SOFTMAX_OF_SOFTMAX = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3), nn.Softmax(dim=1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(96, 4)
y = x[:, :3].argmax(dim=1)
for epoch in range(40):
    opt.zero_grad()
    log_probs = F.log_softmax(model(x), dim=1)
    loss = F.nll_loss(log_probs, y)
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

# a forward that ends in its own softmax, and the loop's torch.softmax of its output
SOFTMAX_TWICE = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 5)
    def forward(self, x):
        return F.softmax(self.fc2(torch.relu(self.fc1(x))), dim=1)
net = Net()
x = torch.randn(32, 4)
y = torch.randint(0, 5, (32,))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(20):
    probs = torch.softmax(net(x), dim=-1)
    loss = F.nll_loss(torch.log(probs), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# evaluation only: a trained model that ends in nn.Sigmoid, thresholded after a second sigmoid
EVALUATED_TWICE = """import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = torch.randn(64, 4)
y = (x[:, :1] > 0).float()
for step in range(100):
    opt.zero_grad()
    nn.functional.binary_cross_entropy(model(x), y).backward()
    opt.step()
model.eval()
with torch.no_grad():
    predicted = torch.sigmoid(model(x)) > 0.5
print((predicted == y.bool()).float().mean().item())
"""


def _outputs_recorded_in_full(source: str, line: str) -> torch.Tensor:
    """The values ``line`` of ``source`` (``name = …``) gave its name in a plain run's first 3
    iterations (those gradwalk records in full by default), in one tensor."""
    name = line.split("=")[0].strip()
    indent = line[: len(line) - len(line.lstrip())]
    seen = source.replace(line + "\n", f"{line}\n{indent}_seen.append({name}.detach().flatten())\n")
    _, error, scope = run_plain("_seen = []\n" + seen)
    assert error is None, error
    return torch.cat(scope["_seen"][:3])


def test_a_sigmoid_of_a_model_ending_in_nn_sigmoid_is_said_with_the_run_s_numbers() -> None:
    said = the_pitfall(SIGMOID_TWICE, KIND, 11)
    p = _outputs_recorded_in_full(SIGMOID_TWICE, "    p = torch.sigmoid(model(x))")
    _, _, scope = run_plain(SIGMOID_TWICE)
    y, loss = scope["y"], scope["loss"].item()
    floor = F.binary_cross_entropy(y.clamp(0.5, torch.sigmoid(torch.tensor(1.0)).item()), y).item()
    assert p.min().item() > 0.5 and p.max().item() < 1 / (1 + math.exp(-1))
    assert floor < loss
    assert said.title == "Sigmoid applied twice: every prediction is above 0.5"
    assert said.message == (
        "Line 11 (p = torch.sigmoid(model(x))) applies a sigmoid to the output of model, whose last layer is "
        "already nn.Sigmoid (model.3): sigmoid(sigmoid(x)) always lies between 0.5 and 0.731, whatever the "
        f"logits, so every prediction is above 0.5 (here {p.min().item():.2f} to {p.max().item():.2f} in the 3 "
        "iterations recorded in full) and no sample is ever predicted class 0 (short of float32 rounding one to "
        "exactly 0.5). BCELoss at line 12 can never fall below "
        f"{floor:.2f} on these targets (-log(0.731) = 0.31 for a target of 1, -log(0.5) = 0.69 for a target "
        f"of 0), however well the model learns; here it ends at {loss:.2f}. Nothing raises."
    )
    assert said.fix == (
        "Apply the sigmoid once. Better: drop nn.Sigmoid (model.3) from the model and give its logits to "
        "nn.BCEWithLogitsLoss, which applies the sigmoid itself (more stably); apply torch.sigmoid only where "
        "you read predictions. Or keep model.3 and drop the sigmoid at line 11."
    )


def test_log_softmax_of_a_model_ending_in_nn_softmax_is_said_with_nll_loss_s_floor() -> None:
    said = the_pitfall(LOG_SOFTMAX_OF_SOFTMAX, KIND, 11)
    log_probs = _outputs_recorded_in_full(
        LOG_SOFTMAX_OF_SOFTMAX, "    log_probs = F.log_softmax(model(x), dim=1)"
    )
    _, _, scope = run_plain(LOG_SOFTMAX_OF_SOFTMAX)
    best = math.e / (math.e + 2)  # softmax of probabilities over 3 classes: one at 1, two at 0
    assert log_probs.max().item() < math.log(best) and -math.log(best) < scope["loss"].item()
    assert said.message.startswith(
        "Line 11 (log_probs = F.log_softmax(model(x), dim=1)) applies log_softmax over dim 1 to the output of "
        "model, whose last layer is already nn.Softmax over the same dim (model.3): log_softmax reads those "
        f"probabilities as scores and squashes them again, so every log-probability lies between "
        f"{-math.log(1 + 2 * math.e):.2f} and {math.log(best):.2f} whatever the scores (here "
        f"{log_probs.min().item():.2f} to {log_probs.max().item():.2f} in the 3 iterations recorded in full)"
    )
    assert (
        f"nll_loss at line 12 can never fall below -log({best:.2f}) = {-math.log(best):.2f}, however well the "
        f"model learns; here it ends at {scope['loss'].item():.2f}." in said.message
    )
    assert said.fix.startswith(
        "Take log_softmax of the logits, not of probabilities: drop nn.Softmax (model.3)"
    )


def test_a_softmax_of_a_forward_s_own_softmax_is_said_with_the_squashed_range() -> None:
    said = the_pitfall(SOFTMAX_TWICE, KIND, 17)
    probs = _outputs_recorded_in_full(SOFTMAX_TWICE, "    probs = torch.softmax(net(x), dim=-1)")
    assert said.title == "Softmax applied twice: the probabilities are squashed toward uniform"
    assert said.message.startswith(
        "Line 17 (probs = torch.softmax(net(x), dim=-1)) applies softmax over dim 1 to the output of the softmax "
        "over the same dim at line 11, in net's forward: the 5 probabilities of each row, squashed a second "
        f"time, always lie between {1 / (1 + 4 * math.e):.3f} and {math.e / (math.e + 4):.3f} (1 / (1 + 4·e) "
        f"and e / (e + 4)), near the uniform 1/5 = 0.200, whatever the scores (here {probs.min().item():.3f} "
        f"to {probs.max().item():.3f} in the 3 iterations recorded in full): the model can never give a class more than 40%"
    )
    assert said.fix.startswith("Apply the softmax once: drop the one at line 17.")


def test_evaluation_only_is_said_at_the_second_sigmoid_with_its_threshold() -> None:
    said = the_pitfall(EVALUATED_TWICE, KIND, 14)
    out, _, _ = run_plain(EVALUATED_TWICE)
    positives = run_plain(EVALUATED_TWICE)[2]["y"].mean().item()
    assert float(out) == pytest.approx(positives)  # every sample called positive: the share of 1s
    assert said.message.startswith(
        "Line 14 (predicted = torch.sigmoid(model(x)) > 0.5) applies a sigmoid to the output of model, whose "
        "last layer is already nn.Sigmoid (model.3)"
    )
    assert "Line 14 compares them with 0.5: every one is above it, so every sample is called class 1." in (
        said.message
    )


# a GAN's discriminator squashed twice: the last backward() of each step is the generator's
GAN = """import torch
import torch.nn as nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCELoss()
real = torch.randn(32, 2) + 3
for step in range(20):
    fake = G(torch.randn(32, 2))
    d_real = bce(torch.sigmoid(D(real)), torch.ones(32, 1))
    d_loss = d_real + bce(D(fake.detach()), torch.zeros(32, 1))
    opt_d.zero_grad(); d_loss.backward(); opt_d.step()
    g_loss = bce(D(fake), torch.ones(32, 1))
    opt_g.zero_grad(); g_loss.backward(); opt_g.step()
"""


def test_a_loss_backward_does_not_end_on_is_given_at_the_last_iteration_recorded_in_full() -> None:
    said = the_pitfall(GAN, KIND, 12)
    d_real = _outputs_recorded_in_full(GAN, "    d_real = bce(torch.sigmoid(D(real)), torch.ones(32, 1))")
    assert said.message.endswith(
        "BCELoss at line 12 can never fall below 0.31 on these targets (-log(0.731) = 0.31 for a target of 1, "
        "-log(0.5) = 0.69 for a target of 0), however well the model learns; here it is "
        f"{d_real[-1].item():.2f} in the last iteration recorded in full. Nothing raises."
    )


def test_a_softmax_twice_into_cross_entropy_is_said_beside_probabilities_into_cross_entropy() -> None:
    one = SOFTMAX_TWICE.replace(
        "    probs = torch.softmax(net(x), dim=-1)\n    loss = F.nll_loss(torch.log(probs), y)\n",
        "    probs = None\n    loss = F.cross_entropy(net(x), y)\n",
    )
    the_pitfall(one, "probabilities-into-cross-entropy", 18)  # one softmax: that kind's alone
    two = one.replace("F.cross_entropy(net(x), y)", "F.cross_entropy(torch.softmax(net(x), dim=1), y)")
    found = [(p.kind, p.line) for p in q.pitfalls(record(two))]
    assert found == [("probabilities-into-cross-entropy", 18), (KIND, 18)]


# name: (a snippet that must stay silent, the one edit that makes it said, the line(s) said)
NEAR_MISSES: dict[str, tuple[str, tuple[str, str], int | tuple[int, int]]] = {
    "one sigmoid, then BCELoss": (
        SIGMOID_TWICE.replace("p = torch.sigmoid(model(x))", "p = model(x)"),
        ("p = model(x)", "p = torch.sigmoid(model(x))"),
        11,
    ),
    "a gate: sigmoid times sigmoid": (
        """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 1), nn.Linear(6, 1)
    def forward(self, x):
        return torch.sigmoid(self.a(x)) * torch.sigmoid(self.b(x))
net = Gated()
opt = torch.optim.Adam(net.parameters(), lr=0.05)
x = torch.randn(48, 6)
y = ((x[:, :1] > 0) & (x[:, 1:2] > 0)).float()
for step in range(30):
    loss = F.binary_cross_entropy(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
""",
        ("torch.sigmoid(self.a(x)) *", "torch.sigmoid(torch.sigmoid(self.a(x))) *"),
        8,
    ),
    "SiLU written out in a forward": (
        """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(3, 8), nn.Linear(8, 1)
    def forward(self, x):
        h = self.fc1(x)
        h = h * torch.sigmoid(h)
        return torch.sigmoid(self.fc2(h))
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.3)
x = torch.randn(40, 3); y = (x.sum(1, keepdim=True) > 0).float()
for _ in range(20):
    loss = F.binary_cross_entropy(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
""",
        ("return torch.sigmoid(self.fc2(h))", "return torch.sigmoid(torch.sigmoid(self.fc2(h)))"),
        10,
    ),
    "an LSTM cell written by hand": (
        """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Cell(nn.Module):
    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.W = nn.Linear(n_in + n_hidden, 4 * n_hidden)
    def forward(self, x, h, c):
        i, f, g, o = self.W(torch.cat([x, h], dim=1)).chunk(4, dim=1)
        i, f, o = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o)
        c = f * c + i * torch.tanh(g)
        return o * torch.tanh(c), c
cell, head = Cell(3, 8), nn.Linear(8, 1)
opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=0.01)
xs = torch.randn(5, 16, 3); y = (xs[-1, :, :1] > 0).float()
for step in range(10):
    h, c = torch.zeros(16, 8), torch.zeros(16, 8)
    for x in xs:
        h, c = cell(x, h, c)
    loss = F.binary_cross_entropy(torch.sigmoid(head(h)), y)
    opt.zero_grad(); loss.backward(); opt.step()
""",
        ("torch.sigmoid(f), torch.sigmoid(o)", "torch.sigmoid(torch.sigmoid(f)), torch.sigmoid(o)"),
        9,
    ),
    "softmax over one dim, then over another": (
        """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Match(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 8), nn.Linear(4, 8)
    def forward(self, x, z):
        scores = self.a(x) @ self.b(z).transpose(1, 2)
        return torch.softmax(torch.softmax(scores, dim=2), dim=1)
net = Match()
opt = torch.optim.Adam(net.parameters(), lr=0.01)
x, z = torch.randn(2, 6, 4), torch.randn(2, 6, 4)
for _ in range(5):
    loss = -net(x, z).diagonal(dim1=1, dim2=2).log().mean()
    opt.zero_grad(); loss.backward(); opt.step()
""",
        ("torch.softmax(scores, dim=2), dim=1)", "torch.softmax(scores, dim=1), dim=1)"),
        9,
    ),
    "a temperature between the softmaxes": (
        SOFTMAX_TWICE.replace("torch.softmax(net(x), dim=-1)", "torch.softmax(net(x) / 0.1, dim=-1)"),
        ("net(x) / 0.1", "net(x)"),
        17,
    ),
    "a detached sigmoid, squashed again": (
        SIGMOID_TWICE.replace("p = torch.sigmoid(model(x))", "p = model(x); q = torch.sigmoid(p.detach())"),
        ("p.detach()", "p"),
        11,
    ),
    "softmax of log_softmax's output": (
        LOG_SOFTMAX_OF_SOFTMAX.replace("nn.Softmax(dim=1)", "nn.LogSoftmax(dim=1)").replace(
            "print(round(loss.item(), 4))", "probs = F.softmax(model(x), dim=1)\nprint(probs.argmax(1)[:5])"
        ),
        ("nn.LogSoftmax(dim=1)", "nn.Softmax(dim=1)"),
        (11, 15),
    ),
    "the chain rule of two sigmoids, worked by hand": (
        """import torch
x = torch.tensor(0.8, requires_grad=True)
y = torch.sigmoid(torch.sigmoid(x))
y.backward()
print(round(x.grad.item(), 4))
""",
        ("y.backward()", "torch.nn.functional.binary_cross_entropy(y, torch.tensor(1.0)).backward()"),
        3,
    ),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent_one_edit_from_being_said(name: str) -> None:
    source, (before, after), line = NEAR_MISSES[name]
    recorded_silently(source)
    assert before in source
    if isinstance(line, int):
        the_pitfall(source.replace(before, after), KIND, line)
    else:  # (a model ending in nn.Softmax: its log_softmax in the loop and its softmax after it)
        found = q.pitfalls(record(source.replace(before, after)))
        assert [(p.kind, p.line) for p in found] == [(KIND, at) for at in line]


def test_what_it_reads_is_watched_already_so_a_clean_run_pays_nothing_more() -> None:
    assert TWICE_READ_OPS <= WATCHED_OPS


# trained on the doubled sigmoid with Adam, the model drives its own sigmoid within 1e-7 of 0
# for some samples, where float32 rounds the second sigmoid to exactly 0.5: `> 0.5` calls them 0
ROUNDED_TO_ONE_HALF = """import torch
import torch.nn as nn
torch.manual_seed(0)
X = torch.randn(200, 2)
y = (X[:, 0] * X[:, 1] > 0).float().unsqueeze(1)
model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for step in range(100):
    opt.zero_grad()
    loss = nn.functional.binary_cross_entropy(torch.sigmoid(model(X)), y)
    loss.backward()
    opt.step()
with torch.no_grad():
    called = (torch.sigmoid(model(X)) > 0.5).float()
print(int(called.sum()), len(called))
"""


def test_predictions_float32_rounds_to_one_half_are_not_said_to_be_called_class_1() -> None:
    trace = record(ROUNDED_TO_ONE_HALF)
    assert [(p.kind, p.line) for p in q.pitfalls(trace)] == [
        (KIND, 10),
        (KIND, 14),
    ]  # training, then evaluation
    said = q.pitfalls(trace)[1]
    out, _, _ = run_plain(ROUNDED_TO_ONE_HALF)
    called, total = map(int, out.split())
    assert called < total  # some samples are called class 0 after all, each at exactly 0.5
    assert said.title == "Sigmoid applied twice: no prediction is below 0.5"
    assert "every prediction is at least 0.5 (here 0.50 to 0.73 over the run)" in said.message
    assert "every sample is called class 1" not in said.message
    assert (
        "Line 14 compares them with 0.5: none is below it, so a sample is called class 0 only where its "
        "prediction rounded to exactly 0.5."
    ) in said.message
