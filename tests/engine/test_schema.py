"""The JSON Schema the frontend uses is generated from engine/events.py and kept in step."""

from __future__ import annotations

import json

from engine.events import Trace, trace_adapter
from engine.schema import SCHEMA_PATH, render_schema


def test_exported_schema_is_current() -> None:
    assert SCHEMA_PATH.read_text() == render_schema(), (
        "engine/schema/trace.schema.json is stale: run `make schema` and commit the result"
    )


def test_every_event_type_is_in_the_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    tags = {
        d["properties"]["type"]["const"]
        for name, d in schema["$defs"].items()
        if "type" in d.get("properties", {}) and "const" in d["properties"]["type"]
    }
    assert {
        "run_started",
        "run_finished",
        "tensor",
        "op",
        "node",
        "node_executed",
        "grad_accumulated",
        "backward_started",
        "backward_finished",
        "optimizer_step",
        "pitfall",
        "error",
    } <= tags


def test_a_recorded_trace_round_trips_through_json() -> None:
    from engine import record

    trace = record(
        "import torch\nx = torch.tensor([1.0, float('nan')], requires_grad=True)\n"
        "(x * 2).sum().backward()\nprint(x.grad)\n"
    )
    text = trace.model_dump_json()
    again = trace_adapter.validate_json(text)
    assert isinstance(again, Trace)
    assert again.model_dump() == json.loads(text) or len(again.events) == len(trace.events)
    final = next(e for e in again.events if e.type == "tensor_final")
    assert final.value is not None and str(final.value.flat[1]) == "nan"
