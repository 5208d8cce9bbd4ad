"""Explain what cross_entropy cannot take, read off the operands of the call that raised
(``rec.failed_op``): a sequence model's ``(N, T, C)`` scores with ``(N, T)`` targets (the
classes belong in dim 1), one-hot integer rows where class indices go, and the scores and
the targets passed the other way round; a sequence model's scores at every step given one
target per sequence; and a regression loss (mse_loss, l1_loss, …) of integers on both sides,
most often an argmax's class indices; per-pixel scores given channel-last, or one-hot pixel
targets; a binary cross-entropy's input and target that no reshape lines up. PyTorch's own
messages ("Expected target size [4, 20], got [4, 7]"; "log_softmax_lastdim_kernel_impl not
implemented for 'Long'"; "mse_cpu not implemented for 'Long'") name none of these.
"""

from __future__ import annotations

import ast
import math
import re
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_reading import call_name, calls, wrapped
from .source import find_name, quoted_code

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["bce_fix", "cross_entropy_hint", "spatial_target_hint"]

_REGRESSION_LOSSES = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"})
_TARGET_SIZE = re.compile(r"Expected target size \[[\d, ]+\], got \[[\d, ]+\]")
_ONE_HOT_LONG = re.compile(r"Expected floating point type for target with class probabilities, got (\w+)")
_INTEGER_SCORES = re.compile(r"\"(?:log_)?softmax\w*\" not implemented for '(Long|Int|Bool|Byte)'")


