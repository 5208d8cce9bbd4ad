"""The examples in the docstrings of engine/ and server/ run and print what they show (a caller
reads them as the way to use a module, so a stale one misleads)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# user snippets (lessons, examples) are run by the app, not imported
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for package in ("engine", "server")
    for path in (ROOT / package).rglob("*.py")
    if "snippets" not in path.parts and "examples" not in path.parts and ">>> " in path.read_text()
)


def test_the_modules_with_examples_are_found() -> None:
    assert {"engine.api", "server.lessons", "server.lessons.tries"} <= set(MODULES), MODULES


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_run_as_shown(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
