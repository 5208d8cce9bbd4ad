"""Pasted source read as ``python file.py`` reads it (hunt 65): a snippet's annotations are
not strings unless it says ``from __future__ import annotations`` itself, and its lines are
numbered at ``\\n``, ``\\r\\n`` and ``\\r`` only (a form feed or U+2028 inside a line shifted
every later line that a traceback or hint quoted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import gradwalk
from engine import queries as q
from engine import record
from engine.source import source_lines

from .snippets import plain_stdout, recorded_silently


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


# --- line numbers (str.splitlines() split at line separators Python's tokenizer reads as text)

# each a line end for str.splitlines() and none for Python: vertical tab, form feed, file,
# group and record separators, NEL, the line and paragraph separators
NOT_LINE_ENDS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _traceback_of(done: subprocess.CompletedProcess[str], tmp_path: Path) -> str:
    """Plain Python's traceback from its stderr, the script named as gradwalk names it."""
    text = done.stderr[done.stderr.index("Traceback") :]
    return text.replace(str(tmp_path / "snippet.py"), "snippet.py")


@pytest.mark.parametrize("separator", NOT_LINE_ENDS, ids=[f"U+{ord(c):04X}" for c in NOT_LINE_ENDS])
def test_a_separator_inside_a_line_shifts_no_quoted_line(separator: str, tmp_path: Path) -> None:
    source = (
        "import torch\n"
        f"# note{separator} pasted\n"
        "x = torch.tensor(2.0, requires_grad=True)\n"
        "y = x * 3\n"
        "y.backward()\n"
        "print(x.grad)\n"
        "z = oops\n"
    )
    err = q.errors(record(source))[0]
    assert (err.exc_type, err.line) == ("NameError", 7)
    assert "    z = oops\n" in err.traceback and "print" not in err.traceback
    assert err.traceback == _traceback_of(_python(tmp_path, source), tmp_path)


def test_a_hint_quotes_the_lines_python_numbers() -> None:
    # the hint reads the snippet's lines (engine/recorder.py's source_lines): with a form
    # feed in the comment it named the wrong lines, or none
    source = "import torch\n# note\x0c pasted\ndef f():\n    return w * 2\nprint(f())\nw = torch.ones(2)\n"
    err = q.errors(record(source))[0]
    assert err.line == 4
    assert err.hint is not None and "first value at line 6, below line 5" in err.hint, err.hint
    assert "    return w * 2\n" in err.traceback and "    print(f())\n" in err.traceback


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_windows_and_old_mac_line_ends_put_the_caret_where_python_does(newline: str, tmp_path: Path) -> None:
    source = newline.join(["x = 1", "y = 2", "z = x + oops", ""])
    err = q.errors(record(source))[0]
    assert err.line == 3
    assert err.traceback == _traceback_of(_python(tmp_path, source), tmp_path)
    assert "    z = x + oops\n            ^^^^\n" in err.traceback


def test_source_lines_split_as_python_numbers_them() -> None:
    text = "a\r\nb\rc\x0c\u2028d\ne"
    assert source_lines(text) == ["a", "b", "c\x0c\u2028d", "e"]
    assert source_lines(text, keepends=True) == ["a\n", "b\n", "c\x0c\u2028d\n", "e"]
    assert source_lines("") == [] and source_lines("\n\n") == ["", ""]


# batch norm kept in training mode on purpose, said in the comment on `model.train()`
# (engine/pitfalls/modes.py reads it from the snippet's lines), a page break pasted above
TRAIN_ON_PURPOSE = """\
import torch, torch.nn as nn, torch.nn.functional as F
# setup\x0c
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
for step in range(5):
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
Xtest = torch.randn(16, 4) * 2 + 1
model.train()  # test-time adaptation: the test batch's own statistics, on purpose
with torch.no_grad():
    preds = model(Xtest).argmax(1)
print(preds.shape)
"""


def test_a_comment_a_detector_reads_is_read_on_its_own_line() -> None:
    recorded_silently(TRAIN_ON_PURPOSE)


# --- gradwalk.watch (gradwalk/watch_args.py dedented and stripped a file as a notebook's text)


