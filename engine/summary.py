"""Summarize a trace in a few lines of text (for the command line and notebooks)."""

from __future__ import annotations

from typing import Any

from .queries import value_of

__all__ = ["summarize"]


def summarize(trace: Any) -> str:
    """Return a short human summary of a trace: counts, final grads, errors, status."""
    lines: list[str] = []
    finished = trace.events[-1]
    counts = finished.counts
    lines.append(f"status: {finished.status}" + (f" ({finished.message})" if finished.message else ""))
    lines.append(
        f"ops: {counts.ops}  nodes: {counts.nodes}  tensors: {counts.tensors}  "
        f"backward calls: {counts.backward_calls}  optimizer steps: {counts.optimizer_steps}  "
        f"events: {counts.events}"
    )
    needs_grad = {e.id for e in trace.events if e.type == "tensor" and e.requires_grad}
    for e in trace.events:
        if e.type == "tensor_final" and (e.grad is not None or e.id in needs_grad):
            g = e.grad  # None: never reached by backward, or cleared (zero_grad) since
            shown = f"norm {g.norm:.4g} {g.shape}" if g is not None and g.kind == "summary" else value_of(g)
            lines.append(f"  {e.name}.grad = {shown}")
        elif e.type == "error":
            lines.append(
                f"error at line {e.line}: {e.exc_type}: {e.message.splitlines()[0] if e.message else ''}"
            )
        elif e.type == "pitfall":
            lines.append(f"pitfall at line {e.line}: {e.kind}: {e.title}")
        elif e.type == "limit":
            lines.append(f"limit: {e.message}")
    return "\n".join(lines)
