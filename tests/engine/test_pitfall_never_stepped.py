"""An optimizer built and never stepped (engine/pitfalls/never_stepped.py): said at the line
that builds it; a loop that steps, steps by hand, or runs backward() once stays silent."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_stdout, recorded_silently

LOOP = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(32, 4), torch.randn(32, 1)
for i in range({steps}):
    opt.zero_grad()
    loss = ((model(X) - Y) ** 2).mean()
    loss.backward()
{after}
print(round(loss.item(), 6))
"""


def loop(after: str = "", steps: int = 10) -> str:
    """A training loop whose iteration ends with ``after`` (the optimizer is built at line 5)."""
    return LOOP.format(after=after, steps=steps)


def test_a_loop_that_never_calls_step_is_said_at_the_optimizer() -> None:
    source = loop()
    trace = record(source)
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [("optimizer-never-stepped", 5)]
    p = found[0]
    assert p.message.startswith(
        "opt (SGD) is built at line 5 and never steps: backward() ran 10 times and filled the gradients "
        "of its 2 parameters, but nothing called opt.step()"
    )
    assert p.fix.startswith("Call opt.step() after loss.backward()")
    assert q.stdout(trace) == plain_stdout(source)


def test_a_step_that_never_runs_is_said_at_the_step() -> None:
    # gradient accumulation over 8 backward() calls in a loop of 4: the step's condition is
    # never true, the parameters never move
    source = loop("    if (i + 1) % 8 == 0:\n        opt.step()", steps=4)
    trace = record(source)
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [("optimizer-never-stepped", 12)]
    p = found[0]
    assert p.title == "opt.step() never ran: nothing is trained"
    assert p.message.startswith(
        "opt.step() at line 12 never ran: backward() ran 4 times and filled the gradients of the 2 "
        "parameters opt (SGD) holds, but the condition or loop around that line never let it run"
    )
    assert p.fix.startswith("Check what keeps line 12 from running.")
    assert q.stdout(trace) == plain_stdout(source)


NEAR_MISSES = {
    "steps": loop("    opt.step()"),
    "a step under a condition that lets it run": loop("    if i >= 0:\n        opt.step()"),
    "steps by hand, the optimizer only zeroes": loop(
        "    with torch.no_grad():\n        for p in model.parameters():\n            p -= 0.1 * p.grad"
    ),
    "one backward()": loop(steps=1),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])


def test_a_step_named_without_parentheses_is_left_to_method_not_called() -> None:
    found = q.pitfalls(record(loop("    opt.step")))
    assert [p.kind for p in found] == ["method-not-called"]
