"""F.dropout inside a module in eval mode (engine/pitfalls/functional_dropout.py): said at
the F.dropout line, also when the evaluation runs after the steps recorded in full; dropout
that follows the module's mode stays silent."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from engine.events import Limits
from tests.engine.snippets import plain_stdout, recorded_silently

NET = """
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(16, 1)
    def forward(self, x):
        h = {dropout}
        return self.fc2(h)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(32, 4), torch.randn(32, 1)
for i in range({steps}):
    opt.zero_grad()
    loss = ((model(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
model.eval()
with torch.no_grad():
    print(torch.equal(model(X), model(X)))
"""


def net(dropout: str, steps: int = 5) -> str:
    """A model whose forward applies ``dropout`` to its hidden layer (at line 11)."""
    return NET.format(dropout=dropout, steps=steps)


@pytest.mark.parametrize("steps", [5, 50], ids=["in full", "after the steps recorded in full"])
def test_functional_dropout_in_eval_is_said_at_its_line(steps: int) -> None:
    source = net("F.dropout(torch.relu(self.fc1(x)), 0.5)", steps)
    trace = record(source, limits=Limits(detail_steps=3))
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [("functional-dropout-in-eval", 11)]
    p = found[0]
    assert p.title == "F.dropout keeps dropping after model.eval()"
    assert "runs in the forward() of model (Net), which is in eval mode" in p.message
    assert "zeroes a fraction 0.5 of them (and scales the rest by 2)" in p.message
    assert p.fix.startswith("Pass the module's mode: F.dropout(…, p=0.5, training=self.training)")
    # the snippet's own check: two evaluations differ, as without gradwalk
    assert q.stdout(trace) == plain_stdout(source) == "False\n"


NEAR_MISSES = {
    "training=self.training": net("F.dropout(torch.relu(self.fc1(x)), 0.5, training=self.training)"),
    "an nn.Dropout layer": net("self.drop(torch.relu(self.fc1(x)))"),
    "p = 0": net("F.dropout(torch.relu(self.fc1(x)), p=0.0)"),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    assert q.stdout(recorded_silently(NEAR_MISSES[name])) == "True\n"
