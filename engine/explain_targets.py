"""Explain what cross_entropy cannot take, read off the operands of the call that raised
(``rec.failed_op``): a sequence model's ``(N, T, C)`` scores with ``(N, T)`` targets (the
classes belong in dim 1), one-hot integer rows where class indices go, and the scores and
the targets passed the other way round. PyTorch's own messages ("Expected target size
[4, 20], got [4, 7]"; "log_softmax_lastdim_kernel_impl not implemented for 'Long'") name
none of these.
"""

from __future__ import annotations

import re
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .source import find_name

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["cross_entropy_hint"]

_TARGET_SIZE = re.compile(r"Expected target size \[[\d, ]+\], got \[[\d, ]+\]")
_ONE_HOT_LONG = re.compile(r"Expected floating point type for target with class probabilities, got (\w+)")
_INTEGER_SCORES = re.compile(r"\"(?:log_)?softmax\w*\" not implemented for '(Long|Int|Bool|Byte)'")


def cross_entropy_hint(text: str, rec: Recorder, frame: FrameType | None) -> str | None:
    """The hint for ``text`` raised by a cross_entropy (nn.CrossEntropyLoss) call whose
    operands the tape saw; ``None`` for any other error."""
    if rec.failed_op is None or rec.failed_op[0] != "cross_entropy" or len(rec.failed_op[1]) < 2:
        return None
    scores, target = rec.failed_op[1][:2]
    s, t = _named(scores, frame, "the scores"), _named(target, frame, "the target")
    if _TARGET_SIZE.search(text) and scores.dim() == 3 and target.dim() == 2:
        n, steps, classes = scores.shape
        return (
            f"cross_entropy takes the classes in dim 1: scores (N, C, ...) with targets (N, ...). {s} is "
            f"({n}, {steps}, {classes}), a sequence model's (batch, time, classes), so it read {steps} classes "
            f"at {classes} positions. Move the classes to dim 1, F.cross_entropy({s}.permute(0, 2, 1), {t}), or "
            f"flatten both: F.cross_entropy({s}.reshape(-1, {classes}), {t}.reshape(-1))."
        )
    one_hot = _ONE_HOT_LONG.search(text)
    if one_hot and target.shape == scores.shape:
        return (
            f"{t} has the scores' shape {tuple(scores.shape)}, so cross_entropy reads each row as class "
            f"probabilities, which must be float; it holds {one_hot.group(1).lower()} integers, one-hot rows "
            f"(F.one_hot). Pass the class indices instead, shape ({scores.shape[0]},): {t}.argmax(1), or the "
            f"labels one_hot was made from; or {t}.float() to keep them as probabilities."
        )
    if _INTEGER_SCORES.search(text) and not scores.is_floating_point() and target.is_floating_point():
        first, second = find_name(scores, frame), find_name(target, frame)
        return (
            "cross_entropy(input, target) takes the scores first and the class indices second; here the first "
            f"argument{f' ({first})' if first else ''} is {str(scores.dtype).removeprefix('torch.')} of shape "
            f"{tuple(scores.shape)}, class indices, and the second{f' ({second})' if second else ''} float of "
            f"shape {tuple(target.shape)}, scores: they are swapped. Swap them: "
            f"criterion({second or 'scores'}, {first or 'target'})."
        )
    return None


def _named(t: torch.Tensor, frame: FrameType | None, role: str) -> str:
    return find_name(t, frame) or role
