"""One command for a GPU machine: the CUDA tests, then the recording overhead on the GPU.

Run: ``.venv/bin/python bench/gpu_check.py`` (or, on a bare machine with torch installed,
``python bench/gpu_check.py`` from the repository root). Takes a few minutes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device here; nothing to check")
        return 1
    print(f"gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    started = time.perf_counter()
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "tests/engine", "tests/runner"], cwd=ROOT
    )
    print(f"cuda tests: exit {tests.returncode} in {time.perf_counter() - started:.1f}s")
    sys.path.insert(0, str(ROOT))
    from bench import bench_engine

    bench_engine.main(device="cuda")
    return tests.returncode


if __name__ == "__main__":
    sys.exit(main())
