"""The two errors a caller of the pool must handle."""

from __future__ import annotations

__all__ = ["PoolBusy", "SandboxUnavailable"]


class PoolBusy(Exception):
    """Every worker is busy and the queue is full; try again after ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SandboxUnavailable(Exception):
    """Strict isolation was asked for but a layer is missing on this platform.

    ``missing`` names the layers (keys of :meth:`WorkerPool.isolation_report`).
    """

    def __init__(self, message: str, *, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing
