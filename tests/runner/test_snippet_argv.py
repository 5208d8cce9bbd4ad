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


def test_gradwalk_record_hands_what_follows_dashes_to_the_snippet(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    plain = subprocess.run(
        [sys.executable, "train.py", "--lr", "0.5"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    out = tmp_path / "t.json"
    result = gradwalk_cli("record", str(script), "-o", str(out), "--quiet", "--", "--lr", "0.5")
    assert result.returncode == 0, result.stderr
    from engine.events import trace_adapter

    assert (
        q.stdout(trace_adapter.validate_json(out.read_text()))
        == plain.stdout
        == "0.5 ['train.py', '--lr', '0.5']\n"
    )


def test_gradwalk_record_says_where_a_snippets_arguments_go() -> None:
    result = gradwalk_cli("record", "train.py", "--lr", "0.5")
    assert result.returncode == 2
    assert "the snippet's own arguments go after --: gradwalk record train.py -- --lr 0.5" in result.stderr


def test_a_run_in_the_apps_worker_reads_the_snippets_name_as_argv(driver: PoolDriver) -> None:
    events, _ = driver.run(SCRIPT)
    assert outputs(events) == "0.1 ['snippet.py']\n"
