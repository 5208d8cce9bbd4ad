"""Measure classroom rooms: the lag from a presenter's change to every viewer, with 200 viewers.

Run: ``python bench/bench_rooms.py [--viewers N] [--changes N] [--interval S]``. Starts a
real ``gradwalk serve`` on a free port (loopback, a throwaway DB), opens a room, connects
``viewers`` websocket viewers and a presenter, then:

* **broadcast**: the presenter makes ``changes`` state changes (a step each, ``interval``
  apart). A change's lag at a viewer is when the viewer got that version minus when the
  presenter sent it: presenter -> server -> viewer, the delay a class sees. Median, p95 and
  max over all (change, viewer) pairs; every viewer must get every version.
* **catch-up**: all viewers drop and reconnect at once; the time until each has the latest
  state again (the first frame of a connection is the latest state). Then one viewer
  reconnects alone, as a reloaded page does, ten times.

The viewers and the presenter share one client process, so the figures include the
client's own scheduling of 200 sockets: an upper bound on the server's part.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
__all__ = ["broadcast", "main", "measure"]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc; 0.0 elsewhere)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _viewer(url: str, got: dict[int, float], until: list[int], ready: asyncio.Event) -> None:
    async with connect(url, max_size=None, open_timeout=60) as ws:
        async for message in ws:
            version = json.loads(message)["version"]
            got[version] = time.perf_counter()
            ready.set()
            if until and version >= until[0]:
                return


async def _all_ready(events: list[asyncio.Event], timeout: float) -> None:
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), timeout)


async def broadcast(
    ws_base: str,
    room: dict[str, Any],
    viewers: int = 200,
    changes: int = 50,
    interval_s: float = 0.05,
    server_pid: int | None = None,
) -> dict[str, Any]:
    """Follow ``room`` with ``viewers`` sockets while its presenter makes ``changes`` changes."""
    viewer_url = f"{ws_base}{room['ws_url']}?role=viewer"
    presenter_url = f"{ws_base}{room['ws_url']}?role=presenter&key={room['presenter_key']}"
    got: list[dict[int, float]] = [{} for _ in range(viewers)]
    until: list[int] = []  # the last version, once known: viewers stop there
    ready = [asyncio.Event() for _ in range(viewers)]
    started = time.perf_counter()
    tasks = [asyncio.create_task(_viewer(viewer_url, g, until, r)) for g, r in zip(got, ready, strict=True)]
    sent: dict[int, float] = {}
    server_cpu, client_cpu = _cpu_s(server_pid), time.process_time()
    async with connect(presenter_url, max_size=None) as presenter:
        base = json.loads(await presenter.recv())["version"]
        await _all_ready(ready, 120)
        connect_s = time.perf_counter() - started
        for i in range(changes):
            version = base + i + 1
            sent[version] = time.perf_counter()
            await presenter.send(json.dumps({"type": "state", "state": {"view": "stepper", "step": i}}))
            if i < changes - 1:
                await asyncio.sleep(interval_s)
        until.append(base + changes)
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        server_cpu, client_cpu = _cpu_s(server_pid) - server_cpu, time.process_time() - client_cpu

        # Catch-up: every viewer reconnects at once and must get the latest state first.
        got_again: list[dict[int, float]] = [{} for _ in range(viewers)]
        ready_again = [asyncio.Event() for _ in range(viewers)]
        rejoin = time.perf_counter()
        again = [
            asyncio.create_task(_viewer(viewer_url, g, until, r))
            for g, r in zip(got_again, ready_again, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*again), 120)

        # One viewer reconnecting alone (a reloaded page): connect -> latest state.
        single: list[float] = []
        for _ in range(10):
            got_one: dict[int, float] = {}
            before = time.perf_counter()
            await _viewer(viewer_url, got_one, until, asyncio.Event())
            single.append((got_one[until[0]] - before) * 1000)
    catch_up = [(min(g.values()) - rejoin) * 1000 for g in got_again]
    caught_up_latest = all(max(g) == until[0] and len(g) == 1 for g in got_again)

    lags, skipped, missing = _lags(got, sent)
    return {
        "viewers": viewers,
        "changes": changes,
        "interval_ms": interval_s * 1000,
        "connect_s": connect_s,
        "delivered": len(lags),
        "skipped": skipped,
        "missing": missing,
        "lag_median_ms": statistics.median(lags),
        "lag_p95_ms": _percentile(lags, 0.95),
        "lag_max_ms": max(lags),
        "catch_up_median_ms": statistics.median(catch_up),
        "catch_up_p95_ms": _percentile(catch_up, 0.95),
        "caught_up_latest": caught_up_latest,
        "reconnect_one_median_ms": statistics.median(single),
        "server_cpu_s": server_cpu,
        "client_cpu_s": client_cpu,
    }


def _lags(got: list[dict[int, float]], sent: dict[int, float]) -> tuple[list[float], int, int]:
    """Return each (viewer, change) lag in ms, the versions skipped, and the viewers that missed the last.

    A viewer that skipped version v (a newer one was ready before it was sent v; see NOTE
    [Room fan-out]) showed change v when it got the next version: that is its lag for v.
    """
    lags: list[float] = []
    skipped = missing = 0
    last = max(sent)
    for g in got:
        if last not in g:
            missing += 1
            continue
        for v, t in sent.items():
            if v not in g:
                skipped += 1
            shown = min(when for version, when in g.items() if version >= v)
            lags.append((shown - t) * 1000)
    return lags, skipped, missing


def _start_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    return start_server(db)


async def measure(viewers: int = 200, changes: int = 50, interval_s: float = 0.05) -> dict[str, Any]:
    """Start a server, open a room, measure it with ``viewers`` viewers, stop the server."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = _start_server(Path(tmp) / "bench.sqlite3")
        try:
            async with httpx.AsyncClient(base_url=url, timeout=60) as api:
                while (await api.get("/api/health")).status_code != 200:
                    await asyncio.sleep(0.1)
                room = (await api.post("/api/rooms", json={"state": {"source": "import torch\n"}})).json()
            ws_base = "ws" + url[len("http") :]
            return await broadcast(ws_base, room, viewers, changes, interval_s, proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    """Print the room's broadcast lag and catch-up figures; exit 1 if a viewer missed the last change."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--viewers", type=int, default=200)
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument(
        "--interval", type=float, default=0.05, help="seconds between the presenter's changes"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    f = asyncio.run(measure(args.viewers, args.changes, args.interval))
    if args.json:
        print(json.dumps(f, indent=2))
    else:
        print(
            f"room broadcast: {f['viewers']} viewers, {f['changes']} presenter changes "
            f"{f['interval_ms']:.0f} ms apart (all connected in {f['connect_s']:.2f} s):"
        )
        print(
            f"  presenter -> viewer lag  median {f['lag_median_ms']:6.1f} ms   p95 {f['lag_p95_ms']:6.1f} ms"
            f"   max {f['lag_max_ms']:6.1f} ms   ({f['skipped']} versions skipped, {f['missing']} viewers missed the last)"
        )
        print(
            f"  all {f['viewers']} reconnect at once: latest state after median {f['catch_up_median_ms']:6.1f} ms"
            f"   p95 {f['catch_up_p95_ms']:6.1f} ms   (first frame is the latest: {f['caught_up_latest']})"
        )
        print(
            f"  one viewer reconnecting alone: latest state after median {f['reconnect_one_median_ms']:.1f} ms"
        )
        print(
            f"  CPU while broadcasting: server {f['server_cpu_s']:.2f} s, client process {f['client_cpu_s']:.2f} s"
        )
    return 0 if f["missing"] == 0 and f["caught_up_latest"] else 1


if __name__ == "__main__":
    sys.exit(main())
