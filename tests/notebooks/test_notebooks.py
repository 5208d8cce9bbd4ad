"""The lesson notebooks run top to bottom (nbclient), and what they display is the graph view.

Each notebook is executed in a fresh kernel in a scratch folder; a cell that raises fails
the test. Every gradwalk display is unpacked and checked to be the viewer with a recorded
graph, and the first display of each notebook is rendered in Chromium, where the graph
must be laid out. The committed copies must carry their outputs (learners see them before
running anything).
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from gradwalk.notebook import unpack

from .conftest import KERNEL, notebook_paths

NOTEBOOKS = notebook_paths()
IDS = [p.stem for p in NOTEBOOKS]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "notebooks"
_executed: dict[str, Any] = {}


def displays(book: Any) -> list[str]:
    """The HTML of every gradwalk display among a notebook's outputs."""
    out = []
    for cell in book.cells:
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html", "")
            if 'class="gradwalk-view"' in html:
                out.append(html)
    return out


def errors(book: Any) -> list[str]:
    return [
        f"{o.ename}: {o.evalue}" for c in book.cells for o in c.get("outputs", []) if o.output_type == "error"
    ]


def executed(path: Path, kernel_path: str, tmp: Path) -> Any:
    if path.stem not in _executed:
        book = nbformat.read(path, as_version=4)
        # the kernel's connection file in the scratch folder: left to Jupyter it is a
        # /tmp/tmpXXXXXXXX.json for the kernel's life, which tests/runner/test_lifecycle.py,
        # watching /tmp for what a worker pool leaves, would take for the pool's
        kernel = KernelManager(kernel_name=KERNEL, connection_file=str(tmp / f"{path.stem}-kernel.json"))
        NotebookClient(
            book,
            km=kernel,
            timeout=300,
            kernel_name=KERNEL,
            record_timing=False,
            resources={"metadata": {"path": str(tmp)}},
        ).execute()
        _executed[path.stem] = book
    return _executed[path.stem]


def test_the_four_lessons_are_there() -> None:
    assert IDS == [
        "01_autograd_basics",
        "02_training_loop",
        "03_memory_and_the_graph",
        "04_debugging_silent_failures",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_notebook_runs_and_displays_the_graph(path: Path, kernel_path: str, tmp_path: Path) -> None:
    book = executed(path, kernel_path, tmp_path)
    assert not errors(book), errors(book)
    shown = displays(book)
    assert shown, f"{path.name} displays no gradwalk view"
    for html in shown:
        assert 'sandbox="allow-scripts' in html and "allow-same-origin" not in html
        page = unpack(html)
        assert '<div id="gradwalk-viewer">' in page
        trace = json.loads(re.search(r'id="gradwalk-trace">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
        assert any(e["type"] == "node" for e in trace["events"]), "the trace recorded no graph"


def test_the_committed_notebooks_carry_their_outputs() -> None:
    for path in NOTEBOOKS:
        book = nbformat.read(path, as_version=4)
        code = [c for c in book.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code), f"{path.name}: run it and save it with its outputs"
        assert not errors(book), f"{path.name}: {errors(book)}"
        assert displays(book), f"{path.name}: no gradwalk view among its outputs"
        assert book.metadata.kernelspec.name == KERNEL


def render(html: str, title: str, chromium: tuple[str, list[str]]) -> dict[str, Any]:
    """Open a notebook output in Chromium; return what its view shows and what went wrong.

    Runs Playwright in a thread of its own: the browser tests' session may already drive
    one from this thread, and Playwright's sync API does not nest.
    """
    from playwright.sync_api import sync_playwright

    def run() -> dict[str, Any]:
        problems: list[str] = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium[0], args=chromium[1])
            try:
                page = browser.new_page(viewport={"width": 1100, "height": 720})
                page.on("pageerror", lambda e: problems.append(str(e)))
                page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
                page.set_content(f"<!doctype html><body><h2>{title}</h2>{html}</body>")
                page.wait_for_function("() => document.querySelector('iframe.gradwalk-view') !== null")
                frame = page.frames[1]
                frame.wait_for_function(
                    "() => { const v = window.gradwalkViewer; return v && v.graph.lastLayout !== null && !v.graph.busy; }",
                    timeout=60_000,
                )
                shown = frame.evaluate(
                    "() => ({ nodes: window.gradwalkViewer.graph.core.nodes().length,"
                    " viewer: document.getElementById('gradwalk-viewer').classList.contains('gw-viewer') })"
                )
                page.wait_for_timeout(300)
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"{title}.png"))
            finally:
                browser.close()
        return {**shown, "problems": problems}

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result(timeout=180)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_notebook_view_renders_the_graph(
    path: Path, kernel_path: str, tmp_path: Path, chromium: tuple[str, list[str]]
) -> None:
    first = displays(executed(path, kernel_path, tmp_path))[0]
    shown = render(first, path.stem, chromium)
    assert shown["viewer"] and shown["nodes"] > 0, shown
    assert not shown["problems"], shown["problems"]
