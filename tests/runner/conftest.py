"""A warm pool shared by the runner tests, driven from one event loop without pytest-asyncio."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from engine.events import Event, Limits
from runner import RunHandle, WorkerPool

T = TypeVar("T")

FAST = Limits(timeout_s=3.0)


class PoolDriver:
    """Run coroutines against one pool on one loop, from synchronous tests."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: WorkerPool) -> None:
        self.loop = loop
        self.pool = pool

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    def run(
        self, source: str, *, device: str = "cpu", limits: Limits | None = None
    ) -> tuple[list[Event], RunHandle]:
        """Submit ``source`` and collect its whole stream."""

        async def go() -> tuple[list[Event], RunHandle]:
            handle = self.pool.submit(source, device=device, limits=limits or FAST)
            return [event async for event in handle.events()], handle

        return self.call(go())


def finished(events: list[Event]) -> Any:
    """The run's one run_finished, after checking the stream's shape."""
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[0].type == "run_started"
    assert [e.type for e in events].count("run_finished") == 1
    assert events[-1].type == "run_finished"
    return events[-1]


def outputs(events: list[Event]) -> str:
    return "".join(e.text for e in events if e.type == "output")


@pytest.fixture(scope="session")
def driver() -> Iterator[PoolDriver]:
    loop = asyncio.new_event_loop()
    pool = WorkerPool(workers=2, max_queue=8, isolation="strict")
    loop.run_until_complete(pool.start())
    try:
        yield PoolDriver(loop, pool)
    finally:
        loop.run_until_complete(pool.close())
        loop.close()
