"""Start the runner's worker pool with the isolation the settings ask for."""

from __future__ import annotations

import logging
from typing import Literal

from runner import SandboxUnavailable, WorkerPool

from .settings import Settings

__all__ = ["start_pool"]

log = logging.getLogger("gradwalk.server")


async def start_pool(settings: Settings) -> WorkerPool:
    """Create and start the pool; raises ``SandboxUnavailable`` when strict isolation is impossible.

    With ``allow_unsandboxed`` a server that wanted strict isolation falls back to local
    workers instead, and says so in the log.
    """
    isolation = settings.effective_isolation
    try:
        return await _start(settings, isolation)
    except SandboxUnavailable as exc:
        if isolation != "strict" or not settings.allow_unsandboxed:
            raise
        log.warning("strict sandboxing is unavailable (%s); running snippets UNSANDBOXED as allowed", exc)
        return await _start(settings, "local")


async def _start(settings: Settings, isolation: Literal["strict", "local"]) -> WorkerPool:
    pool = WorkerPool(
        workers=settings.workers,
        max_queue=settings.max_queue,
        isolation=isolation,
        default_limits=settings.default_limits,
    )
    await pool.start()
    return pool
