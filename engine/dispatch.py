"""Keep the snippet's own ``TorchDispatchMode``\\ s from seeing gradwalk's tensor work.

# NOTE [The snippet's dispatch modes see only its own aten ops]
A snippet may enter a ``TorchDispatchMode`` of its own (one that prints each aten op, a
``FlopCounterMode``): it then sees every aten op run on the thread, gradwalk's included.
The tape mode's reads of each op's tensors, the ``detach`` of every tensor the pack hook
keeps an alias of, a backward's seed and loss (``ones_like``, ``item``) and the values the
backward walk reads showed among the snippet's ops, so it printed ops it never ran. Where
gradwalk works on tensors (muted work, the tape mode's record of an op, the saved-tensor
pack hook, the node hooks of the backward walk) the snippet's dispatch modes are taken off
the stack and put back after. With none on the stack, as nearly always, that costs one
call that reads the stack's length. One difference stays, PyTorch's own: with any
saved-tensor hooks installed (gradwalk's, NOTE [Saved-tensor accounting] in memory.py),
backward's unpacking of a saved tensor runs an ``aten.detach`` the mode sees.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

__all__ = ["modes_aside"]

_stack_len = torch._C._len_torch_dispatch_stack
_NOTHING = contextlib.nullcontext()  # reusable: nothing is made per call


def modes_aside() -> contextlib.AbstractContextManager[Any]:
    """A context manager that takes the snippet's dispatch modes off the stack for its block
    and puts them back after (NOTE [The snippet's dispatch modes see only its own aten ops]);
    a shared do-nothing one when there are none."""
    if _stack_len() == 0:
        return _NOTHING
    from torch.utils._python_dispatch import _disable_current_modes

    return _disable_current_modes()
