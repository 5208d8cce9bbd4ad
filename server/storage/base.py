"""The storage interface: one record per run, plus the run's trace as JSON bytes; and the
classroom rooms, so a room outlives a server restart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["RoomRecord", "RoomStore", "RunRecord", "RunStore", "StoreUnavailable"]


class StoreUnavailable(Exception):
    """The run store cannot be opened (its words name the file and say why, for the one line
    ``gradwalk serve`` prints before it exits)."""


@dataclass
class RunRecord:
    """A run's metadata as stored; times are seconds since the epoch (UTC)."""

    id: str
    created_at: float
    status: str
    device: str
    source: str
    title: str | None = None
    finished_at: float | None = None
    message: str = ""
    counts: dict[str, Any] | None = None
    event_count: int = 0
    trace_bytes: int = 0


class RunStore(Protocol):
    """Keep runs and their traces; must be thread-safe (called from worker threads).

    A run is inserted when it is created (status ``queued``) and finished once, with its
    whole trace, when its ``run_finished`` event arrives. Retention may delete old
    finished runs at any :meth:`finish`; unfinished runs are never deleted.
    """

    def insert(self, record: RunRecord) -> None:
        """Add a new, unfinished run."""
        ...

    def finish(self, record: RunRecord, trace_json: bytes) -> list[str]:
        """Mark a run finished with its final metadata and store its trace (JSON bytes);
        return the ids of the older runs retention deleted to make room (a cache of them
        must forget them too)."""
        ...

    def get(self, run_id: str) -> RunRecord | None:
        """Return one run, or None if it is unknown (or was deleted by retention)."""
        ...

    def recent(self, limit: int) -> list[RunRecord]:
        """Return up to ``limit`` runs, newest first."""
        ...

    def trace(self, run_id: str) -> bytes | None:
        """Return a finished run's trace as JSON bytes, or None."""
        ...

    def unfinished(self) -> list[RunRecord]:
        """Return the runs that never finished (the server stopped while they ran)."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


@dataclass
class RoomRecord:
    """A classroom room as stored: enough to bring it back after a restart.

    ``key_hash`` is the SHA-256 of the presenter's key (the key itself is never stored);
    ``state`` is the presenter's latest state as JSON data; times are seconds since the epoch.
    """

    code: str
    key_hash: str
    state: dict[str, Any]
    version: int
    created_at: float
    last_active_at: float


class RoomStore(Protocol):
    """Keep the open rooms; must be thread-safe. A room is saved soon after it opens and when its
    state changes (at most about once a second), and deleted when it ends."""

    def save_room(self, room: RoomRecord) -> None:
        """Add or replace a room."""
        ...

    def delete_room(self, code: str) -> None:
        """Forget a room (it ended); unknown codes are ignored."""
        ...

    def rooms(self) -> list[RoomRecord]:
        """Return every stored room, oldest first."""
        ...
