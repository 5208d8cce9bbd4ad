"""The REST API against a real server: runs, traces, examples, health, and every refusal."""

from __future__ import annotations

import gzip
import json
import re
import socket
import time
from typing import Any

import httpx
import pytest

from engine.events import trace_adapter
from tests.server.harness import STATIC, TEMPLATES, LiveServer, run_json

QUICK = "import torch\nx = torch.tensor(2.0, requires_grad=True)\n(x * x).backward()\nprint(x.grad)\n"
SLOW = "import time\nfor i in range(200):\n    print(i)\n    time.sleep(0.1)\n"


def wait_finished(api: httpx.Client, run_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = run_json(api.get(f"/api/runs/{run_id}"))
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.05)
    pytest.fail(f"run {run_id} did not finish in {timeout} s")


def test_health(api: httpx.Client) -> None:
    health = run_json(api.get("/api/health"))
    assert health["ok"] is True and health["workers"] == 2
    assert isinstance(health["isolation"], dict) and isinstance(health["cuda"], bool)
    assert health["version"]


def test_examples_are_the_library(api: httpx.Client) -> None:
    examples = run_json(api.get("/api/examples"))["examples"]
    by_id = {e["id"]: e for e in examples}
    assert by_id["cubic"]["file"] == "cubic.py" and "x = torch.tensor(2.5" in by_id["cubic"]["source"]
    assert all(e["title"] and e["summary"] for e in examples)
    assert len(examples) >= 20


def test_create_read_list_trace(api: httpx.Client) -> None:
    created = api.post("/api/runs", json={"source": QUICK})
    assert created.status_code == 201, created.text
    run = created.json()
    assert run["status"] in ("queued", "running") and run["device"] == "cpu" and run["source"] == QUICK
    assert run["ws_url"] == f"/api/runs/{run['id']}/events"
    done = wait_finished(api, run["id"])
    assert done["status"] == "ok" and done["finished_at"] and done["counts"]["backward_calls"] == 1
    assert done["event_count"] == done["counts"]["events"] or done["event_count"] > 0
    listed = run_json(api.get("/api/runs", params={"limit": 5}))["runs"]
    assert listed[0]["id"] == run["id"] and "source" not in listed[0]
    trace = trace_adapter.validate_json(api.get(f"/api/runs/{run['id']}/trace").content)
    assert trace.source == QUICK and trace.events[-1].type == "run_finished"
    assert [e.seq for e in trace.events] == list(range(len(trace.events))) == list(range(done["event_count"]))


def test_title_comes_from_the_library_or_a_comment(api: httpx.Client) -> None:
    source = run_json(api.get("/api/examples"))["examples"][0]["source"]
    run = run_json(api.post("/api/runs", json={"source": source}))
    assert run["title"] == "Your first backward()"
    run = run_json(api.post("/api/runs", json={"source": "# my experiment\nprint(1)\n"}))
    assert run["title"] == "my experiment"


def test_cancel_a_running_run(api: httpx.Client) -> None:
    run = run_json(api.post("/api/runs", json={"source": SLOW}))
    deadline = time.monotonic() + 30
    while run_json(api.get(f"/api/runs/{run['id']}"))["event_count"] < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    cancelled = api.post(f"/api/runs/{run['id']}/cancel")
    # it answers once the run has stopped (it answered "running", the status from before)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert wait_finished(api, run["id"], 20)["status"] == "cancelled"
    # Cancelling a finished run changes nothing.
    again = api.post(f"/api/runs/{run['id']}/cancel")
    assert again.status_code == 200 and again.json()["status"] == "cancelled"


def test_trace_of_a_running_run_has_the_events_so_far(api: httpx.Client) -> None:
    run = run_json(api.post("/api/runs", json={"source": SLOW}))
    deadline = time.monotonic() + 30
    while run_json(api.get(f"/api/runs/{run['id']}"))["event_count"] < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    trace = trace_adapter.validate_json(api.get(f"/api/runs/{run['id']}/trace").content)
    assert trace.events[0].type == "run_started" and trace.events[-1].type != "run_finished"
    api.post(f"/api/runs/{run['id']}/cancel")
    wait_finished(api, run["id"])


