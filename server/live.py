"""A run in progress: its serialized events, shared by every viewer, and a way to wait for more.

Each event is serialized once, when it arrives (``event.model_dump_json()``), and kept as
a *frame*; every viewer walks the same list with its own cursor, so a viewer costs no
memory per event and a slow one holds back nobody else.

# NOTE [Trace layout]
A stored trace is the JSON object ``{"format", "version", "source", "events": [...]}``
written with one event frame per line. Frames are compact JSON, which never contains a
raw newline, so :func:`split_trace` recovers each event's exact bytes by splitting lines:
a stored run streams the very frames a live viewer saw, without parsing them.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from engine.events import SCHEMA_VERSION, RunFinished, RunStarted, event_adapter

__all__ = ["LiveRun", "join_trace", "split_trace", "stub_trace"]

_HEAD = '{{"format":"gradwalk-trace","version":{version},"source":{source},"events":['


def join_trace(source: str, frames: list[str]) -> bytes:
    """Build a trace's JSON from its source and event frames (see NOTE [Trace layout])."""
    head = _HEAD.format(version=SCHEMA_VERSION, source=json.dumps(source, ensure_ascii=False))
    return (head + "\n" + ",\n".join(frames) + "\n]}").encode()


def split_trace(data: bytes) -> tuple[str, list[str]]:
    """Return a stored trace's source and its event frames, byte for byte when possible.

    Traces in another layout are parsed and each event re-serialized by the event contract.
    """
    lines = data.split(b"\n")
    if len(lines) >= 2 and lines[-1] == b"]}" and lines[0].endswith(b'"events":['):
        source = json.loads(lines[0] + b"]}")["source"]
        frames = [ln[:-1].decode() if ln.endswith(b",") else ln.decode() for ln in lines[1:-1]]
        return source, frames
    obj = json.loads(data)
    frames = [event_adapter.validate_python(e).model_dump_json() for e in obj.get("events", [])]
    return obj.get("source", ""), frames


def stub_trace(source: str, device: str, status: str, message: str) -> bytes:
    """Build the trace of a run that left no events: ``run_started`` then ``run_finished``."""
    started = RunStarted(seq=0, source=source, device=device)
    finished = RunFinished.model_validate({"seq": 1, "status": status, "message": message})
    return join_trace(source, [started.model_dump_json(), finished.model_dump_json()])


@dataclass(eq=False)
class LiveRun:
    """A run the server is relaying now: metadata plus the event frames so far."""

    id: str
    source: str
    device: str
    title: str | None
    created_at: float = field(default_factory=time.time)
    status: str = "queued"
    message: str = ""
    counts: dict[str, Any] | None = None
    finished_at: float | None = None
    frames: list[str] = field(default_factory=list)
    handle: Any = None
    viewers: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def finished(self) -> bool:
        """Say whether the last event (``run_finished``) has arrived."""
        return self.finished_at is not None

    def append(self, frame: str) -> None:
        """Add one serialized event and wake every waiting viewer."""
        self.frames.append(frame)
        self._wake()

    def finish(self, status: str, message: str, counts: dict[str, Any] | None) -> None:
        """Record the run's end (after its ``run_finished`` frame was appended)."""
        self.status, self.message, self.counts = status, message, counts
        self.finished_at = time.time()
        self._wake()

    async def wait_beyond(self, n: int) -> None:
        """Wait until there are more than ``n`` frames or the run has finished."""
        while len(self.frames) <= n and not self.finished:
            await self._changed.wait()

    def trace_json(self) -> bytes:
        """Return the trace so far (all events when finished)."""
        return join_trace(self.source, self.frames)

    def _wake(self) -> None:
        # Waiters of the old Event are already released by set(); new ones wait on a fresh one.
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
