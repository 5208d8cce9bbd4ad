"""Put the tape mode on PyTorch's torch-function mode stack, and take it off, anywhere in it.

The recorder's (engine/recorder.py) only way onto the stack and off it.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["insert_mode", "remove_mode"]

# NOTE [The tape mode under the snippet's modes]
# Full recording, switched back on mid-run (a detail step, the end of a training loop), puts
# the tape mode back on PyTorch's torch-function mode stack. Pushed on top, it went above
# any mode the snippet had entered (``with torch.device("cpu"):`` around the training
# loop), and the snippet's ``with`` then popped the tape mode instead of its own: nothing
# after the block was recorded, and the snippet's device mode stayed on. The tape mode goes
# back where it was at the start, under the snippet's modes, and comes off from wherever
# it is; PyTorch's stack is a list that only pushes and pops at its top, so the modes above
# it are popped and pushed back around it.


def insert_mode(mode: TorchFunctionMode, at: int) -> None:
    """Put ``mode`` at position ``at`` of this thread's torch-function mode stack (0: its
    bottom), under the modes above it (NOTE [The tape mode under the snippet's modes])."""
    above = []
    while torch._C._len_torch_function_stack() > at:
        above.append(torch._C._pop_torch_function_stack())
    torch._C._push_on_torch_function_stack(mode)
    while above:
        torch._C._push_on_torch_function_stack(above.pop())


def remove_mode(mode: TorchFunctionMode) -> bool:
    """Take ``mode`` off this thread's torch-function mode stack wherever it is; False when it
    is not there (inside its own handler, PyTorch holds it off the stack until it returns)."""
    n = torch._C._len_torch_function_stack()
    at = next((i for i in range(n - 1, -1, -1) if torch._C._get_function_stack_at(i) is mode), None)
    if at is None:
        return False
    above = [torch._C._pop_torch_function_stack() for _ in range(n - 1 - at)]
    torch._C._pop_torch_function_stack()
    while above:
        torch._C._push_on_torch_function_stack(above.pop())
    return True
