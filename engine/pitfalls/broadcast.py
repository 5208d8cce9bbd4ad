"""Which ops pair a column with a vector, broadcasting n values into n×n (broadcast-in-loss)."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from ..source import find_name, quoted_code, snippet_frame

__all__ = [
    "BROADCAST_OPS",
    "COMPARISON_OPS",
    "BroadcastInLoss",
    "broadcast_in_comparison",
    "broadcast_in_loss",
]

BROADCAST_OPS = frozenset(
    {
        "sub",
        "__sub__",
        "__rsub__",
        "add",
        "__add__",
        "__radd__",
        "mul",
        "__mul__",
        "__rmul__",
        "div",
        "__truediv__",
        "__rtruediv__",
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
    }
)
# the element-wise losses: each compares a prediction with the target at the same position
_LOSS_FUNCTIONS = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"})
# an accuracy's comparison: (pred == y).float().mean()
COMPARISON_OPS = frozenset({"eq", "__eq__", "ne", "__ne__"})
# a vector made a column: s[:, None], s[..., None], s.unsqueeze(1), s.view(-1, 1), s[:, np.newaxis]
_COLUMN_OF = re.compile(
    r"([^\W\d][\w.]*)(?:\[[^\[\]]*\b(?:None|newaxis)\s*\]|\.unsqueeze\(\s*(?:1|-1)\s*\)"
    r"|\.(?:view|reshape)\(\s*-1\s*,\s*1\s*\))"
)

# a column made of anything on the line, torch.arange(n)[:, None] too
_MADE_COLUMN = re.compile(
    r"\[[^\[\]]*\b(?:None|newaxis)\s*\]|\.unsqueeze\(\s*(?:1|-1)\s*\)|\.(?:view|reshape)\(\s*-1\s*,\s*1\s*\)"
)


def _pairs_on_purpose(code: str | None) -> bool:
    """Whether ``code`` makes a vector a column and combines it with that same vector
    (``s[:, None] - s``: every pair of its values, as a ranking loss or a distance matrix
    wants), rather than with another tensor it was meant to match."""
    if code is None:
        return False
    for made in _COLUMN_OF.finditer(code):
        rest = code[: made.start()] + code[made.end() :]
        if re.search(rf"(?<![\w.]){re.escape(made.group(1))}(?![\w.(\[])", rest):
            return True
    return False


def _same_values(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether ``x`` and ``y`` are views of the same numbers (``y_col = y.view(-1, 1)`` made on
    a line above, then ``y_col == y``: every pair of one vector's values, on purpose)."""
    try:
        return (
            x.numel() == y.numel()
            and x.data_ptr() == y.data_ptr()
            and x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
        )
    except (RuntimeError, NotImplementedError):  # a tensor without storage (meta, a subclass's)
        return False


class BroadcastInLoss(NamedTuple):
    """The report of one op that broadcast a column of n against a vector of n."""

    title: str
    message: str
    fix: str


def broadcast_in_loss(
    name: str, args: tuple[Any, ...], result: torch.Tensor, source_lines: Sequence[str], line: int | None
) -> BroadcastInLoss | None:
    """Return the report for op ``name`` (in :data:`BROADCAST_OPS`) when its first two
    operands are a column ``(n, 1)`` and a vector ``(n,)`` (either order) and its ``result``
    requires grad, else ``None``; an element-wise loss function (``l1_loss``, ``mse_loss``, …)
    is also told for ``(n, 1, *rest)`` against ``(n, *rest)`` (a ``(T, 1, 2)`` prediction and
    ``(T, 2)`` targets, broadcast to ``(T, T, 2)``). An arithmetic op on a snippet ``line``
    that pairs a vector with itself made a column (``s[:, None] - s``: all pairs, on purpose)
    is not one. Called from within the op, so the snippet is on the stack (the fix names its
    tensors)."""
    if len(args) < 2 or not result.requires_grad:
        return None
    x, y = args[0], args[1]
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
        return None
    a, b = x.shape, y.shape
    is_loss = name.strip("_") in _LOSS_FUNCTIONS
    if not (_column_of(a, b, any_rank=is_loss) or _column_of(b, a, any_rank=is_loss)):
        return None
    if not is_loss and (
        _pairs_on_purpose(quoted_code(source_lines, line, sys.maxsize)) or _same_values(x, y)
    ):
        return None
    n = a[0]
    # not result.shape: a loss function (mse_loss, l1_loss) reduces to a scalar
    shape = tuple(torch.broadcast_shapes(a, b))
    column_first = len(a) > len(b)
    rest = tuple(a[2:]) if column_first else tuple(b[2:])
    if rest:
        got = f"{n} predictions of shape {tuple(a)} with {n} targets of shape {tuple(b)}"
        pairs = "every prediction with every target"
        each = int(torch.Size(rest).numel())
        terms = f"{'×'.join(str(size) for size in shape)} = {n * n * each} terms instead of {n * each}"
    else:
        got, pairs = _broadcast_operands(name.strip("_"), column_first=column_first, n=n)
        terms = f"{n}×{n} = {n * n} terms instead of {n}"
    return BroadcastInLoss(
        f"Shapes {tuple(a)} and {tuple(b)} broadcast to {shape}",
        f"This {name.strip('_')} combines {got}. Broadcasting silently pairs {pairs}, giving "
        f"{terms}; a loss averages them all, so the model learns to predict "
        "the mean and no error is raised.",
        _broadcast_fix(x if column_first else y, y if column_first else x, axis=1 if rest else -1),
    )


