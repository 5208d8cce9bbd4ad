"""Attribute writes the tape records as ops: ``w.requires_grad = True``, ``w.data = other``.

# NOTE [Attribute writes]
# The tape mode sees a tensor's attribute written (the property's ``__set__``), and passes
# most through (``w.grad = None``: a ``.grad`` is met when an op reads it). Two change what
# the trace said of a tensor it knows, with no op on it:
# - ``w.requires_grad = True`` made ``w`` a leaf that requires grad, its ``.grad`` filled by
#   backward, while its ``tensor`` event still said it did not (the graph drew it as a plain
#   input). It is recorded as ``w.requires_grad_(True)`` is: op ``requires_grad``, in place,
#   ``w``'s new version saying ``requires_grad``.
# - ``w.data = other`` swaps ``w``'s memory (old tutorials' ``w.data = w.data - lr * w.grad``),
#   perhaps its shape and dtype too, and the next op read ``w``'s old values and shape. It
#   is op ``set_data`` (api ``Tensor.data``): ``other`` in, ``w``'s new version out. The
#   write ``w.data -= …`` ends with (``w.data = <w.data, changed in place>``) hands ``w``
#   its own memory back: nothing changes, nothing is recorded (the in-place op made ``w``'s
#   new version: NOTE [Changed through .data] in tensors.py).
# An uninitialized parameter of a lazy module (``nn.LazyLinear``) is left alone: its first
# forward materializes it with ``self.data = torch.empty(…)``, and it has no shape to read
# before that write.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.parameter import is_lazy

from .tape import name_op
from .values import same_view

__all__ = ["attribute_write_op"]


def set_data() -> None:
    """A stand-in the tape's ``op_names`` reads as ``(set_data, Tensor.data, in place)``; never called."""


name_op(set_data, "set_data", "Tensor.data", inplace=True)


def attribute_write_op(attribute: str, t: Any, value: Any) -> tuple[Any, ...] | None:
    """``(func, inputs, outputs, args)`` for :meth:`Recorder.on_op` to record ``t.<attribute>
    = value`` as NOTE [Attribute writes] says, read before the write runs (after it, ``t``
    and ``value`` share their memory); ``None`` when it is not recorded."""
    if not isinstance(t, torch.Tensor) or is_lazy(t):
        return None  # (a lazy module's parameter, being materialized: it has no shape to read yet)
    if attribute == "requires_grad":
        return (torch.Tensor.requires_grad_, [t], [t], (t, value))
    if attribute == "data" and isinstance(value, torch.Tensor) and not same_view(t, value):
        return (set_data, [value, t], [t], (t, value))
    return None
