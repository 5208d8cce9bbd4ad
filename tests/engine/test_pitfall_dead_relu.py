"""relu-units-dead: a hidden ReLU whose every unit is 0 for every sample from some step to the
end of the run, so the layer below it gets exactly 0 gradient and stops learning for good.
Each silent near miss is one edit away from a snippet that is said; the numbers said are
checked against a plain run."""

from __future__ import annotations

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from engine import queries as q
from engine import record
from tests.engine.snippets import recorded_silently, run_plain, the_pitfall

# inputs never centred or scaled (0 to 100) and a learning rate that one step overshoots with
_UNSCALED = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
X = torch.rand(256, 2) * 100
y = (X[:, :1] - X[:, 1:]) / 10
fc1, fc2 = nn.Linear(2, 16), nn.Linear(16, 1)
opt = torch.optim.SGD(list(fc1.parameters()) + list(fc2.parameters()), lr=0.01)
for step in range(100):
    h = F.relu(fc1(X))
    loss = F.mse_loss(fc2(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
"""

# a hidden layer's bias initialised very negative
_NEGATIVE_BIAS = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
nn.init.constant_(model[0].bias, -5.0)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = torch.randn(128, 10), torch.randint(0, 2, (128,))
for epoch in range(50):
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_CLASS = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(10, 32), nn.Linear(32, 2)
        nn.init.constant_(self.fc1.bias, -5.0)
    def forward(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(h)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
X, y = torch.randn(128, 10), torch.randint(0, 2, (128,))
for epoch in range(30):
    loss = F.cross_entropy(net(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


def _dead_from(source: str, steps: int) -> tuple[int, int]:
    """In a plain run of ``source`` (one backward() and step() a step, over ``steps`` steps):
    the first step from which its first layer's bias (the optimizer's second parameter) got
    exactly 0 gradient at every step to the end, and how many of that layer's units were
    above 0 for some sample before the first step."""
    grads: list[bool] = []

    def read(opt: torch.optim.Optimizer, *_: object) -> None:
        grads.append(bool(opt.param_groups[0]["params"][1].grad.any()))

    handle = register_optimizer_step_pre_hook(read)
    try:
        _, error, _ = run_plain(source)
    finally:
        handle.remove()
    assert error is None and len(grads) == steps
    _, _, untrained = run_plain(source.replace(f"range({steps})", "range(0)"))
    fc1, X = untrained["fc1"], untrained["X"]
    assert isinstance(fc1, torch.nn.Linear) and isinstance(X, torch.Tensor)
    last_with_gradient = max((i for i, g in enumerate(grads, 1) if g), default=0)
    return last_with_gradient + 1, int((fc1(X) > 0).any(0).sum())


def test_units_killed_by_a_step_are_said_at_the_relu_with_the_step_and_the_run_s_numbers() -> None:
    said = the_pitfall(_UNSCALED, "relu-units-dead", 8)
    out, _, scope = run_plain(_UNSCALED)
    fc1, X = scope["fc1"], scope["X"]
    assert isinstance(fc1, torch.nn.Linear) and isinstance(X, torch.Tensor)
    assert not bool((fc1(X) > 0).any())  # every unit 0 for every sample at the end, as said
    assert said.title == "Every unit of this ReLU is 0 for every sample: fc1 has stopped learning"
    assert said.message.startswith(
        "All 16 units of the ReLU after fc1 (run from line 8) are 0 for every sample from step 4 on: a ReLU "
        "passes no gradient back through a unit at 0, so fc1.weight and fc1.bias got exactly 0 gradient in "
        "the last 97 of 100 steps. No step can bring"
    )  # (nothing below fc1, whose input is the data, to starve)
    assert " They died in the update of step 3 (lr 0.01), at a loss of " in said.message
    assert "; at step 1, 10 of the 16 units were above 0 for some sample." in said.message
    assert said.message.endswith(f" The loss ends at {float(out):.4g}.")
    assert said.fix.startswith("Keep the units alive: a lower learning rate, nn.LeakyReLU(0.01)")


def test_the_step_said_is_the_one_after_which_plain_pytorch_s_gradient_stays_0() -> None:
    since, alive = _dead_from(_UNSCALED, 100)
    said = the_pitfall(_UNSCALED, "relu-units-dead", 8)
    assert f"from step {since} on" in said.message
    assert f"the last {100 - since + 1} of 100 steps" in said.message
    assert f"at step 1, {alive} of the 16 units" in said.message


def test_a_bias_initialised_negative_is_said_from_the_first_step_with_its_value() -> None:
    said = the_pitfall(_NEGATIVE_BIAS, "relu-units-dead", 8)
    assert said.message.startswith(
        "All 32 units of the ReLU after model.0 (run from line 8) are 0 for every sample from step 1 on"
    )
    assert "model.0.weight and model.0.bias got exactly 0 gradient in all 50 steps" in said.message
    assert "They were 0 from the first step on, before any update had changed the layer" in said.message
    assert "model.0.bias is -5 in every unit." in said.message
    _, _, scope = run_plain(_NEGATIVE_BIAS)
    model = scope["model"]
    assert isinstance(model, torch.nn.Sequential)
    assert model[0].weight.grad is not None and not bool(model[0].weight.grad.any())


@pytest.mark.parametrize(
    "relu",
    [
        "h = F.relu(self.fc1(x))",
        "h = torch.relu(self.fc1(x))",
        "h = self.fc1(x).relu_()",
        "h = F.relu(self.fc1(x), inplace=True)",
        "h = nn.ReLU(inplace=True)(self.fc1(x))",
    ],
)
def test_each_way_of_writing_the_relu_is_said_at_its_line(relu: str) -> None:
    said = the_pitfall(_CLASS.replace("h = F.relu(self.fc1(x))", relu), "relu-units-dead", 9)
    assert said.message.startswith("All 32 units of the ReLU after net.fc1 (run from line 9)")
    assert "net.fc1.weight and net.fc1.bias got exactly 0 gradient in all 30 steps" in said.message


def test_a_convolution_whose_channels_are_all_dead_is_said() -> None:
    source = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
conv, head = nn.Conv2d(1, 8, 3), nn.Linear(8 * 6 * 6, 3)
nn.init.constant_(conv.bias, -10.0)
opt = torch.optim.SGD(list(conv.parameters()) + list(head.parameters()), lr=0.05)
X, y = torch.randn(32, 1, 8, 8), torch.randint(0, 3, (32,))
for step in range(20):
    loss = F.cross_entropy(head(F.relu(conv(X)).flatten(1)), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
    said = the_pitfall(source, "relu-units-dead", 8)
    assert said.message.startswith("All 8 units of the ReLU after conv (run from line 8)")
    assert "conv.bias is -10 in every unit." in said.message


@pytest.mark.parametrize(
    ("dead", "near_miss"),
    [
        # a healthy layer: no negative bias
        ("nn.init.constant_(model[0].bias, -5.0)\n", ""),
        # some units dead, the others learn
        ("nn.init.constant_(model[0].bias, -5.0)", "nn.init.constant_(model[0].bias[:24], -5.0)"),
        # one step (or two): nothing was trained
        ("range(50)", "range(1)"),
        ("range(50)", "range(2)"),
        # the layer frozen on purpose
        (
            "nn.init.constant_(model[0].bias, -5.0)\n",
            "nn.init.constant_(model[0].bias, -5.0)\nmodel[0].requires_grad_(False)\n",
        ),
        # LeakyReLU, the fix
        ("nn.ReLU()", "nn.LeakyReLU(0.01)"),
        # evaluation only, under no_grad
        (
            "    loss = F.cross_entropy(model(X), y)\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
            "    with torch.no_grad():\n        loss = F.cross_entropy(model(X), y)\n",
        ),
        # inputs clamped at 0 in data prep, a healthy layer
        ("nn.init.constant_(model[0].bias, -5.0)\n", "X = torch.randn(128, 10).clamp(min=0)\n"),
    ],
)
def test_a_layer_that_learns_or_was_not_trained_stays_silent(dead: str, near_miss: str) -> None:
    assert dead in _NEGATIVE_BIAS
    recorded_silently(_NEGATIVE_BIAS.replace(dead, near_miss))
    the_pitfall(_NEGATIVE_BIAS, "relu-units-dead", 8)  # the snippet one edit away is said


def test_a_dead_relu_whose_output_feeds_no_backward_stays_silent() -> None:
    source = _UNSCALED.replace(
        "    h = F.relu(fc1(X))\n", "    h = F.relu(fc1(X))\n    probe = F.relu(fc1(X) - 1e9)\n"
    )
    trace = record(source)
    assert [p.line for p in q.pitfalls(trace) if p.kind == "relu-units-dead"] == [8]  # fc1's own ReLU
    unused = _NEGATIVE_BIAS.replace(
        "    loss = F.cross_entropy(model(X), y)\n",
        "    dead = F.relu(probe(X))\n    loss = F.cross_entropy(model(X), y)\n",
    ).replace(
        "nn.init.constant_(model[0].bias, -5.0)\n",
        "probe = nn.Linear(10, 4)\nnn.init.constant_(probe.bias, -9.0)\n",
    )
    recorded_silently(unused)


def test_a_hinge_loss_at_zero_for_every_sample_stays_silent() -> None:
    # relu used as a clamp in the loss: every margin met is its success, not a dead unit
    source = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
X = torch.randn(64, 2)
y = torch.where(X[:, 0] > 0, 1.0, -1.0)
X[:, 0] += y
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(40):
    loss = F.relu(1 - y * model(X).squeeze(1)).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""
    trace = recorded_silently(source)
    assert q.stdout(trace) == "0.0\n"  # every margin met: the hinge is 0 for every sample
    # the same hinge on a hidden layer whose units are dead: that ReLU is said, not the hinge
    hidden = source.replace(
        "model = nn.Linear(2, 1)\n",
        "model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))\n"
        "nn.init.constant_(model[0].bias, -50.0)\n",
    )
    said = the_pitfall(hidden, "relu-units-dead", 10)
    assert said.message.startswith("All 16 units of the ReLU after model.0 (run from line 10)")


def test_zero_gradient_with_units_still_alive_for_some_samples_is_not_said() -> None:
    # cross-entropy saturated on the samples the live units see: the layer's gradient is 0 at
    # every step from step 34 on, but 4 units are still above 0 for some sample
    source = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
X = torch.randn(256, 2)
fc1, fc2 = nn.Linear(2, 32), nn.Linear(32, 2)
y = (X[:, 0] > X[:, 1]).long()
opt = torch.optim.SGD(list(fc1.parameters()) + list(fc2.parameters()), lr=30.0)
for step in range(100):
    h = F.relu(fc1(X))
    loss = F.cross_entropy(fc2(h), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(int((h > 0).any(0).sum()), bool(fc1.bias.grad.any()))
"""
    trace = record(source)
    assert q.stdout(trace) == "4 False\n"
    assert "relu-units-dead" not in [p.kind for p in q.pitfalls(trace)]
    # the same run with every unit dead from the start is said
    dead = source.replace("y = (X", "nn.init.constant_(fc1.bias, -50.0)\ny = (X")
    said = [p for p in q.pitfalls(record(dead)) if p.kind == "relu-units-dead"]
    assert [p.line for p in said] == [9] and "from step 1 on" in said[0].message


_BATCHES = """import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
X = torch.rand(512, 20) * 50
y = (X[:, 0] > X[:, 1]).long()
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=1.0)
for epoch in range(5):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
with torch.no_grad():
    print([int((model[:k](X) > 0).any(0).sum()) for k in (2, 4)])
"""


def test_the_topmost_dead_layer_of_a_stack_trained_on_batches_is_said() -> None:
    # the second hidden layer dies: no unit above 0 for any of the 512 samples, and the first,
    # which gets no gradient through it, is not said apart
    said = the_pitfall(_BATCHES, "relu-units-dead", 11)
    out, _, _ = run_plain(_BATCHES)
    assert out == "[1, 0]\n"
    assert said.message.startswith(
        "All 64 units of the ReLU after model.2 (run from line 11) are 0 for every sample of every batch "
        "from step 41 on"
    )
    assert (
        "model.2.weight and model.2.bias got exactly 0 gradient in the last 40 of 80 steps, and so did "
        "everything below model.2 through it." in said.message
    )
    assert "They died in the update of step 40 (lr 1)" in said.message


def test_a_few_batches_without_gradient_while_a_unit_lives_on_for_some_samples_stay_silent() -> None:
    # lr 0.1: the first layer's gradient is 0 at the last 7 of 80 steps, but one unit is still
    # above 0 for some of the 512 samples: too few batches to tell
    source = _BATCHES.replace("lr=1.0", "lr=0.1")
    out, _, _ = run_plain(source)
    assert out == "[1, 43]\n"
    recorded_silently(source)
    the_pitfall(_BATCHES, "relu-units-dead", 11)  # lr 1.0: the second layer dies for good


_WRITTEN_OUT = """import torch
import torch.nn.functional as F
torch.manual_seed(0)
X = torch.rand(200, 2) * 100
y = ((X - 50).norm(dim=1) < 40).long()
W1 = torch.nn.Parameter(torch.randn(2, 16) * 0.1)
W2 = torch.nn.Parameter(torch.randn(16, 2) * 0.1)
opt = torch.optim.SGD([W1, W2], lr=0.5)
for step in range(60):
    h = F.relu(X @ W1)
    loss = F.cross_entropy(h @ W2, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(int((F.relu(X @ W1) > 0).any(0).sum()))
"""


def test_a_layer_written_out_as_x_at_w_counts_its_units_along_w_s_columns() -> None:
    # W1 is (in, out) = (2, 16): 16 units, not 2, and it is named by its snippet name
    said = the_pitfall(_WRITTEN_OUT, "relu-units-dead", 10)
    out, _, _ = run_plain(_WRITTEN_OUT)
    assert out == "0\n"  # no unit above 0 for any sample at the end, as said
    assert said.message.startswith(
        "All 16 units of the ReLU after the layer (run from line 10) are 0 for every sample"
    )
    assert "so W1 got exactly 0 gradient in the last 58 of 60 steps" in said.message


def test_a_layer_whose_gradient_norm_underflows_to_0_is_counted_element_by_element_and_not_dead() -> None:
    # The step's norms tell a live layer from a dead one without a kernel call each step; a
    # float32 sum of squares of 128 gradients near 1e-31 is 0, yet none of them is: the layer
    # is not reported dead (dead_relu.py counts the elements of a gradient measured at 0).
    source = """import torch, torch.nn as nn
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 128), nn.ReLU(), nn.Linear(128, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
X, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(6):
    opt.zero_grad()
    loss = ((net(X) - y) ** 2).mean() * 1e-30
    loss.backward()
    opt.step()
print(int(torch.count_nonzero(net[0].bias.grad)))
"""
    trace = record(source)
    last = [e for e in trace.events if e.type == "optimizer_step"][-1]
    (bias,) = [p for p in last.params if p.name.endswith("0.bias")]
    assert bias.grad_norm == 0.0  # what the step measured
    assert "".join(e.text for e in trace.events if e.type == "output") == "128\n"  # what the layer got
    assert [e.kind for e in trace.events if e.type == "pitfall"] == []
