"""vanishing-gradients: a deep stack of sigmoids (or tanhs) between Linear layers shrinks the
first layers' gradients by orders of magnitude, so with one learning rate they barely move while
the last layers train. The numbers said are checked against a plain run; each silent near miss
is one edit away from the snippet that is said (checked said, so each test fails without the
detector)."""

from __future__ import annotations

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from engine import queries as q
from engine import record
from tests.engine.snippets import run_plain, the_pitfall

# the textbook deep sigmoid MLP: 10 Linear layers, default init, plain SGD
_DEEP_SIGMOID = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
layers = []
for i in range(9):
    layers += [nn.Linear(20 if i == 0 else 64, 64), nn.Sigmoid()]
model = nn.Sequential(*layers, nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(256, 20)
y = (X[:, 0] > 0).long()
for step in range(30):
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_RESIDUAL = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self, residual):
        super().__init__()
        self.residual = residual
        self.inp = nn.Linear(20, 64)
        self.hidden = nn.ModuleList(nn.Linear(64, 64) for _ in range(8))
        self.out = nn.Linear(64, 2)
    def forward(self, x):
        h = torch.sigmoid(self.inp(x))
        for layer in self.hidden:
            h = h + torch.sigmoid(layer(h)) if self.residual else torch.sigmoid(layer(h))
        return self.out(h)
model = Net(residual=False)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(256, 20)
y = (X[:, 0] > 0).long()
for step in range(30):
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

