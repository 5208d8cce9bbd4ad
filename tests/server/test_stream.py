"""The websocket stream against a real server with a real ``websockets`` client."""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from engine import queries as q
from engine.events import Trace, event_adapter, trace_adapter
from server.routes.events import BATCH_EVENTS
from tests.conftest import case_source, load_cases, recorded_as_a_worker_would
from tests.engine.snippets import plain_grads
from tests.server.harness import LiveServer

CASES = load_cases()
# Events spread over about a second: long enough to join, leave and rejoin mid-run.
TICKING = "import time\nfor i in range(40):\n    print('tick', i)\n    time.sleep(0.025)\n"
FOREVER = "import time\nwhile True:\n    print('still here')\n    time.sleep(0.05)\n"


async def collect(url: str, *, stop_after: int | None = None) -> tuple[list[str], int | None, str]:
    """Read text frames until the server closes (or ``stop_after`` frames); return them and the close."""
    frames: list[str] = []
    async with connect(url, max_size=None, open_timeout=30) as ws:
        try:
            async for message in ws:
                assert isinstance(message, str)
                frames.append(message)
                if stop_after is not None and len(frames) >= stop_after:
                    break
        except ConnectionClosed:
            pass
        if stop_after is not None and len(frames) >= stop_after:
            return frames, None, ""
        return frames, ws.close_code, ws.close_reason or ""


def start(api: httpx.Client, source: str) -> dict[str, Any]:
    response = api.post("/api/runs", json={"source": source})
    assert response.status_code == 201, response.text
    return response.json()


def events_url(server: LiveServer, run: dict[str, Any], after: int | None = None) -> str:
    return server.ws_url + run["ws_url"] + ("" if after is None else f"?after={after}")


