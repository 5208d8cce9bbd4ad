"""A loss that climbs without reaching NaN (engine/pitfalls/diverging.py): said at the line
that builds the optimizer, with the losses and the learning rate; a loss that falls, or
rises and falls, or turns Inf (non-finite-loss's), stays silent about it."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.conftest import case_source
from tests.engine.snippets import gan_loop, plain_stdout, recorded_silently

RENT = case_source("pitfall_nan_loss.py")


def rent(lr: float, epochs: int) -> str:
    """The rent regression with learning rate ``lr`` for ``epochs`` steps (the optimizer at line 10)."""
    return RENT.replace("lr=0.5)    # far too high", f"lr={lr})").replace(
        "range(1, 401)", f"range(1, {epochs + 1})"
    )


def test_a_loss_that_climbs_is_said_at_the_optimizer_with_its_numbers() -> None:
    source = rent(0.2, 20)
    trace = record(source)
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [("loss-diverging", 10)]
    p = found[0]
    last = float(plain_stdout(source))
    assert p.message.startswith("Under opt (SGD) the loss went from 106.6 at step 1 to ")
    assert f"to {last:.4g} at step 20, and ends at its highest" in p.message
    assert "too high (here 0.2)" in p.message and p.fix.startswith("Lower the learning rate (try 0.02)")


NEAR_MISSES = {
    "a healthy learning rate": rent(0.05, 20),
    "four steps": rent(0.2, 4),
    "a GAN": gan_loop(20),
    "a loss that rises, then falls": rent(0.05, 30).replace(
        "    opt.step()\n", "    opt.step()\n    if epoch == 3:\n        model.weight.data += 40\n"
    ),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])


def test_a_loss_that_reaches_inf_is_non_finite_loss_alone() -> None:
    assert [p.kind for p in q.pitfalls(record(RENT))] == ["non-finite-loss"]
