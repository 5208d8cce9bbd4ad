"""Scores ``(N, C, H, W)`` cut into rows of ``C`` by a reshape alone (reshape-instead-of-permute).

A segmentation (or any per-position) model's output ``(N, C, H, W)`` made into one row of
class scores per pixel for ``cross_entropy`` with ``logits.view(-1, C)``: the shapes fit
``y.view(-1)``, so nothing raises, but ``view`` keeps the numbers in their order, where the
class axis is dim 1, so row 0 is class 0's score at ``C`` neighbouring pixels, not the ``C``
scores of one pixel. ``logits.permute(0, 2, 3, 1).reshape(-1, C)`` moves the classes last
first; ``cross_entropy`` also takes the ``(N, C, H, W)`` scores as they are.

Told by :func:`axis_order.axes_reordered` at the reshape written on the snippet's line: a
floating-point input of three or more axes, whose dim 1 is not its last size and whose
positions (the axes after dim 1) are more than one, made into ``(-1, C)`` with ``C`` its
dim-1 size.
"""

from __future__ import annotations

import math

import torch

__all__ = ["class_axis_cut", "cuts_class_axis", "index_at", "index_text", "shape_text"]


def cuts_class_axis(before: tuple[int, ...], after: tuple[int, ...]) -> bool:
    """Whether a reshape of shape ``before`` into ``after`` makes ``(N, C, *positions)`` rows of
    ``C`` (``(N * positions, C)``), with more than one position and a last axis not as long as
    ``C``: the sizes alone, checked before the source is read (a flatten, ``(N, C * H * W)``,
    is not one)."""
    if len(before) < 3 or len(after) != 2:
        return False
    classes = before[1]
    return after[1] == classes >= 2 and math.prod(before[2:]) >= 2 and before[-1] != classes


def class_axis_cut(
    op: str,
    given: torch.Tensor,
    after: tuple[int, ...],
    line: int | None,
    code: str,
    call: str | None,
    name: str,
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` when ``op`` (``view`` or ``reshape``, written as ``call`` in
    snippet ``code`` at ``line``) made ``given`` (named ``name``), of shape ``(N, C, *positions)``,
    into ``after`` = ``(N * positions, C)``; ``None`` otherwise, and where the last axis is as
    long as dim 1 (the shapes cannot tell which axis holds the classes)."""
    before = tuple(int(n) for n in given.shape)
    if not cuts_class_axis(before, after):
        return None
    classes = before[1]
    order = (0, *range(2, len(before)), 1)
    permute = f".permute({', '.join(map(str, order))})"
    fixed = None
    if call is not None and call.startswith("."):
        fixed = code.replace(call, permute + call.replace(".view(", ".reshape(", 1), 1)
    quoted = f" ({code})" if len(code) <= 60 else ""
    first, last = index_at(0, before), index_at(classes - 1, before)
    meant_last = (0, classes - 1, *(0 for _ in before[2:]))
    return (
        f"{op} reorders no axis: {shape_text(before)} cut into {shape_text(after)}, classes mixed with positions",
        f"Line {line}{quoted} makes {name} of shape {shape_text(before)} into {shape_text(after)}: {after[0]} rows of "
        f"{classes} scores, but the {classes} classes are dim 1, not the last. view and reshape keep the "
        f"{given.numel():,} numbers in the order they are in and only cut them into the new shape; they never "
        f"move an axis. So row 0 holds {name}[{index_text(first)}] to {name}[{index_text(last)}] (class 0 at "
        f"{classes} neighbouring positions), where moving the classes last would give {name}[{index_text(first)}] to "
        f"{name}[{index_text(meant_last)}] (the {classes} scores of one position). Each row is scored against one "
        "pixel's label with another pixel's numbers, and the model trains on it all the same: nothing raises.",
        f"Move the class axis last before the {op}"
        + (f": {fixed}" if fixed else f": {permute}.reshape(-1, {classes})")
        + f", or give cross_entropy the {shape_text(before)} scores and the targets as they are "
        "((N, H, W) class indices): it takes the classes from dim 1.",
    )


def index_at(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index in ``shape`` of element ``flat`` in memory order (axis_order.py reads it too)."""
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


def index_text(index: tuple[int, ...]) -> str:
    """``(1, 0, 2)`` written as PyTorch indexes it: ``1, 0, 2``."""
    return ", ".join(map(str, index))


def shape_text(shape: tuple[int, ...]) -> str:
    """A shape written as a tuple: ``(8, 3, 4)``."""
    return f"({', '.join(map(str, shape))})"
