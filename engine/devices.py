"""Which device names a recording can be asked for: ``cpu``, ``cuda`` or ``cuda:N``.

Imports no torch until a CUDA device is checked, so the server's process (which never
imports torch) can use :data:`DEVICE_NAME`.
"""

from __future__ import annotations

import re

__all__ = ["DEVICE_NAME", "device_problem"]

DEVICE_NAME = re.compile(r"^(cpu|cuda(:\d{1,2})?)$")


def device_problem(device: str) -> str | None:
    """Why a recording cannot run on ``device`` here (a name that is none of the above, or
    CUDA on a machine where PyTorch finds no GPU); ``None`` where it can."""
    if not DEVICE_NAME.match(device):
        return f"expected cpu, cuda or cuda:N: {device!r}"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return "CUDA is not available here (no GPU was found); record on cpu"
    return None
