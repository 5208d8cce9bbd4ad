"""What a snippet (or a notebook) may call while it is recorded: ``gradwalk.log`` and friends."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from .source import snippet_frame
from .text import writable

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["detail_next_step", "log", "set_current"]

_current: Recorder | None = None


def set_current(rec: Recorder | None) -> None:
    """Make ``rec`` the recorder that :func:`log` reports to (``None``: nothing records)."""
    global _current
    _current = rec


def log(name: str, value: float, step: int | None = None) -> None:
    """Log a metric (e.g. validation accuracy) to the charts; a no-op when not recorded.

    >>> log("val_acc", 0.93)   # outside a recording: does nothing
    """
    rec = _current
    if rec is None:
        return
    if step is not None:
        try:
            step = operator.index(step)  # an int, or NumPy's: never 2.5
        except TypeError:
            raise TypeError(f"gradwalk.log: step must be a whole number, not {step!r}") from None
    _, line = snippet_frame()
    rec.emit(dict(type="metric", name=writable(str(name)[:100]), value=float(value), step=step, line=line))


def detail_next_step() -> None:
    """Record from now until the next optimizer step (tape, graph, backward walk) in full detail.

    Call it at the top of the training-loop iteration you want to see.
    """
    rec = _current
    if rec is not None:
        rec.set_detail(True)