def _column_of(a: torch.Size, b: torch.Size, *, any_rank: bool = False) -> bool:
    """Whether shape ``a`` is ``b`` with a size-1 axis put in after its first: ``(n, 1)`` of
    ``(n,)``, and where ``any_rank``, ``(n, 1, *rest)`` of ``(n, *rest)`` too; n above 1."""
    if len(a) != len(b) + 1 or len(a) < 2 or a[1] != 1 or not a[0] == b[0] > 1:
        return False
    return len(a) == 2 or (any_rank and tuple(a[2:]) == tuple(b[1:]))


def _broadcast_operands(op: str, *, column_first: bool, n: int) -> tuple[str, str]:
    """What a broadcast-in-loss op got, first operand first, and what broadcasting pairs: a
    loss function's operands are its predictions and targets (``mse_loss(input, target)``);
    an operator's are just values, as which side holds the predictions is the snippet's
    choice (``pred - y``, ``y - pred``)."""
    if op in _LOSS_FUNCTIONS:
        first, second = "predictions", "targets"
        pairs = "every prediction with every target"
    else:
        first = second = "values"
        pairs = "every value of the column with every value of the vector"
    column, vector = f"a column of {n} {{}} ({n}, 1)", f"a vector of {n} {{}} ({n},)"
    got = f"{(column if column_first else vector).format(first)} with {(vector if column_first else column).format(second)}"
    return got, pairs


def _broadcast_fix(column: torch.Tensor, vector: torch.Tensor, *, axis: int = -1) -> str:
    """The broadcast-in-loss fix, with the snippet's names for the column and the vector
    where its innermost frame binds them (``pred.squeeze(-1)``), else in words; ``axis``: the
    size-1 axis of the column (1 for ``(n, 1, *rest)``)."""
    frame, _ = snippet_frame()
    names = [find_name(t, frame) for t in (column, vector)]
    squeeze = f"{names[0]}.squeeze({axis})" if names[0] else f".squeeze({axis}) the column"
    unsqueeze = f"{names[1]}.unsqueeze({axis})" if names[1] else f".unsqueeze({axis}) the vector"
    return f"Make the shapes match: {squeeze} (or {unsqueeze}) before the subtraction or loss."


def broadcast_in_comparison(
    args: tuple[Any, ...], result: torch.Tensor, source_lines: Sequence[str], line: int | None
) -> BroadcastInLoss | None:
    """Return the report for ``==`` (or ``!=``) of a column ``(n, 1)`` and a vector ``(n,)``,
    either order, else ``None``: every prediction compared with every label, n×n results, so
    an accuracy counted from them is off (it can pass 1). A column made on snippet ``line``
    itself (``y[:, None] == y``, ``y.unsqueeze(1) == torch.arange(10)``: a mask of pairs or a
    one-hot encoding, on purpose) is not one. Called from within the op."""
    if len(args) < 2 or not (isinstance(args[0], torch.Tensor) and isinstance(args[1], torch.Tensor)):
        return None
    a, b = args[0].shape, args[1].shape
    column_first = len(a) == 2 and len(b) == 1 and a[1] == 1 and a[0] == b[0] > 1
    if not column_first and not (len(b) == 2 and len(a) == 1 and b[1] == 1 and b[0] == a[0] > 1):
        return None
    if _MADE_COLUMN.search(quoted_code(source_lines, line, sys.maxsize) or "") or _same_values(
        args[0], args[1]
    ):
        # the column made on the line itself (y.unsqueeze(1) == torch.arange(10), q[:, None] == g):
        # a one-hot encoding or a matrix of pairs, on purpose; the accuracy's column comes from
        # elsewhere (argmax(dim=1, keepdim=True), a model's (N, 1) output)
        return None
    n = a[0]
    column, vector = (args[0], args[1]) if column_first else (args[1], args[0])
    frame, _ = snippet_frame()
    names = [find_name(t, frame) for t in (column, vector)]
    squeeze = f"{names[0]}.squeeze(1)" if names[0] else ".squeeze(1) the column"
    unsqueeze = f"{names[1]}.unsqueeze(1)" if names[1] else ".unsqueeze(1) the vector"
    return BroadcastInLoss(
        f"Shapes {tuple(a)} and {tuple(b)} broadcast to {tuple(result.shape)} in a comparison",
        f"This comparison pairs a column of {n} ({n}, 1) with a vector of {n} ({n},): broadcasting "
        f"compares every value of one with every value of the other, {n}×{n} = {n * n} results instead of "
        f"{n}. An accuracy counted from them ((pred == y).sum() / len(y)) is wrong, and can pass 1; no "
        "error is raised.",
        f"Make the shapes match before comparing: {squeeze} (or {unsqueeze}); argmax(dim=1) without "
        "keepdim=True gives the vector of predicted classes.",
    )
