"""loss-through-rounding: a loss computed through ``round`` (``floor``, ``sign``…), whose slope
is 0, gives every parameter a gradient of exactly 0. Said at the rounding line after the
backward() that showed it; a straight-through estimator, rounding only to measure, and a
rounded term beside a loss on the raw output stay silent."""

from __future__ import annotations

import pytest
import torch

from tests.engine.snippets import recorded_silently, the_pitfall

_ROUNDED = """import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(64, 3)
y = (X.sum(1, keepdim=True) > 0).float()
model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(20):
    pred = torch.round(torch.sigmoid(model(X)))
    loss = ((pred - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""


def test_a_loss_through_round_is_said_at_the_rounding_with_the_leaves_it_left_at_zero() -> None:
    said = the_pitfall(_ROUNDED, "loss-through-rounding", 10)
    assert said.title == "round in the loss's path: its slope is 0, no parameter learns"
    assert (
        "The loss is computed through round at line 10 (pred = torch.round(torch.sigmoid(model(X))))"
        in said.message
    )
    assert "all 4 leaves the walk reached got a gradient of exactly 0" in said.message
    assert "nn.BCEWithLogitsLoss" in said.fix and "x + (x.round() - x).detach()" in said.fix
    assert said.nodes, "the rounding node is pointed at in the graph"


def test_what_the_message_says_is_what_pytorch_does() -> None:
    # plain PyTorch: every gradient exactly 0, and the loss never moves
    namespace: dict[str, object] = {}
    exec(_ROUNDED, namespace)
    model = namespace["model"]
    assert isinstance(model, torch.nn.Module)
    assert all(p.grad is not None and not p.grad.any() for p in model.parameters())
    torch.manual_seed(0)
    x = torch.randn(5, requires_grad=True)
    for flat in (torch.round, torch.floor, torch.ceil, torch.trunc, torch.sign):
        x.grad = None
        flat(x * 3).sum().backward()
        assert x.grad is not None and not x.grad.any(), flat


@pytest.mark.parametrize(
    ("edit", "op"),
    [
        (("torch.round(torch.sigmoid(model(X)))", "torch.floor(torch.sigmoid(model(X)) * 2)"), "floor"),
        (("torch.round(torch.sigmoid(model(X)))", "(torch.sign(model(X)) + 1) / 2"), "sign"),
        (("torch.round(torch.sigmoid(model(X)))", "torch.sigmoid(model(X)).round()"), "round"),
    ],
)
def test_other_flat_ops_are_said_by_their_name(edit: tuple[str, str], op: str) -> None:
    said = the_pitfall(_ROUNDED.replace(*edit), "loss-through-rounding", 10)
    assert said.title.startswith(f"{op} in the loss's path")
    assert f"The loss is computed through {op} at line 10" in said.message


def test_a_model_of_plain_tensors_is_said_with_its_leaves() -> None:
    said = the_pitfall(
        """import torch

torch.manual_seed(0)
x = torch.linspace(0, 1, 20)
y = 3 * x + 1
w = torch.zeros(1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for step in range(10):
    y_hat = torch.round(w * x + b)
    loss = ((y_hat - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        b -= 0.1 * b.grad
        w.grad.zero_()
        b.grad.zero_()
print(w.item(), b.item())
""",
        "loss-through-rounding",
        9,
    )
    assert "all 2 leaves the walk reached got a gradient of exactly 0" in said.message


@pytest.mark.parametrize(
    "edit",
    [
        # a straight-through estimator: no rounding node in the graph
        (
            "torch.round(torch.sigmoid(model(X)))",
            "(lambda p: p + (p.round() - p).detach())(torch.sigmoid(model(X)))",
        ),
        # the loss on the raw output, rounding only to measure
        (
            "pred = torch.round(torch.sigmoid(model(X)))\n    loss = ((pred - y) ** 2).mean()",
            "loss = nn.functional.binary_cross_entropy_with_logits(model(X), y)\n"
            "    with torch.no_grad():\n        acc = (torch.round(torch.sigmoid(model(X))) == y).float().mean()",
        ),
        # a rounded term beside a loss that reads the raw output: the parameters still learn
        (
            "loss = ((pred - y) ** 2).mean()",
            "loss = ((pred - y) ** 2).mean() + ((torch.sigmoid(model(X)) - y) ** 2).mean()",
        ),
        # the targets rounded, not the predictions
        (
            "pred = torch.round(torch.sigmoid(model(X)))",
            "pred = torch.sigmoid(model(X))\n    y = torch.round(y)",
        ),
    ],
)
def test_rounding_that_leaves_a_gradient_is_silent(edit: tuple[str, str]) -> None:
    assert edit[0] in _ROUNDED
    recorded_silently(_ROUNDED.replace(*edit))
