"""Hints for nn.CTCLoss (and F.ctc_loss), whose arguments are
``(log_probs (T, N, C), targets, input_lengths (N,), target_lengths (N,))``:

- log_probs with the batch first, ``(N, T, C)`` as a batch_first model gives it: transpose;
- input_lengths or target_lengths of another count than the batch;
- an input length longer than log_probs' time steps (a model that shortens time).

Each names the snippet's tensors and their shapes; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from types import FrameType

import torch

from .explain_reading import call_name, calls, literal
from .source import bound_to, is_module

__all__ = ["ctc_hint"]

_COUNT = re.compile(r"(input|target)_lengths must be of size batch_size")
_TOO_LONG = re.compile(r"Expected input_lengths to have value at most (\d+), but got value (\d+)")


def ctc_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``text`` at a line reading ``code`` (in ``frame``) that the module's
    docstring lists; ``None`` for any other error."""
    count, too_long = _COUNT.search(text), _TOO_LONG.search(text)
    if not count and not too_long:
        return None
    args = _ctc_arguments(code, frame)
    if args is None:
        return None
    names, values = args
    log_probs = values[0]
    if not isinstance(log_probs, torch.Tensor) or log_probs.dim() != 3:
        return None
    steps, batch, classes = log_probs.shape
    lp = names[0]
    if too_long:
        return (
            f"input_lengths says how many of {lp}'s time steps each sequence uses, and {lp} is {tuple(log_probs.shape)}, "
            f"(T, N, C): {steps} steps, and one length is {too_long.group(2)}. Give the lengths after the model: "
            "a model that shortens time (a strided convolution, pooling) needs the input lengths shortened the same "
            f"way; for sequences that fill every step, torch.full(({batch},), {steps})."
        )
    which = 2 if count and count.group(1) == "input" else 3
    given = values[which]
    length = len(given) if isinstance(given, torch.Tensor | list | tuple) and not _scalar(given) else None
    if length == steps and length != batch:
        return (
            f"CTCLoss takes log_probs as (time, batch, classes), and {lp} is {tuple(log_probs.shape)}: read that way it "
            f"has a batch of {batch}, and the {length} {names[which]} match dim 0, so {lp} has its batch first, as a "
            f"batch_first model gives it. Pass {lp}.transpose(0, 1) ((T, N, C) = ({batch}, {steps}, {classes}))."
        )
    has = f"{names[which]} has {length}" if length is not None else f"{names[which]} has another count"
    return (
        f"CTCLoss takes one input length and one target length per sequence, and {lp} {tuple(log_probs.shape)} holds a "
        f"batch of {batch} (dim 1 of (T, N, C)), where {has}. Give one per sequence: "
        f"torch.full(({batch},), {steps}) for input lengths when every sequence fills all {steps} steps."
    )


def _scalar(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() == 0


def _ctc_arguments(code: str | None, frame: FrameType | None) -> tuple[list[str], list[object]] | None:
    """The four arguments of the line's CTC loss call, as written and as bound in ``frame``."""
    for call in calls(code):
        called = bound_to(ast.unparse(call.func), frame)
        is_ctc = isinstance(called, torch.nn.CTCLoss) if is_module(called) else call_name(call) == "ctc_loss"
        if not is_ctc or len(call.args) < 4:
            continue
        names = [ast.unparse(a) for a in call.args[:4]]
        return names, [literal(name, frame) for name in names]
    return None
