"""Tokens, rate limits, and the house rule that the server process never imports torch."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.conftest import case_source
from tests.server.conftest import BURST, client_address
from tests.server.harness import ROOT, TOKEN, LiveServer, run_json
from tests.server.test_stream import FOREVER, collect

QUICK = case_source("cubic.py")


def test_creating_a_run_needs_the_token(server: LiveServer) -> None:
    with server.client(token=False) as anon:
        response = anon.post("/api/runs", json={"source": QUICK})
        assert response.status_code == 401 and "Bearer" in run_json(response)["detail"]
        assert response.headers["www-authenticate"] == "Bearer"
        wrong = anon.post("/api/runs", json={"source": QUICK}, headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 403 and run_json(wrong)["detail"] == "wrong token"
        basic = anon.post("/api/runs", json={"source": QUICK}, headers={"authorization": "Basic eDp5"})
        assert basic.status_code == 401
        # A bad body from someone without the token learns nothing but "token".
        assert anon.post("/api/runs", content=b"{").status_code == 401


def test_viewing_does_not_need_the_token(server: LiveServer, api: httpx.Client) -> None:
    run = run_json(api.post("/api/runs", json={"source": QUICK}))
    with server.client(token=False) as anon:
        assert anon.get(f"/api/runs/{run['id']}").status_code == 200
        assert anon.get("/api/runs").status_code == 200
        assert anon.get(f"/api/runs/{run['id']}/trace").status_code == 200
        assert anon.post(f"/api/runs/{run['id']}/cancel").status_code == 401
    frames, code, _ = asyncio.run(collect(server.ws_url + run["ws_url"]))
    assert code == 1000 and json.loads(frames[-1])["type"] == "run_finished"


def test_cancelling_over_the_socket_needs_the_token(server: LiveServer, api: httpx.Client) -> None:
    run = run_json(api.post("/api/runs", json={"source": FOREVER}))

    async def cancel(query: str) -> tuple[int | None, str, list[str]]:
        frames: list[str] = []
        async with connect(server.ws_url + run["ws_url"] + query) as ws:
            await ws.send('{"command": "cancel"}')
            try:
                async for message in ws:
                    frames.append(str(message))
            except Exception:
                pass
            return ws.close_code, ws.close_reason or "", frames

    try:
        code, reason, _ = asyncio.run(asyncio.wait_for(cancel(""), 30))
        assert code == 1008 and "token" in reason
        code, _, frames = asyncio.run(asyncio.wait_for(cancel(f"?token={TOKEN}"), 30))
        assert code == 1000 and json.loads(frames[-1])["status"] == "cancelled"
    finally:
        api.post(f"/api/runs/{run['id']}/cancel")


def test_runs_are_rate_limited_per_client(server: LiveServer) -> None:
    with server.client(headers={"x-forwarded-for": client_address()}) as api:
        codes = [api.post("/api/runs", json={"source": "pass"}) for _ in range(BURST + 3)]
    assert [r.status_code for r in codes[:BURST]] == [201] * BURST
    refused = codes[BURST]
    assert refused.status_code == 429 and "too many runs from this client" in run_json(refused)["detail"]
    assert int(refused.headers["retry-after"]) >= 1
    with server.client(headers={"x-forwarded-for": client_address()}) as other:
        assert other.post("/api/runs", json={"source": "pass"}).status_code == 201


def test_the_server_process_never_maps_torch(server: LiveServer, api: httpx.Client) -> None:
    maps = Path(f"/proc/{server.pid}/maps")
    if not maps.exists():
        pytest.fail("needs /proc (Linux), as the runner does")
    run = run_json(api.post("/api/runs", json={"source": QUICK}))
    asyncio.run(collect(server.ws_url + run["ws_url"]))
    assert "libtorch" not in maps.read_text() and "torch/_C" not in maps.read_text()


def test_building_the_app_imports_no_torch() -> None:
    code = (
        "import sys\n"
        "from server.app import create_app\n"
        "from server.settings import Settings\n"
        "app = create_app(Settings(db=':memory:'))\n"
        "assert app.openapi()['paths']\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy'))\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
