"""Scores compared with integer class labels (scores-compared-to-labels).

``pred = out.max(1)[0]`` takes the highest scores (``max`` returns ``(values, indices)``),
and ``acc = (torch.sigmoid(logits) == y)`` compares probabilities: either way ``pred == y``
sets a floating-point score against an integer class label, and a score that is not a whole
number never equals one. The accuracy counted from it is about 0 whatever the model learned.
Nothing raises.

Told at the comparison: ``==`` (or ``!=``) of two tensors of one shape, one of an integer
dtype (the labels) and one floating-point with most of its values not whole numbers. A
float tensor of whole values (``out.argmax(1).float()``, a rounded or thresholded
prediction) is a class and stays silent; so are comparisons with a number.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import torch

from ..source import find_name, quoted_code

__all__ = ["scores_against_labels"]

_MAX_VALUES = re.compile(r"(\.max\([^()]*\))(\[0\]|\.values)")


def scores_against_labels(
    args: tuple[Any, ...],
    result: torch.Tensor,
    line: int | None,
    source_lines: Sequence[str],
    frame: FrameType | None,
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` for ``==``/``!=`` at snippet ``line`` of a float tensor of
    scores and an integer tensor of labels of its shape; ``None`` otherwise."""
    if len(args) < 2 or not all(isinstance(a, torch.Tensor) for a in args[:2]):
        return None
    a, b = args[0], args[1]
    if a.shape != b.shape or a.numel() < 2 or a.is_complex() or b.is_complex():
        return None
    if a.is_floating_point() and _is_labels(b):
        scores, labels, scores_left = a, b, True
    elif b.is_floating_point() and _is_labels(a):
        scores, labels, scores_left = b, a, False
    else:
        return None
    with torch.no_grad():
        values = scores.detach().float().flatten()
        values = values[torch.isfinite(values)]
        if values.numel() < 2:
            return None
        fractional = int((values != values.round()).sum())
        if fractional * 2 < values.numel():
            return None  # whole numbers: classes kept as floats
        matches = int((scores.detach() == labels).sum())
        unit = bool(((values >= 0) & (values <= 1)).all())
        example = f"{float(values[(values != values.round())][0]):.4g}"
    code = quoted_code(source_lines, line, sys.maxsize) or ""
    sides = _sides(code)
    score_text, label_text = (sides if scores_left else sides[::-1]) if sides else (None, None)
    score_name = find_name(scores, frame) or score_text or "the scores"
    label_name = find_name(labels, frame) or label_text or "the labels"
    n = scores.numel()
    fix = _fix(code, score_text, score_name, unit, line, source_lines)
    kind = "probabilities" if unit else "scores"
    quoted = quoted_code(source_lines, line)
    where = f"Line {line} ({quoted})" if quoted else f"Line {line}" if line else "A comparison"
    return (
        f"{score_name} ({kind}) compared with {label_name} (class labels): they never match",
        f"{where} compares {score_name}, {n} floating-point {kind} such as {example} ({fractional} of them "
        f"not whole numbers), with {label_name}, {n} class labels of dtype {str(labels.dtype).removeprefix('torch.')}. "
        f"A score that is not a whole number never equals a class index: {matches} of {n} are equal here, "
        "so an accuracy counted from it is about 0 whatever the model learned. Nothing raises.",
        fix,
    )


def _is_labels(t: torch.Tensor) -> bool:
    return not t.is_floating_point() and t.dtype is not torch.bool


def _sides(code: str) -> tuple[str, str] | None:
    """The source of the two sides of the one ``==`` (or ``!=``) in ``code``."""
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None
    compares = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq | ast.NotEq)
    ]
    if len(compares) != 1:
        return None
    return ast.unparse(compares[0].left), ast.unparse(compares[0].comparators[0])


def _fix(
    code: str,
    score_text: str | None,
    score_name: str,
    unit: bool,
    line: int | None,
    source_lines: Sequence[str],
) -> str:
    """The fix, in the snippet's code: the indices of a max, or the scores made classes."""
    made = _made_at(score_name, line, source_lines)
    inline = _MAX_VALUES.search(score_text or "")
    if made is not None and _MAX_VALUES.search(made):
        fixed = _MAX_VALUES.sub(
            lambda m: m.group(1) + ("[1]" if m.group(2) == "[0]" else ".indices"), made, 1
        )
        return (
            f"Take the indices, not the values: {fixed} (max returns (values, indices); the indices are the "
            "predicted classes), or argmax over the same dim."
        )
    if inline is not None and score_text:
        fixed = _MAX_VALUES.sub(
            lambda m: m.group(1) + ("[1]" if m.group(2) == "[0]" else ".indices"), code, 1
        )
        return f"Take the indices, not the values: {fixed} (max returns (values, indices))."
    threshold = "0.5" if unit else "0"
    if score_text and score_text in code:
        classes = f"({score_text} > {threshold}).long()"
        return f"Make the {'probabilities' if unit else 'scores'} classes first: {code.replace(score_text, classes, 1)}."
    return f"Make {score_name} classes first: ({score_name} > {threshold}).long(), or .argmax(1) of a score per class."


def _made_at(name: str, line: int | None, source_lines: Sequence[str]) -> str | None:
    """The code of the last line above ``line`` that binds ``name`` alone: ``pred = …``."""
    if not name.isidentifier() or line is None:
        return None
    binds = re.compile(rf"^\s*{re.escape(name)}\s*=[^=]")
    for at in range(min(line, len(source_lines)) - 1, 0, -1):
        if binds.match(source_lines[at - 1]):
            return quoted_code(source_lines, at, sys.maxsize)
    return None
