"""Probabilities compared with 0 (probability-thresholded-at-zero).

``pred = torch.sigmoid(out) > 0`` mixes up two thresholds: a logit is positive where its
probability is above 0.5, but a probability is above 0 everywhere. Every element of the
comparison is True, every sample is predicted positive, and an accuracy counted from it is
only the share of positive labels. Nothing raises.

Told at the comparison: ``>`` (either way round) of a tensor that ``sigmoid`` made (known by
identity, as loss_inputs.py knows a loss's input) and the number 0, wherever ops are
recorded (the iterations recorded in full, and the code after the loop, where an evaluation
usually is). A line that checks the values (``assert (p > 0).all()``) is left alone.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import torch

from ..source import find_name, quoted_code
from .loss_inputs import Made

__all__ = ["THRESHOLD_OPS", "thresholded_at_zero"]

# `probs > 0` and `0 < probs` both call Tensor.__gt__
THRESHOLD_OPS = frozenset({"gt", "__gt__", "greater"})
# a line that checks the values rather than predicting from them: `assert (p > 0).all()`
_A_CHECK = re.compile(r"\bassert\b|\.all\(|\ball\(")


def thresholded_at_zero(
    args: tuple[Any, ...],
    result: torch.Tensor,
    maker: Made | None,
    line: int | None,
    source_lines: Sequence[str],
    frame: FrameType | None,
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` when a comparison in :data:`THRESHOLD_OPS` of ``args[0]`` (made
    by ``maker``, or None) with the number 0 gave ``result``, on snippet ``line`` (in
    ``frame``); else None."""
    if maker is None or maker.op != "sigmoid" or len(args) < 2 or not _zero(args[1]):
        return None
    code = quoted_code(source_lines, line, sys.maxsize)
    if result.dtype != torch.bool or _A_CHECK.search(code or ""):
        return None
    op = maker.written or maker.op  # sigmoid, or as the snippet wrote it: torch.special.expit
    probs = args[0]
    found = find_name(probs, frame)
    name = found or f"{op}'s output"
    code = quoted_code(source_lines, line)
    where = f"Line {line} ({code})" if code else f"Line {line}"
    notes = [
        *(["a sigmoid"] if maker.written else []),
        *([f"line {maker.line}"] if maker.line is not None and maker.line != line else []),
    ]
    made = f" ({', '.join(notes)})" if notes else ""
    true = int(result.sum())
    count = f"{true:,} of {result.numel():,}" if true < result.numel() else f"all {result.numel():,}"
    # an output with no name is already named by its op ("sigmoid's output"): said once
    compared = f"{name}, the output of {op}{made}," if found else f"{name}{made}"
    message = (
        f"{where} compares {compared} with 0. {op} gives a number above 0 for "
        f"every input, so the comparison is True for {count} elements: every sample is predicted "
        "positive, and an accuracy counted from it is only the share of positive labels. Nothing raises."
    )
    fix = (
        f"Compare the probabilities with 0.5 ({name} > 0.5), or the logits that went into sigmoid "
        "with 0 (a logit is above 0 exactly where its probability is above 0.5)."
    )
    return f"{name} > 0 is True everywhere: a probability is never below 0", message, fix


def _zero(value: object) -> bool:
    """Whether ``value`` is the number 0, as a Python number or a one-element tensor."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value == 0
    return isinstance(value, torch.Tensor) and value.numel() == 1 and bool(value == 0)
