"""Pasted source read as ``python file.py`` reads it (hunt 65): a snippet's annotations are
not strings unless it says ``from __future__ import annotations`` itself, and its lines are
numbered at ``\\n``, ``\\r\\n`` and ``\\r`` only (a form feed or U+2028 inside a line shifted
every later line that a traceback or hint quoted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine import queries as q
from engine import record

from .snippets import plain_stdout


def _python(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """``python snippet.py`` of ``source``, written as it is (its bytes UTF-8)."""
    script = tmp_path / "snippet.py"
    script.write_bytes(source.encode("utf-8"))
    return subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


# --- annotations (engine/loop_ends.py compiled the snippet with its own __future__ flags)

ANNOTATIONS = """import dataclasses
import inspect
import typing

def main():
    class Cfg:
        pass

    def g(c: Cfg) -> None:
        pass

    print(typing.get_type_hints(g))

main()

def f(n: int):
    pass

print(inspect.signature(f).parameters["n"].annotation is int)

@dataclasses.dataclass
class Point:
    x: float = 0.0

print(dataclasses.fields(Point)[0].type is float, __annotations__)
"""


def test_annotations_are_evaluated_as_in_a_plain_script(tmp_path: Path) -> None:
    trace = record(ANNOTATIONS)
    assert q.errors(trace) == []
    plain = _python(tmp_path, ANNOTATIONS)
    assert plain.returncode == 0, plain.stderr
    assert q.stdout(trace) == plain.stdout
    assert q.stdout(trace).splitlines()[1:] == ["True", "True {}"]


def test_a_snippets_own_future_import_still_makes_them_strings(tmp_path: Path) -> None:
    source = "from __future__ import annotations\ndef f(n: int): pass\nprint(repr(f.__annotations__['n']))\n"
    assert q.stdout(record(source)) == _python(tmp_path, source).stdout == "'int'\n"


def test_the_tests_plain_runs_are_plain_too() -> None:
    # tests/engine/snippets.py (whose module says `from __future__ import annotations`)
    # compiled its "plain" runs with that flag as well
    assert plain_stdout("def f(n: int): pass\nprint(f.__annotations__['n'] is int)\n") == "True\n"
