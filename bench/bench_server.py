"""Measure the server end to end: submit -> first websocket event, and broadcast lag to many viewers.

Run: ``python bench/bench_server.py [--runs N] [--viewers N] [--workers N]``. Starts a real
``gradwalk serve`` on a free port (loopback, local isolation, a throwaway DB), warms it,
then:

* **latency**: ``runs`` times, POST the cubic example and open its websocket at once;
  time submit -> first event (``run_started``), -> first graph event (the first ``op``),
  -> ``run_finished``. Median and p95, in ms.
* **broadcast**: ``viewers`` websocket clients follow one live run (100 events, 10 ms
  apart). An event's lag at a viewer is when that viewer got it minus when the first
  viewer got it; reported over all (event, viewer) pairs. The viewers share one client
  process, so the figures include the client's own scheduling: an upper bound.
* **a big graph**: a fully recorded 2,000-step tanh chain (26,036 events), submit -> its
  last event at a client reading one event a frame and at one asking for ``batch=1``,
  alternately, with the server's CPU for each (median of 3).
* **page loads**: ``loads`` browsers open the app at once, as a class does when told the
  address: each fetches the page and what it names (style, bundle, layout worker), gzip
  accepted, after one warm-up load. Bytes on the wire per load, wall time for all, and
  the server's CPU per load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.serve import start_server

ROOT = Path(__file__).resolve().parent.parent
__all__ = ["main", "measure"]

CUBIC = (ROOT / "server" / "examples" / "cubic.py").read_text()
# Quiet for a few seconds (while the viewers connect), then 100 events 10 ms apart.
TICKING = "import time\ntime.sleep(4)\nfor i in range(100):\n    print(i)\n    time.sleep(0.01)\n"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _start_server(db: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    return start_server(db, "--burst", "100000", "--rate", "100000", workers=workers)


async def _one_run(
    api: httpx.AsyncClient, ws_base: str, source: str, device: str = "cpu", batch: bool = False
) -> dict[str, float]:
    """Submit ``source`` and follow its websocket (``?batch=1`` when ``batch``) to the end;
    return ms from submit to the first event, the first op and ``run_finished``, and the
    number of events."""
    t0 = time.perf_counter()
    run = (await api.post("/api/runs", json={"source": source, "device": device})).json()
    marks: dict[str, float] = {"events": 0}
    async with connect(ws_base + run["ws_url"] + ("?batch=1" if batch else ""), max_size=None) as ws:
        async for message in ws:
            now = (time.perf_counter() - t0) * 1000
            data = json.loads(message)
            for event in data if batch else [data]:
                marks["events"] += 1
                marks.setdefault("first", now)
                if event["type"] == "op":
                    marks.setdefault("graph", now)
                if event["type"] == "run_finished":
                    marks["finished"] = now
                    if event["status"] != "ok":
                        raise RuntimeError(f"the benchmark run ended {event['status']}: {event['message']}")
    return marks


async def _viewer(url: str, times: list[float], connected: list[float]) -> None:
    async with connect(url, max_size=None, open_timeout=60) as ws:
        connected.append(time.perf_counter())
        async for _message in ws:
            times.append(time.perf_counter())


async def _latency(api: httpx.AsyncClient, ws_base: str, runs: int, device: str) -> dict[str, float]:
    for _ in range(3):  # warm the workers and the server's code paths
        await _one_run(api, ws_base, CUBIC, device)
    marks = []
    for _ in range(runs):
        marks.append(await _one_run(api, ws_base, CUBIC, device))
        await asyncio.sleep(0.25)  # let the worker stand its next child by, as between real clicks
    out: dict[str, float] = {}
    for key in ("first", "graph", "finished"):
        values = [m[key] for m in marks]
        out[f"{key}_median_ms"] = statistics.median(values)
        out[f"{key}_p95_ms"] = _percentile(values, 0.95)
    return out


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _broadcast(api: httpx.AsyncClient, ws_base: str, viewers: int, server_pid: int) -> dict[str, float]:
    server_cpu, client_cpu = _cpu_s(server_pid), time.process_time()
    run = (await api.post("/api/runs", json={"source": TICKING})).json()
    times: list[list[float]] = [[] for _ in range(viewers)]
    connected: list[float] = []
    started = time.perf_counter()
    viewing = asyncio.gather(*(_viewer(ws_base + run["ws_url"], t, connected) for t in times))
    await asyncio.wait_for(viewing, 120)
    wall = time.perf_counter() - started
    server_cpu, client_cpu = _cpu_s(server_pid) - server_cpu, time.process_time() - client_cpu
    counts = {len(t) for t in times}
    if len(counts) != 1:
        raise RuntimeError(f"viewers got different numbers of events: {sorted(counts)}")
    events = counts.pop()
    all_in = max(connected)
    lags: list[float] = []
    measured = 0
    for i in range(events):
        first = min(t[i] for t in times)
        if first < all_in:
            continue  # sent before the last viewer joined: that one caught up, it did not lag
        measured += 1
        lags.extend((t[i] - first) * 1000 for t in times)
    if not lags:
        raise RuntimeError("the viewers took longer to connect than the run's quiet start")
    last = [t[-1] for t in times]
    return {
        "viewers": viewers,
        "events": events,
        "events_measured": measured,
        "connect_s": all_in - started,
        "lag_median_ms": statistics.median(lags),
        "lag_p95_ms": _percentile(lags, 0.95),
        "lag_max_ms": max(lags),
        "last_event_spread_ms": (max(last) - min(last)) * 1000,
        "wall_s": wall,
        "server_cpu_s": server_cpu,
        "client_cpu_s": client_cpu,
    }


BIG_GRAPH = (
    "import torch\nx = torch.randn(16, requires_grad=True)\nh = x\n"
    "for _ in range(2000):\n    h = torch.tanh(h * 1.01 + 0.1)\nh.sum().backward()\n"
)


async def _big_graph(api: httpx.AsyncClient, ws_base: str, server_pid: int) -> dict[str, float]:
    await _one_run(api, ws_base, BIG_GRAPH, batch=True)  # warm
    out: dict[str, float] = {}
    times: dict[bool, list[float]] = {False: [], True: []}
    cpus: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(3):
        for batch in (False, True):
            cpu = _cpu_s(server_pid)
            marks = await _one_run(api, ws_base, BIG_GRAPH, batch=batch)
            times[batch].append(marks["finished"] / 1000)
            cpus[batch].append(_cpu_s(server_pid) - cpu)
            out["events"] = marks["events"]
            await asyncio.sleep(0.5)
    for batch, key in ((False, "single"), (True, "batched")):
        out[f"{key}_s"] = statistics.median(times[batch])
        out[f"{key}_server_cpu_s"] = statistics.median(cpus[batch])
    return out


async def _page_load(api: httpx.AsyncClient) -> int:
    """Fetch the app's page and everything it loads; return the bytes on the wire."""
    page = await api.get("/")
    urls = re.findall(r'(?:src|href)="(/static/dist/[^"]+)"', page.text)
    version = next(url.split("?", 1)[1] for url in urls if "/app.js?" in url)
    urls.append(f"/static/dist/elk-worker.js?{version}")  # the bundle fetches it with its ?v=
    total = page.num_bytes_downloaded
    for url in urls:
        response = await api.get(url, headers={"accept-encoding": "gzip"})
        response.raise_for_status()
        total += response.num_bytes_downloaded
    return total


