"""Summarize a trace in a few lines of text (for the command line and notebooks)."""

from __future__ import annotations

import math
from typing import Any

from .events import FullValue, SummaryValue
from .queries import value_of

__all__ = ["summarize"]


_MAX_LISTED = 6  # elements written out; a longer gradient is its norm and shape (as the app shows it)


def _number(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _short(v: FullValue | SummaryValue | None) -> str:
    """A gradient in a few characters: ``14.75``, ``[0.5, -1]``, ``norm 0.1048 [8, 1, 3, 3]``."""
    if v is None:
        return "None"
    if isinstance(v, SummaryValue):
        of = " of |z|" if v.of == "abs" else ""
        return f"norm{of} {_number(v.norm)} {v.shape}"
    if not v.shape:
        return _number(value_of(v))
    if len(v.flat) <= _MAX_LISTED:
        return _nested(v.flat, v.shape)  # in rows, as Python prints it: [[1, 2, 3], [4, 5, 6]]
    norm = math.sqrt(sum(float(x) ** 2 for x in v.flat))
    return f"norm {_number(norm)} {v.shape}"


def _nested(flat: list[Any], shape: list[int]) -> str:
    """``flat`` (row-major) written as nested lists of ``shape``."""
    if len(shape) <= 1:
        return "[" + ", ".join(_number(x) for x in flat) + "]"
    size = len(flat) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(flat[i * size : (i + 1) * size], shape[1:]) for i in range(shape[0])) + "]"


def _of_which(total: int, whole: int | None) -> str:
    """``400 (3 in full)`` when fewer than ``total`` were recorded whole, else ``400``."""
    return f"{total} ({whole} in full)" if whole is not None and whole < total else str(total)


def summarize(trace: Any) -> str:
    """Return a short human summary of a trace: counts, final grads, errors, status."""
    lines: list[str] = []
    finished = trace.events[-1]
    counts = finished.counts
    lines.append(f"status: {finished.status}" + (f" ({finished.message})" if finished.message else ""))
    # a long run records its first steps (or a hand loop's first calls) in full, the rest
    # metrics-only: how many of each were whole, as the app's status line says
    whole_steps = sum(1 for e in trace.events if e.type == "optimizer_step" and e.detail)
    whole_calls = sum(1 for e in trace.events if e.type == "backward_started")
    steps = _of_which(counts.optimizer_steps, whole_steps)
    calls = _of_which(counts.backward_calls, whole_calls if not counts.optimizer_steps else None)
    lines.append(
        f"ops: {counts.ops}  nodes: {counts.nodes}  tensors: {counts.tensors}  "
        f"backward calls: {calls}  optimizer steps: {steps}  events: {counts.events}"
    )
    needs_grad = {e.id for e in trace.events if e.type == "tensor" and e.requires_grad}
    for e in trace.events:
        if e.type == "tensor_final" and (e.grad is not None or e.id in needs_grad):
            # None: never reached by backward, or cleared (zero_grad) since
            lines.append(f"  {e.name}.grad = {_short(e.grad)}")
        elif e.type == "error":
            at = f" at line {e.line}" if e.line is not None else ""  # (a null byte: no line)
            lines.append(f"error{at}: {e.exc_type}: {e.message.splitlines()[0] if e.message else ''}")
            if e.hint:
                lines.append(f"  hint: {e.hint}")
            done = e.metrics_only_after if e.metrics_only_after is not None else e.metrics_only_calls
            if done is not None:
                what = "optimizer step" if e.metrics_only_after is not None else "backward() call"
                lines.append(
                    f"  (after {what} {done}, recorded metrics-only: "
                    f"--detail-every {done + 1} records that iteration in full)"
                )
        elif e.type == "pitfall":
            lines.append(f"pitfall at line {e.line}: {e.kind}: {e.title}")
        elif e.type == "limit":
            lines.append(f"limit: {e.message}")
    return "\n".join(lines)
