"""Errors that pass through gradwalk's wrappers leave with the traceback they have without it.

# NOTE [Errors leave without gradwalk's frames]
gradwalk wraps a few functions the snippet calls (``Tensor.backward``, ``torch.autograd.backward``
and ``grad``, a DataLoader's ``__next__``), and ``loss.backward()`` reaches PyTorch through the
tape mode, which ``Tensor.backward`` hands itself to with ``handle_torch_function``. An error
raised below (backward run twice, a snippet's hook that raises, a Dataset's ``__getitem__``)
then carried all of those frames: a snippet printing ``traceback.format_exc()`` read eleven
frames for ``y.backward()``, five of them gradwalk's, where PyTorch shows three. The wrapper the
snippet called drops, before re-raising, every frame of gradwalk's below it, and each hand-off
to the tape mode: PyTorch's ``handle_torch_function`` frame with the dispatching call above it
(the function's own first call, which then runs again under the mode). A hand-off to anything
else (a tensor subclass's own ``__torch_function__``, a snippet's own mode) stays, as it shows
without gradwalk. The error's type, message and the frames of the snippet and of PyTorch below
are as they were. The tape mode drops gradwalk's frames the same way as an op's error leaves it
(NOTE [Errors leave without the mode's frame] in tape.py).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from types import TracebackType

import torch

__all__ = ["drop_gradwalk_frames"]

_ENGINE_DIR = str(Path(__file__).parent)
_OVERRIDES_FILE = torch.overrides.__file__


def _gradwalks(tb: TracebackType) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(_ENGINE_DIR)


def drop_gradwalk_frames(exc: BaseException) -> None:
    """Drop gradwalk's frames, and each hand-off to the tape mode, from ``exc``'s traceback
    (NOTE [Errors leave without gradwalk's frames]). Called by a wrapper the snippet called,
    in its ``except`` block, which then re-raises with a bare ``raise`` (which adds no entry)."""
    kept: list[TracebackType] = []
    tb = exc.__traceback__
    while tb is not None:
        if not _gradwalks(tb):
            kept.append(tb)
        tb = tb.tb_next
    i = 0
    while i < len(kept):
        tb = kept[i]
        code = tb.tb_frame.f_code
        # a dispatch to the tape mode: the function's first call, handle_torch_function, then
        # (gradwalk's frames gone) the same function again
        if (
            code.co_filename == _OVERRIDES_FILE
            and code.co_name == "handle_torch_function"
            and 0 < i < len(kept) - 1
            and kept[i - 1].tb_frame.f_code is kept[i + 1].tb_frame.f_code
        ):
            del kept[i - 1 : i + 1]
            i -= 1
        else:
            i += 1
    for upper, lower in itertools.pairwise(kept):
        upper.tb_next = lower
    if kept:
        kept[-1].tb_next = None
    exc.__traceback__ = kept[0] if kept else None
