"""What a snippet writes reaches the trace as a script's streams carry it without gradwalk."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine import queries as q
from engine import record
from engine.events import Trace


def _stderr(trace: Trace) -> str:
    return "".join(e.text for e in q.events_of(trace, "output") if e.stream == "stderr")


@pytest.mark.parametrize(
    "exit_with", ['raise SystemExit("config file missing")', 'sys.exit("bad")', "sys.exit(3)", "sys.exit()"]
)
def test_a_system_exits_message_goes_to_stderr_as_python_writes_it(exit_with: str) -> None:
    source = f"import sys\nprint('start')\n{exit_with}\n"
    plain = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60)
    trace = record(source)
    assert q.stdout(trace) == plain.stdout == "start\n"
    assert _stderr(trace) == plain.stderr
    finished = trace.events[-1]
    assert (finished.status == "ok") == (plain.returncode == 0)
