"""The SQLite store: round trips, retention, unfinished runs, reopening the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from server.live import join_trace, split_trace, stub_trace
from server.storage import RunRecord, SqliteRunStore


def _record(i: int, *, finished: bool = True) -> RunRecord:
    return RunRecord(
        id=f"run{i:04d}",
        created_at=1000.0 + i,
        status="ok" if finished else "queued",
        device="cpu",
        source=f"x = {i}\n",
        title=f"run {i}",
        finished_at=1001.0 + i if finished else None,
        counts={"ops": i},
        event_count=2,
    )


def _trace(i: int) -> bytes:
    frames = [
        '{"seq":0,"t":0.0,"type":"output","stream":"stdout","text":"hi"}',
        '{"seq":1,"t":0.0,"type":"run_finished","status":"ok","message":"","duration_s":0.0}',
    ]
    return join_trace(f"x = {i}\n", frames)


def test_round_trip_survives_reopening(tmp_path: Path) -> None:
    db = tmp_path / "sub" / "runs.sqlite3"
    store = SqliteRunStore(db)
    store.insert(_record(1, finished=False))
    assert store.get("run0001").status == "queued"  # type: ignore[union-attr]
    assert store.trace("run0001") is None
    store.finish(_record(1), _trace(1))
    store.close()

    store = SqliteRunStore(db)
    rec = store.get("run0001")
    assert rec is not None and rec.status == "ok" and rec.counts == {"ops": 1} and rec.title == "run 1"
    assert rec.trace_bytes > 0
    data = store.trace("run0001")
    assert data is not None and json.loads(data)["source"] == "x = 1\n"
    assert store.get("nope") is None
    store.close()


def test_recent_is_newest_first(tmp_path: Path) -> None:
    store = SqliteRunStore(tmp_path / "r.db")
    for i in range(5):
        store.insert(_record(i, finished=False))
    assert [r.id for r in store.recent(3)] == ["run0004", "run0003", "run0002"]


def test_retention_by_count_keeps_unfinished_and_newest(tmp_path: Path) -> None:
    store = SqliteRunStore(tmp_path / "r.db", max_runs=3)
    store.insert(_record(0, finished=False))
    for i in range(1, 8):
        store.insert(_record(i, finished=False))
        store.finish(_record(i), _trace(i))
    ids = {r.id for r in store.recent(100)}
    assert ids == {"run0000", "run0005", "run0006", "run0007"}
    assert store.trace("run0001") is None  # the trace went with its run


def test_retention_by_bytes_bounds_the_file(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store = SqliteRunStore(db, max_bytes=200_000)
    for i in range(60):
        store.insert(_record(i, finished=False))
        pad = os.urandom(20_000).hex()  # incompressible: ~20 kB compressed per trace
        store.finish(_record(i), join_trace("s", [f'{{"seq":0,"text":"{pad}"}}']))
    assert store.size_bytes() <= 200_000
    assert store.get("run0059") is not None and store.get("run0000") is None
    store.close()
    # WAL checkpointed on close and freed pages vacuumed: the file stays near the cap.
    assert db.stat().st_size < 3 * 200_000


def test_unfinished_runs_are_listed(tmp_path: Path) -> None:
    store = SqliteRunStore(":memory:")
    store.insert(_record(1, finished=False))
    store.insert(_record(2, finished=False))
    store.finish(_record(2), _trace(2))
    assert [r.id for r in store.unfinished()] == ["run0001"]


def test_trace_layout_splits_back_to_the_exact_frames() -> None:
    frames = ['{"seq":0,"type":"output","text":"a\\nb, c"}', '{"seq":1,"type":"x","s":"]}"}']
    source = "print('a')\n# ünïcode\n"
    data = join_trace(source, frames)
    assert json.loads(data)["events"][0]["text"] == "a\nb, c"
    assert split_trace(data) == (source, frames)


def test_stub_trace_is_a_valid_trace() -> None:
    from engine.events import trace_adapter

    trace = trace_adapter.validate_json(stub_trace("x = 1\n", "cpu", "crashed", "server restarted"))
    assert [e.type for e in trace.events] == ["run_started", "run_finished"]
    assert trace.events[-1].message == "server restarted"  # type: ignore[union-attr]
