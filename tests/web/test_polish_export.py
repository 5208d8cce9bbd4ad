"""A graph-only export (the Graph tab, with or without controls), opened from disk: the
keys it has step the backward walk, its ◀ ▶ buttons say which keys they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, expect
from .test_export import open_offline

pytestmark = pytest.mark.browser

CUBIC = ROOT / "server" / "examples" / "cubic.py"
STATE = "() => ({ view: window.gradwalkViewer.view, step: window.gradwalkViewer.store.state.step })"
CURRENT = (
    "() => window.gradwalkViewer.graph.core.nodes('.current').map((n) => n.data('label').split('\\n')[0])"
)


@pytest.fixture(scope="module")
def cubic_json() -> str:
    from engine.run import record

    return record(CUBIC.read_text(), filename="cubic.py").model_dump_json()


def graph_only(tmp_path: Path, trace_json: str, *, controls: bool) -> Path:
    from server.export import render_export

    out = tmp_path / f"graph-{'controls' if controls else 'bare'}.html"
    out.write_text(render_export(trace_json, view="graph", controls=controls))
    return out


@pytest.mark.parametrize("controls", [True, False], ids=["controls", "no-controls"])
def test_the_arrow_keys_step_a_graph_only_export(
    page: Any, cubic_json: str, tmp_path: Path, controls: bool
) -> None:
    open_offline(page, graph_only(tmp_path, cubic_json, controls=controls))
    assert page.evaluate(STATE) == {"view": "graph", "step": None}
    steps = page.locator(".gw-viewer-steps")
    if controls:
        expect(steps).to_be_visible()
        expect(page.locator(".gw-viewer-step-text")).to_have_text("backward: 5 steps")
        forward = page.locator("button[aria-label='Step forward']")
        assert "→" in (forward.get_attribute("title") or "")
        assert forward.get_attribute("aria-keyshortcuts") == "ArrowRight"
    else:
        expect(steps).to_be_hidden()  # a picture: stepped with the keyboard alone
    # the keys, before anything on the page was clicked (they did nothing)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.gradwalkViewer.store.state.step === 0")
    # the stepper's keys take over from there: one step a press, the graph alone stays open
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.gradwalkViewer.store.state.step === 1")
    assert page.evaluate(STATE) == {"view": "graph", "step": 1}
    assert page.evaluate(CURRENT) == ["MulBackward0"]
    if controls:
        expect(page.locator(".gw-viewer-step-text")).to_have_text("step 2 of 5 · MulBackward0")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => window.gradwalkViewer.store.state.step === 0")


def test_end_opens_a_graph_only_exports_last_step(page: Any, cubic_json: str, tmp_path: Path) -> None:
    open_offline(page, graph_only(tmp_path, cubic_json, controls=False))
    page.mouse.click(5, 5)  # focus in the viewer, as a reader's click gives it
    page.keyboard.press("End")
    page.wait_for_function("() => window.gradwalkViewer.store.state.step === 4")
    assert page.evaluate(STATE) == {"view": "graph", "step": 4}
