"""A tensor meant as a parameter held as a plain module attribute (tensor-attribute-not-parameter,
engine/pitfalls/parameters.py): said at the line that assigns it; an nn.Parameter, or a plain
tensor that an optimizer of its own steps, stays silent."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_stdout, recorded_silently

SCALE = """
import torch, torch.nn as nn
torch.manual_seed(0)
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)
        self.scale = {scale}
    def forward(self, x):
        return self.lin(x) * self.scale
model = Scale()
opt = torch.optim.SGD({params}, lr=0.1)
X, Y = torch.randn(32, 3), torch.randn(32, 1) * 5
for i in range(20):
    opt.zero_grad()
    loss = ((model(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
print(model.scale.item(), len(list(model.parameters())))
"""


def scale(held: str, params: str = "model.parameters()") -> str:
    """A model whose ``self.scale`` (line 8) is ``held``, trained by an optimizer over ``params``."""
    return SCALE.format(scale=held, params=params)


def test_a_plain_tensor_attribute_that_requires_grad_is_said_where_it_is_assigned() -> None:
    source = scale("torch.ones(1, requires_grad=True)")
    trace = record(source)
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [("tensor-attribute-not-parameter", 8)]
    p = found[0]
    assert p.title == "model.scale is a plain tensor, not an nn.Parameter: it never trains"
    assert "so model.parameters() leaves it out" in p.message
    assert p.fix.startswith("Make it a parameter: self.scale = nn.Parameter(…)")
    assert q.tensor_names(trace)[p.tensors[0]] == "model.scale"
    assert q.stdout(trace) == plain_stdout(source) == "1.0 2\n"


# a model that keeps its last input (which requires grad: the loss's gradient on the input is read)
CACHED_INPUT = """
import torch, torch.nn as nn
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)
    def forward(self, x):
        self.last_input = x
        return self.lin(x)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(8, 3, requires_grad=True)
for i in range(3):
    opt.zero_grad()
    model(X).pow(2).mean().backward()
    opt.step()
print(model.last_input.grad.shape)
"""

NEAR_MISSES = {
    "an nn.Parameter": scale("nn.Parameter(torch.ones(1))"),
    "stepped by the optimizer too": scale(
        "torch.ones(1, requires_grad=True)", "[*model.parameters(), model.scale]"
    ),
    "a constant": scale("torch.ones(1)"),
    "an input kept in forward()": CACHED_INPUT,
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])


def test_its_grad_is_said_to_grow_only_where_nothing_clears_it() -> None:
    # zero_grad() never clears a plain attribute's .grad; whether it grows depends on the
    # snippet (cleared_grads.py): the loop's own `model.scale.grad = None` clears it
    grows = record(scale("torch.ones(1, requires_grad=True)"))
    (told,) = q.pitfalls(grows)
    assert "zero_grad() never clears its .grad, which only grows." in told.message
    cleared = scale("torch.ones(1, requires_grad=True)").replace(
        "    opt.zero_grad()\n", "    opt.zero_grad()\n    model.scale.grad = None\n"
    )
    (told,) = q.pitfalls(record(cleared))
    assert told.kind == "tensor-attribute-not-parameter"
    assert "zero_grad() never clears its .grad. It keeps its initial value" in told.message
