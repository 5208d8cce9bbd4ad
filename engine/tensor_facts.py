"""Facts of a tensor read as the trace writes them, and reads PyTorch may refuse.

``dtype_name`` and ``device_name`` cache the trace's names (``"float32"``, ``"cpu"``);
``autograd_of`` and ``version_of`` read ``grad_fn``/``is_leaf`` and ``_version``, which
raise for some tensors (a view whose base changed under no_grad, an inference tensor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from torch.autograd.graph import Node

__all__ = ["DEVICE_NAMES", "DTYPE_NAMES", "autograd_of", "device_name", "dtype_name", "version_of"]

# the names given so far (a hot path reads them before calling the functions below)
DTYPE_NAMES: dict[torch.dtype, str] = {}
DEVICE_NAMES: dict[torch.device, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """Return the trace's name of ``dtype`` (``"float32"``)."""
    name = DTYPE_NAMES.get(dtype)
    if name is None:
        name = DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def device_name(device: torch.device) -> str:
    """Return the trace's name of ``device`` (``"cpu"``, ``"cuda:0"``)."""
    name = DEVICE_NAMES[device] = str(device)
    return name


def autograd_of(t: torch.Tensor) -> tuple[Node | None, bool] | None:
    """``(t.grad_fn, t.is_leaf)``, or ``None`` where PyTorch refuses to say: a view made under
    no_grad whose base then changed in place raises on both reads (only on a read: a snippet
    that never reads them goes on), so gradwalk must not read them bare."""
    try:
        return t.grad_fn, t.is_leaf
    except RuntimeError:
        return None


def version_of(t: torch.Tensor) -> int | None:
    """``t._version``, or ``None`` for a tensor without a version counter (an inference tensor)."""
    try:
        return t._version
    except RuntimeError:
        return None