def as_trace(source: str, frames: list[str]) -> Trace:
    return Trace(source=source, events=[event_adapter.validate_json(f) for f in frames])


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, list):
        return (
            isinstance(b, list) and len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_cases_stream_what_the_engine_records(
    case: dict[str, Any], api: httpx.Client, server: LiveServer
) -> None:
    source = case_source(case["file"])
    run = start(api, source)
    frames, code, reason = asyncio.run(collect(events_url(server, run)))
    assert code == 1000, reason
    got = as_trace(source, frames)
    want = recorded_as_a_worker_would(source, got.events)
    assert [e.seq for e in got.events] == list(range(len(frames)))
    assert [e.type for e in got.events] == [e.type for e in want.events]
    assert got.events[-1].status == want.events[-1].status  # type: ignore[union-attr]
    grads, want_grads = q.final_grads(got), q.final_grads(want)
    assert grads.keys() == want_grads.keys()
    assert all(_close(grads[k], want_grads[k]) for k in grads), (grads, want_grads)
    assert q.backward_order(got) == q.backward_order(want) if q.events_of(want, "backward_started") else True
    assert [p.kind for p in q.pitfalls(got)] == [p.kind for p in q.pitfalls(want)]
    assert q.stdout(got) == q.stdout(want)


GPU_NET = (
    "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"
    "net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)\n"
    "x = torch.randn(6, 4, device=device)\nloss = net(x).pow(2).mean()\nloss.backward()\n"
)


@pytest.mark.cuda
def test_a_cuda_run_streams_the_grads_pytorch_computes_on_the_gpu(
    api: httpx.Client, server: LiveServer
) -> None:
    """A run asked for with ``device: "cuda"`` goes through the real worker pool and socket; its
    tensors are on the GPU and its grads are those plain PyTorch computes on the GPU."""
    assert api.get("/api/health").json()["cuda"] is True
    response = api.post("/api/runs", json={"source": GPU_NET, "device": "cuda"})
    assert response.status_code == 201, response.text
    frames, code, reason = asyncio.run(collect(events_url(server, response.json())))
    assert code == 1000, reason
    got = as_trace(GPU_NET, frames)
    assert got.events[-1].status == "ok", got.events[-1]
    assert any(e.device.startswith("cuda") for e in q.events_of(got, "tensor"))
    want = plain_grads("device = 'cuda'\n" + GPU_NET, ["net[0].weight", "net[0].bias", "net[2].weight"])
    grads = q.final_grads(got)
    for name, expression in [
        ("net.0.weight", "net[0].weight"),
        ("net.0.bias", "net[0].bias"),
        ("net.2.weight", "net[2].weight"),
    ]:
        assert grads[name] == pytest.approx(want[expression], rel=1e-5, abs=1e-7), name


def test_stored_run_streams_the_same_frames(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, case_source("cubic_twice.py"))
    live, code, _ = asyncio.run(collect(events_url(server, run)))
    assert code == 1000
    stored, code, _ = asyncio.run(collect(events_url(server, run)))
    assert code == 1000 and stored == live
    trace = trace_adapter.validate_json(api.get(f"/api/runs/{run['id']}/trace").content)
    assert [e.model_dump_json() for e in trace.events] == live


def test_reconnect_mid_stream_gets_exactly_the_rest(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, TICKING)
    first, _, _ = asyncio.run(collect(events_url(server, run), stop_after=8))
    last_seq = json.loads(first[-1])["seq"]
    rest, code, _ = asyncio.run(collect(events_url(server, run, after=last_seq)))
    assert code == 1000
    seqs = [json.loads(f)["seq"] for f in first + rest]
    assert seqs == list(range(len(seqs)))
    assert json.loads(rest[-1])["type"] == "run_finished"
    full, _, _ = asyncio.run(collect(events_url(server, run)))
    assert first + rest == full


CHAIN = "import torch\nh = torch.ones(4, requires_grad=True)\nfor _ in range(400):\n    h = torch.tanh(h * 1.01)\nh.sum().backward()\n"


def _unbatched(frames: list[str]) -> list[Any]:
    batches = [json.loads(f) for f in frames]
    assert all(isinstance(b, list) and 1 <= len(b) <= BATCH_EVENTS for b in batches)
    return [e for b in batches for e in b]


def test_a_batched_stream_is_the_same_events_in_far_fewer_frames(
    api: httpx.Client, server: LiveServer
) -> None:
    run = start(api, CHAIN)
    single, code, _ = asyncio.run(collect(events_url(server, run)))
    assert code == 1000 and len(single) > 2000
    batched, code, _ = asyncio.run(collect(events_url(server, run) + "?batch=1"))
    assert code == 1000 and _unbatched(batched) == [json.loads(f) for f in single]
    assert len(batched) <= len(single) / BATCH_EVENTS + 1  # a stored run: full batches
    # resuming a batched stream starts right after the seq asked for
    rest, code, _ = asyncio.run(collect(events_url(server, run, after=99) + "&batch=1"))
    assert code == 1000 and [e["seq"] for e in _unbatched(rest)] == list(range(100, len(single)))


def test_a_live_batched_stream_sends_what_is_there_as_it_comes(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, TICKING)
    frames, code, _ = asyncio.run(collect(events_url(server, run) + "?batch=1"))
    events = _unbatched(frames)
    assert code == 1000 and [e["seq"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "run_finished" and len(frames) > 10  # live: the ticks came apart


@pytest.mark.parametrize("batch", ["2", "yes", ""])
def test_bad_batch_closes_4400(api: httpx.Client, server: LiveServer, batch: str) -> None:
    run = start(api, case_source("cubic.py"))
    code, reason = asyncio.run(_closed_by(events_url(server, run) + f"?batch={batch}"))
    assert code == 4400 and "batch must be 0 or 1" in reason


def test_after_past_the_end_of_a_finished_run_sends_nothing(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, case_source("cubic.py"))
    frames, _, _ = asyncio.run(collect(events_url(server, run)))
    more, code, _ = asyncio.run(collect(events_url(server, run, after=len(frames) - 1)))
    assert more == [] and code == 1000


def test_after_past_what_a_live_run_has_sent_is_refused_saying_so(
    api: httpx.Client, server: LiveServer
) -> None:
    # it waited for the run to end and closed 1000 having sent nothing, not even run_finished
    run = start(api, FOREVER)
    try:
        seen, _, _ = asyncio.run(collect(events_url(server, run), stop_after=3))
        t0 = time.monotonic()
        more, code, reason = asyncio.run(collect(events_url(server, run, after=10**17)))
        assert more == [] and code == 4400, (code, reason)
        assert (
            "the run is still going and has sent events up to seq" in reason and f"after={10**17}" in reason
        )
        assert time.monotonic() - t0 < 10  # said at once, not when the run ends (not a speed test)
        # a client that has what was sent so far gets the rest
        rest, _, _ = asyncio.run(collect(events_url(server, run, after=len(seen) - 1), stop_after=2))
        assert [json.loads(f)["seq"] for f in rest] == [len(seen), len(seen) + 1]
    finally:
        api.post(f"/api/runs/{run['id']}/cancel")


def test_200_viewers_each_get_every_event(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, TICKING)

    async def crowd() -> list[tuple[list[str], int | None, str]]:
        return await asyncio.gather(*(collect(events_url(server, run)) for _ in range(200)))

    started = time.monotonic()
    results = asyncio.run(asyncio.wait_for(crowd(), timeout=90))
    elapsed = time.monotonic() - started
    trace = api.get(f"/api/runs/{run['id']}/trace").json()
    want = [json.dumps(e) for e in trace["events"]]
    for frames, code, reason in results:
        assert code == 1000, reason
        assert [json.loads(f) for f in frames] == [json.loads(w) for w in want]
    assert elapsed < 60


def test_a_reader_that_stalls_does_not_hold_back_others(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, TICKING)

    async def scenario() -> tuple[list[str], int | None, str]:
        async with connect(events_url(server, run), max_size=None, close_timeout=1):  # never reads
            return await asyncio.wait_for(collect(events_url(server, run)), timeout=30)

    frames, code, _ = asyncio.run(scenario())
    assert code == 1000 and json.loads(frames[-1])["type"] == "run_finished"


def test_cancel_over_the_socket(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, FOREVER)

    async def scenario() -> tuple[list[str], int | None]:
        frames: list[str] = []
        async with connect(events_url(server, run) + f"?token={server.token}", max_size=None) as ws:
            async for message in ws:
                frames.append(str(message))
                if len(frames) == 3:
                    await ws.send(json.dumps({"command": "cancel"}))
            return frames, ws.close_code

    frames, code = asyncio.run(asyncio.wait_for(scenario(), timeout=30))
    end = json.loads(frames[-1])
    assert code == 1000 and end["type"] == "run_finished" and end["status"] == "cancelled"


async def _closed_by(url: str, send: str | bytes | None = None) -> tuple[int | None, str]:
    async with connect(url, max_size=None) as ws:
        if send is not None:
            await ws.send(send)
        try:
            while True:
                await asyncio.wait_for(ws.recv(), timeout=30)
        except ConnectionClosed:
            pass
        return ws.close_code, ws.close_reason or ""


def test_unknown_run_closes_4404(server: LiveServer) -> None:
    code, reason = asyncio.run(_closed_by(server.ws_url + "/api/runs/nope/events"))
    assert code == 4404 and "no run" in reason


@pytest.mark.parametrize("after", ["x", "-5", "1.5", "%207", "1_0", "%D9%A1", "9" * 40])
def test_bad_after_closes_4400(api: httpx.Client, server: LiveServer, after: str) -> None:
    run = start(api, case_source("cubic.py"))
    code, reason = asyncio.run(_closed_by(events_url(server, run) + f"?after={after}"))
    assert code == 4400 and "after must be a seq: an integer from -1 to 999999999999999999" in reason


@pytest.mark.parametrize(
    ("message", "code", "words"),
    [
        (b"\x00\x01", 1003, "binary"),
        ("not json", 1008, "cancel"),
        ('{"command": "explode"}', 1008, "cancel"),
        ('{"command": "cancel", "x": 1}', 1008, "cancel"),
        ("[]", 1008, "cancel"),
    ],
)
def test_bad_client_frames_close_with_a_reason(
    api: httpx.Client, server: LiveServer, message: str | bytes, code: int, words: str
) -> None:
    run = start(api, FOREVER)
    try:
        got, reason = asyncio.run(_closed_by(events_url(server, run), message))
        assert got == code and words in reason
    finally:
        api.post(f"/api/runs/{run['id']}/cancel")


def test_oversize_client_frame_is_refused(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, FOREVER)
    try:
        got, _ = asyncio.run(_closed_by(events_url(server, run), "x" * 200_000))
        assert got == 1009
    finally:
        api.post(f"/api/runs/{run['id']}/cancel")


def test_cross_origin_websocket_is_refused(api: httpx.Client, server: LiveServer) -> None:
    run = start(api, case_source("cubic.py"))

    async def attempt() -> None:
        async with connect(events_url(server, run), origin="https://evil.example"):  # type: ignore[arg-type]
            pass

    with pytest.raises(Exception, match="403"):
        asyncio.run(attempt())
    same_origin, code, _ = asyncio.run(collect(events_url(server, run)))
    assert code == 1000 and same_origin
