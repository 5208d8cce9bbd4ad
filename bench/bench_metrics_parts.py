"""What each part of a metrics-only training step costs: the two long training loops of
issue #6 recorded whole, then with one part switched off at a time, interleaved with the
plain script in one process (CPU time of this thread).

The parts: the pitfall detectors (``pitfalls=False``), the saved-tensor hooks that count
graph memory (never installed), and the optimizer step's norms (``_measure`` returns no
statistics). "bare hooks" is :func:`bench_engine.bare_metrics_hooks`, the least a Python
recorder of these metrics pays. Backs the README's paragraph on metrics-only steps. Not a
target, not part of ``make bench``: run it with ``.venv/bin/python bench/bench_metrics_parts.py``.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.bench_engine import bare_metrics_hooks, plain_script, time_one, training_loops
from engine import memory, training
from engine.events import Limits
from engine.run import record_stream

REPS = 5


@contextlib.contextmanager
def _replaced(owner: object, name: str, value: object) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def variants(source: str) -> dict[str, Callable[[], None]]:
    """The plain script and each way of recording it, by name."""

    def recorded(pitfalls: bool = True) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            record_stream(
                source, lambda event: None, limits=Limits(detail_steps=0), validate=False, pitfalls=pitfalls
            )

    def without_memory_hooks() -> None:
        with _replaced(memory.SavedMemory, "install", lambda self: None):
            recorded()

    def without_norms() -> None:
        with _replaced(
            training.TrainingTracker, "_measure", lambda self, opt, state, frame: training._no_stats()
        ):
            recorded()

    plain = plain_script(source)

    def bare() -> None:
        with bare_metrics_hooks():
            plain()

    return {
        "plain": plain,
        "recorded (metrics-only steps)": recorded,
        "  without the detectors": lambda: recorded(pitfalls=False),
        "  without graph-memory hooks": without_memory_hooks,
        "  without the step's norms": without_norms,
        "bare hooks (reference)": bare,
    }


def main() -> None:
    torch.set_num_threads(1)
    for loop, source in training_loops().items():
        runs = variants(source)
        for run in runs.values():
            run()  # first-call costs, untimed
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(REPS):
            for name, run in runs.items():
                times[name].append(time_one(run))
        plain = statistics.median(times["plain"])
        print(f"{loop}: plain {plain * 1e3:.0f} ms")
        for name, ts in times.items():
            if name != "plain":
                print(f"  {name:34} {statistics.median(ts) / plain:5.2f}x")


if __name__ == "__main__":
    main()
