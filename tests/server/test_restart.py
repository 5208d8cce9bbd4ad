"""Runs survive a restart; a run cut off by a shutdown is stored; a crash's runs come back as crashed."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from websockets.asyncio.client import connect

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
        # not "The run was cancelled.", as if someone had pressed Stop
        assert cut["message"] == "The run was cancelled (the server is shutting down).", cut["message"]
        cut_trace = api.get(f"/api/runs/{running['id']}/trace").json()
        assert [e["seq"] for e in cut_trace["events"]] == list(range(cut["event_count"]))

        crashed = run_json(api.get("/api/runs/deadbeef0001"))
        assert crashed["status"] == "crashed" and crashed["message"] == "server restarted"
        trace = api.get("/api/runs/deadbeef0001/trace").json()
        assert [e["type"] for e in trace["events"]] == ["run_started", "run_finished"]
        ids = [r["id"] for r in run_json(api.get("/api/runs", params={"limit": 3}))["runs"]]
        assert ids == ["deadbeef0001", running["id"], run["id"]]


def test_a_classroom_room_outlives_a_restart(server: LiveServer) -> None:
    """A teacher's room comes back after a restart with its code, state and presenter key;
    viewers reconnecting get the latest state; an ended room stays ended."""
    from tests.server.test_rooms import next_frame, open_room, presenter_url, run, socket_url, student

    room = open_room(server, {"source": "x = 1\n", "step": 0})
    kept = open_room(server, {"source": "y = 2\n"})
    key = {"x-presenter-key": room["presenter_key"]}

    async def present() -> int:
        # the presenter steps over its socket; the last step lands just before the restart
        async with connect(presenter_url(server, room)) as presenter:
            await next_frame(presenter, "state")
            for step in (1, 2, 3):
                await presenter.send(
                    json.dumps({"type": "state", "state": {"step": step, "view": "stepper"}})
                )
                ack = await next_frame(presenter, "ack")
            return int(ack["version"])

    version = run(present())
    with server.client() as api:
        assert (
            api.delete(
                f"/api/rooms/{kept['code']}", headers={"x-presenter-key": kept["presenter_key"]}
            ).status_code
            == 204
        )
    server.restart()

    with student(server) as viewer_api:
        back = viewer_api.get(f"/api/rooms/{room['code']}")
        assert back.status_code == 200, back.text
        state = back.json()["state"]
        assert (state["step"], state["view"], state["source"]) == (3, "stepper", "x = 1\n")
        assert back.json()["version"] > version  # newer than anything a viewer saw before
        assert viewer_api.get(f"/api/rooms/{kept['code']}").status_code == 404

    async def follow() -> dict[str, Any]:
        async with connect(socket_url(server, room)) as viewer:
            return await next_frame(viewer, "state")

    frame = run(follow())
    assert frame["state"]["step"] == 3 and frame["state"]["source"] == "x = 1\n"

    # the presenter's key still works (it was never stored, only its hash); another does not
    with server.client() as api:
        moved = api.patch(f"/api/rooms/{room['code']}/state", json={"step": 4}, headers=key)
        assert moved.status_code == 200 and moved.json()["state"]["step"] == 4
        wrong = api.patch(
            f"/api/rooms/{room['code']}/state", json={"step": 5}, headers={"x-presenter-key": "nope"}
        )
        assert wrong.status_code == 403
        assert api.delete(f"/api/rooms/{room['code']}", headers=key).status_code == 204
    server.restart()
    with student(server) as viewer_api:
        assert viewer_api.get(f"/api/rooms/{room['code']}").status_code == 404
