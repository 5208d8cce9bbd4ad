"""The run registry: submits runs to the worker pool, relays their events, stores them when done.

A run is *live* from submission until its trace is stored; while live, its frames are in
memory (:class:`server.live.LiveRun`) and viewers read them there. Once stored, it is read
back from the :class:`server.storage.RunStore` (a few recent ones stay cached in memory
for the viewers that open them next).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict
from typing import Any

from engine.events import Limits, RunFinished

from .library import Example, title_for
from .live import LiveRun, split_trace, stub_trace
from .storage import RunRecord, RunStore

__all__ = ["RunRegistry", "StoredFrames"]

log = logging.getLogger("gradwalk.server")

StoredFrames = tuple[RunRecord, list[str]]
# Recently finished or opened runs kept in memory for the next viewers, bounded in count and size.
_CACHE_RUNS = 16
_CACHE_CHARS = 64 * 1024 * 1024


class RunRegistry:
    """Own the live runs; everything that creates, finds or cancels a run goes through here."""

    def __init__(self, store: RunStore, pool: Any, named: list[Example] | None = None) -> None:
        """``named``: the snippets a run of the same code is titled after (the examples and
        the lessons: :func:`server.lessons.snippets_named`); any other run takes its code's
        first comment line."""
        self.store = store
        self.pool = pool
        self.named = named or []
        self.live: dict[str, LiveRun] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._cache: OrderedDict[str, StoredFrames] = OrderedDict()
        self._cache_sizes: dict[str, int] = {}
        # finished runs the store refused (a full disk): served from here, stored again later
        self.unstored: dict[str, tuple[RunRecord, LiveRun]] = {}

    async def recover(self) -> int:
        """End the runs a previous server left unfinished ("crashed": "server restarted")."""
        stale = await asyncio.to_thread(self.store.unfinished)
        for rec in stale:
            rec.status, rec.message, rec.finished_at = "crashed", "server restarted", time.time()
            rec.event_count = 2
            await asyncio.to_thread(
                self.store.finish, rec, stub_trace(rec.source, rec.device, rec.status, rec.message)
            )
        return len(stale)

    async def create(self, source: str, device: str, limits: Limits, title: str | None = None) -> LiveRun:
        """Submit a run and start relaying it; raises the pool's ``PoolBusy`` when full.
        ``title`` names it (a lesson's run); without one, the snippet it is, or its first comment."""
        handle = self.pool.submit(source, device=device, limits=limits)
        run = LiveRun(
            id=_new_id(), source=source, device=device, title=title or title_for(source, self.named)
        )
        run.handle = handle
        self.live[run.id] = run
        record = RunRecord(
            id=run.id,
            created_at=run.created_at,
            status="queued",
            device=device,
            source=source,
            title=run.title,
        )
        try:
            await asyncio.to_thread(self.store.insert, record)
        except BaseException:
            handle.cancel()
            self.live.pop(run.id, None)
            raise
        task = asyncio.create_task(self._relay(run), name=f"relay {run.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run

    async def find(self, run_id: str) -> LiveRun | RunRecord | None:
        """Return a live run, else its stored record, else None."""
        run = self.live.get(run_id)
        if run is not None:
            return run
        if run_id in self._cache:
            return self._cache[run_id][0]
        if run_id in self.unstored:
            return self.unstored[run_id][0]
        return await asyncio.to_thread(self.store.get, run_id)

    async def recent(self, limit: int) -> list[LiveRun | RunRecord]:
        """Return up to ``limit`` runs, newest first, live ones with their current status."""
        records = await asyncio.to_thread(self.store.recent, limit)
        return [self.live.get(r.id) or self.unstored.get(r.id, (r,))[0] for r in records]

    async def stored_frames(self, run_id: str) -> StoredFrames | None:
        """Return a stored run's record and event frames (cached for the next viewers)."""
        if run_id in self._cache:
            self._cache.move_to_end(run_id)
            return self._cache[run_id]
        if run_id in self.unstored:
            kept, run = self.unstored[run_id]
            return kept, run.frames
        rec = await asyncio.to_thread(self.store.get, run_id)
        data = await asyncio.to_thread(self.store.trace, run_id)
        if rec is None or data is None:
            return None
        _, frames = await asyncio.to_thread(split_trace, data)
        self._remember(rec, frames)
        return rec, frames

    async def trace(self, run_id: str) -> bytes | None:
        """Return a run's trace JSON: the events so far when live, all of them when stored."""
        run = self.live.get(run_id) or self.unstored.get(run_id, (None, None))[1]
        if run is not None:
            return await asyncio.to_thread(run.trace_json)
        return await asyncio.to_thread(self.store.trace, run_id)

    def cancel(self, run: LiveRun, reason: str = "") -> None:
        """Ask the worker to stop a live run; its ``run_finished`` says ``cancelled`` (and
        ``reason``, when the user is not the one cancelling)."""
        if not run.finished and run.handle is not None:
            run.handle.cancel(reason)

    async def close(self, grace_s: float = 5.0) -> None:
        """Cancel the live runs, give their relays ``grace_s`` to store them, then stop."""
        for run in list(self.live.values()):
            self.cancel(run, "the server is shutting down")
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=grace_s)
            for task in pending:
                task.cancel()
        await self._store_again()
        for run_id in self.unstored:
            log.error("run %s was never stored (see above): it is lost with this server", run_id)

    async def _relay(self, run: LiveRun) -> None:
        finished: RunFinished | None = None
        try:
            async for event in run.handle.events():
                if run.status == "queued":
                    run.status = "running"
                run.append(event.model_dump_json())
                if isinstance(event, RunFinished):
                    finished = event
                    break
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a runner failure must end this run, not the server
            log.exception("relay of run %s failed", run.id)
            finished = self._synthesize_end(run, f"the server lost the worker's stream: {exc}")
        if finished is None:
            finished = self._synthesize_end(run, "the worker's stream ended without run_finished")
        run.finish(finished.status, finished.message, finished.counts.model_dump())
        await self._store(run)

    def _synthesize_end(self, run: LiveRun, message: str) -> RunFinished:
        end = RunFinished(seq=len(run.frames), status="crashed", message=message)
        run.append(end.model_dump_json())
        return end

    async def _store(self, run: LiveRun) -> None:
        """Store a finished run. Where the store refuses it (a full disk) the run is kept in
        memory, served as if stored, and stored again when the next run's storing works; the
        log says why (it said only "cannot rollback", and the run stayed `queued`)."""
        record = RunRecord(
            id=run.id,
            created_at=run.created_at,
            status=run.status,
            device=run.device,
            source=run.source,
            title=run.title,
            finished_at=run.finished_at,
            message=run.message,
            counts=run.counts,
            event_count=len(run.frames),
        )
        try:
            await self._finish(record, run)
        except Exception as exc:
            log.error("could not store run %s (%s): it is kept in memory until it can be", run.id, exc)
            self.unstored[run.id] = (record, run)
        else:
            await self._store_again()
        finally:
            self.live.pop(run.id, None)

    async def _finish(self, record: RunRecord, run: LiveRun) -> None:
        """Store one finished run; forget any run retention deleted to make room."""
        pruned = await asyncio.to_thread(self.store.finish, record, run.trace_json())
        for gone in pruned:
            self._cache.pop(gone, None)
            self._cache_sizes.pop(gone, None)
        self._remember(record, run.frames)

    async def _store_again(self) -> None:
        """Try once more to store the runs the store refused before."""
        for run_id, (record, run) in list(self.unstored.items()):
            try:
                await self._finish(record, run)
            except Exception:
                return  # still refused: they wait for the next try
            del self.unstored[run_id]
            log.info("run %s is stored now", run_id)

    def _remember(self, rec: RunRecord, frames: list[str]) -> None:
        size = sum(map(len, frames))
        if size > _CACHE_CHARS // 4:
            return
        self._cache[rec.id] = (rec, frames)
        self._cache_sizes[rec.id] = size
        self._cache.move_to_end(rec.id)
        while len(self._cache) > _CACHE_RUNS or sum(self._cache_sizes.values()) > _CACHE_CHARS:
            old, _ = self._cache.popitem(last=False)
            del self._cache_sizes[old]


def _new_id() -> str:
    # 12 hex digits: short enough to read aloud in class, 2**48 makes guessing useless.
    return secrets.token_hex(6)
