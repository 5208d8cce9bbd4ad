"""The runner: warm, sandboxed worker processes that run snippets and stream their events.

The server imports :class:`WorkerPool` from here; nothing on this side imports torch.
Only ``runner.worker`` (run in the worker processes) imports torch and the engine.
"""

from __future__ import annotations

from .errors import PoolBusy, SandboxUnavailable
from .handle import RunHandle
from .pool import WorkerPool

__all__ = ["PoolBusy", "RunHandle", "SandboxUnavailable", "WorkerPool"]
