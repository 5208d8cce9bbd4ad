"""Every snippet of the examples library records as it runs without gradwalk."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from engine import queries as q
from engine import record
from tests.conftest import CASES_DIR

LIBRARY: list[dict[str, Any]] = json.loads((CASES_DIR / "examples.json").read_text())["examples"]


@pytest.mark.parametrize("entry", LIBRARY, ids=[e["id"] for e in LIBRARY])
def test_an_example_records_as_it_runs(entry: dict[str, Any]) -> None:
    source = (CASES_DIR / entry["file"]).read_text()
    trace = record(source, filename=entry["file"])
    finished = trace.events[-1]
    assert finished.type == "run_finished" and finished.counts.unrecorded == 0
    plain = io.StringIO()
    raised = None
    with contextlib.redirect_stdout(plain):
        try:
            exec(compile(source, entry["file"], "exec"), {"__name__": "__main__"})
        except Exception as exc:  # the examples that teach an error raise it
            raised = type(exc).__name__
    assert q.stdout(trace) == plain.getvalue()
    assert [e.exc_type for e in q.errors(trace)] == ([raised] if raised else [])
    assert finished.status == ("error" if raised else "ok")


def test_the_own_metrics_example_charts_validation_accuracy_per_epoch_under_a_step_schedule() -> None:
    source = (CASES_DIR / "own_metrics.py").read_text()
    trace = record(source, filename="own_metrics.py")
    metrics = q.events_of(trace, "metric")
    assert [m.name for m in metrics] == ["val_acc"] * 30
    assert [m.step for m in metrics] == list(range(30))
    assert all(0.0 <= m.value <= 1.0 for m in metrics)
    # the last value logged is the accuracy the snippet prints (as it prints without gradwalk)
    assert q.stdout(trace) == f"validation accuracy after 30 epochs: {metrics[-1].value:.3f}\n"
    assert metrics[-1].value > metrics[0].value
    steps = q.optimizer_steps(trace)
    assert len(steps) == 30 * 6
    # StepLR halves the rate every 10 epochs of 6 steps; a step reports the rate it ran with
    assert [s.lr for s in steps[::60]] == [[0.5], [0.25], [0.125]]
    assert {s.lr[0] for s in steps[:60]} == {0.5}
    assert q.pitfalls(trace) == []
