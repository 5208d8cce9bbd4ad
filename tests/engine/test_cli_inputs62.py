"""``gradwalk record`` given what is not a plain file: a folder, standard input, a pipe, and a
snippet whose error has no line (found by the embeds and exports hunt of session 62: a folder
and /dev/stdin were both "no such file", and a null byte's error read "at line None")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUBIC = "import torch\nx = torch.tensor(2.0, requires_grad=True)\n(x**3).backward()\nprint(x.grad)\n"


def _record(folder: Path, *args: str, given: str | None = None) -> subprocess.CompletedProcess[str]:
    """``gradwalk record ARGS`` run from ``folder``, ``given`` on its standard input."""
    argv = [sys.executable, "-m", "gradwalk.cli", "record", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=folder, input=given, capture_output=True, text=True, timeout=120, env=env)


def _printed(trace_file: Path) -> str:
    trace = json.loads(trace_file.read_text())
    return "".join(e["text"] for e in trace["events"] if e["type"] == "output")


def test_a_folder_is_said_to_be_a_folder(tmp_path: Path) -> None:
    (tmp_path / "snips").mkdir()
    done = _record(tmp_path, "snips")
    assert (done.returncode, done.stderr) == (2, "gradwalk record: snips is a folder, not a Python file\n")
    done = _record(tmp_path, "missing.py")
    assert (done.returncode, done.stderr) == (2, "gradwalk record: no such file: missing.py\n")


def test_a_dash_reads_the_snippet_from_standard_input(tmp_path: Path) -> None:
    done = _record(tmp_path, "-", given=CUBIC)
    assert done.returncode == 0, done.stderr
    assert "x.grad = 12" in done.stdout and "trace written to stdin.trace.json" in done.stdout
    assert _printed(tmp_path / "stdin.trace.json") == "tensor(12.)\n"
    trace = json.loads((tmp_path / "stdin.trace.json").read_text())
    assert trace["events"][0]["filename"] == "<stdin>"


def test_a_pipe_that_is_no_plain_file_is_read(tmp_path: Path) -> None:
    done = _record(tmp_path, "/dev/stdin", "-o", "piped.json", given=CUBIC)
    assert done.returncode == 0, done.stderr
    assert _printed(tmp_path / "piped.json") == "tensor(12.)\n"


def test_an_error_without_a_line_says_no_line(tmp_path: Path) -> None:
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    done = _record(tmp_path, "nul.py", "-o", "t.json")
    assert done.returncode == 1
    assert "error: SyntaxError: source code string cannot contain null bytes" in done.stdout
    assert "None" not in done.stdout