async def _page_loads(api: httpx.AsyncClient, loads: int, server_pid: int) -> dict[str, float]:
    await _page_load(api)  # the first load after a build compresses the bundle
    server_cpu, started = _cpu_s(server_pid), time.perf_counter()
    sizes = await asyncio.gather(*(_page_load(api) for _ in range(loads)))
    wall, server_cpu = time.perf_counter() - started, _cpu_s(server_pid) - server_cpu
    return {
        "loads": loads,
        "bytes_per_load": statistics.median(sizes),
        "wall_s": wall,
        "server_cpu_ms_per_load": server_cpu * 1000 / loads,
    }


async def measure(
    runs: int = 30, viewers: int = 200, workers: int = 2, device: str = "cpu", loads: int = 30
) -> dict[str, Any]:
    """Start a server, run both measurements, stop it; return the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = _start_server(Path(tmp) / "bench.sqlite3", workers)
        try:
            ws_base = "ws" + url[len("http") :]
            async with httpx.AsyncClient(base_url=url, timeout=60) as api:
                while (await api.get("/api/health")).status_code != 200:
                    await asyncio.sleep(0.1)
                latency = await _latency(api, ws_base, runs, device)
                broadcast = await _broadcast(api, ws_base, viewers, proc.pid)
                big = await _big_graph(api, ws_base, proc.pid)
                pages = await _page_loads(api, loads, proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {"latency": latency, "broadcast": broadcast, "big_graph": big, "pages": pages}


def main(argv: list[str] | None = None) -> int:
    """Print the server's latency and broadcast figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--viewers", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="device of the latency runs (cpu or cuda)")
    parser.add_argument("--loads", type=int, default=30, help="page loads at once (a class opening the app)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = asyncio.run(measure(args.runs, args.viewers, args.workers, args.device, args.loads))
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    lat, bc = figures["latency"], figures["broadcast"]
    print(
        f"warm server, cubic example on {args.device}, {args.runs} runs "
        "(submit = POST /api/runs; then open the websocket):"
    )
    for key, label in (
        ("first", "first event"),
        ("graph", "first graph event (op)"),
        ("finished", "run_finished"),
    ):
        print(
            f"  submit -> {label:24s} median {lat[key + '_median_ms']:6.1f} ms   p95 {lat[key + '_p95_ms']:6.1f} ms"
        )
    print(
        f"broadcast: {bc['viewers']} viewers of one live run, {bc['events']} events each "
        f"(all connected in {bc['connect_s']:.2f} s; lag over the {bc['events_measured']} events after that):"
    )
    print(
        f"  lag behind the first viewer  median {bc['lag_median_ms']:6.1f} ms   p95 {bc['lag_p95_ms']:6.1f} ms"
        f"   max {bc['lag_max_ms']:6.1f} ms"
    )
    print(
        f"  last event reached every viewer within {bc['last_event_spread_ms']:.1f} ms; "
        f"whole run watched in {bc['wall_s']:.2f} s"
    )
    print(
        f"  CPU while broadcasting: server {bc['server_cpu_s']:.2f} s, viewers' process {bc['client_cpu_s']:.2f} s"
    )
    big = figures["big_graph"]
    print(
        f"a big graph ({big['events']:.0f} events), submit -> last event at a client: "
        f"{big['single_s']:.2f} s one event a frame (server CPU {big['single_server_cpu_s']:.2f} s), "
        f"{big['batched_s']:.2f} s batched (server CPU {big['batched_server_cpu_s']:.2f} s)"
    )
    pages = figures["pages"]
    print(
        f"a class opening the app: {pages['loads']} page loads at once (page, style, bundle, layout worker), "
        f"{pages['bytes_per_load'] / 1e6:.2f} MB on the wire each, all in {pages['wall_s']:.2f} s, "
        f"server CPU {pages['server_cpu_ms_per_load']:.1f} ms a load"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
