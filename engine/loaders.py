"""Batches from a ``torch.utils.data.DataLoader``, recorded as one op each.

# NOTE [Loader batches]
A DataLoader with ``num_workers=0`` (the default, and the app sandbox's only choice) makes
each batch on the snippet's own thread: the sampler's ``randperm``, one ``getitem`` per sample
and tensor, the collate's ``stack``. A batch of 32 pairs is 65 ops of the library's plumbing,
more than a small model's own, all on one line (``for xb, yb in loader:``), building no graph:
the tape of a training loop opened on a page of ``getitem X, 88 → X[88]``. While recording
in full detail, ``_BaseDataLoaderIter.__next__`` is wrapped: the ops that make the batch
still run through the tape mode (the snippet's own torch-function modes and tensor
subclasses see them as without gradwalk) but are not recorded, not counted and not shown to
the detectors (:attr:`LoaderBatches.making`, which the tape mode reads). The batch is then
recorded as one op, ``DataLoader`` (api ``DataLoader.__next__``), at the line that asked for
it, with the batch's tensors (in a tuple, list or dict, nested) as its outputs. Ops in a
snippet's own ``Dataset.__getitem__`` or ``collate_fn`` are part of making the batch.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.data.dataloader import _BaseDataLoaderIter

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["LoaderBatches"]


class _Making(threading.local):
    """How deep one thread is in making a loader's batch (0: not making one)."""

    depth = 0


def DataLoader() -> None:
    """A stand-in the tape's ``op_names`` reads as ``(DataLoader, DataLoader.__next__)``; never called."""


DataLoader.__qualname__ = "DataLoader.__next__"
DataLoader.__module__ = "torch.utils.data"


class LoaderBatches:
    """Wraps ``_BaseDataLoaderIter.__next__`` between :meth:`install` and :meth:`remove`
    (NOTE [Loader batches])."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._original: Any = None
        self._thread = 0
        #: per thread: nonzero while a batch is being made (the tape mode records nothing then)
        self.making = _Making()

    def install(self) -> None:
        original = _BaseDataLoaderIter.__next__
        self._original = original
        self._thread = threading.get_ident()
        rec = self._rec
        making = self.making
        record = self._record

        def __next__(iterator: _BaseDataLoaderIter) -> Any:
            if not (rec.active and rec.detail) or not self._recorded_here():
                return original(iterator)
            making.depth += 1
            try:
                batch = original(iterator)
            finally:
                making.depth -= 1
            if making.depth == 0:
                record(batch)
            return batch

        _BaseDataLoaderIter.__next__ = __next__  # type: ignore[method-assign,assignment]

    def remove(self) -> None:
        if self._original is not None:
            _BaseDataLoaderIter.__next__ = self._original  # type: ignore[method-assign]
            self._original = None

    def _recorded_here(self) -> bool:
        """Whether this thread's ops are the tape's: the recorder's, or a snippet's thread."""
        thread = threading.get_ident()
        return thread == self._thread or thread in self._rec.threads.recording

    def _record(self, batch: Any) -> None:
        rec = self._rec
        outputs: list[torch.Tensor] = []
        _tensors_of(batch, outputs)
        if not outputs or rec.in_optimizer:
            return
        try:
            with rec.serial, rec.mute():
                rec.on_op(DataLoader, [], outputs)
        except Exception:
            rec.observation_failed()  # the batch is the snippet's; only its record is lost


def _tensors_of(batch: Any, out: list[torch.Tensor]) -> None:
    """Append to ``out`` every tensor of ``batch``: a tensor, or tuples, lists and dicts of them, nested."""
    if isinstance(batch, torch.Tensor):
        out.append(batch)
    elif isinstance(batch, list | tuple):
        for item in batch:
            _tensors_of(item, out)
    elif isinstance(batch, dict):
        for item in batch.values():
            _tensors_of(item, out)
