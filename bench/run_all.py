"""Run every benchmark (``make bench``): engine overhead, runner latency, server latency, rooms, browser.

Each ``bench/bench_*.py`` is a script with a ``main()``; they run one after another in
separate processes so one's warm-up does not flatter another. Ratios are against plain
PyTorch measured in the same run.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["bench_engine.py", "bench_runner.py", "bench_server.py", "bench_rooms.py", "bench_web.py"]


def main() -> int:
    failed = []
    for name in ORDER:
        path = HERE / name
        if not path.exists():
            continue
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(path)], cwd=HERE.parent)
        print(f"--- {name}: exit {done.returncode} in {time.perf_counter() - started:.0f}s", flush=True)
        if done.returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
