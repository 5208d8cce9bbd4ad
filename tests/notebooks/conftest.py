"""Fixtures for the notebook tests: a Jupyter kernel that is this venv's Python, and Chromium."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS, need

KERNEL = "python3"


@pytest.fixture(scope="session")
def kernel_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Register `python3` as this interpreter for the tests (JUPYTER_PATH first, no network).

    A `python3` kernelspec elsewhere (a user's, a system Python's without torch) would
    otherwise win; the notebooks name `python3`, as a learner's Jupyter does.
    """
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Python 3 (gradwalk venv)", "language": "python"})
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(root))
        yield str(root)


@pytest.fixture(scope="session")
def chromium() -> tuple[str, list[str]]:
    """Chromium's path and flags (as the browser tests launch it); in CI a missing one fails."""
    need(CHROMIUM.exists(), f"no Chromium at {CHROMIUM} (set GRADWALK_CHROMIUM)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        need(False, "playwright is not installed")
    return str(CHROMIUM), CHROMIUM_ARGS


def notebook_paths() -> list[Path]:
    return sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
