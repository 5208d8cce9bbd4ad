"""Full-recording overhead of the engine at several commits, to find where it grew.

Each commit is checked out in a temporary git worktree and measured in a process of its own
(its ``engine`` package first on the path), one workload recorded in full and plain,
interleaved (CPU time of the thread, as ``bench_engine.py`` times). Only the recorder's
oldest interface is used (``Recorder(sink, limits)``, ``Limits``), so any commit since the
engine's first can be measured. Not part of ``make bench``:

    .venv/bin/python bench/bench_history.py bfd37f6 HEAD             # two ends
    .venv/bin/python bench/bench_history.py --every 40 bfd37f6 HEAD   # every 40th engine commit between
    .venv/bin/python bench/bench_history.py --workload chain --no-detectors bfd37f6 HEAD
    .venv/bin/python bench/bench_history.py --rounds 5 --tree /tmp/base --tree .  # engine/ before and now

``--tree DIR`` also measures a directory that holds an ``engine`` package (an engine copied
before a change: ``git archive HEAD engine | tar -x -C DIR``, or ``.`` for the working tree);
``--rounds N`` measures every commit and tree N times, in turn, and ends with each one's
median over the rounds and its best best-of ratio, so drift on a shared machine hits all alike.

Backs docs/overhead.md's paragraph on how the full rows grew (2026-11-30 to 12-06).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (setup, step) of each workload: the cubic of bench_engine.py and a 200-step tanh chain
WORKLOADS = {
    "cubic": ("import torch", "x = torch.tensor(2.5, requires_grad=True)\ny = x**3 - 4*x\ny.backward()"),
    "chain": (
        "import torch\nx = torch.randn(16, requires_grad=True)",
        "h = x\nfor _ in range(200):\n    h = torch.tanh(h * 1.01 + 0.1)\nh.sum().backward()",
    ),
}

# run in the worktree's own process: sys.argv = [_, setup, step, reps, detectors]
_MEASURE = """
import gc, statistics, sys, time
setup, step, reps, detectors = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
from engine.events import Limits
from engine.recorder import Recorder
from engine.source import SNIPPET_FILENAME
wanted = dict(max_events=10**7, max_ops=10**6, max_nodes=10**6, detail_steps=10**9, detail_calls=10**9)
limits = Limits(**{k: v for k, v in wanted.items() if k in Limits.model_fields})
events = []
try:
    rec = Recorder(events.append, limits, pitfalls=detectors)
except TypeError:  # an engine from before the detectors could be switched off
    rec = Recorder(events.append, limits)
scope = {"__name__": "__main__"}
exec(compile(setup, SNIPPET_FILENAME, "exec"), scope)
code = compile(step, SNIPPET_FILENAME, "exec")
def plain():
    exec(code, scope)
def recorded():
    with rec:
        exec(code, scope)
for _ in range(3):
    plain(); recorded()
gc.collect(); gc.freeze()
clock = time.thread_time
bs, vs = [], []
for _ in range(reps):
    events.clear()
    a = clock(); plain(); b = clock(); recorded(); c = clock()
    bs.append(b - a); vs.append(c - b)
assert any(e["type"] == "node_executed" for e in events), "the last step was not recorded in full"
print(f"{statistics.median(bs) * 1e6:.0f} {statistics.median(vs) * 1e6:.0f} "
      f"{statistics.median(v / b for b, v in zip(bs, vs)):.2f} {min(vs) / min(bs):.2f}")
