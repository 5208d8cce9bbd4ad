"""A bounded version of ``bench/bench_rooms.py``: 50 viewers follow one presenter on the shared server."""

from __future__ import annotations

import asyncio

from bench.bench_rooms import broadcast
from tests.server.harness import LiveServer
from tests.server.test_rooms import open_room


def test_50_viewers_follow_every_change_and_catch_up_at_once(server: LiveServer) -> None:
    room = open_room(server, {"source": "import torch\n"})
    figures = asyncio.run(asyncio.wait_for(broadcast(server.ws_url, room, viewers=50, changes=20), 120))
    print(
        f"\n50 viewers, 20 changes: lag median {figures['lag_median_ms']:.1f} ms, "
        f"p95 {figures['lag_p95_ms']:.1f} ms, max {figures['lag_max_ms']:.1f} ms; "
        f"catch-up p95 {figures['catch_up_p95_ms']:.1f} ms"
    )
    assert figures["missing"] == 0, "a viewer never got the presenter's last change"
    assert figures["caught_up_latest"], "a reconnecting viewer's first frame was not the latest state"
    assert figures["lag_p95_ms"] < 1000 and figures["lag_max_ms"] < 3000
