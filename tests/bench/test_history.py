"""bench/bench_history.py measures an engine at a commit of its own, in a worktree: the row
it prints for this commit's engine is a real full recording's (its timings read back)."""

from __future__ import annotations

import re

from bench.bench_history import WORKLOADS, commits_between, measure


def test_a_commits_engine_is_measured_in_a_worktree_of_its_own() -> None:
    (head,) = commits_between("HEAD", "HEAD", 0)
    row = measure(head, *WORKLOADS["cubic"], reps=3, detectors=False)
    found = re.fullmatch(
        rf"{head[:7]}  \d{{4}}-\d\d-\d\d  plain +(\d+) µs  recorded +(\d+) µs  ratio +([\d.]+)x  best +([\d.]+)x",
        row,
    )
    assert found, row
    # (the measuring process asserts that the last timed step was recorded in full)
    assert int(found[1]) > 0 and int(found[2]) > 0


def test_the_commits_between_two_ends_are_engine_commits_in_order() -> None:
    picked = commits_between("HEAD~5", "HEAD", 1)
    assert len(picked) >= 2 and len(set(picked)) == len(picked)
    assert picked[0].startswith(commits_between("HEAD~5", "HEAD~5", 0)[0][:7])
