"""Every worked case runs through the runner and streams what the engine records in-process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.events import Limits
from tests.conftest import case_source, load_cases, recorded_as_a_worker_would

from .conftest import PoolDriver, finished

CASES = load_cases()
# Wall-clock fields differ run to run. Tracebacks differ by design: the sandbox hides the
# app's files, so Python cannot quote the engine's own source lines in them. On a GPU machine
# this process sees the GPU (and, once a CUDA test ran, its memory) while a CPU run's child
# never does (its worker hides the GPU), so the CUDA fields differ there by design.
_VOLATILE = {"t", "duration_s", "wall_s", "traceback", "cuda_available", "cuda_allocated"}


def _strip(value: Any) -> Any:
    """Drop the fields that may differ between two recordings of one snippet."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_case_matches_in_process_recording(driver: PoolDriver, case: dict[str, Any]) -> None:
    source = case_source(case["file"])
    events, handle = driver.run(source, limits=Limits())
    end = finished(events)
    expected = recorded_as_a_worker_would(source, events).events
    assert end.status == expected[-1].status == handle.status
    assert [e.type for e in events] == [e.type for e in expected]
    got = [_strip(json.loads(e.model_dump_json())) for e in events]  # NaN as "NaN", so it equals itself
    want = [_strip(json.loads(e.model_dump_json())) for e in expected]
    for g, w in zip(got, want, strict=True):
        assert g == w
