"""Back, Forward, reload and links in real Chromium (hunt 65): Back and Forward walk the runs
shown, one press an entry, and bring back the run, its lesson card and the tab's title; a
link to a run the server lacks opens the starter example."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import open_app, run_source, wait_graph

pytestmark = pytest.mark.browser

SNIPPETS = [
    f"# Snippet {name}\nimport torch\n\nx = torch.tensor({value}, requires_grad=True)\n(x * x).backward()\n"
    for name, value in (("A", 1.0), ("B", 2.0), ("C", 3.0))
]


def run_id(page: Any) -> str:
    return str(page.evaluate("() => window.gradwalk.runId"))


def shown(page: Any, run: str) -> None:
    """Wait until run ``run`` is on screen, its graph laid out, and the address bar names it."""
    page.wait_for_function("(id) => window.gradwalk.runId === id", arg=run)
    page.wait_for_function("(id) => new URLSearchParams(location.search).get('run') === id", arg=run)
    wait_graph(page)


def three_runs(page: Any) -> list[str]:
    """Open the app and run snippets A, B and C one after the other; return their run ids."""
    open_app(page)
    runs = []
    for source in SNIPPETS:
        run_source(page, source)
        runs.append(run_id(page))
        shown(page, runs[-1])
    return runs


def test_back_and_forward_walk_the_runs_one_press_an_entry(page: Any) -> None:
    a, b, c = three_runs(page)
    page.go_back()
    shown(page, b)
    assert "# Snippet B" in page.evaluate("() => window.gradwalk.editor.source")
    # Back again is A: going back to B had pushed B anew, cutting C off, so Back showed B twice
    page.go_back()
    shown(page, a)
    page.go_forward()
    shown(page, b)
    page.go_forward()
    shown(page, c)
    assert "# Snippet C" in page.evaluate("() => window.gradwalk.editor.source")
    # and the page's history still holds A, B, C once each (none pushed again)
    page.go_back()
    shown(page, b)
    page.go_back()
    shown(page, a)