"""


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def commits_between(first: str, last: str, every: int) -> list[str]:
    """``first``, every ``every``-th commit that changed ``engine/`` after it, and ``last``."""
    ends = [_git("rev-parse", first), _git("rev-parse", last)]
    between = _git("rev-list", "--reverse", f"{first}..{last}", "--", "engine").split()
    picked = [c for c in (between[every - 1 :: every] if every else []) if c not in ends]
    return [ends[0], *picked, ends[1]] if ends[0] != ends[1] else ends[:1]


def _measure_in(
    tree: Path, setup: str, step: str, reps: int, detectors: bool
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _MEASURE, setup, step, str(reps), "1" if detectors else "0"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
    )


# what a measuring process prints: plain and recorded medians (µs), median and best-of ratio
Figures = tuple[int, int, float, float]


def _figures(done: subprocess.CompletedProcess[str]) -> Figures | None:
    if done.returncode != 0:
        return None
    plain, recorded, ratio, best = done.stdout.split()
    return int(plain), int(recorded), float(ratio), float(best)


def _row(label: str, done: subprocess.CompletedProcess[str]) -> str:
    figures = _figures(done)
    if figures is None:
        return f"{label}  failed: {done.stderr.strip().splitlines()[-1:]}"
    plain, recorded, ratio, best = figures
    return (
        f"{label}  plain {plain:>6} µs  recorded {recorded:>7} µs  ratio {ratio:>6.2f}x  best {best:>6.2f}x"
    )


def _measure_commit(
    commit: str, setup: str, step: str, reps: int, detectors: bool
) -> tuple[str, subprocess.CompletedProcess[str]]:
    with tempfile.TemporaryDirectory(prefix="gw-history-") as tmp:
        tree = Path(tmp) / "tree"
        _git("worktree", "add", "--detach", "--quiet", str(tree), commit)
        try:
            done = _measure_in(tree, setup, step, reps, detectors)
        finally:
            _git("worktree", "remove", "--force", str(tree))
    when = _git("log", "-1", "--format=%ad", "--date=short", commit)
    return f"{commit[:7]}  {when}", done


def measure(commit: str, setup: str, step: str, reps: int, detectors: bool) -> str:
    """One row: the commit, its date, plain and recorded medians (µs), the median ratio and the best-of ratio."""
    return _row(*_measure_commit(commit, setup, step, reps, detectors))


def _summary(label: str, measured: list[Figures | None]) -> str:
    """One target's figures over the rounds: median recorded µs and ratio, best best-of ratio."""
    ok = [f for f in measured if f is not None]
    if not ok:
        return f"{label}  failed"
    recorded = statistics.median(f[1] for f in ok)
    ratio = statistics.median(f[2] for f in ok)
    best = min(f[3] for f in ok)
    return f"{label}  over {len(ok)} rounds: recorded {recorded:>7.0f} µs  ratio {ratio:>6.2f}x  best {best:>6.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", nargs="?", help="the oldest commit (none: only the --tree ones)")
    parser.add_argument("last", nargs="?", default="HEAD", help="the newest commit (HEAD)")
    parser.add_argument(
        "--tree", action="append", default=[], help="also a directory holding an engine package"
    )
    parser.add_argument("--rounds", type=int, default=1, help="measure everything this many times, in turn")
    parser.add_argument("--every", type=int, default=0, help="also every N-th engine commit between")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="cubic")
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--no-detectors", action="store_true", help="record with the pitfall detectors off")
    args = parser.parse_args()
    setup, step = WORKLOADS[args.workload]
    detectors = not args.no_detectors
    print(
        f"{args.workload}, recorded in full{'' if detectors else ', detectors off'}, {args.reps} interleaved reps"
    )
    commits = commits_between(args.first, args.last, args.every) if args.first else []
    figures: dict[str, list[Figures | None]] = {}
    for _ in range(args.rounds):
        measured = itertools.chain(  # each measured as the loop reaches it: rows print as they come
            (_measure_commit(commit, setup, step, args.reps, detectors) for commit in commits),
            (
                (tree, _measure_in(Path(tree).resolve(), setup, step, args.reps, detectors))
                for tree in args.tree
            ),
        )
        for label, done in measured:
            print(_row(label, done), flush=True)
            figures.setdefault(label, []).append(_figures(done))
    if args.rounds > 1:
        for label, each in figures.items():
            print(_summary(label, each))


if __name__ == "__main__":
    main()
