"""Bad input found by playing a hostile user against a real server, each answered clearly now.

Each test here failed before its fix: a client resuming a run that a killed server lost
waited for a ``run_finished`` that never came; a request body that stopped arriving held
its connection forever; JSON nested too deeply was called "not valid UTF-8"; and GET and
HEAD ``/api/health`` shared one operationId (FastAPI warned in the server log); and an
imported trace no run could have written (a newer format, a NUL in its source, a time of
NaN) was stored as a run.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.server.harness import LiveServer, run_json
from tests.server.test_stream import FOREVER, collect

# A stalled body is given up on after this long on the module's own server (default: 60 s).
BODY_TIMEOUT_S = 2


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server of this module's own, without a token: one test kills and restarts it."""
    live = LiveServer.start(
        tmp_path_factory.mktemp("hunt"), "--body-timeout", str(BODY_TIMEOUT_S), token=None, workers=1
    )
    try:
        yield live
    finally:
        live.stop()


def test_resuming_a_run_that_a_killed_server_lost_says_how_it_ended(own_server: LiveServer) -> None:
    """After a crash the run comes back as run_started + a made-up run_finished; a page that
    had seen more events resumes past that end, and must be told how the run ended rather
    than be sent nothing with close 1000 (it reconnected in vain, then said 'lost the connection')."""
    with own_server.client() as api:
        run = run_json(api.post("/api/runs", json={"source": FOREVER}))
    seen, _, _ = asyncio.run(collect(own_server.ws_url + run["ws_url"], stop_after=5))

    own_server.stop(signal.SIGKILL)
    own_server.launch()
    url = own_server.ws_url + run["ws_url"]  # the server is back on a new port

    more, code, reason = asyncio.run(collect(f"{url}?after={len(seen) - 1}"))
    assert more == [] and code == 4400, (code, reason)
    assert "crashed" in reason and "server restarted" in reason and "after=4" in reason
    # A client that has every event of the stored run still gets nothing and a clean close.
    stored, code, _ = asyncio.run(collect(url))
    assert code == 1000 and len(stored) == 2
    again, code, _ = asyncio.run(collect(f"{url}?after=1"))
    assert again == [] and code == 1000


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/api/runs"), ("POST", "/api/traces"), ("POST", "/api/rooms")],
)
def test_a_body_that_stops_arriving_is_answered_408(own_server: LiveServer, method: str, path: str) -> None:
    host, port = own_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        # Announce 100 bytes, send 10, then nothing: the server must answer, not wait forever.
        sock.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n".encode()
            + b'{"source":'
        )
        reply = b"".join(iter(lambda: sock.recv(4096), b"")).decode()
    assert reply.startswith("HTTP/1.1 408"), reply[:200]
    assert '"detail":"the request body stopped arriving' in reply


def test_a_body_that_arrives_slowly_but_steadily_is_read(own_server: LiveServer) -> None:
    """The timeout is for a pause, not for the whole body: a slow link still gets its run."""
    host, port = own_server.url.removeprefix("http://").split(":")
    body = b'{"source": "print(1)"}'
    pieces = [body[i : i + 4] for i in range(0, len(body), 4)]  # 6 pieces, 3 s in all
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        for piece in pieces:
            time.sleep(BODY_TIMEOUT_S / 4)
            sock.sendall(piece)
        reply = b"".join(iter(lambda: sock.recv(4096), b"")).decode()
    assert reply.startswith("HTTP/1.1 201"), reply[:200]


@pytest.mark.parametrize(
    ("query", "header", "answer"),
    [
        ("?after=" + "1" * 9000, "", "HTTP/1.1 414"),  # the request line over 8 KiB
        ("", "X-Long: " + "k" * 9000 + "\r\n", "HTTP/1.1 431"),  # a header line over 8 KiB
        ("?after=" + "1" * 8000, "", "HTTP/1.1 101"),  # under it: the socket opens
    ],
    ids=["long-url", "long-header", "long-but-fits"],
)
def test_a_websocket_request_too_large_to_read_is_answered_not_left_open(
    server: LiveServer, query: str, header: str, answer: str
) -> None:
    """NOTE [A websocket URL too long got no answer] (server/ws_protocol.py): the refusal
    was queued and never sent, and the client waited, its connection open, forever."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(
            f"GET /api/runs/nope/events{query} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            f"Sec-WebSocket-Version: 13\r\n{header}\r\n".encode()
        )
        reply = sock.recv(4096).decode(errors="replace")  # (a timeout here is the fault)
    assert reply.startswith(answer), reply[:200]


def test_json_nested_too_deeply_is_400_saying_so(api: httpx.Client) -> None:
    body = b'{"source": "x = 1", "limits": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    response = api.post("/api/runs", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert run_json(response)["detail"] == "the request body is JSON nested too deeply to read"


def test_every_operation_has_its_own_operation_id(server: LiveServer) -> None:
    with server.client() as api:
        schema = run_json(api.get("/openapi.json"))
    ids = Counter(op["operationId"] for path in schema["paths"].values() for op in path.values())
    assert [name for name, n in ids.items() if n > 1] == []
    assert "Duplicate Operation ID" not in server.log()
    with server.client() as api:
        assert api.head("/api/health").status_code == 200
        assert api.get("/api/health").status_code == 200


def _cubic_trace() -> dict[str, Any]:
    from engine.run import record

    return json.loads(
        record(
            "import torch\nx = torch.tensor(2.0, requires_grad=True)\n(x**3).backward()\n"
        ).model_dump_json()
    )


def _with_event_at_1(copied: int) -> Callable[[dict[str, Any]], None]:
    """A change putting a copy of the trace's event ``copied`` (its first or last) in at index 1."""

    def change(trace: dict[str, Any]) -> None:
        events = trace["events"]
        events.insert(1, dict(events[copied]))
        for seq, event in enumerate(events):
            event["seq"] = seq

    return change


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda t: t.update(version=999), "format version 999, from a newer gradwalk"),
        (lambda t: t.update(source=t["source"] + "\x00"), "NUL character"),
        (lambda t: t["events"][1].update(t="NaN"), "events[1] has t nan"),
        (lambda t: t["events"][1].update(t="Infinity"), "events[1] has t inf"),
        (lambda t: t.update(version=-1), "format version -1; versions count from 1"),
        (_with_event_at_1(0), "events[1] is a run_started; a trace has one, at its start"),
        (_with_event_at_1(-1), "events[1] is a run_finished; a trace has one, at its end"),
    ],
    ids=[
        "future-version",
        "nul-in-source",
        "nan-time",
        "infinite-time",
        "negative-version",
        "second-start",
        "finished-mid-way",
    ],
)
def test_an_imported_trace_no_run_could_have_written_is_refused_saying_why(
    api: httpx.Client, change: Callable[[dict[str, Any]], None], words: str
) -> None:
    """A trace of a newer format, a source no snippet can hold, or a time the charts cannot
    place was stored as if it were a run ('NaN' travelled on to the browser as a string)."""
    trace = _cubic_trace()
    change(trace)
    answer = api.post("/api/traces", content=json.dumps(trace), headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert words in answer.json()["detail"], answer.text
