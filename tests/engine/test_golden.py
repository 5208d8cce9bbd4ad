"""Whole traces of a few snippets, compared with committed golden copies.

Runs are deterministic (seeded, small ids), so a trace is stable run to run once timings
and versions are blanked. After an intended change to the recorder, regenerate with
``GRADWALK_UPDATE_GOLDEN=1 make test`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine import record
from tests.conftest import case_source

GOLDEN = Path(__file__).with_name("golden")
SNIPPETS = ["cubic.py", "product.py", "accumulate_loop.py", "small_net.py", "backward_twice_error.py"]
_VOLATILE = {"t", "duration_s", "torch_version", "python_version", "cuda_available", "traceback"}


def _stable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: ("*" if k in _VOLATILE else _stable(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_stable(v) for v in obj]
    if isinstance(obj, float):
        return round(obj, 5)
    return obj


def _normal(file: str) -> dict[str, Any]:
    trace = record(case_source(file), filename=file)
    return _stable(json.loads(trace.model_dump_json()))


@pytest.mark.parametrize("file", SNIPPETS)
def test_golden_trace(file: str) -> None:
    path = GOLDEN / file.replace(".py", ".json")
    got = _normal(file)
    if os.environ.get("GRADWALK_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(json.dumps(got, indent=1) + "\n")
        if os.environ.get("CI"):
            pytest.fail(f"golden file {path.name} was missing in CI")
    want = json.loads(path.read_text())
    assert got == want, f"trace of {file} changed; if intended: GRADWALK_UPDATE_GOLDEN=1 make test"


def test_ids_are_stable_run_to_run() -> None:
    assert _normal("small_net.py") == _normal("small_net.py")
