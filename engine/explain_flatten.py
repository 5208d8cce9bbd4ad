"""A batch flattened with ``x.view(-1, K)``: -1 picks the batch size, so sizes written for
another feature map cut the batch into the wrong number of rows.

``x.view(-1, 4 * 7 * 7)`` after a convolution whose output per sample is not 196 numbers
either fails (``shape '[-1, 196]' is invalid for input of size …``) or, where the total
divides, quietly makes more rows than samples, and the loss then finds more predictions
than targets. ``x.flatten(1)`` keeps the batch and makes the rest one row per sample.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import torch

from .source import without_comment

__all__ = ["rows_made_by_view", "view_sized_wrong"]

_VIEW_ROWS = re.compile(r"([^\W\d][\w.]*)\.(?:view|reshape)\(\s*-1\s*,\s*([\d\s*+()]+?)\s*\)")
# what makes feature maps, which a view(-1, K) flattens after
_FEATURE_MAPS = re.compile(r"Conv[123]d|conv[123]d|MaxPool|AvgPool|max_pool|avg_pool")
_INVALID = re.compile(r"shape '\[-1, (\d+)\]' is invalid for input of size (\d+)")


def rows_made_by_view(
    predictions: int, targets: int, source_lines: Sequence[str], line: int | None
) -> str | None:
    """For a loss that got ``predictions`` rows for ``targets`` targets: the last line before
    ``line`` that flattens with ``.view(-1, K)`` (or reshape), where ``K`` times the
    predictions is a whole number of features per target; said with the fix."""
    if predictions == targets or not targets or not any(_FEATURE_MAPS.search(text) for text in source_lines):
        return None  # a sequence model's view(-1, C) of (N, T, C) scores wants its targets viewed too
    last = min(line or len(source_lines), len(source_lines))
    for number in range(last, 0, -1):
        code = without_comment(source_lines[number - 1]).strip()
        found = _VIEW_ROWS.search(code)
        written = _int_of(found.group(2)) if found else None
        if found is None or not written or (written * predictions) % targets:
            continue
        name, per_sample = found.group(1), written * predictions // targets
        return (
            f"Line {number} ({code}) lets -1 make the batch size: each sample has {per_sample} numbers "
            f"there, not {written}, so the {targets} samples became {predictions} rows of {written}. "
            + _fix(name, per_sample)
        )
    return None


def view_sized_wrong(text: str, operands: Sequence[torch.Tensor], code: str | None) -> str | None:
    """``shape '[-1, K]' is invalid for input of size N`` for a batch (the op's operand, where
    known) whose samples hold another number of values than ``K``; ``code``: the line."""
    found = _INVALID.search(text)
    if found is None:
        return None
    written, size = int(found.group(1)), int(found.group(2))
    batch = next((t for t in operands if t.numel() == size and t.dim() >= 2), None)
    if batch is None:
        return None
    per_sample = size // batch.shape[0]
    shape = " × ".join(str(d) for d in batch.shape)
    viewed = _VIEW_ROWS.search(code or "")
    return (
        f"view(-1, {written}) needs a multiple of {written} numbers, and this batch, {shape}, holds {size}: "
        f"{per_sample} per sample ({' × '.join(str(d) for d in batch.shape[1:])}), so the sizes written "
        "were for another feature map. " + _fix(viewed.group(1) if viewed else "x", per_sample)
    )


def _fix(name: str, per_sample: int) -> str:
    return (
        f"Flatten each sample whole, {name} = {name}.flatten(1) (or {name}.view({name}.size(0), -1)), "
        f"and make the layer after it take {per_sample} features: nn.Linear({per_sample}, …)."
    )


def _int_of(text: str) -> int | None:
    """``4 * 7 * 7`` as a number: whole-number arithmetic only, else ``None``."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Add):
            left, right = value(node.left), value(node.right)
            return left * right if isinstance(node.op, ast.Mult) else left + right
        raise ValueError(node)

    try:
        return value(tree.body)
    except ValueError:
        return None
