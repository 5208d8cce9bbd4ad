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
