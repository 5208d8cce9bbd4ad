"""gradwalk's own tensor work, kept off the tape: the context manager behind ``Recorder.mute``."""

from __future__ import annotations

import threading
from typing import Any

import torch

from .dispatch import modes_aside

_dispatch_modes = torch._C._len_torch_dispatch_stack

__all__ = ["Mute"]


class _Depth(threading.local):
    """One thread's depth in gradwalk's own work, with the guards its outermost mute entered."""

    count = 0
    guard: Any = None
    modes: Any = None


class Mute:
    """The context manager behind :meth:`Recorder.mute` (nests: it counts).

    # NOTE [Muted work skips the mode]
    # The outermost mute also switches ``__torch_function__`` handling off for the thread
    # (``torch._C.DisableTorchFunction``), so gradwalk's own tensor calls go straight to
    # PyTorch instead of through the tape mode's Python handler only to be waved through:
    # with the mode on the stack, ``t.shape`` cost 3.2 us instead of 0.2 and ``t.sum()``
    # 7.6 us instead of 2.5 (an optimizer step's norms, a backward's loss, the detectors).
    # Tensor subclasses' own handlers are skipped there too: gradwalk only reads them.
    """

    # Per thread (NOTE [Threads] in threads.py): the guard switches handling off for the
    # thread that entered it, and a snippet's thread recording while gradwalk works on
    # another thread is not muted by that work.
    __slots__ = ("_thread",)

    def __init__(self) -> None:
        self._thread = _Depth()

    def count(self) -> int:
        """How deep this thread is in gradwalk's own work (0: not muted)."""
        return self._thread.count

    def __enter__(self) -> None:
        here = self._thread
        count = here.count + 1
        here.count = count
        if count == 1:
            here.guard = torch._C.DisableTorchFunction()
            here.guard.__enter__()
            # and the snippet's dispatch modes (see dispatch.py), where it has any: most mutes
            # (two a node of each backward walk) meet none, and skip modes_aside's do-nothing
            if _dispatch_modes():
                here.modes = modes_aside()
                here.modes.__enter__()

    def __exit__(self, *exc: object) -> None:
        here = self._thread
        here.count -= 1
        if here.count == 0:
            modes, here.modes = here.modes, None
            if modes is not None:
                modes.__exit__(None, None, None)
            guard, here.guard = here.guard, None
            guard.__exit__(None, None, None)
