"""A snippet reads ``sys.argv`` as a script run with ``python FILE ARG…`` does, so a training
script's ``argparse`` works under gradwalk: it read the host's own argv (``gradwalk record
x.py -o t.json``, the app's worker) and stopped with "unrecognized arguments"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine import queries as q
from engine import record
from tests.conftest import gradwalk_cli

from .conftest import PoolDriver, outputs

SCRIPT = """import argparse, sys
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
print(args.lr, sys.argv)
"""


def test_a_scripts_argparse_reads_the_snippets_own_argv_and_the_hosts_comes_back() -> None:
    host = list(sys.argv)
    trace = record(SCRIPT, filename="train.py")
    assert trace.events[-1].status == "ok", trace.events[-1].message
    assert q.stdout(trace) == "0.1 ['train.py']\n"
    assert sys.argv == host
    assert (
        q.stdout(record(SCRIPT, filename="train.py", argv=["--lr", "0.5"]))
        == "0.5 ['train.py', '--lr', '0.5']\n"
    )


def _recorded_output(script: Path, *args: str) -> str:
    from engine.events import trace_adapter

    out = script.with_suffix(".trace.json")
    result = gradwalk_cli("record", str(script), "-o", str(out), "--quiet", *args)
    assert result.returncode == 0, result.stderr
    return q.stdout(trace_adapter.validate_json(out.read_text()))


def _plain_output(script: Path, *args: str) -> str:
    """What ``python SCRIPT ARGS`` prints, run from another folder than the script's."""
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=Path.home(), capture_output=True, text=True, timeout=60
    ).stdout


def test_gradwalk_record_hands_what_follows_dashes_to_the_snippet(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert _recorded_output(script, "--", "--lr", "0.5") == _plain_output(script, "--lr", "0.5")
    assert _plain_output(script, "--lr", "0.5") == f"0.5 [{str(script)!r}, '--lr', '0.5']\n"


def test_gradwalk_record_runs_a_script_as_python_does_beside_its_own_modules(tmp_path: Path) -> None:
    """``import helper`` of a file beside the script, and ``__file__`` its path: the folder the
    script is in was not on sys.path (ModuleNotFoundError), and ``__file__`` was its bare name."""
    (tmp_path / "helper.py").write_text("def double(x):\n    return 2 * x\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import os, torch\nfrom helper import double\nx = torch.tensor(2.0, requires_grad=True)\n"
        "double(x).backward()\nprint(x.grad, __file__, os.path.isfile(__file__))\n"
    )
    assert _recorded_output(script) == _plain_output(script) == f"tensor(2.) {script} True\n"
    host_path = list(sys.path)  # and the host's sys.path comes back (engine.record in this process)
    try:
        trace = record(script.read_text(), filename="train.py", path=str(script))
    finally:
        sys.modules.pop("helper", None)
    assert q.stdout(trace) == f"tensor(2.) {script} True\n"
    assert sys.path == host_path


def test_gradwalk_record_says_where_a_snippets_arguments_go() -> None:
    result = gradwalk_cli("record", "train.py", "--lr", "0.5")
    assert result.returncode == 2
    assert "the snippet's own arguments go after --: gradwalk record train.py -- --lr 0.5" in result.stderr


def test_a_run_in_the_apps_worker_reads_the_snippets_name_as_argv(driver: PoolDriver) -> None:
    events, _ = driver.run(SCRIPT)
    assert outputs(events) == "0.1 ['snippet.py']\n"