def cross_entropy_hint(text: str, rec: Recorder, frame: FrameType | None) -> str | None:
    """The hint for ``text`` raised by a cross_entropy (nn.CrossEntropyLoss) call whose
    operands the tape saw; ``None`` for any other error."""
    if rec.failed_op is None or len(rec.failed_op[1]) < 2:
        return None
    if rec.failed_op[0].strip("_") in _REGRESSION_LOSSES:
        return _integer_regression(rec, frame)
    if rec.failed_op[0] != "cross_entropy":
        return None
    scores, target = rec.failed_op[1][:2]
    s, t = _named(scores, frame, "the scores"), _named(target, frame, "the target")
    if _TARGET_SIZE.search(text) and scores.dim() == 3 and target.dim() == 1 and len(target) == len(scores):
        n, steps, classes = scores.shape
        t = find_name(target, frame) or "target"
        return (
            f"{find_name(target, frame) or 'The target'} holds one class index per sequence, ({n},), and {s} is ({n}, {steps}, {classes}): scores at each "
            f"of {steps} steps, a sequence model's (batch, time, classes), which cross_entropy reads as {steps} "
            f"classes at {classes} positions. For one label per sequence score its last step: "
            f"F.cross_entropy({s}[:, -1], {t}), or take the RNN's out[:, -1] (or h_n[-1]) before the last layer."
        )
    if _TARGET_SIZE.search(text) and scores.dim() == 3 and target.dim() == 2:
        n, steps, classes = scores.shape
        written = _written_operands(rec, frame)
        sc = find_name(scores, frame) or written[0] or "scores"
        tc = find_name(target, frame) or written[1] or "target"
        if target.shape[1] != steps:  # (N, C, T) against (N, T'): the lengths differ, not the layout
            named, labelled, length = find_name(scores, frame), find_name(target, frame), target.shape[1]
            cut = f"{sc}[:, :, :{length}]" if classes > length else f"{tc}[:, :{classes}]"
            return (
                f"cross_entropy reads 3-D scores as (batch, classes, positions) against targets (batch, positions), "
                f"and they differ in length: the scores{f' ({named})' if named else ''} are ({n}, {steps}, {classes}), "
                f"{classes} positions, the targets{f' ({labelled})' if labelled else ''} {tuple(target.shape)}, "
                f"{length}. Make both from sequences of one length (a padded output is as long as its longest "
                f"sequence, or its total_length), or cut the longer, {cut}."
            )
        return (
            f"cross_entropy takes the classes in dim 1: scores (N, C, ...) with targets (N, ...). {s} is "
            f"({n}, {steps}, {classes}), a sequence model's (batch, time, classes), so it read {steps} classes "
            f"at {classes} positions. Move the classes to dim 1, F.cross_entropy({sc}.permute(0, 2, 1), {tc}), or "
            f"flatten both: F.cross_entropy({sc}.reshape(-1, {classes}), {tc}.reshape(-1))."
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


_SPATIAL_4D = "only batches of spatial targets supported (3D tensors) but got targets of dimension: 4"


def spatial_target_hint(text: str, rec: Recorder, frame: FrameType | None) -> str | None:
    """Per-pixel cross_entropy given its scores channel-last (N, H, W, C), or one-hot targets
    (N, H, W, C), read off the call's operands; ``None`` otherwise (a mask's channel of size 1
    keeps the setup hint)."""
    if rec.failed_op is None or rec.failed_op[0] != "cross_entropy" or len(rec.failed_op[1]) < 2:
        return None
    scores, target = rec.failed_op[1][:2]
    if scores.dim() != 4:
        return None
    _n, classes, height, width = scores.shape
    sc = find_name(scores, frame) or _written_operands(rec, frame)[0] or "scores"
    tc = find_name(target, frame) or _written_operands(rec, frame)[1] or "target"
    if (
        _SPATIAL_4D in text
        and target.dim() == 4
        and target.shape[1] != 1
        and target.shape[-1] == classes
        and tuple(target.shape[1:3]) == (height, width)
    ):
        return (
            f"For per-pixel classes cross_entropy takes scores (N, C, H, W) and targets (N, H, W) holding "
            f"each pixel's class index; {tc} is {tuple(target.shape)}, a one-hot vector of {classes} classes "
            f"per pixel (F.one_hot puts it last). Pass the indices: {tc}.argmax(-1) (or the labels one_hot "
            f"was made from), or, to keep them as class probabilities, "
            f"{tc}.permute(0, 3, 1, 2).float(), the scores' shape."
        )
    if (
        "size mismatch (got input:" in text
        and target.dim() == 3
        and tuple(scores.shape[:3]) == tuple(target.shape)
    ):
        return (
            f"cross_entropy takes the classes in dim 1: scores (N, C, H, W) with targets (N, H, W). {sc} is "
            f"{tuple(scores.shape)}, its {scores.shape[-1]} classes last (channel-last, as a model that ends "
            f"in a linear layer or a permute gives them), so it read {classes} classes at "
            f"{height} × {width} positions, which do not line up with {tc}'s {tuple(target.shape)}. Move the classes to dim 1: "
            f"F.cross_entropy({sc}.permute(0, 3, 1, 2), {tc})."
        )
    return None


def _integer_regression(rec: Recorder, frame: FrameType | None) -> str | None:
    """mse_loss (l1_loss, …) of a prediction and a target that both hold integers: told how the
    prediction was made where an argmax (argmin, round) made it, which has no gradient."""
    assert rec.failed_op is not None
    op, (pred, target) = rec.failed_op[0].strip("_"), rec.failed_op[1][:2]
    if pred.is_floating_point() or target.is_floating_point() or pred.is_complex() or target.is_complex():
        return None
    p, t = _named(pred, frame, "the prediction"), _named(target, frame, "the target")
    kind = str(pred.dtype).removeprefix("torch.")
    tid = rec.tensors.known(pred)
    at = rec.tensors.lines.get(tid) if tid is not None else None
    code = quoted_code(rec.statement_lines, at, 80) or ""
    picked = re.search(r"(?:([^\W\d][\w.]*)\.)?(argmax|argmin)\(\s*([^\W\d][\w.]*)?", code)
    if picked:
        # out.argmax(dim=1), or torch.argmax(out, dim=1)
        owner = picked.group(1) if picked.group(1) not in (None, "torch") else picked.group(3)
        scores, how, labels = owner or "scores", picked.group(2), find_name(target, frame) or "target"
        return (
            f"{op} compares floats, and {p} holds {kind} indices, made by {how} at line {at} ({code}): an index has "
            f"no gradient, so a loss of it could not train the model anyway. For class labels compute the loss from "
            f"the scores themselves, F.cross_entropy({scores}, {labels}); keep {how} for the accuracy, under "
            "torch.no_grad()."
        )
    return (
        f"{op} compares floats, and {p} and {t} both hold integers ({kind}). Convert the target, {t}.float(), "
        "and make the prediction a float computed from the model's output (a model's output is float already)."
    )


def _written_operands(rec: Recorder, frame: FrameType | None) -> tuple[str | None, str | None]:
    """The scores and the target as the line's cross_entropy call writes them (bracketed where
    a method call goes after them), or ``None`` each where the line shows no such call."""
    code = quoted_code(rec.statement_lines, frame.f_lineno if frame is not None else None, 10_000)
    found = calls(code)  # (outermost first: criterion(out.transpose(1, 2), y) before the transpose)
    named = [c for c in found if call_name(c) == "cross_entropy" and len(c.args) >= 2]
    call = next(iter(named or [c for c in found if len(c.args) >= 2]), None)
    if call is None:
        return None, None
    return wrapped(ast.unparse(call.args[0])), wrapped(ast.unparse(call.args[1]))


def _named(t: torch.Tensor, frame: FrameType | None, role: str) -> str:
    return find_name(t, frame) or role


def bce_fix(given: list[int], wanted: list[int]) -> str:
    """How to line up a binary cross-entropy's input of shape ``given`` and target ``wanted``."""
    if math.prod(given) == math.prod(wanted):
        return "reshape one of them to the other's shape"
    if (
        len(given) == len(wanted) + 1 > 2
        and given[0] == wanted[0]
        and given[2:] == wanted[1:]
        and given[1] > 1
    ):
        return (
            f"the input holds {given[1]} numbers per position (dim 1, channels) and the target one. For {given[1]} "
            "classes per pixel use cross_entropy, its target the class indices (.long()); for a binary mask give "
            "the last layer 1 output channel"
        )
    if len(given) == len(wanted) == 4 and given[:2] == wanted[:2]:
        return (
            f"their heights and widths differ, {given[2]}×{given[3]} against {wanted[2]}×{wanted[3]}: resize the "
            f"target to the output, F.interpolate(target, size=({given[2]}, {given[3]}), mode='nearest'), or make "
            "the model's output keep its input's size"
        )
    return (
        f"they hold different numbers of values ({math.prod(given)} and {math.prod(wanted)}), so no reshape lines "
        "them up: check where each shape comes from"
    )
