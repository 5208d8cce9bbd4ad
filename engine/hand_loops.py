"""Loops that step by hand: the first backward() calls recorded in full, the rest as metrics.

NOTE [Loops that step by hand]: a long training run is recorded in full only for its first
and chosen optimizer steps (training.py). A loop that updates its parameters itself
(``w -= lr * w.grad`` under ``no_grad``, as the PyTorch tutorials' first examples do) has no
optimizer step to count, so every call of the tutorial's 2,000-iteration polynomial fit was
recorded in full: 38,000 ops and 18,000 nodes in 9 s, where the plain script takes a fraction
of a second, and its custom-Function twin ran past the 10 s limit. While no optimizer has
stepped, the first ``Limits.detail_calls`` backward() calls (and every ``detail_every``-th)
are recorded in full; every other call sends one ``backward_counted`` event (its loss, the
graph's memory, the time since the call before) and nothing per op or node. The choice is
made as a call returns, for the next one: the forward pass that leads to a call runs after
the call before it. Only the snippet's own calls count: ``jacobian`` calls ``autograd.grad``
once per output on its behalf, and those stay whole.

Once an optimizer's ``step()`` has begun, its own schedule decides (a closure step, LBFGS,
calls backward() many times within one step). A snippet that holds an optimizer where its
calls would turn metrics-only (a global, or a local of a snippet function on the stack) is left to the
optimizer too: gradient accumulation runs many backward() calls before its first step.
"""

from __future__ import annotations

import time
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .events import Limits
from .source import is_a, outer_scopes, snippet_frame

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["HandLoop", "is_detail_call"]


def is_detail_call(own: int, call: int, limits: Limits) -> bool:
    """Whether the snippet's own backward() call number ``own`` (1-based), backward() call
    ``call`` of the run (1-based, as the charts number them), is recorded in full."""
    return own <= limits.detail_calls or (limits.detail_every > 0 and call % limits.detail_every == 0)


class HandLoop:
    """Chooses, as each backward() call returns, whether the next is recorded in full, while
    no optimizer is in charge (NOTE [Loops that step by hand])."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._last_end = time.perf_counter()
        self._left_to_optimizer = False
        self._own_calls = 0  # the snippet's own backward() calls so far

    @property
    def counting(self) -> bool:
        """Whether metrics-only backward() calls are this loop's to report."""
        return not self._left_to_optimizer and not self._rec.training.optimizer_seen

    def after_call(self, index: int) -> None:
        """The snippet's own backward call ``index`` (0-based among all the run's calls)
        returned or raised: record the next one in full or not."""
        rec = self._rec
        self._own_calls += 1
        if self.counting:
            detail = is_detail_call(self._own_calls + 1, index + 2, rec.limits)
            if not detail and rec.detail and _holds_optimizer(snippet_frame()[0]):
                self._left_to_optimizer = True
            else:
                rec.set_detail(detail)
        self._last_end = time.perf_counter()

    def counted(self, index: int, line: int | None) -> None:
        """Send the ``backward_counted`` event of metrics-only call ``index``, which returned."""
        rec = self._rec
        memory = rec.memory
        rec.emit(
            {
                "type": "backward_counted",
                "index": index,
                "loss": rec.backward.last_loss,
                "graph_bytes": memory.saved_bytes,
                "graph_peak_bytes": memory.take_peak(),
                "wall_s": time.perf_counter() - self._last_end,
                "line": line,
            }
        )


def _holds_optimizer(frame: FrameType | None) -> bool:
    """Whether the snippet's frame ``frame`` sees an optimizer: in its module level or the
    locals of a snippet function on the stack."""
    return any(is_a(v, torch.optim.Optimizer) for scope in outer_scopes(frame) for v in list(scope.values()))
