"""``POST /api/traces``: a trace recorded elsewhere (a notebook) becomes a run the app, embeds and exports show."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import ROOT, wait_graph

pytestmark = pytest.mark.browser

CUBIC = ROOT / "server" / "examples" / "cubic.py"


@pytest.fixture(scope="module")
def cubic_json() -> str:
    from engine.run import record

    return str(record(CUBIC.read_text(), filename="cubic.py").model_dump_json())


def post(server: Any, body: bytes, **headers: str) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        return client.post(
            "/api/traces", content=body, headers={"content-type": "application/json", **headers}
        )


def test_an_imported_trace_opens_in_the_app(page: Any, cubic_json: str) -> None:
    answer = post(page.server, cubic_json.encode())
    assert answer.status_code == 201, answer.text
    body = answer.json()
    run_id = body["id"]
    assert body == {
        "id": run_id,
        "app_url": f"/?run={run_id}",
        "embed_url": f"/embed/{run_id}",
        "export_url": f"/api/runs/{run_id}/export",
    }
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        run = client.get(f"/api/runs/{run_id}").json()
        assert (run["status"], run["title"], run["event_count"]) == ("ok", "Your first backward()", 27)
        stored = client.get(f"/api/runs/{run_id}/trace").json()
        assert stored["events"] == json.loads(cubic_json)["events"]
        assert client.get(body["embed_url"]).status_code == 200
        assert client.get(body["export_url"]).status_code == 200
    page.goto(f"{page.server.url}{body['app_url']}&view=stepper&step=3")
    wait_graph(page)
    assert page.evaluate("() => window.gradwalk.model.nodes.size") == 4
    assert page.locator(".gw-step-card").inner_text().count("x.grad: None → 14.75") == 1


def test_a_notebook_recording_opens_on_the_server(server: Any) -> None:
    import gradwalk

    rec = gradwalk.watch(CUBIC.read_text(), title="cubic")
    url = rec.open(server.url, browser=False)
    assert url.startswith(f"{server.url}/?run=")
    run_id = url.rsplit("=", 1)[1]
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get(f"/api/runs/{run_id}").json()["status"] == "ok"


def test_open_without_a_server_says_how_to_start_one(tmp_path: Path, cubic_json: str) -> None:
    import gradwalk

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "cubic.json").write_text(cubic_json)
    rec = gradwalk.load(tmp_path / "cubic.json")
    with pytest.raises(ConnectionError, match="gradwalk serve"):
        rec.open(f"http://127.0.0.1:{port}", browser=False)


def test_a_gzipped_trace_is_accepted(server: Any, cubic_json: str) -> None:
    answer = post(server, gzip.compress(cubic_json.encode()), **{"content-encoding": "gzip"})
    assert answer.status_code == 201, answer.text


@pytest.mark.parametrize(
    ("body", "headers", "status", "says"),
    [
        (b"{not json", {}, 400, "not JSON"),
        (b'{"source": "x"}', {}, 422, "events"),
        (b'{"source": "", "events": []}', {}, 422, "starts with run_started"),
        (b"\x1f\x8b not gzip at all", {"content-encoding": "gzip"}, 400, "not valid gzip"),
        (b"{}", {"content-encoding": "br"}, 415, "gzip"),
        (b" " * 600_000, {}, 413, "limit"),
        (gzip.compress(b" " * (64 * 1024 * 1024 + 1)), {"content-encoding": "gzip"}, 413, "decompressed"),
    ],
    ids=["not-json", "no-events", "empty", "bad-gzip", "brotli", "too-big", "gzip-bomb"],
)
def test_bad_traces_get_a_clear_4xx(
    server: Any, body: bytes, headers: dict[str, str], status: int, says: str
) -> None:
    answer = post(server, body, **headers)
    assert answer.status_code == status, answer.text
    assert says in json.dumps(answer.json()["detail"])


def test_events_out_of_order_are_refused(server: Any, cubic_json: str) -> None:
    trace = json.loads(cubic_json)
    trace["events"][3]["seq"] = 7
    answer = post(server, json.dumps(trace).encode())
    assert answer.status_code == 422
    assert "seq must count from 0 without gaps" in answer.json()["detail"]
