"""Export the event contract as JSON Schema (the frontend's types are generated from it).

Run ``python -m engine.schema`` (or ``make schema``) after changing ``engine/events.py``;
``tests/engine/test_schema.py`` fails while the committed copy is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .events import trace_adapter

__all__ = ["SCHEMA_PATH", "render_schema", "write_schema"]

SCHEMA_PATH = Path(__file__).with_name("schema") / "trace.schema.json"


def render_schema() -> str:
    """Return the JSON Schema of a trace (and so of every event) as formatted text."""
    schema: dict[str, Any] = trace_adapter.json_schema(mode="serialization")
    schema["title"] = "GradwalkTrace"
    schema["$comment"] = "Generated from engine/events.py by `make schema`; do not edit."
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    """Write the schema to ``path`` and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_schema())
    return path


if __name__ == "__main__":
    print(write_schema(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_PATH))
