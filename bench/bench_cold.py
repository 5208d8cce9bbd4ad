"""What one value summary costs from cold caches: ``to_value`` of a 256-element tensor timed
right after different work, as a run interleaves it with the model's own ops.

Backs the README's paragraph on why a summary costs more in a run than in a loop of
summaries. Not a target, not part of ``make bench``: run it with
``.venv/bin/python bench/bench_cold.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engine.values import to_value

REPS = 300


def after(work: Callable[[], object], tensor: torch.Tensor) -> float:
    """Mean microseconds of one ``to_value(tensor)`` called right after ``work()``."""
    total = 0
    for _ in range(REPS):
        work()
        start = time.perf_counter_ns()
        to_value(tensor, 64)
        total += time.perf_counter_ns() - start
    return total / REPS / 1e3


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    sweep = np.random.default_rng(0).random(1 << 20, dtype=np.float32)  # 4 MB
    tensor = torch.randn(256)
    cases: dict[str, Callable[[], object]] = {
        "nothing (back to back)": lambda: None,
        "a 4 MB sweep of memory": sweep.sum,
        "a 1 ms sleep": lambda: time.sleep(0.001),
        "an MLP 784-256-10 forward": lambda: F.cross_entropy(model(x), y),
        "an MLP forward and backward": lambda: F.cross_entropy(model(x), y).backward(),
    }
    print(f"to_value of a 256-element tensor, mean of {REPS}, right after:")
    for name, work in cases.items():
        print(f"  {name:<32} {after(work, tensor):7.1f} us")


if __name__ == "__main__":
    main()
