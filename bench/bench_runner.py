"""Measure submit -> first event latency of the cubic example on a warm pool, and what a
training loop costs end to end.

Run: ``python bench/bench_runner.py [--runs N] [--workers N] [--isolation strict|local]``.
Prints median and p95 of submit -> first event and submit -> run_finished, in ms; then, for
the rent regression (400 steps) and a 1,000-step MLP loop, submit -> run_finished through
the pool (recorded in the sandboxed child, every event validated, framed and read back by
the pool) against the same script run plainly in this process with one thread, as the
child runs it. Interleaved, wall time; the ratio is the median of the per-rep ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner import WorkerPool  # noqa: E402

__all__ = ["main", "measure"]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(
    runs: int = 40,
    workers: int | None = None,
    isolation: str = "strict",
    pause_s: float = 0.25,
    loops: bool = False,
) -> dict[str, Any]:
    """Start a pool, warm it, then time ``runs`` cubic runs, ``pause_s`` apart; return figures
    in ms. With ``loops``, also time the training loops on the same pool (``"loops"``: see
    :func:`_measure_loops`)."""
    source = (ROOT / "server" / "examples" / "cubic.py").read_text()
    pool = WorkerPool(workers=workers, isolation=isolation)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    await pool.start()
    start_s = time.perf_counter() - t0
    first: list[float] = []
    total: list[float] = []
    try:
        for i in range(runs + 3):
            t = time.perf_counter()
            handle = pool.submit(source)
            seen = None
            async for _event in handle.events():
                if seen is None:
                    seen = time.perf_counter() - t
            done = time.perf_counter() - t
            if handle.status != "ok":
                raise RuntimeError(f"cubic run ended {handle.status}: {handle.message}")
            await asyncio.sleep(pause_s)  # a warm pool: the worker has its next child standing by
            if i >= 3:  # the first runs fault in pages of the warm worker
                first.append((seen or done) * 1000)
                total.append(done * 1000)
        trained = await _measure_loops(pool) if loops else []
    finally:
        await pool.close()
    return {
        "pool_start_s": start_s,
        "first_event_median_ms": statistics.median(first),
        "first_event_p95_ms": _percentile(first, 0.95),
        "run_finished_median_ms": statistics.median(total),
        "run_finished_p95_ms": _percentile(total, 0.95),
        "loops": trained,
    }


async def _measure_loops(pool: WorkerPool, reps: int = 5) -> list[tuple[str, float, float, float, int]]:
    """``(name, plain s, through the pool s, ratio, events)`` for each training loop."""
    import torch  # here, not at the top: the latency figures need no torch in this process

    from bench.bench_engine import plain_script, training_loops

    torch.set_num_threads(1)
    rows = []
    for name, source in training_loops().items():
        plain = plain_script(source)
        plains, pooled, events = [], [], 0
        for i in range(reps + 1):
            t = time.perf_counter()
            plain()
            plain_s = time.perf_counter() - t
            t = time.perf_counter()
            handle = pool.submit(source)
            events = 0
            async for _event in handle.events():
                events += 1
            took = time.perf_counter() - t
            if handle.status != "ok":
                raise RuntimeError(f"{name} ended {handle.status}: {handle.message}")
            await asyncio.sleep(0.5)  # the worker's next child stands by
            if i:  # the first rep warms both
                plains.append(plain_s)
                pooled.append(took)
        ratio = statistics.median(p / q for p, q in zip(pooled, plains, strict=True))
        rows.append((name, statistics.median(plains), statistics.median(pooled), ratio, events))
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print the runner's latency figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--isolation", choices=("strict", "local"), default="strict")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.runs, args.workers, args.isolation, loops=True))
    print(f"runner: warm pool started in {result['pool_start_s']:.1f} s")
    print(
        f"runner: submit -> first event (cubic, {args.runs} runs): median {result['first_event_median_ms']:.1f} ms, "
        f"p95 {result['first_event_p95_ms']:.1f} ms (target: well under 100 ms)"
    )
    print(
        f"runner: submit -> run_finished: median {result['run_finished_median_ms']:.1f} ms, "
        f"p95 {result['run_finished_p95_ms']:.1f} ms"
    )
    for name, plain, pooled, ratio, events in result["loops"]:
        print(
            f"runner: {name}, submit -> run_finished: {pooled:.2f} s vs {plain:.2f} s plain "
            f"({ratio:.2f}x, {events} events)"
        )


if __name__ == "__main__":
    main()