@pytest.mark.parametrize(
    "path",
    [
        "/api/runs/nope",
        "/api/runs/nope/trace",
        "/api/runs/" + "x" * 500,
        "/api/runs/" + "x" * 5000 + "/trace",
        "/api/runs/" + "x" * 5000 + "/export",
        "/embed/" + "x" * 5000,
    ],
)
def test_unknown_runs_are_404(api: httpx.Client, path: str) -> None:
    response = api.get(path)
    assert response.status_code == 404
    if not path.startswith("/embed/"):  # (an embed is a page saying so, for the iframe)
        # the id is named, cut to 64 characters (/trace echoed all 5,000)
        assert run_json(response)["detail"] == f"no run with id {path.split('/')[3][:64]!r}"


def test_cancel_unknown_is_404(api: httpx.Client) -> None:
    assert api.post("/api/runs/nope/cancel").status_code == 404


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        (b"{not json", "JSON"),
        (b'{"source": 12}', "string"),
        (b'{"source": "x", "device": "tpu"}', "cpu"),
        (b'{"source": "x", "extra": 1}', "extra"),
        (b'{"source": "x", "limits": {"timeout_s": -1}}', "greater than"),
        (
            b'{"source": "x", "limits": {"timeout_s": NaN}}',
            "finite number",
        ),  # was "less than or equal to 600"
        (b'{"source": "x", "limits": {"bogus": 1}}', "extra"),
        (b'{"source": "a\\u0000b"}', "NUL"),
        (b'{"source": "\\ud800"}', "Unicode"),
        (b"[]", "object"),
        (b"", "required"),
    ],
)
def test_malformed_create_is_422_saying_why(api: httpx.Client, body: bytes, expect: str) -> None:
    response = api.post("/api/runs", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert expect.lower() in response.text.lower()


def test_source_over_100_000_characters_is_refused(api: httpx.Client) -> None:
    response = api.post("/api/runs", json={"source": "#" * 100_001})
    assert response.status_code == 422 and "100000 characters" in response.text


def test_limits_above_the_server_caps_are_lowered(api: httpx.Client) -> None:
    run = run_json(
        api.post("/api/runs", json={"source": "print(1)", "limits": {"timeout_s": 500, "max_ops": 7}})
    )
    wait_finished(api, run["id"])
    started = api.get(f"/api/runs/{run['id']}/trace").json()["events"][0]
    assert started["limits"]["timeout_s"] == 60 and started["limits"]["max_ops"] == 7


@pytest.mark.parametrize("given", [True, "5", 2.5, [5]])
def test_a_limit_that_is_not_a_whole_number_is_refused(api: httpx.Client, given: Any) -> None:
    response = api.post("/api/runs", json={"source": "print(1)", "limits": {"detail_every": given}})
    assert response.status_code == 422 and "detail_every" in response.text, response.text


def test_cuda_on_a_server_without_a_gpu_ends_saying_why(api: httpx.Client) -> None:
    if run_json(api.get("/api/health"))["cuda"]:
        pytest.skip("this machine has a GPU: test_stream.py's CUDA run covers CUDA runs here")
    run = run_json(api.post("/api/runs", json={"source": "print(1)", "device": "cuda"}))
    done = wait_finished(api, run["id"])
    assert done["status"] == "error" and "CUDA is not available" in done["message"]


def test_oversize_body_is_refused_before_it_is_read(server: LiveServer) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        # Announce 10 MB, send none of it: the answer must come at once, not after a timeout.
        sock.sendall(
            b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 10000000\r\n\r\n"
        )
        # The answer comes in pieces (head, then body); the server closes once it is sent.
        reply = b"".join(iter(lambda: sock.recv(4096), b"")).decode()
    assert reply.startswith("HTTP/1.1 413") and '"detail"' in reply and "limit" in reply


def test_oversize_chunked_body_is_cut_off(api: httpx.Client) -> None:
    def chunks() -> Any:
        yield b'{"source": "'
        for _ in range(100):
            yield b"#" * 10_000
        yield b'"}'

    response = api.post("/api/runs", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and "limit" in run_json(response)["detail"]


def test_a_body_that_is_not_utf8_is_400(api: httpx.Client) -> None:
    response = api.post(
        "/api/runs", content=b'{"source": "\xff\xfe"}', headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and "UTF-8" in run_json(response)["detail"]


def test_form_posts_are_not_runs(api: httpx.Client) -> None:
    # A cross-site <form> can send text/plain without a CORS preflight; it must not start a run.
    response = api.post(
        "/api/runs", content=b'{"source": "print(1)"}', headers={"content-type": "text/plain"}
    )
    assert response.status_code == 415
    # it said "Input should be a valid dictionary", the JSON echoed back as a string
    assert run_json(response)["detail"] == (
        "the request body must be JSON sent as Content-Type: application/json; it came as text/plain"
    )


@pytest.mark.parametrize(
    ("headers", "sent_as"),
    [
        (
            {"content-type": "application/x-www-form-urlencoded"},
            "as application/x-www-form-urlencoded",
        ),  # curl -d
        ({}, "with no Content-Type"),
    ],
)
def test_a_json_body_sent_as_another_type_is_refused_naming_the_type(
    api: httpx.Client, headers: dict[str, str], sent_as: str
) -> None:
    for method, path in [("POST", "/api/runs"), ("POST", "/api/rooms")]:
        response = api.request(method, path, content=b'{"source": "print(1)"}', headers=headers)
        assert response.status_code == 415, (path, response.text)
        assert run_json(response)["detail"].endswith(f"Content-Type: application/json; it came {sent_as}")
    # JSON with a charset, or a +json type, is JSON
    body = b'{"source": "print(1)"}'
    ok = api.post("/api/runs", content=body, headers={"content-type": "application/json; charset=utf-8"})
    assert ok.status_code == 201, ok.text


def test_a_compressed_body_is_refused_naming_the_encoding_where_only_traces_take_gzip(
    api: httpx.Client,
) -> None:
    body = gzip.compress(b'{"source": "print(1)"}')
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    response = api.post("/api/runs", content=body, headers=headers)
    # it said "the request body is not valid UTF-8 JSON text"
    assert response.status_code == 415 and run_json(response)["detail"] == (
        "content encoding 'gzip' is not taken here: send the JSON uncompressed (POST /api/traces alone takes gzip)"
    )


def _operations_with_a_body(api: httpx.Client) -> list[tuple[str, str]]:
    """(method, path) of every operation in the server's OpenAPI that takes a request body."""
    paths = run_json(api.get("/openapi.json"))["paths"]
    return [
        (method.upper(), path.replace("{", "").replace("}", ""))
        for path, operations in paths.items()
        for method, operation in operations.items()
        if "requestBody" in operation
    ]


@pytest.mark.parametrize("content_type", ["text/plain", "application/octet-stream"])
def test_a_body_that_is_neither_json_nor_utf8_is_refused_on_every_route(
    api: httpx.Client, content_type: str
) -> None:
    # A non-JSON body reaches the error answer as its raw bytes; undecodable ones made it a 500.
    operations = _operations_with_a_body(api)
    assert len(operations) >= 5, operations  # runs, traces, rooms, a room's state and runs, lessons
    for method, path in operations:
        response = api.request(method, path, content=b"\xff\xfe\x00", headers={"content-type": content_type})
        assert 400 <= response.status_code < 500, (method, path, response.status_code, response.text)
        assert run_json(response)["detail"], (method, path)


def test_bad_query_is_422(api: httpx.Client) -> None:
    assert api.get("/api/runs", params={"limit": "many"}).status_code == 422
    assert api.get("/api/runs", params={"limit": 0}).status_code == 422


def test_unknown_path_and_method_are_json(api: httpx.Client) -> None:
    assert run_json(api.get("/api/nothing"))["detail"]
    response = api.delete("/api/runs")
    assert response.status_code == 405 and run_json(response)["detail"]
    assert response.headers["allow"] == "GET, HEAD, POST"


def test_a_wrong_method_names_every_method_the_path_allows(api: httpx.Client) -> None:
    # GET and DELETE /api/rooms/{code} are two routes; Starlette alone named the first only
    response = api.put("/api/rooms/ABCDEF")
    assert response.status_code == 405 and run_json(response)["detail"]
    assert response.headers["allow"] == "DELETE, GET, HEAD"


# (not the runs list: an earlier test's run may end between the GET and the HEAD)
@pytest.mark.parametrize("path", ["/", "/api/lessons", "/api/runs/{id}", "/embed/{id}", "/room"])
def test_head_is_answered_wherever_get_is_with_the_get_s_headers_and_no_body(
    api: httpx.Client, server: LiveServer, path: str
) -> None:
    # a link checker (a course platform checking an embed's URL) asks with HEAD: it was a 405
    run = api.post("/api/runs", json={"source": "print(1)"}).json()
    wait_finished(api, run["id"])  # (a live run's answer grows between the GET and the HEAD)
    url = path.replace("{id}", run["id"])
    for encoding in ("identity", "gzip"):
        got = api.get(url, headers={"accept-encoding": encoding})
        head = api.head(url, headers={"accept-encoding": encoding})
        assert head.status_code == got.status_code == 200, (url, head.status_code)
        assert head.content == b""
        for name in ("content-type", "content-length", "content-encoding"):
            assert head.headers.get(name) == got.headers.get(name), (url, name)
    missing = api.head(url.replace(run["id"], "nope")) if "{id}" in path else None
    assert missing is None or missing.status_code == 404


def test_foreign_host_header_is_refused(api: httpx.Client) -> None:
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not reach the API.
    response = api.get("/api/runs", headers={"host": "evil.example"})
    assert response.status_code == 400 and "not served" in run_json(response)["detail"]


def test_no_cors(api: httpx.Client) -> None:
    response = api.options(
        "/api/runs", headers={"origin": "https://evil.example", "access-control-request-method": "POST"}
    )
    assert "access-control-allow-origin" not in response.headers
    response = api.get("/api/runs", headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers


def test_api_responses_carry_security_headers(api: httpx.Client) -> None:
    headers = api.get("/api/health").headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


def test_index_page(api: httpx.Client, server: LiveServer) -> None:
    response = api.get("/")
    assert response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    assert (
        "default-src 'self'" in csp
        and "frame-ancestors 'none'" in csp
        and "http" not in csp.split("connect-src")[0]
    )
    assert "ws://127.0.0.1:" in csp and response.headers["x-frame-options"] == "DENY"
    if (TEMPLATES / "index.html").is_file():
        assert response.status_code == 200
        found = re.search(
            r'<script type="application/json" id="bootstrap">(.*?)</script>', response.text, re.S
        )
        assert found, "index.html must embed the bootstrap JSON"
        bootstrap = json.loads(found.group(1))
        assert bootstrap["api"] == "/api" and bootstrap["token_required"] is True
        assert isinstance(bootstrap["cuda"], bool) and bootstrap["version"]
    else:
        assert response.status_code == 503 and "make web" in response.text


def test_head_asks_the_page_and_health_as_get_does(api: httpx.Client) -> None:
    # an uptime monitor or `curl -I` (FastAPI's GET routes alone answered 405)
    for path in ("/", "/api/health"):
        head, get = api.head(path), api.get(path)
        assert head.status_code == get.status_code and head.status_code != 405, path
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


def test_embed_page(api: httpx.Client, server: LiveServer) -> None:
    missing = api.get("/embed/nope")
    assert missing.status_code == 404
    if (TEMPLATES / "embed.html").is_file():  # a page for the iframe that says so, not JSON
        assert missing.headers["content-type"].startswith("text/html")
        assert (
            '"run_missing": true' in missing.text
            and "frame-ancestors" not in missing.headers["content-security-policy"]
        )
    run = run_json(api.post("/api/runs", json={"source": QUICK}))
    response = api.get(f"/embed/{run['id']}")
    if (TEMPLATES / "embed.html").is_file():
        assert response.status_code == 200
        assert "frame-ancestors" not in response.headers["content-security-policy"]
        assert "x-frame-options" not in response.headers
    else:
        assert response.status_code == 404 and "not built" in run_json(response)["detail"]


def test_static_files_are_served_when_built(api: httpx.Client, server: LiveServer) -> None:
    files = [p for p in STATIC.rglob("*") if p.is_file()] if STATIC.is_dir() else []
    assert api.get("/static/definitely-not-there.js").status_code == 404
    if files:
        rel = files[0].relative_to(STATIC).as_posix()
        assert api.get(f"/static/{rel}").status_code == 200
