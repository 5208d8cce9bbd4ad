"""The server's log keeps secrets out: a room's presenter key and the server's token travel in
websocket URLs, and uvicorn logs every request line (at the default level, info) with its query."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from websockets.asyncio.client import connect

from tests.server.harness import TOKEN, LiveServer


def test_a_presenter_key_and_the_token_are_redacted_in_the_request_lines_logged(tmp_path: Path) -> None:
    server = LiveServer.start(tmp_path, "--log-level", "info", workers=1)
    try:
        with server.client() as api:
            room = api.post("/api/rooms").json()
            run = api.post("/api/runs", json={"source": "print(1)"}).json()
            assert api.get(f"/api/runs?token={TOKEN}").status_code == 200
        key = room["presenter_key"]

        async def visit() -> None:
            url = f"{server.ws_url}{room['ws_url']}?role=presenter&key={key}"
            async with connect(url) as presenter:
                assert json.loads(await asyncio.wait_for(presenter.recv(), 10))["type"]
            async with connect(f"{server.ws_url}{run['ws_url']}?token={TOKEN}") as events:
                assert json.loads(await asyncio.wait_for(events.recv(), 30))["type"] == "run_started"

        asyncio.run(visit())
    finally:
        server.stop()
    log = server.log()
    # the lines are there, the secrets not (they were, whole: "...&key=YSC51a..." [accepted])
    assert f"{room['ws_url']}?role=presenter&key=…" in log and f"{run['ws_url']}?token=…" in log, log
    assert "/api/runs?token=…" in log
    assert key not in log and TOKEN not in log