_LSTM = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
rnn, head = nn.LSTM(8, 32, num_layers=2, batch_first=True), nn.Linear(32, 2)
opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)
X = torch.randn(32, 40, 8)
y = (X[:, 0, 0] > 0).long()
for step in range(30):
    out, _ = rnn(X)
    loss = F.cross_entropy(head(torch.tanh(out[:, -1])), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _kinds(source: str) -> list[str]:
    """The kinds of the pitfalls a recorded run of ``source`` raises (it must finish ``ok``)."""
    trace = record(source)
    assert trace.events[-1].status == "ok", trace.events[-1].message
    return [p.kind for p in q.pitfalls(trace)]


def _plain_norms(source: str) -> list[tuple[float, float, float, float]]:
    """In a plain run of ``source``, after each optimizer step: the gradient norms of its first
    and last weights (``model[0]``, ``model[-1]``) and those weights' norms."""
    seen: list[tuple[float, float, float, float]] = []

    def read(opt: torch.optim.Optimizer, *_: object) -> None:
        weights = [p for p in opt.param_groups[0]["params"] if p.dim() >= 2]
        first, last = weights[0], weights[-1]
        assert first.grad is not None and last.grad is not None
        seen.append(
            (
                float(first.grad.norm()),
                float(last.grad.norm()),
                float(first.detach().norm()),
                float(last.detach().norm()),
            )
        )

    handle = register_optimizer_step_post_hook(read)
    try:
        _, error, _ = run_plain(source)
    finally:
        handle.remove()
    assert error is None
    return seen


@pytest.fixture(scope="module")
def deep_sigmoid_said() -> str:
    """The message said of the deep sigmoid MLP (the snippet every near miss is one edit from)."""
    return str(the_pitfall(_DEEP_SIGMOID, "vanishing-gradients", 11).message)


def test_a_deep_sigmoid_mlp_is_said_with_plain_pytorch_s_gradients(deep_sigmoid_said: str) -> None:
    said = the_pitfall(_DEEP_SIGMOID, "vanishing-gradients", 11)
    norms = _plain_norms(_DEEP_SIGMOID)
    assert len(norms) == 30
    first, last, first_size, last_size = norms[0]
    assert last / first > 1e6  # the lesson: the first layer's gradient has all but vanished
    relative = sum(n[1] / n[3] for n in norms) / sum(n[0] / n[2] for n in norms)
    moved_first = 0.1 * sum(n[0] for n in norms) / first_size * 100
    moved_last = 0.1 * sum(n[1] for n in norms) / last_size * 100
    assert said.title == "Vanishing gradients: model.0 barely moves while model.18 trains"
    assert said.message == deep_sigmoid_said
    assert said.message.startswith(
        f"At step 1 model.0.weight's gradient is {first:.2g}, {last / first:.2g} times smaller than "
        f"model.18.weight's ({last:.2g}), and summed over the 30 steps, relative to each weight's size, it "
        f"is {relative:.2g} times smaller: the gradient shrinks through the 9 sigmoids between them (each "
        "multiplies it by 0.25 at most)."
    )
    out, _, _ = run_plain(_DEEP_SIGMOID)
    assert said.message.endswith(
        f"With one learning rate, model.0's updates moved it {moved_first:.2g}% of its size over the run "
        f"while model.18's moved it {moved_last:.0f}%: the layers near the input barely learn, and the loss "
        f"falls slowly or stalls (here it ends at {float(out):.4g}). Nothing raises."
    )
    assert said.fix.startswith(
        "Keep the gradient from shrinking: nn.ReLU (or nn.GELU) activations with He init"
    )
    assert "torch.optim.Adam" in said.fix and "nn.LSTM or nn.GRU" in said.fix


def test_a_stack_written_in_a_module_class_is_said_at_its_first_layer_s_call() -> None:
    said = the_pitfall(_RESIDUAL, "vanishing-gradients", 11)
    assert said.message.startswith("At step 1 model.inp.weight's gradient is ")
    assert "than model.out.weight's (" in said.message and "the 9 sigmoids between them" in said.message


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # ReLU activations
        ("nn.Sigmoid()", "nn.ReLU()"),
        # tanh with default init: its gradient shrinks too, but by far less than 1e4 here
        ("nn.Sigmoid()", "nn.Tanh()"),
        # normalization between the layers
        ("nn.Sigmoid()]", "nn.BatchNorm1d(64), nn.Sigmoid()]"),
        ("nn.Sigmoid()]", "nn.LayerNorm(64), nn.Sigmoid()]"),
        # Adam scales each parameter's step: the first layer moves
        ("optim.SGD(model.parameters(), lr=0.1)", "optim.Adam(model.parameters(), lr=1e-3)"),
        # a shallow sigmoid MLP
        ("range(9)", "range(2)"),
        # the first layer frozen on purpose
        ("opt = torch", "model[0].requires_grad_(False)\nopt = torch"),
        # a run of two steps
        ("range(30)", "range(2)"),
        # no optimizer: a step by hand
        (
            "    opt.step()\n",
            "    with torch.no_grad():\n        for p in model.parameters():\n            p -= 0.1 * p.grad\n",
        ),
    ],
)
def test_the_near_misses_of_a_deep_sigmoid_mlp_stay_silent(
    deep_sigmoid_said: str, wrong: str, right: str
) -> None:
    assert deep_sigmoid_said and wrong in _DEEP_SIGMOID
    assert _kinds(_DEEP_SIGMOID.replace(wrong, right)) == []


def test_a_first_layer_no_optimizer_steps_is_not_said(deep_sigmoid_said: str) -> None:
    assert deep_sigmoid_said
    kinds = _kinds(_DEEP_SIGMOID.replace("optim.SGD(model.parameters()", "optim.SGD(model[2:].parameters()"))
    assert kinds == ["parameter-not-optimized"]  # (its own pitfall: model.0 never steps)


def test_residual_connections_and_an_lstm_stay_silent() -> None:
    the_pitfall(_RESIDUAL, "vanishing-gradients", 11)  # the same net without its residual connections
    assert _kinds(_RESIDUAL.replace("Net(residual=False)", "Net(residual=True)")) == []
    assert _kinds(_LSTM) == []


def test_an_evaluation_after_the_loop_leaves_the_pitfall_at_the_training_forward() -> None:
    # the model runs again on line 16 to measure accuracy: the stack was trained at line 11
    evaluated = _DEEP_SIGMOID.replace(
        "print(round(loss.item(), 4))",
        "with torch.no_grad():\n    accuracy = (model(X).argmax(1) == y).float().mean().item()\nprint(accuracy)",
    )
    assert evaluated.splitlines()[15].startswith("    accuracy = (model(X)")
    the_pitfall(evaluated, "vanishing-gradients", 11)
