"""One command for a GPU machine: the CUDA tests, the engine's and the runner's suites, then
the recording overhead on the GPU.

Run: ``.venv/bin/python bench/gpu_check.py`` (or, on a machine with torch, pytest and the
project's runtime packages, ``python bench/gpu_check.py`` from the repository root). Takes a few
minutes.
"""

from __future__ import annotations

import importlib.util
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
    # the modules that hold CUDA tests, by name: collecting all of tests/ would need every
    # package of the dev set-up (schemathesis, playwright), which a GPU machine may lack
    files = sorted(
        str(p.relative_to(ROOT)) for p in ROOT.glob("tests/**/test_*.py") if "mark.cuda" in p.read_text()
    )
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "cuda", *files], cwd=ROOT)
    print(f"cuda tests: exit {tests.returncode} in {time.perf_counter() - started:.1f}s")
    # then the engine's and the runner's suites, which a GPU changes too (a GPU worker in the
    # pool, CUDA seen by the test process): on the first GPU machine they failed where the
    # CUDA tests alone did not show it
    started = time.perf_counter()
    spread = ["-n", "8"] if importlib.util.find_spec("xdist") else []  # the runner's pools stay one at a time
    engine = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", *spread, "tests/engine"], cwd=ROOT)
    runner = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "tests/runner"], cwd=ROOT)
    suites = engine if engine.returncode else runner
    print(f"engine and runner suites: exit {suites.returncode} in {time.perf_counter() - started:.1f}s")
    sys.path.insert(0, str(ROOT))
    from bench import bench_engine

    bench_engine.main(device="cuda")
    return tests.returncode or suites.returncode


if __name__ == "__main__":
    sys.exit(main())
