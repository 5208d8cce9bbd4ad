"""A warm pool shared by the runner tests, driven from one event loop without pytest-asyncio."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from engine.events import Event, Limits
from runner import RunHandle, WorkerPool

T = TypeVar("T")

# Set before any pool starts: a snippet must never see the server's environment.
SECRET = "gradwalk-test-secret-5f1c"
os.environ["GRADWALK_TEST_SECRET"] = SECRET

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


def sandbox_processes(workers: list[int]) -> list[int]:
    """Pids of the processes descending from ``workers`` (the runs' children and theirs)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    parents[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found = []
    for pid in parents:
        seen, up = 0, parents.get(pid)
        while up and up not in workers and seen < 64:
            up, seen = parents.get(up), seen + 1
        if up in workers:
            found.append(pid)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "State:\tZ" not in fh.read()
    except OSError:
        return False


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
