"""A snippet's own hooks on one saved tensor (``grad_fn._raw_saved_self.register_hooks``).

# NOTE [A snippet's hooks on one saved tensor]
PyTorch lets a snippet give one saved tensor a pack and an unpack hook of its own, after the
op saved it: ``y.grad_fn._raw_saved_self.register_hooks(pack, unpack)`` (the first example
of PyTorch's tutorial on saved-tensor hooks). A saved tensor takes one pair of hooks, and
while recording every saved tensor has gradwalk's (they count what the graph holds, NOTE
[Saved-tensor accounting] in memory.py), so the call raised "Calling register_hooks on a
saved tensor whose hooks have already been set", where it runs without gradwalk.

While recording, ``SavedTensor.register_hooks`` is wrapped: on a tensor gradwalk's pack hook
holds, it does what PyTorch does there. It calls the snippet's ``pack`` at once with the saved
tensor as PyTorch hands it over (sharing its memory, without autograd history), keeps what
``pack`` returned beside gradwalk's holder, and from then on gradwalk's unpack hook hands
back ``unpack(packed)`` (``SavedMemory._unpack``) without the version check, as PyTorch skips
it for a tensor with hooks. A second call raises PyTorch's own error, and anything else (a
tensor freed by backward, arguments that are not two callables, a saved tensor gradwalk does
not hold) goes to PyTorch's own method. What the graph holds is still counted from what was
saved, not from what ``pack`` kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .memory import _Held

__all__ = ["SnippetSavedHooks", "hooked_by_snippet"]

_SAVED_TENSOR: Any = torch._C._autograd.SavedTensor
_ALREADY_SET = (
    "Calling register_hooks on a saved tensor whose hooks have already been set. "
    "Hint: only one pair of hooks is allowed at a time."
)


def hooked_by_snippet(saved: Any) -> bool:
    """Whether ``saved`` (a ``SavedTensor``) has the snippet's own hooks, by
    :class:`SnippetSavedHooks`: reading it would run the snippet's ``unpack``. Asked of every
    saved tensor a node event describes: answered at once while no snippet has given any."""
    if not SnippetSavedHooks.given:
        return False
    held = _held_by_gradwalk(saved)
    return held is not None and held.snippet_hooks is not None


class SnippetSavedHooks:
    """Wraps ``SavedTensor.register_hooks`` between :meth:`install` and :meth:`remove`
    (NOTE [A snippet's hooks on one saved tensor])."""

    #: how many saved tensors a snippet gave hooks of its own, in this process
    given = 0

    def __init__(self) -> None:
        self._original: Callable[..., None] | None = None

    def install(self) -> None:
        original = _SAVED_TENSOR.register_hooks
        self._original = original

        def register_hooks(saved: Any, *args: Any, **kwargs: Any) -> None:
            held = _held_by_gradwalk(saved)
            if held is None or kwargs or len(args) != 2 or not all(callable(a) for a in args):
                return original(saved, *args, **kwargs)  # PyTorch's own answer
            if held.snippet_hooks is not None:
                raise RuntimeError(_ALREADY_SET)
            pack, unpack = args
            with torch._C.DisableTorchFunction():  # gradwalk's read, not an op of the snippet
                given = held.tensor.detach() if held.tensor.requires_grad else held.tensor
            held.snippet_hooks = (pack(given), unpack)
            SnippetSavedHooks.given += 1
            return None

        _SAVED_TENSOR.register_hooks = register_hooks

    def remove(self) -> None:
        if self._original is not None:
            _SAVED_TENSOR.register_hooks = self._original
            self._original = None


def _held_by_gradwalk(saved: Any) -> _Held | None:
    """gradwalk's holder of ``saved``, where its pack hook holds it (``None`` once freed)."""
    try:
        held = saved.data
    except RuntimeError:
        return None
    return held if isinstance(held, _Held) else None
