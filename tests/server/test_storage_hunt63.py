"""Storage and lifetime hunt 63 (helper h63c): what happens to a user's runs as the server
and its database live, each answered clearly now.

- A run finished on a full disk was lost without a word: the live viewer saw it end, then
  the run read `queued` forever, its trace 404, and the log said only "cannot rollback - no
  transaction is active". It is kept in memory now, served as if stored, and stored once the
  database takes writes again; a request the database refuses is a 503 that says so (a 500).
- A database that cannot be opened (not SQLite, a folder, another program's tables, a path
  under a file) printed uvicorn's traceback and never the line meant to say why.
- Ctrl+C twice (the second while the server stores its live runs) lost those runs: they came
  back `crashed` as two-event stubs.
- A run deleted by retention still answered from the cache (its page, its replay) until a
  restart, while its trace said 404.
- A refusal of `"timeout_s": NaN` echoed NaN: the error meant to explain was not JSON.
- A SIGKILL's crash message named the signal twice.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from engine.events import Limits
from runner.outcome import exit_outcome
from server.app import create_app
from server.settings import Settings
from server.storage import SqliteRunStore
from server.ws_protocol import SHUTDOWN_REASON
from tests.server.harness import LiveServer, run_json
from tests.server.test_api import wait_finished
from tests.server.test_stream import FOREVER, collect

QUICK = "import torch\nx = torch.tensor(2.0, requires_grad=True)\n(x * x).backward()\n"


def _strict_json(text: str) -> Any:
    def refuse(word: str) -> None:
        raise ValueError(f"{word} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _fill(store: SqliteRunStore) -> None:
    """Let the database grow no more: SQLite answers SQLITE_FULL, as on a full disk."""
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")


def test_a_run_finished_on_a_full_disk_is_kept_served_and_stored_later(tmp_path: Path) -> None:
    app = create_app(Settings(db=str(tmp_path / "runs.db"), workers=1))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        registry = app.state.registry
        first = run_json(client.post("/api/runs", json={"source": QUICK}))
        wait_finished(client, first["id"], timeout=90)
        _fill(registry.store)
        # a new run cannot even be written down: the request says why
        refused = client.post("/api/runs", json={"source": QUICK + "# a long comment\n" * 3000})
        assert refused.status_code == 503, refused.text
        assert "database or disk is full" in refused.json()["detail"]
        # a run that was live when the disk filled: its end is not lost
        big = "import random\nfor i in range(3000):\n    print(random.getrandbits(128))\n"  # output that compresses poorly
        registry.store._db.execute("PRAGMA max_page_count = 1000000")
        second = run_json(client.post("/api/runs", json={"source": QUICK + big}))
        _fill(registry.store)
        done = wait_finished(client, second["id"], timeout=90)
        assert done["status"] == "ok", done
        deadline = time.monotonic() + 30  # its status reads ok as its storing begins
        while second["id"] not in registry.unstored and time.monotonic() < deadline:
            time.sleep(0.05)
        assert second["id"] in registry.unstored and second["id"] not in registry.live
        listed = {r["id"]: r for r in client.get("/api/runs").json()["runs"]}
        assert listed[second["id"]]["status"] == "ok"
        trace = client.get(f"/api/runs/{second['id']}/trace")
        assert trace.status_code == 200 and trace.json()["events"][-1]["type"] == "run_finished"
        assert client.get(f"/embed/{second['id']}").status_code == 200
        # the disk has room again: the next run stored stores the kept one too
        registry.store._db.execute("PRAGMA max_page_count = 1000000")
        third = run_json(client.post("/api/runs", json={"source": QUICK}))
        wait_finished(client, third["id"], timeout=90)
        deadline = time.monotonic() + 30
        while registry.unstored and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not registry.unstored
        stored = registry.store.get(second["id"])
        assert stored is not None and stored.status == "ok" and stored.event_count == done["event_count"]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: (d / "text.db").write_text("hello\n"), "is not a SQLite database"),
        (lambda d: (d / "text.db").mkdir(), "cannot be opened (a folder"),
        (
            lambda d: sqlite3.connect(d / "text.db").execute("CREATE TABLE runs (id TEXT, x INTEGER)"),
            "holds tables of another program",
        ),
        (lambda d: (d / "file").write_text(""), "its folder is a file"),
    ],
    ids=["not-sqlite", "a-folder", "foreign-tables", "under-a-file"],
)
def test_a_database_that_cannot_be_opened_is_one_line_naming_it(tmp_path: Path, make: Any, says: str) -> None:
    make(tmp_path)
    db = tmp_path / ("file/sub.db" if says.startswith("its folder") else "text.db")
    done = subprocess.run(
        [sys.executable, "-m", "gradwalk.cli", "serve", "--port", "0", "--db", str(db), "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gradwalk: the server did not start: --db {db}: "), lines
    assert says in lines[0]


def test_a_second_ctrl_c_waits_for_the_live_runs_to_be_stored(tmp_path: Path) -> None:
    live = LiveServer.start(tmp_path, token=None, workers=1)
    try:
        with live.client() as api:
            run = run_json(api.post("/api/runs", json={"source": FOREVER}))
        seen, _, _ = asyncio.run(collect(live.ws_url + run["ws_url"], stop_after=5))
        assert len(seen) == 5
        assert live.proc is not None
        live.proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        live.proc.send_signal(signal.SIGINT)
        assert live.proc.wait(timeout=60) == 0
        live.proc = None
        assert "the live runs are being stored" in live.log()
        live.launch()
        with live.client() as api:
            back = api.get(f"/api/runs/{run['id']}").json()
        assert back["status"] == "cancelled" and "shutting down" in back["message"], back
        assert back["event_count"] > 5
    finally:
        live.stop()


def test_a_run_retention_deleted_is_gone_at_once(tmp_path: Path) -> None:
    live = LiveServer.start(tmp_path, "--retention-runs", "2", token=None, workers=1)
    try:
        with live.client() as api:
            ids = []
            for _ in range(4):
                run = run_json(api.post("/api/runs", json={"source": QUICK}))
                wait_finished(api, run["id"], timeout=90)
                # viewed while it is kept: now in the server's cache of recent runs
                assert api.get(f"/api/runs/{run['id']}/trace").status_code == 200
                ids.append(run["id"])
            listed = [r["id"] for r in api.get("/api/runs").json()["runs"]]
            assert listed == ids[:1:-1]
            for gone in ids[:2]:
                assert api.get(f"/api/runs/{gone}").status_code == 404
                assert api.get(f"/embed/{gone}").status_code == 404
        for gone in ids[:2]:
            _, code, reason = asyncio.run(collect(f"{live.ws_url}/api/runs/{gone}/events"))
            assert code == 4404, (code, reason)
    finally:
        live.stop()


def test_a_limit_of_nan_or_infinity_is_refused_in_json(tmp_path: Path) -> None:
    app = create_app(Settings(db=str(tmp_path / "runs.db"), workers=1))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for word in ("NaN", "Infinity", "-Infinity"):
            body = f'{{"source": "print(1)", "limits": {{"timeout_s": {word}, "max_ops": {word}}}}}'
            answer = client.post("/api/runs", content=body, headers={"content-type": "application/json"})
            assert answer.status_code == 422, answer.text
            detail = _strict_json(answer.text)["detail"]
            assert {tuple(e["loc"][-1:]) for e in detail} == {("timeout_s",), ("max_ops",)}
            assert all(e["input"] == word for e in detail), detail


def test_a_killed_runs_message_names_its_signal_once() -> None:
    status, message = exit_outcome({"signal": signal.SIGKILL, "cpu_s": 0.1}, Limits())
    assert status == "crashed" and message.count("SIGKILL") == 1, message


def test_a_source_of_100000_chinese_characters_is_taken(tmp_path: Path) -> None:
    # 300 kB as UTF-8: refused 413 under the 256 kB body limit though the source limit is
    # 100,000 characters; one more character is the source limit's 422
    app = create_app(Settings(db=str(tmp_path / "runs.db"), workers=1))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for chars, status in ((100_000, 201), (100_001, 422)):
            source = "#" + "汉" * (chars - 1)
            body = json.dumps({"source": source}, ensure_ascii=False).encode()
            answer = client.post("/api/runs", content=body, headers={"content-type": "application/json"})
            assert answer.status_code == status, answer.text[:300]
            if status == 201:
                assert wait_finished(client, answer.json()["id"], timeout=90)["status"] == "ok"


def test_a_viewer_of_a_run_the_server_stops_under_is_told_how_to_resume(tmp_path: Path) -> None:
    # close 1012 came with no reason: a client could not tell a restart from a fault
    live = LiveServer.start(tmp_path, token=None, workers=1)
    try:
        with live.client() as api:
            run = run_json(api.post("/api/runs", json={"source": FOREVER}))

        async def watch() -> tuple[int, int | None, str]:
            seen = 0
            async with connect(live.ws_url + run["ws_url"], max_size=None, open_timeout=30) as ws:
                try:
                    async for _ in ws:
                        seen += 1
                        if seen == 3:
                            assert live.proc is not None
                            live.proc.send_signal(signal.SIGTERM)
                except ConnectionClosed:
                    pass
                return seen, ws.close_code, ws.close_reason or ""

        seen, code, reason = asyncio.run(watch())
        assert code == 1012 and reason == SHUTDOWN_REASON, (seen, code, reason)
    finally:
        live.stop()
