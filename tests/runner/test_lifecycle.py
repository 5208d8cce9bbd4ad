"""The pool's life: busy queues, lost workers, shutdown, refusals, and strict mode's refusal."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator

import pytest

from engine.events import Event, Limits
from runner import PoolBusy, WorkerPool
from runner.sandbox import LAYERS
from tests.conftest import case_source, need

from .conftest import PoolDriver, alive, finished, outputs

SLEEPER = "import time\nprint('sleeping')\ntime.sleep(30)\n"


def _uid_processes(uids: range) -> list[int]:
    """The live processes running as one of ``uids``. Not zombies: a run's process killed with
    its worker is handed to init, which reaps it when it will (this sandbox's init: ~1.4 s);
    dead, it holds nothing but its entry in /proc (runner/proxy.py's _kill_uid)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    fields = dict(line.split(":", 1) for line in fh if line.startswith(("State:", "Uid:")))
                uid = int(fields["Uid"].split()[0])
            except (OSError, KeyError):
                continue
            if uid in uids and not fields["State"].lstrip().startswith("Z"):
                found.append(int(entry))
    return found


async def _until_output(stream: AsyncIterator[Event]) -> None:
    async for event in stream:
        if event.type == "output":
            return


async def _all_idle(pool: WorkerPool) -> None:
    for _ in range(300):
        if pool.idle_workers == pool.workers:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the workers did not become idle")


def test_isolation_report_names_every_layer(driver: PoolDriver) -> None:
    report = driver.pool.isolation_report()
    assert set(LAYERS) <= set(report)
    assert {"wall_timeout", "output_caps", "frame_validation"} <= set(report)
    assert all(report.values()), report


def test_default_worker_count_is_the_core_count() -> None:
    assert WorkerPool().workers == (os.cpu_count() or 1)


def test_pool_busy_past_max_queue(driver: PoolDriver) -> None:
    pool = driver.pool

    async def go() -> None:
        await _all_idle(pool)
        running = [pool.submit(SLEEPER, limits=Limits(timeout_s=30)) for _ in range(pool.workers)]
        queued = [pool.submit(SLEEPER, limits=Limits(timeout_s=30)) for _ in range(pool.max_queue)]
        with pytest.raises(PoolBusy) as busy:
            pool.submit(SLEEPER)
        assert busy.value.retry_after > 0
        assert "busy" in str(busy.value)
        assert pool.queued == pool.max_queue
        for handle in queued + running:
            handle.cancel()
        for handle in queued:
            events = [e async for e in handle.events()]
            assert [e.type for e in events] == ["run_started", "run_finished"]
            assert events[-1].status == "cancelled" and "before it started" in events[-1].message
        for handle in running:
            assert finished([e async for e in handle.events()]).status == "cancelled"
        assert pool.queued == 0

    driver.call(go())
    events, handle = driver.run("print('after the rush')\n")
    assert handle.status == "ok" and outputs(events) == "after the rush\n"


def test_events_has_a_single_consumer(driver: PoolDriver) -> None:
    async def go() -> None:
        handle = driver.pool.submit("x = 1\n")
        events = [e async for e in handle.events()]
        assert events[-1].type == "run_finished"
        with pytest.raises(RuntimeError, match="single consumer"):
            [e async for e in handle.events()]
        handle.cancel()  # after the end: a no-op
        assert handle.status == "ok"

    driver.call(go())


def test_concurrent_runs_do_not_interfere(driver: PoolDriver) -> None:
    async def go() -> None:
        hog = driver.pool.submit(
            "import torch\nkeep = []\nwhile True:\n    keep.append(torch.ones(10**7))\n",
            limits=Limits(timeout_s=8),
        )
        nice = driver.pool.submit(case_source("cubic.py"))
        nice_events = [e async for e in nice.events()]
        hog_events = [e async for e in hog.events()]
        assert finished(nice_events).status == "ok"
        assert finished(hog_events).status == "limit"

    driver.call(go())


def test_refused_runs_say_why(driver: PoolDriver) -> None:
    events, handle = driver.run("x = 1\n", device="tpu")
    assert handle.status == "error" and "Unknown device 'tpu'" in finished(events).message
    events, handle = driver.run("x = 1\n" * 200_000)
    assert handle.status == "error" and "too long" in finished(events).message


def test_cuda_run_without_a_gpu_says_so(driver: PoolDriver) -> None:
    if driver.pool.cuda_available:
        pytest.skip("this machine has a GPU: test_cuda_run_on_a_gpu covers CUDA runs here")
    events, handle = driver.run(case_source("cubic.py"), device="cuda")
    assert handle.status == "error"
    assert "CUDA is not available" in finished(events).message
    events, handle = driver.run(case_source("cubic.py"))  # CPU runs are unaffected
    assert handle.status == "ok"


@pytest.mark.cuda
def test_cuda_run_on_a_gpu(driver: PoolDriver) -> None:
    assert driver.pool.cuda_available
    source = "import torch\nx = torch.tensor(2.5, device='cuda', requires_grad=True)\ny = x**3 - 4*x\ny.backward()\n"
    events, handle = driver.run(source, device="cuda", limits=Limits(timeout_s=60))
    assert handle.status == "ok", finished(events).message
    assert [e.grad.flat for e in events if e.type == "tensor_final"] == [[14.75]]


@pytest.mark.slow
def test_a_dead_worker_is_replaced_and_its_run_ends_crashed(driver: PoolDriver) -> None:
    pool = driver.pool

    async def go() -> None:
        handle = pool.submit(SLEEPER, limits=Limits(timeout_s=30))
        stream = handle.events()
        await _until_output(stream)
        (victim,) = [p.pid for p in pool._proxies if p.handle is handle]
        assert victim is not None
        os.kill(victim, 9)
        rest = [e async for e in stream]
        assert handle.status == "crashed"
        assert "worker process running this snippet died" in rest[-1].message
        other = pool.submit(case_source("cubic.py"))  # the other worker keeps serving meanwhile
        assert [e async for e in other.events()][-1].status == "ok"
        for _ in range(600):
            if pool.ready_workers == pool.workers and victim not in pool.worker_pids:
                break
            await asyncio.sleep(0.1)
        assert pool.ready_workers == pool.workers
        assert not alive(victim)
        await asyncio.sleep(0.3)
        # only the standby children, one a worker (the GPU worker's too, on a GPU machine)
        assert len(_uid_processes(pool.sandbox_uids)) <= pool.workers + pool.cuda_available

    driver.call(go(), timeout=120)


@pytest.mark.slow
def test_close_leaves_no_process_or_file_behind() -> None:
    watched = ["/tmp", "/dev/shm", "/mnt", "/run"]
    before = {d: set(os.listdir(d)) for d in watched if os.path.isdir(d)}
    fds_before = set(os.listdir("/proc/self/fd"))

    async def go() -> tuple[list[int], range]:
        pool = WorkerPool(workers=1, isolation="strict")
        await pool.start()
        handle = pool.submit(
            "open('scratch.txt', 'w').write('x')\nimport time\ntime.sleep(30)\n", limits=Limits(timeout_s=30)
        )
        await asyncio.sleep(0.3)
        pids = pool.worker_pids
        await pool.close()
        assert [e async for e in handle.events()][-1].status == "cancelled"
        await pool.close()  # idempotent
        return pids, pool.sandbox_uids

    pids, uids = asyncio.run(go())
    assert not any(alive(pid) for pid in pids)
    assert _uid_processes(uids) == []
    for d, names in before.items():
        assert not {
            n for n in set(os.listdir(d)) - names if "gradwalk" in n or n.startswith(("tmp", "pymp"))
        }, d
    assert set(os.listdir("/proc/self/fd")) <= fds_before | {str(max(map(int, fds_before)) + 1)}


@pytest.mark.slow
def test_strict_mode_refuses_when_a_layer_is_missing() -> None:
    # Without CAP_SYS_ADMIN (dropped from this process and everything it starts), no
    # namespace can be made: strict mode must refuse, local mode must run and say so.
    code = textwrap.dedent("""
        import asyncio, ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        CAP_SYS_ADMIN = 21
        assert libc.prctl(24, CAP_SYS_ADMIN, 0, 0, 0) == 0  # PR_CAPBSET_DROP
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)
        data = (ctypes.c_uint32 * 6)()
        assert libc.capget(header, data) == 0
        data[0] &= ~(1 << CAP_SYS_ADMIN); data[1] &= ~(1 << CAP_SYS_ADMIN); data[2] &= ~(1 << CAP_SYS_ADMIN)
        assert libc.capset(header, data) == 0
        from runner import SandboxUnavailable, WorkerPool

        async def main():
            try:
                await WorkerPool(workers=1, isolation="strict").start()
            except SandboxUnavailable as exc:
                print("refused", ",".join(exc.missing))
                print(exc)
            pool = WorkerPool(workers=1, isolation="local")
            await pool.start()
            h = pool.submit("print(6 * 7)\\n")
            events = [e async for e in h.events()]
            print("local", h.status, pool.isolation_report()["namespaces"], pool.isolation_report()["seccomp"])
            await pool.close()

        asyncio.run(main())
    """)
    need(os.geteuid() == 0, "this test drops a root capability (CAP_SYS_ADMIN): run it as root")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("refused ") and "namespaces" in lines[0].split()[1].split(",")
    assert "strict isolation is not available here" in lines[1] and "isolation='local'" in lines[1]
    assert lines[-1] == "local ok False True"
