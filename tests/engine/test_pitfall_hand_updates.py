"""A loop that steps by hand and never clears .grad (engine/pitfalls/hand_updates.py): said at
the backward() line, naming the update; clearing, replacing, or accumulating on purpose
stays silent, and an optimizer's loop keeps its own wording."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.conftest import case_source
from tests.engine.snippets import plain_stdout, recorded_silently

HAND = """
import torch
torch.manual_seed(0)
X = torch.randn(64, 3)
y = X @ torch.tensor([1.0, -2.0, 0.5])
w = torch.zeros(3, requires_grad=True)
for i in range(30):
    loss = ((X @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
{update}
print(round(loss.item(), 4))
"""


def hand(update: str) -> str:
    """A least-squares fit stepped by hand with ``update`` (the backward() is at line 9)."""
    return HAND.format(update=update)


@pytest.mark.parametrize(
    ("update", "quoted"),
    [
        ("        w -= 0.05 * w.grad", "line 11: w -= 0.05 * w.grad"),
        ("        w.sub_(0.05 * w.grad)", "line 11: w.sub_(0.05 * w.grad)"),
        ("        w.data -= 0.05 * w.grad", "line 11: w.data -= 0.05 * w.grad"),
    ],
    ids=["-=", "sub_", ".data -="],
)
def test_gradients_left_across_updates_by_hand_are_said_at_the_backward(update: str, quoted: str) -> None:
    source = hand(update)
    trace = record(source)
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [("missing-zero-grad", 9)]
    p = found[0]
    assert p.title == "Gradients from the previous update are still in .grad"
    assert f"though w was updated in between ({quoted})" in p.message
    assert p.fix.startswith(
        "Clear the gradient after each update, inside the same no_grad block: w.grad.zero_()"
    )
    assert q.stdout(trace) == plain_stdout(source)


NEAR_MISSES = {
    "zero_()": hand("        w -= 0.05 * w.grad\n        w.grad.zero_()"),
    "= None": hand("        w -= 0.05 * w.grad\n    w.grad = None"),
    "a new tensor": hand("        w -= 0.05 * w.grad\n    w.grad = torch.zeros_like(w)"),
    "two backward() calls a step, on purpose": hand(
        "        pass\n    (X @ w).pow(2).mean().backward()\n    with torch.no_grad():\n"
        "        w -= 0.05 * w.grad\n        w.grad = None"
    ),
    "the tutorial's fit by hand": case_source("fit_by_hand.py"),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])


def test_an_optimizer_loop_keeps_the_optimizer_wording() -> None:
    (p,) = q.pitfalls(record(case_source("pitfall_forgot_zero_grad.py")))
    assert p.kind == "missing-zero-grad" and "optimizer step 1" in p.message


def test_a_complex_leaf_stepped_by_hand_is_followed_too() -> None:
    source = """
import torch
z = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
for i in range(3):
    loss = (z * z.conj()).real.sum()
    loss.backward()
    with torch.no_grad():
        z -= 0.1 * z.grad
"""
    assert [(p.kind, p.line) for p in q.pitfalls(record(source))] == [("missing-zero-grad", 6)]
