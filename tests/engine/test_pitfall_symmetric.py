"""Units of a layer that stay copies of each other (engine/pitfalls/symmetry.py): a model
initialised to one constant is said at the line that did it; random weights, a zeroed last
layer or zeroed biases stay silent."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import recorded_silently

LOOP = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
{init}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(64, 4), torch.randn(64, 3)
for i in range({steps}):
    opt.zero_grad()
    loss = ((model(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
print(model[0].weight[:, 0].unique().numel())
"""


def loop(init: str, steps: int = 20) -> str:
    """A regression loop whose model is initialised by ``init`` (line 5)."""
    return LOOP.format(init=init, steps=steps)


@pytest.mark.parametrize(
    ("init", "held"),
    [
        ("for p in model.parameters():\n    nn.init.constant_(p, 0.1)", ""),
        ("for p in model.parameters():\n    nn.init.zeros_(p)", " (every weight is 0)"),
        ("with torch.no_grad():\n    for p in model.parameters():\n        p.fill_(0.5)", ""),
    ],
    ids=["constant_", "zeros_", "fill_"],
)
def test_a_model_initialised_to_one_constant_is_said_where_it_was(init: str, held: str) -> None:
    source = loop(init)
    trace = record(source)
    found = q.pitfalls(trace)
    init_line = next(i for i, t in enumerate(source.splitlines(), 1) if "_(" in t and "manual_seed" not in t)
    assert [(p.kind, p.line) for p in found] == [("symmetric-weights", init_line)]
    p = found[0]
    assert p.title == "The 16 units of model.0 are identical: the layer works as one unit"
    assert p.message.startswith(
        f"After 20 optimizer steps all 16 rows of model.0.weight are still equal{held}"
    )
    assert q.tensor_names(trace)[p.tensors[0]] == "model.0.weight"
    assert q.stdout(trace) == "1\n"  # the snippet's own check: one distinct value in the column


NEAR_MISSES = {
    "PyTorch's default initialisation": loop(""),
    "a zeroed last layer": loop("nn.init.zeros_(model[2].weight)\nnn.init.zeros_(model[2].bias)"),
    "zeroed biases": loop("for layer in (model[0], model[2]):\n    nn.init.zeros_(layer.bias)"),
    "one step": loop("for p in model.parameters():\n    nn.init.zeros_(p)", steps=1),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])
