"""Shared fixtures: the worked cases, and strictness about skips in CI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

# gradwalk's own failures while observing (detectors, optimizer metrics) fail the test, in this
# process and in runner children, instead of being absorbed as they are for users (engine/strict.py)
os.environ["GRADWALK_STRICT"] = "1"

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "server" / "examples"
IN_CI = os.environ.get("CI", "").lower() == "true"


def need(ok: bool, why: str) -> None:
    """Skip when something the test needs is missing (a browser, a tool, root); with
    ``CI=true``, fail instead: CI must never pass by skipping."""
    if not ok:
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)


def gradwalk_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``gradwalk`` command (``python -m gradwalk.cli``) from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "gradwalk.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def load_cases() -> list[dict[str, Any]]:
    """The worked examples of ../shared/cases (copied into server/examples), with their answers."""
    return json.loads((CASES_DIR / "cases.json").read_text())["cases"]


def case_source(name: str) -> str:
    return (CASES_DIR / name).read_text()


def recorded_as_a_worker_would(source: str, streamed: list[Any]) -> Any:
    """The recording of ``source`` to compare a worker's stream ``streamed`` (its events)
    with: ``record(source)`` in this process, or in a new one when the stream holds one of
    PyTorch's once-per-process C++ warnings ("Triggered internally at", TORCH_WARN_ONCE:
    torch.tensor of tensors that require grad). A worker's child is a fresh process and
    prints it; this one may have printed it already, for an earlier test."""
    from engine import record
    from engine.events import Trace

    if not any(e.type == "output" and "(Triggered internally at" in e.text for e in streamed):
        return record(source)
    script = "import sys; from engine import record; print(record(sys.stdin.read()).model_dump_json())"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        input=source,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return Trace.model_validate_json(done.stdout)


# NOTE [Modules that tell one story]: a module marked ``sequence`` (a classroom lesson: a
# room in a module fixture, each test going on from where the one before left it) is only
# right when its tests run in order, in one process. pytest-xdist's worksteal hands each
# process a contiguous share of the collection and, when one runs dry, hands it the last half
# of what another has left: a module at the end of the collection can be cut in two, and its
# second half then starts a fresh room at a test that expects a run it never saw. These
# modules go first in the collection instead: the first process runs them at its start, long
# before any process runs dry and takes work from another's end. In a short collection (such
# a module named on the command line, alone or beside others) that share is not long enough:
# there each module goes whole to one process (pytest_xdist_make_scheduler below).


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Hand each test module whole to one process where the command line names a ``sequence``
    module (NOTE [Modules that tell one story]); otherwise xdist's own choice (``None``)."""
    if not any(_tells_a_story(arg) for arg in config.args):
        return None
    from xdist.scheduler import LoadFileScheduling

    return LoadFileScheduling(config, log)


def _tells_a_story(arg: str) -> bool:
    """Whether a command-line argument names a test module marked ``sequence`` (or a test in one)."""
    path = Path(arg.split("::", 1)[0])  # relative to where pytest runs, as pytest reads it
    return path.suffix == ".py" and path.is_file() and "pytest.mark.sequence" in path.read_text()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that drives Chromium ``browser`` (so ``-m "not browser"`` leaves it
    out, whether or not its module says so), put the ``sequence`` modules first (NOTE
    [Modules that tell one story]), and skip the ``cuda`` ones without CUDA."""
    import torch

    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
    in_order = [item for item in items if item.get_closest_marker("sequence")]
    items[:] = in_order + [item for item in items if not item.get_closest_marker("sequence")]
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (runs on a GPU machine: bench/gpu_check.py)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


# NOTE [Playwright's loop and the other tests]: a test process that has run a browser test
# keeps Playwright's sync API for the rest of the session, and with it an event loop marked
# running on the main thread. There `asyncio.run` refuses to start ("cannot be called from a
# running event loop"), and code that asks for the running loop (a room saving later rather
# than at once) is handed Playwright's, which never runs it. pytest-xdist can give a worker a
# server or runner test after a browser test, so every other test runs, fixtures included,
# with that mark set aside.


@contextlib.contextmanager
def _outside_playwrights_loop(item: pytest.Item) -> Iterator[None]:
    loop = asyncio.events._get_running_loop()
    if loop is None or "browser" in getattr(item, "fixturenames", ()):
        yield
        return
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(loop)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _outside_playwrights_loop(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _outside_playwrights_loop(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    with _outside_playwrights_loop(item):
        yield
