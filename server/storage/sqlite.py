"""Runs in one SQLite file (WAL), traces zlib-compressed, bounded by a retention limit; the
open classroom rooms in the same file."""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib
from pathlib import Path
from typing import Any

from .base import RoomRecord, RunRecord, StoreUnavailable

__all__ = ["SqliteRunStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,
    device TEXT NOT NULL,
    source TEXT NOT NULL,
    title TEXT,
    message TEXT NOT NULL DEFAULT '',
    counts TEXT,
    event_count INTEGER NOT NULL DEFAULT 0,
    trace_bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at DESC);
CREATE TABLE IF NOT EXISTS traces (
    run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    blob BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS rooms (
    code TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL,
    state TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at REAL NOT NULL,
    last_active_at REAL NOT NULL
);
"""
_COLUMNS = (
    "id, created_at, finished_at, status, device, source, title, message, counts, event_count, trace_bytes"
)


class SqliteRunStore:
    """Store runs, and the open classroom rooms, in SQLite at ``path`` (``":memory:"`` for a
    throwaway store).

    Keeps at most ``max_runs`` finished runs and about ``max_bytes`` of compressed traces;
    the oldest finished runs go first and the file shrinks back (incremental vacuum).
    """

    def __init__(
        self, path: str | Path, *, max_runs: int = 5_000, max_bytes: int = 512 * 1024 * 1024
    ) -> None:
        self.path = str(path)
        self.max_runs = max_runs
        self.max_bytes = max_bytes
        # One connection behind a lock: writes are rare (one per run) and short.
        self._lock = threading.Lock()
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # only takes effect on a new file
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.executescript(_SCHEMA)
            self._db.execute(f"SELECT {_COLUMNS} FROM runs LIMIT 0")  # a runs table of another program
        except (sqlite3.Error, OSError) as exc:
            raise StoreUnavailable(f"--db {self.path}: {_why_not(exc)}") from exc

    def insert(self, record: RunRecord) -> None:
        """Add a new, unfinished run."""
        with self._lock:
            self._db.execute(
                f"INSERT INTO runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", _row(record)
            )

    def finish(self, record: RunRecord, trace_json: bytes) -> list[str]:
        """Store the final metadata and the compressed trace, then apply retention; return
        the ids retention deleted."""
        blob = zlib.compress(trace_json, 6)
        record.trace_bytes = len(blob)
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.execute(
                    f"INSERT OR REPLACE INTO runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _row(record),
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO traces (run_id, blob) VALUES (?, ?)", (record.id, blob)
                )
                deleted = self._prune(keep=record.id)
                self._db.execute("COMMIT")
            except BaseException:
                # SQLite has rolled back already after some errors (a full disk): then ROLLBACK
                # raised "no transaction is active" in place of the error that said why
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            if deleted:
                self._db.execute("PRAGMA incremental_vacuum")
            return deleted

    def get(self, run_id: str) -> RunRecord | None:
        """Return one run, or None."""
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _record(row) if row else None

    def recent(self, limit: int) -> list[RunRecord]:
        """Return up to ``limit`` runs, newest first."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
            ).fetchall()
        return [_record(r) for r in rows]

    def trace(self, run_id: str) -> bytes | None:
        """Return a finished run's trace as JSON bytes, or None."""
        with self._lock:
            row = self._db.execute("SELECT blob FROM traces WHERE run_id = ?", (run_id,)).fetchone()
        return zlib.decompress(row[0]) if row else None

    def unfinished(self) -> list[RunRecord]:
        """Return the runs that never finished."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE finished_at IS NULL ORDER BY created_at"
            ).fetchall()
        return [_record(r) for r in rows]

    def save_room(self, room: RoomRecord) -> None:
        """Add or replace a classroom room."""
        row = (
            room.code,
            room.key_hash,
            json.dumps(room.state),
            room.version,
            room.created_at,
            room.last_active_at,
        )
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO rooms (code, key_hash, state, version, created_at, last_active_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )

    def delete_room(self, code: str) -> None:
        """Forget a room that ended."""
        with self._lock:
            self._db.execute("DELETE FROM rooms WHERE code = ?", (code,))

    def rooms(self) -> list[RoomRecord]:
        """Return every stored room, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT code, key_hash, state, version, created_at, last_active_at FROM rooms ORDER BY created_at"
            ).fetchall()
        return [RoomRecord(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5]) for r in rows]

    def size_bytes(self) -> int:
        """Return the bytes the compressed traces take (what ``max_bytes`` bounds)."""
        with self._lock:
            return int(self._db.execute("SELECT COALESCE(SUM(trace_bytes), 0) FROM runs").fetchone()[0])

    def close(self) -> None:
        """Close the connection (checkpointing the WAL into the main file)."""
        with self._lock:
            self._db.close()

    def _prune(self, keep: str) -> list[str]:
        deleted = self._delete(
            "SELECT id FROM runs WHERE finished_at IS NOT NULL AND id != ?"
            " ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?",
            (keep, max(self.max_runs - 1, 0)),
        )
        # Newest first, running total of trace bytes: whatever pushes the total over the cap goes.
        deleted += self._delete(
            "SELECT id FROM (SELECT id, SUM(trace_bytes) OVER"
            " (ORDER BY created_at DESC, rowid DESC) AS total FROM runs WHERE finished_at IS NOT NULL)"
            " WHERE total > ? AND id != ?",
            (self.max_bytes, keep),
        )
        return deleted

    def _delete(self, select_ids: str, params: tuple[Any, ...]) -> list[str]:
        """Delete the runs ``select_ids`` picks (their traces go with them); return their ids."""
        ids = [row[0] for row in self._db.execute(select_ids, params).fetchall()]
        self._db.executemany("DELETE FROM runs WHERE id = ?", [(i,) for i in ids])
        return ids


def _why_not(exc: BaseException) -> str:
    """Why a database file could not be opened, in words that say what to do."""
    text = str(exc)
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return f"its folder is a file ({exc.filename}); pass a path in a folder"
    if isinstance(exc, OSError):
        return f"its folder cannot be made ({exc.strerror})"
    if "file is not a database" in text:
        return "the file is not a SQLite database; pass a new path, or the file of an earlier gradwalk server"
    if "unable to open" in text:
        return "it cannot be opened (a folder, or a file without permission to read and write it)"
    if "readonly" in text:
        return "it is read-only; gradwalk writes its runs there"
    if "disk is full" in text or "disk I/O" in text:
        return f"{text}; free some space or pass a path on another disk"
    if "no such column" in text or "no such table" in text:
        return f"it holds tables of another program ({text}); pass a new path"
    return text


def _row(r: RunRecord) -> tuple[Any, ...]:
    counts = json.dumps(r.counts) if r.counts is not None else None
    return (
        r.id,
        r.created_at,
        r.finished_at,
        r.status,
        r.device,
        r.source,
        r.title,
        r.message,
        counts,
        r.event_count,
        r.trace_bytes,
    )


def _record(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        id=row[0],
        created_at=row[1],
        finished_at=row[2],
        status=row[3],
        device=row[4],
        source=row[5],
        title=row[6],
        message=row[7],
        counts=json.loads(row[8]) if row[8] else None,
        event_count=row[9],
        trace_bytes=row[10],
    )
