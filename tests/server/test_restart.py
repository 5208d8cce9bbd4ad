"""Runs survive a restart; a run cut off by a shutdown is stored; a crash's runs come back as crashed."""

from __future__ import annotations

import asyncio
import time

from server.storage import RunRecord, SqliteRunStore
from tests.conftest import case_source
from tests.server.harness import LiveServer, run_json
from tests.server.test_stream import FOREVER, collect


def test_restart_reads_old_runs_back(server: LiveServer) -> None:
    with server.client() as api:
        run = run_json(api.post("/api/runs", json={"source": case_source("cubic.py")}))
        frames, code, _ = asyncio.run(collect(server.ws_url + run["ws_url"]))
        assert code == 1000
        before = run_json(api.get(f"/api/runs/{run['id']}"))
        trace_before = api.get(f"/api/runs/{run['id']}/trace").content
        running = run_json(api.post("/api/runs", json={"source": FOREVER}))
        asyncio.run(collect(server.ws_url + running["ws_url"], stop_after=3))

    server.stop()  # graceful: the running run is cancelled and stored with what it sent
    # And a run that a killed server never finished:
    store = SqliteRunStore(server.db)
    store.insert(
        RunRecord(id="deadbeef0001", created_at=time.time(), status="running", device="cpu", source="x=1")
    )
    store.close()
    server.launch()

    with server.client() as api:
        assert run_json(api.get(f"/api/runs/{run['id']}")) == before
        assert api.get(f"/api/runs/{run['id']}/trace").content == trace_before
        again, code, _ = asyncio.run(collect(server.ws_url + run["ws_url"]))
        assert code == 1000 and again == frames

        cut = run_json(api.get(f"/api/runs/{running['id']}"))
        assert cut["status"] == "cancelled" and cut["event_count"] >= 4
        cut_trace = api.get(f"/api/runs/{running['id']}/trace").json()
        assert [e["seq"] for e in cut_trace["events"]] == list(range(cut["event_count"]))

        crashed = run_json(api.get("/api/runs/deadbeef0001"))
        assert crashed["status"] == "crashed" and crashed["message"] == "server restarted"
        trace = api.get("/api/runs/deadbeef0001/trace").json()
        assert [e["type"] for e in trace["events"]] == ["run_started", "run_finished"]
        ids = [r["id"] for r in run_json(api.get("/api/runs", params={"limit": 3}))["runs"]]
        assert ids == ["deadbeef0001", running["id"], run["id"]]
