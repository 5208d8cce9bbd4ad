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


# The charts read steps as JavaScript numbers: whole ones are exact up to 2**53.
MAX_STEP = 2**53


def log(name: str, value: float, step: int | None = None) -> None:
    """Log a metric (e.g. validation accuracy) to the charts; a no-op when not recorded.

    ``value`` is a number or a one-element tensor; ``step`` (default: the optimizer step the
    run is at) a whole number from 0 to 2**53. Anything else raises ``TypeError`` or
    ``ValueError`` naming ``gradwalk.log``, pointing at the snippet's line.

    >>> log("val_acc", 0.93)   # outside a recording: does nothing
    """
    rec = _current
    if rec is None:
        return
    with rec.mute():  # gradwalk's own reading of a tensor is not the snippet's op
        number = _number(value)
    if step is not None:
        step = _step(step)
    _, line = snippet_frame()
    rec.emit(dict(type="metric", name=writable(str(name)[:100]), value=number, step=step, line=line))


def _number(value: object) -> float:
    import torch  # here, not at the top: the server imports this package and must never load torch

    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"gradwalk.log: value must be one number, not a tensor of shape {tuple(value.shape)}"
            )
        value = value.detach()  # a loss that requires grad, without PyTorch's warning
    if isinstance(value, (str, bytes)):
        raise TypeError(f"gradwalk.log: value must be a number, not {value!r:.60}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"gradwalk.log: value must be a number, not {type(value).__name__}") from None


def _step(step: object) -> int:
    if isinstance(step, bool):
        raise TypeError(f"gradwalk.log: step must be a whole number, not {step!r}")
    try:
        whole = operator.index(step)  # type: ignore[arg-type]  # an int, or NumPy's: never 2.5
    except TypeError:
        raise TypeError(f"gradwalk.log: step must be a whole number, not {step!r:.60}") from None
    if not 0 <= whole <= MAX_STEP:
        raise ValueError(f"gradwalk.log: step must be from 0 to 2**53, not {whole}")
    return whole


def detail_next_step() -> None:
    """Record from now until the next optimizer step (tape, graph, backward walk) in full detail.

    Call it at the top of the training-loop iteration you want to see.
    """
    rec = _current
    if rec is not None:
        rec.set_detail(True)
