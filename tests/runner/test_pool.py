"""The pool's contract: streams, statuses, timeouts, cancel, queueing, and a torch-free parent."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from engine.events import Limits
from tests.conftest import case_source

from .conftest import PoolDriver, finished, outputs


def test_cubic_streams_the_engine_events(driver: PoolDriver) -> None:
    events, handle = driver.run(case_source("cubic.py"))
    end = finished(events)
    assert end.status == "ok" and handle.status == "ok"
    assert "14.75" in outputs(events)
    assert [e.grad.flat for e in events if e.type == "tensor_final"] == [[14.75]]


def test_infinite_loop_times_out(driver: PoolDriver) -> None:
    t0 = time.monotonic()
    events, handle = driver.run("while True:\n    pass\n", limits=Limits(timeout_s=1.0))
    end = finished(events)
    assert end.status == "timeout" and handle.status == "timeout"
    assert "1 s time limit" in end.message
    assert time.monotonic() - t0 < 20  # ended by its limit, not left running (not a speed test)


def test_a_run_stopped_by_its_time_limit_says_what_it_recorded(driver: PoolDriver) -> None:
    # NOTE [Counts of a run stopped from outside]: not zeros beside a recorded graph
    source = (
        "import torch\nx = torch.tensor(1.0, requires_grad=True)\ny = x * 3\nz = y + 1\n"
        "z.backward()\nprint('looping')\nwhile True:\n    pass\n"
    )
    events, _ = driver.run(source, limits=Limits(timeout_s=1.5))
    end = finished(events)
    assert end.status == "timeout"
    kinds = [e.type for e in events]
    assert end.counts.ops == kinds.count("op") == 3  # torch.tensor, *, +
    assert end.counts.nodes == kinds.count("node") > 0
    assert end.counts.tensors == kinds.count("tensor") > 0
    assert end.counts.backward_calls == 1
    assert end.counts.events == len(events)
    assert end.duration_s >= 1.0  # it ran until its 1.5 s limit stopped it
    # its time is the run's, after every event that arrived (it read 0.0, before them all)
    assert end.t >= max(e.t for e in events[:-1]) and end.t >= 1.0


def test_a_loop_stepping_by_hand_stopped_counts_its_metrics_only_calls(driver: PoolDriver) -> None:
    # its first 10 calls are recorded in full, the rest as backward_counted: the status of a
    # stopped run said "10 backward" while its loss chart was at call 121
    source = (
        "import torch\nw = torch.zeros(2, requires_grad=True)\nwhile True:\n    loss = ((w - 1) ** 2).sum()\n"
        "    loss.backward()\n    with torch.no_grad():\n        w -= 0.01 * w.grad\n        w.grad = None\n"
    )
    events, _ = driver.run(source, limits=Limits(timeout_s=1.5))
    end = finished(events)
    counted = [e for e in events if e.type == "backward_counted"]
    assert end.status == "timeout" and counted
    assert end.counts.backward_calls == counted[-1].index + 1 > 10


def test_cancel_is_prompt(driver: PoolDriver) -> None:
    async def go() -> tuple[float, str | None, list]:
        handle = driver.pool.submit(
            "import time\nprint('start')\ntime.sleep(30)\n", limits=Limits(timeout_s=30)
        )
        events = []
        async for event in handle.events():
            events.append(event)
            if event.type == "output":
                t0 = time.perf_counter()
                handle.cancel()
                handle.cancel()
        return time.perf_counter() - t0, handle.status, events

    elapsed, status, events = driver.call(go())
    assert status == "cancelled" and finished(events).status == "cancelled"
    assert elapsed < 10  # the snippet sleeps 30 s: cancelling does not wait for it (not a speed test)


def test_parent_never_imports_torch() -> None:
    code = (
        "import asyncio, sys\n"
        "from runner import WorkerPool\n"
        "async def main():\n"
        "    pool = WorkerPool(workers=1, isolation='local')\n"
        "    await pool.start()\n"
        "    h = pool.submit('x = 1\\n')\n"
        "    [e async for e in h.events()]\n"
        "    print(pool.cuda_available, h.status)\n"
        "    await pool.close()\n"
        "asyncio.run(main())\n"
        "assert 'torch' not in sys.modules, 'the pool imported torch'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "ok"]


def test_a_slow_consumer_loses_nothing(driver: PoolDriver) -> None:
    # Far more events than the pool buffers: it stops reading, the child waits, nothing drops.
    source = "import torch\nx = torch.ones(2, requires_grad=True)\nfor i in range(3000):\n    y = x * i\n"

    async def go() -> list:
        handle = driver.pool.submit(source, limits=Limits(timeout_s=20))
        await asyncio.sleep(1.5)
        return [event async for event in handle.events()]

    events = driver.call(go())
    end = finished(events)
    assert end.status == "ok", end.message
    assert sum(e.type == "op" for e in events) == 1 + 3000  # torch.ones, then the products


def test_snippets_import_what_the_venv_and_stdlib_hold(driver: PoolDriver) -> None:
    # The app's folder is hidden, but not the virtual environment inside it.
    source = (
        "import decimal, sqlite3\nimport hypothesis\nimport numpy.polynomial.hermite\nprint('imported')\n"
    )
    events, handle = driver.run(source)
    assert handle.status == "ok", finished(events).message
    assert outputs(events) == "imported\n"


def test_snippets_can_import_gradwalk_to_log_metrics(driver: PoolDriver) -> None:
    events, handle = driver.run(
        "import gradwalk\ngradwalk.detail_next_step()\ngradwalk.log('val_acc', 0.5, step=1)\n"
    )
    assert handle.status == "ok", finished(events).message
    assert [(e.name, e.value, e.step) for e in events if e.type == "metric"] == [("val_acc", 0.5, 1)]


def test_a_run_stopped_by_its_time_limit_says_how_far_it_got_and_the_line_it_was_at(
    driver: PoolDriver,
) -> None:
    # a tutorial's 30,000-iteration loop ended "took longer than its 10 s time limit" and no
    # more: not which loop ran long, nor how far it got (hunt 65)
    source = (
        "import torch\nw = torch.tensor(1.0, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.01)\n"
        "while True:\n    opt.zero_grad()\n    loss = (w * 3 - 2) ** 2\n    loss.backward()\n    opt.step()\n"
    )
    events, _ = driver.run(source, limits=Limits(timeout_s=2.0))
    end = finished(events)
    steps = [e for e in events if e.type == "optimizer_step"]
    assert end.status == "timeout" and len(steps) > 10, end
    assert f"It had done {len(steps):,} optimizer steps and was at line " in end.message, end.message
    at = int(end.message.split("was at line ")[1].split(" ")[0])
    assert 5 <= at <= 8, end.message  # inside the loop, the line of its latest event
    assert end.message.endswith("fewer iterations, or smaller tensors, finish within the limit.")
    # a loop that reports no line: where it was is not guessed from long before
    events, _ = driver.run(
        "import torch\nx = torch.ones(2)\nwhile True:\n    pass\n", limits=Limits(timeout_s=1.5)
    )
    assert finished(events).message == "The run took longer than its 1.5 s time limit and was stopped."
