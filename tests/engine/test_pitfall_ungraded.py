"""Parameters an optimizer steps that never get a gradient (engine/pitfalls/ungraded.py):
a layer defined and never called, or called with its output dropped, is said at the line
that defines it; layers frozen on purpose, used now and then, or stepped once stay silent."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from engine.events import Limits
from tests.engine.snippets import recorded_silently

NET = """
import torch, torch.nn as nn
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 8)
        self.out = nn.Linear(8, 1)
    def forward(self, x, i):
        h = torch.relu(self.fc1(x))
{body}
        return self.out(h)
model = Net()
{setup}opt = torch.optim.Adam(model.parameters(), lr=0.01)
X, Y = torch.randn(32, 4), torch.randn(32, 1)
for i in range({steps}):
    opt.zero_grad()
    loss = ((model(X, i) - Y) ** 2).mean()
    loss.backward()
    opt.step()
print(model.fc2.weight.grad is None)
"""


def net(body: str, steps: int = 10, setup: str = "") -> str:
    """A model whose ``forward`` runs ``body`` between ``fc1`` and ``out`` (``fc2`` is at line 8)."""
    return NET.format(body=body, steps=steps, setup=setup)


NEVER_RUNS = net("        pass")


def test_a_layer_never_called_in_forward_is_said_at_the_line_that_defines_it() -> None:
    trace = record(NEVER_RUNS)
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [("parameter-without-gradient", 8)]
    p = found[0]
    assert p.title == "model.fc2 never trains: no gradient reaches it"
    assert p.message.startswith(
        "model.fc2.weight and model.fc2.bias are stepped by opt (Adam) but had no gradient at any of its "
        "10 steps: model.fc2 never runs in the forward pass"
    )
    assert p.fix.startswith("Call fc2 in forward() where it belongs (self.fc2(…))")
    names = q.tensor_names(trace)
    assert sorted(names[t] for t in p.tensors) == ["model.fc2.bias", "model.fc2.weight"]
    assert q.stdout(trace) == "True\n"


@pytest.mark.parametrize(
    "body",
    [
        "        extra = self.fc2(h)",
        "        extra = self.fc2(h).detach()",
        "        with torch.no_grad():\n            extra = self.fc2(h)",
    ],
    ids=["dropped", "detached", "under no_grad"],
)
def test_a_layer_whose_output_never_reaches_the_loss_is_said_to_run(body: str) -> None:
    (p,) = q.pitfalls(record(net(body)))
    assert (p.kind, p.line) == ("parameter-without-gradient", 8)
    assert "model.fc2 runs, but nothing the loss is computed from uses its output" in p.message


def test_a_no_grad_block_on_the_way_cuts_off_every_layer_before_it() -> None:
    (p,) = q.pitfalls(record(net("        with torch.no_grad():\n            h = h + self.fc2(h)")))
    assert (p.kind, p.line) == ("parameter-without-gradient", 7)
    assert p.title == "model.fc1 and model.fc2 never train: no gradient reaches them"
    assert "model.fc1 and model.fc2 run, but nothing the loss is computed from uses their output" in p.message


def test_found_past_the_steps_recorded_in_full() -> None:
    found = q.pitfalls(record(net("        pass", steps=60), limits=Limits(detail_steps=1)))
    assert [(p.kind, p.line) for p in found] == [("parameter-without-gradient", 8)]
    assert "at any of its 60 steps: model.fc2 never runs" in found[0].message


NEAR_MISSES = {
    "used in every step": net("        h = torch.relu(self.fc2(h))"),
    "used every other step": net("        if i % 2:\n            h = torch.relu(self.fc2(h))"),
    "used only in the last step": net("        if i == 9:\n            h = torch.relu(self.fc2(h))"),
    "frozen on purpose": net("        pass", setup="model.fc2.requires_grad_(False)\n"),
    "one step": net("        pass", steps=1),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])
