"""The committed TypeScript event types match the exported JSON Schema (`make schema`)."""

from __future__ import annotations

import shutil
import subprocess

from .conftest import WEB, need


def test_typescript_types_are_current() -> None:
    need(shutil.which("node") is not None, "node is not installed")
    need(
        (WEB / "node_modules" / "json-schema-to-typescript").is_dir(),
        "web/node_modules is missing: run `make web`",
    )
    check = subprocess.run(["node", "scripts/types.mjs", "--check"], cwd=WEB, capture_output=True, text=True)
    assert check.returncode == 0, (
        "web/src/types/events.ts is stale relative to engine/schema/trace.schema.json: run `make schema`\n"
        + check.stderr
    )


def test_typescript_typechecks() -> None:
    need(shutil.which("node") is not None, "node is not installed")
    tsc = WEB / "node_modules" / "typescript" / "bin" / "tsc"
    need(tsc.exists(), "web/node_modules is missing: run `make web`")
    check = subprocess.run(["node", str(tsc), "--noEmit", "-p", "."], cwd=WEB, capture_output=True, text=True)
    assert check.returncode == 0, "tsc found type errors in web/src:\n" + check.stdout[-4000:]
