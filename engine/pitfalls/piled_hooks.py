"""A gradient hook registered anew on every iteration (hook-registered-in-loop).

``w.register_hook(fn)`` adds a hook to ``w`` for good: it stays until its handle's
``remove()``. On a leaf (a parameter, which outlives the loop) a ``register_hook`` inside the
training loop adds one more hook each iteration, and each backward() runs them all in a row,
each on the gradient the one before returned: a hook that clips or scales the gradient acts
k times by the k-th iteration. Told by a leaf that holds two or more hooks, two of them
registered from the same line and not removed. A hook on a tensor the loop makes afresh (``h =
model(x)``, then ``h.register_hook``) is one per tensor and is not flagged.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import torch

from ..explain_seed import name_before

__all__ = ["PiledHooks", "still_held"]


class PiledHooks:
    """Counts the hooks each leaf got from each snippet line; see the module's docstring."""

    def __init__(self) -> None:
        # id(leaf) -> (a weak reference that tells a reused id apart, {line: its hooks' handle ids})
        self._hooked: dict[int, tuple[weakref.ref[torch.Tensor], dict[int, list[int]]]] = {}

    def registered(
        self, tensor: torch.Tensor, line: int | None, handle: object, source_lines: Sequence[str]
    ) -> tuple[str, str, str] | None:
        """Look at ``tensor.register_hook(…)`` just run from ``line`` (``handle``: what it
        returned); return ``(title, message, fix)`` when the hooks the same line registered on
        this leaf before are still on it."""
        if line is None or not tensor.is_leaf:
            return None
        entry = self._hooked.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            entry = (weakref.ref(tensor), {})
            self._hooked[id(tensor)] = entry
        held = still_held(entry[1], line, getattr(tensor, "_backward_hooks", None) or {}, handle)
        if held < 2:
            return None  # the first, or the one before was removed (h.remove() each iteration)
        code = source_lines[line - 1] if 0 < line <= len(source_lines) else None
        name = name_before(".register_hook(", code) or "this tensor"
        return (
            f"register_hook runs on every iteration: the hooks on {name} pile up",
            f"{name}.register_hook(…) adds a hook that stays until its handle's remove(), and {name} "
            f"outlives the loop: each pass through line {line} adds one more, and after its second {name} "
            f"holds {held}. "
            "Every backward() runs them all in a row, each on the gradient the one before returned, so "
            "a hook that clips or scales the gradient acts k times by the k-th iteration, and the "
            "updates change as the run goes on.",
            f"Register the hook once, above the loop; or keep its handle, h = {name}.register_hook(…), "
            "and call h.remove() at the end of each iteration.",
        )


def still_held(kept: dict[Any, list[int]], key: Any, hooks: dict[int, Any], handle: object) -> int:
    """How many hooks registered under ``key`` (a line, or a line and a method) are on their
    owner now, whose hook dict is ``hooks``, counting the one ``handle`` just added; ``kept``
    (key -> their handle ids) is brought up to date (``h.remove()`` takes one off)."""
    mine = [i for i in kept.get(key, []) if i in hooks]
    hook_id = getattr(handle, "id", None)
    if isinstance(hook_id, int):
        mine.append(hook_id)
    kept[key] = mine
    return len(mine)
