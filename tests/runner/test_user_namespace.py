"""The non-root path: workers in a user namespace, each run in a nested one, same layers.

As root the pool is told to take the path a non-root server takes (``_force_userns``):
the worker makes a user namespace for itself, each run's pid namespace comes from a
middle process, and the run maps its own uid in a nested user namespace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from runner import WorkerPool
from tests.conftest import case_source

from .conftest import PoolDriver, finished
from .test_hostile import CASES, Hostile

SAMPLE = {
    "infinite_loop",
    "fork_bomb",
    "huge_bytearray",
    "null_dereference",
    "socket",
    "ptrace",
    "nested_namespaces",
    "become_root",
    "write_outside_scratch",
    "read_secrets_and_server_files",
    "forged_frame_on_the_event_pipe",
    "kill_other_processes_and_the_worker",
}


@pytest.fixture(scope="module")
def userns_driver() -> Iterator[PoolDriver]:
    loop = asyncio.new_event_loop()
    pool = WorkerPool(workers=1, isolation="strict")
    pool._force_userns = True
    loop.run_until_complete(pool.start())
    try:
        yield PoolDriver(loop, pool)
    finally:
        loop.run_until_complete(pool.close())
        loop.close()


@pytest.mark.slow
def test_every_layer_holds_in_a_user_namespace(userns_driver: PoolDriver) -> None:
    report = userns_driver.pool.isolation_report()
    assert report["user_namespace"] and all(report.values()), report
    events, handle = userns_driver.run(case_source("cubic.py"))
    assert handle.status == "ok"
    assert [e.grad.flat for e in events if e.type == "tensor_final"] == [[14.75]]


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.name in SAMPLE], ids=lambda c: c.name)
def test_hostile_snippet_in_a_user_namespace(userns_driver: PoolDriver, case: Hostile) -> None:
    source = case.source.replace("WORKERS", repr(userns_driver.pool.worker_pids))
    events, handle = userns_driver.run(source, limits=case.limits)
    end = finished(events)
    assert (end.status, handle.status) == (case.status, case.status), end.message
    case.check(events, end)
