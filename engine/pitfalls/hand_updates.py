"""Gradients left in ``.grad`` across updates made by hand (missing-zero-grad, with no optimizer).

A loop that steps by hand (``with torch.no_grad(): w -= lr * w.grad``) must clear ``.grad``
itself (``w.grad.zero_()`` or ``w.grad = None``); without it each backward() adds into the
gradient the last update already used, so every update follows the sum of all past
gradients. Seen in a walk recorded in full, as AccumulateGrad adds into a leaf's ``.grad``:
that gradient is the very tensor the previous backward left (same object, same version:
nothing cleared or replaced it), yet the leaf itself changed since (an update: a new version,
or, for an update through ``.data``, which keeps the version, a new sum of its elements).
Adding into a gradient with no update in between is deliberate accumulation, and is not
flagged; nor is adding into one that holds only zeros (``w.grad.data.zero_()`` clears it
without a new version). Optimizer steps are missing-zero-grad's own business
(stale_grads.py); this one looks only while no optimizer has stepped.

Such a sum is said only once an update has used it: at the next accumulation, the leaf changed
again since the sum was made and nothing cleared it. A GAN stepped by hand in the DCGAN order
makes the sum and never uses it: the generator's backward() adds into the gradients the
discriminator's update has just used, and the next iteration clears the discriminator's
before its own backward() (``p.grad.data.zero_()`` or ``p.grad = None`` per network).
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Sequence
from typing import NamedTuple

import torch

from ..source import line_matching, quoted_code
from ..values import dispatches_to_python
from .stale_grads import zeroed

__all__ = ["HandUpdates", "left_in_grad_by_hand"]


class _After(NamedTuple):
    """A leaf right after an accumulation into its ``.grad``."""

    leaf: weakref.ref[torch.Tensor]
    grad: weakref.ref[torch.Tensor]
    grad_version: int
    version: int
    total: float  # the sum of its elements: an update through .data leaves the version as it was
    stale: bool  # what .grad holds is a sum with a gradient an update had already used


class HandUpdates:
    """What each leaf's ``.grad`` held after the last accumulation into it, and the leaf then,
    held weakly."""

    def __init__(self) -> None:
        self._after: dict[int, _After] = {}
        self._adding_to_stale: set[int] = set()  # leaves whose accumulation now adds into a stale sum

    def stale(self, leaf: torch.Tensor) -> bool:
        """Whether AccumulateGrad is about to add into a ``.grad`` of ``leaf`` left untouched
        since the last accumulation, while ``leaf`` changed in between, and an update already
        used such a gradient: the last accumulation had added into one, and ``leaf`` changed
        since it. The first such accumulation is only noted (it is said once an update uses it)."""
        self._adding_to_stale.discard(id(leaf))
        entry = self._after.get(id(leaf))
        if entry is None or entry.leaf() is not leaf:
            return False
        grad = leaf.grad
        if grad is None or grad is not entry.grad() or grad._version != entry.grad_version:
            return False  # cleared, replaced or zeroed since
        if zeroed(grad):
            return False  # zeroed through .data, which keeps the version
        updated = leaf._version != entry.version or not _same(_total(leaf), entry.total)
        if updated and entry.stale:
            return True
        if updated or entry.stale:
            self._adding_to_stale.add(id(leaf))
        return False

    def accumulated(self, leaf: torch.Tensor) -> None:
        """Remember ``leaf``'s ``.grad`` and ``leaf`` itself right after an accumulation."""
        grad = leaf.grad
        stale = id(leaf) in self._adding_to_stale
        self._adding_to_stale.discard(id(leaf))
        if grad is None:
            self._after.pop(id(leaf), None)
        else:
            self._after[id(leaf)] = _After(
                weakref.ref(leaf), weakref.ref(grad), grad._version, leaf._version, _total(leaf), stale
            )


def _total(t: torch.Tensor) -> float:
    """The sum of ``t``'s elements (of their real parts), NaN where it cannot be read (a meta
    tensor) or must not be (one whose ops run the snippet's ``__torch_dispatch__``): two NaNs
    count as the same."""
    if dispatches_to_python(t):
        return math.nan
    try:
        if t.layout == torch.strided and not t.is_nested and t.numel() == 1:
            # one number, read as its sum reads (-0.0 sums to 0.0), without the sum's 3 us
            return float(t.item().real) + 0.0
        total = t.detach().sum()
        return float(total.real if total.is_complex() else total)
    except (RuntimeError, NotImplementedError):
        return math.nan


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def left_in_grad_by_hand(
    name: str, backward_line: int | None, source_lines: Sequence[str]
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for ``name`` (a leaf updated by hand) whose ``.grad`` the
    backward() at ``backward_line`` adds into while it still holds the last update's gradient."""
    update = _update_line(name, source_lines)
    code = quoted_code(source_lines, update) if update else None
    changed = f" (line {update}: {code})" if code else f" (line {update})" if update else ""
    return (
        "Gradients from the previous update are still in .grad",
        f"This backward() adds its gradient to the one {name}.grad still holds from the backward() before, "
        f"though {name} was updated in between{changed}: .grad accumulates with +=, and nothing clears it. "
        "Each update then follows the sum of all past gradients, so the loss falls slowly, oscillates or "
        "grows.",
        f"Clear the gradient after each update, inside the same no_grad block: {name}.grad.zero_() (or "
        f"{name}.grad = None).",
    )


def _update_line(name: str, source_lines: Sequence[str]) -> int | None:
    """The first line that changes ``name`` in place by hand (``w -= …``, ``w.sub_(…)``,
    ``w.data -= …``)."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}(?:\.data)?\s*(?:-=|\+=|\.sub_\(|\.add_\()")
    found = line_matching(source_lines, pattern)
    return found[0] if found else None