def test_watch_keeps_a_files_blank_first_lines(tmp_path: Path) -> None:
    source = "\n\nimport torch\nx = torch.ones(2, requires_grad=True)\nz = x * oops\n"
    (tmp_path / "lesson.py").write_text(source)
    err = q.errors(gradwalk.watch(tmp_path / "lesson.py").trace)[0]
    assert err.line == 5
    assert err.traceback == _traceback_of(_python(tmp_path, source), tmp_path)


def test_watch_reads_a_file_with_a_byte_order_mark_as_python_does(tmp_path: Path) -> None:
    source = "\ufeffimport torch\r\nx = torch.tensor(2.0, requires_grad=True)\r\n(x**3).backward()\r\nprint(x.grad)\r\n"
    plain = _python(tmp_path, source)
    assert (plain.returncode, plain.stdout) == (0, "tensor(12.)\n"), plain.stderr
    (tmp_path / "bom.py").write_bytes(source.encode("utf-8"))
    recording = gradwalk.watch(tmp_path / "bom.py")
    assert recording.status == "ok", q.errors(recording.trace)
    assert q.stdout(recording.trace) == plain.stdout


def test_watch_of_a_pasted_text_with_a_byte_order_mark_runs() -> None:
    recording = gradwalk.watch("\ufeff\n    import torch\n    print(torch.ones(2).sum())\n")
    assert recording.status == "ok", q.errors(recording.trace)
    assert q.stdout(recording.trace) == "tensor(2.)\n"


# --- a traceback of a very long line (engine/run.py kept its last 8,000 characters only)

LONG_LIST = "[" + ", ".join(["1"] * 3000) + "]"


def test_a_very_long_lines_traceback_keeps_its_header_and_code(tmp_path: Path) -> None:
    source = f"import torch\nx = 1\ny = {LONG_LIST} + undefined\n"
    err = q.errors(record(source))[0]
    assert (err.exc_type, err.line) == ("NameError", 3)
    lines = err.traceback.split("\n")
    plain = _traceback_of(_python(tmp_path, source), tmp_path).split("\n")
    # Python's own header, frame and last line; the code line cut with "…", its carets gone
    assert (
        lines[:2]
        == plain[:2]
        == ["Traceback (most recent call last):", '  File "snippet.py", line 3, in <module>']
    )
    assert lines[2].startswith("    y = [1, 1, 1,") and lines[2].endswith("…") and len(lines[2]) == 301
    assert plain[2] == f"    y = {LONG_LIST} + undefined" and set(plain[3].strip()) == {"^"}
    assert lines[3:] == plain[4:] == ["NameError: name 'undefined' is not defined", ""]


def test_short_lines_around_a_long_one_keep_their_carets() -> None:
    source = f"def build():\n    return {LONG_LIST} + undefined\n\nitems = build()\n"
    err = q.errors(record(source))[0]
    assert err.line == 2
    assert err.traceback.startswith(
        'Traceback (most recent call last):\n  File "snippet.py", line 4, in <module>\n'
        "    items = build()\n            ^^^^^^^\n"
        '  File "snippet.py", line 2, in build\n    return [1, 1, 1,'
    )
    assert err.traceback.endswith("…\nNameError: name 'undefined' is not defined\n")


def test_a_long_line_that_does_not_compile_keeps_its_header() -> None:
    err = q.errors(record(f"import torch\nx = 1\ny = {LONG_LIST} +\n"))[0]
    assert (err.exc_type, err.line) == ("SyntaxError", 3)
    assert err.traceback.startswith('  File "snippet.py", line 3\n    y = [1, 1, 1,')
    assert err.traceback.endswith("…\nSyntaxError: invalid syntax\n")


def test_a_very_long_message_keeps_the_frames_above_it() -> None:
    err = q.errors(record("x = 1\nraise ValueError('ab12' * 3000)\n"))[0]
    assert err.message == ("ab12" * 3000)[:4000]  # the message itself as before
    assert err.traceback.startswith(
        'Traceback (most recent call last):\n  File "snippet.py", line 2, in <module>\n'
        "    raise ValueError('ab12' * 3000)\nValueError: ab12ab12"
    )
    assert err.traceback.endswith("ab12…\n") and len(err.traceback) < 2200
