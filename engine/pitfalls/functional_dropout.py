"""``F.dropout`` inside a module in eval mode (functional-dropout-in-eval).

``model.eval()`` switches the module's own ``nn.Dropout`` layers off, but ``F.dropout(x, p)``
called in a ``forward()`` takes ``training=True`` unless told otherwise: evaluation keeps
zeroing a fraction p of the activations (and scaling the rest by 1/(1-p)), so predictions
are noisy and accuracy reads low, and nothing says why. Seen at the op: the snippet's frame
that called it is a ``forward()`` whose module (``self``) is in eval mode, while the call
asked for training behaviour by default: a line that passes the mode itself
(``training=True``, ``training=self.training or mc``) or reads it (``F.dropout(h, 0.2) if
self.training or mc else h``) keeps dropout on at test time on purpose (Monte-Carlo dropout).
Only where ops are seen: the steps recorded in full and the code after the loop, not an
evaluation inside iterations that run metrics-only.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from torch import nn

from ..source import is_module, quoted_code

__all__ = ["DROPOUT_OPS", "dropout_in_eval"]

DROPOUT_OPS = frozenset(
    {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"}
)


def dropout_in_eval(
    op: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    frame: FrameType | None,
    line: int | None,
    source_lines: Sequence[str],
    path: Callable[[nn.Module], str | None],
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` when ``F.<op>`` (one of :data:`DROPOUT_OPS`), called from the
    snippet's ``frame`` at ``line`` with ``args`` and ``kwargs``, dropped activations inside
    the ``forward()`` of a module in eval mode; ``None`` otherwise. ``path``: a module's
    name in the trace (``model``), if it has one."""
    training = kwargs["training"] if "training" in kwargs else args[2] if len(args) > 2 else True
    p = kwargs["p"] if "p" in kwargs else args[1] if len(args) > 1 else 0.5
    if training is not True or not p:
        return None
    owner = frame.f_locals.get("self") if frame is not None and frame.f_code.co_name == "forward" else None
    if not is_module(owner) or owner.training:
        return None
    if re.search(r"\btraining\s*=|\.training\b", quoted_code(source_lines, line, sys.maxsize) or ""):
        return None  # the line passes or reads the mode: dropout on at test time on purpose
    name = path(owner) or "the model"
    kind = type(owner).__name__
    code = quoted_code(source_lines, line)
    call = f" ({code})" if code else ""
    scaled = f" (and scales the rest by {1 / (1 - p):.3g})" if p < 1 else ""
    return (
        f"F.{op} keeps dropping after model.eval()",
        f"This line{call} runs in the forward() of {name} ({kind}), which is in eval mode, yet F.{op} drops "
        f"activations: unlike an nn.Dropout layer, F.{op} takes training=True unless told, so eval() does not "
        f"switch it off. Evaluation still zeroes a fraction {p:g} of them{scaled}, so predictions are noisy "
        "and the accuracy reads low.",
        f"Pass the module's mode: F.{op}(…, p={p:g}, training=self.training); or use an nn.Dropout({p:g}) layer, "
        "which model.eval() switches off.",
    )
