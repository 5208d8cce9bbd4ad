"""Gradient clipping of gradients still multiplied by a GradScaler's scale
(clip-before-unscale).

Mixed precision: ``scaler.scale(loss).backward()`` leaves every gradient multiplied by the
scale (65,536 to start), and ``scaler.step(opt)`` divides it back out before the update. A
``clip_grad_norm_(model.parameters(), 1.0)`` between the two clips the scaled gradients: the
norm it measures is the true one times the scale, nearly always far above ``max_norm``, so it
cuts every gradient to a norm of ``max_norm``, and the unscale then divides that by the
scale, leaving updates thousands of times too small (``clip_grad_value_`` clips at a bound
the scale makes meaningless). Nothing raises; the loss barely moves.

Told as the clip starts: an enabled ``GradScaler`` (``torch.amp``'s, or
``torch.cuda.amp``'s) bound in a snippet frame (or as an attribute of its ``self``) has
scaled a loss (it holds a scale) and has not unscaled any optimizer's gradients since its
last ``update()``. ``scaler.unscale_(opt)`` before the clip, a disabled scaler, and a clip
with no scaler stay silent.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

from torch.amp import GradScaler
from torch.amp.grad_scaler import OptState

from ..source import SNIPPET_FILENAME, quoted_code

__all__ = ["scaled_clip_report"]


def _bound(frame: FrameType | None) -> Iterator[tuple[str, Any]]:
    """The names the snippet frames from ``frame`` outward bind, and ``self``'s attributes."""
    while frame is not None:
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            yield from list(frame.f_locals.items())
            own = frame.f_locals.get("self")
            if own is not None:
                yield from ((f"self.{k}", v) for k, v in list(getattr(own, "__dict__", {}).items()))
            if frame.f_back is None or frame.f_back.f_code.co_filename != SNIPPET_FILENAME:
                yield from list(frame.f_globals.items())
        frame = frame.f_back


def _scaling(frame: FrameType | None) -> tuple[str, GradScaler] | None:
    """A scaler bound in the snippet that scaled a loss and unscaled nothing since."""
    for name, value in _bound(frame):
        if not isinstance(value, GradScaler) or not value.is_enabled() or value._scale is None:
            continue
        states = value._per_optimizer_states.values()
        if all(state.get("stage", OptState.READY) is OptState.READY for state in states):
            return name, value
    return None


def scaled_clip_report(
    function: str, frame: FrameType | None, line: int | None, source_lines: Sequence[str]
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` when ``function`` (``clip_grad_norm_``, ``clip_grad_value_``),
    called from snippet ``frame`` at ``line``, clips gradients a GradScaler still scales."""
    found = _scaling(frame)
    if found is None:
        return None
    name, scaler = found
    scale = float(scaler.get_scale())
    code = quoted_code(source_lines, line, sys.maxsize)
    at = f"line {line} ({code})" if line is not None and code else f"{function}"
    what = (
        "measures a norm the scale multiplies, nearly always far above max_norm, so it cuts the gradients "
        "to a total norm of max_norm; the unscale in step() then divides that by the scale, and every update "
        f"uses a gradient of norm max_norm / {scale:,.0f} where the clip meant max_norm at most"
        if function == "clip_grad_norm_"
        else "compares the scaled values with your bound, so it clips at a bound "
        f"{scale:,.0f} times smaller than the one you wrote"
    )
    return (
        f"{function} before {name}.unscale_(): it clips gradients scaled by {scale:,.0f}",
        f"{name}.scale(loss).backward() left every gradient multiplied by the scale, {scale:,.0f} now, and "
        f"{name}.step(opt) divides it out only after {at} clipped them: the clip {what}. Nothing raises; "
        "the loss barely moves.",
        f"Unscale first: {name}.scale(loss).backward(); {name}.unscale_(opt); "
        f"torch.nn.utils.{function}(model.parameters(), …); {name}.step(opt); {name}.update().",
    )
