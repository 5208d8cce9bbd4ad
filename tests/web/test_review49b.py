"""A review of the app as its users see it (the second pass, part two): a keyboard user in the
tab rows, a learner who edits an example, a reader of a course page on a phone, a teacher on a
projector in presenter type, a learner stepping a small MLP.

Each test is one problem found in screenshots or with the keyboard: every tab was its own Tab
stop and the arrow keys did nothing in a tab row (the WAI-ARIA tabs pattern has one stop and
Left/Right/Home/End); the examples list kept naming an example after its code was edited; on a
390 px embed the three-line "Graph freed" note took much of the graph's height; the "N more ▸"
cues at the graph's edges sat on a node's label; a one-backward() MLP's legend said "not in
this backward call", and its default view showed MseLossBackward0 in the pane's far corner.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import (
    ROOT,
    expect,
    open_app,
    open_stepper,
    presenter_on,
    run_example,
    settle,
    shot,
    stored_run,
    wait_graph,
    wait_viewer,
)

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"
SIDE_TABS = "#gw-tab-tape, #gw-tab-stepper, #gw-tab-inspector, #gw-tab-charts"

MLP = """import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
x = torch.randn(8, 3)
y = torch.randn(8, 1)
loss = nn.functional.mse_loss(net(x), y)
loss.backward()
"""


@pytest.fixture(scope="module")
def cubic_run(server: Any) -> str:
    return stored_run(server, (EXAMPLES / "cubic.py").read_text())


def _stops(page: Any, tabs: str) -> list[tuple[str, str | None]]:
    """Each tab's text and tabindex."""
    found: list[tuple[str, str | None]] = page.eval_on_selector_all(
        tabs, "(els) => els.map((e) => [e.textContent.trim(), e.getAttribute('tabindex')])"
    )
    return found


def _focused(page: Any) -> str:
    return str(page.evaluate("() => document.activeElement?.textContent?.trim() ?? ''"))


def test_the_side_tabs_are_one_tab_stop_moved_along_with_the_arrow_keys(page: Any) -> None:
    open_app(page)
    run_example(page, "cubic")
    tape = page.locator("#gw-tab-tape")
    backward = page.locator("#gw-tab-stepper")
    expect(tape).to_have_attribute("aria-selected", "true")
    # only the selected tab is in the Tab order
    stops = _stops(page, SIDE_TABS)
    assert [s[1] for s in stops] == ["0", "-1", "-1", "-1"], stops
    # reached from the keyboard (Shift+Tab back from the tape's first button), the row is one stop
    page.locator(".gw-tape button").first.focus()
    page.keyboard.press("Shift+Tab")
    expect(tape).to_be_focused()
    page.keyboard.press("ArrowRight")  # moves to the next tab and opens it
    expect(backward).to_have_attribute("aria-selected", "true")
    expect(backward).to_be_focused()
    expect(page.locator("#gw-panel-stepper")).to_be_visible()
    assert [s[1] for s in _stops(page, SIDE_TABS)] == ["-1", "0", "-1", "-1"]
    # on a tab the arrow keys move along the row; they do not step the stepper
    position = page.locator(".gw-stepper .gw-position")
    expect(position).to_have_text("step 1 of 5")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#gw-tab-inspector")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("End")
    expect(page.locator("#gw-tab-charts")).to_be_focused()
    expect(page.locator("#gw-tab-charts")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowRight")  # wraps round
    expect(tape).to_be_focused()
    expect(tape).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#gw-tab-charts")).to_be_focused()
    page.keyboard.press("Home")
    expect(tape).to_be_focused()
    # Tab leaves the row: the next stop is past the tabs, not the next tab
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement?.getAttribute('role')") != "tab"
    # the number keys still open the tabs, and the Tab stop follows them
    page.locator("body").press("2")
    expect(backward).to_have_attribute("aria-selected", "true")
    assert [s[1] for s in _stops(page, SIDE_TABS)] == ["-1", "0", "-1", "-1"]
    page.keyboard.press("ArrowRight")  # off the tabs, the arrow keys step the stepper again
    expect(position).to_have_text("step 2 of 5")
    # a tab clicked with the mouse keeps the arrow keys for the page: click Backward, then →
    # steps the walk (as the ? dialog says)
    page.click("#gw-tab-tape")
    page.click("#gw-tab-stepper")
    page.keyboard.press("ArrowRight")
    expect(position).to_have_text("step 3 of 5")
    expect(backward).to_have_attribute("aria-selected", "true")
    shot(page, "review49b-01-side-tabs")


def test_an_embeds_view_tabs_follow_the_tabs_pattern(page: Any, cubic_run: str) -> None:
    page.set_viewport_size({"width": 900, "height": 600})
    page.goto(f"{page.server.url}/embed/{cubic_run}?view=graph")
    wait_viewer(page)
    tabs = ".gw-viewer-tabs [role=tab]"
    stops = _stops(page, tabs)
    assert [s[0] for s in stops][:2] == ["Graph", "Backward"] and len(stops) == 6, stops
    assert [s[1] for s in stops] == ["0", "-1", "-1", "-1", "-1", "-1"], stops
    graph_tab = page.get_by_role("tab", name="Graph")
    page.get_by_role("button", name="Dark theme").focus()
    page.keyboard.press("Shift+Tab")
    expect(graph_tab).to_be_focused()
    page.keyboard.press("ArrowRight")
    backward = page.get_by_role("tab", name=re.compile("^Backward"))
    expect(backward).to_have_attribute("aria-selected", "true")
    expect(backward).to_be_focused()
    expect(page.locator("#gw-viewer-panel-stepper")).to_be_visible()
    page.keyboard.press("End")
    charts = page.get_by_role("tab", name="Charts")
    expect(charts).to_be_focused()
    expect(charts).to_have_attribute("aria-selected", "true")
    assert [s[1] for s in _stops(page, tabs)] == ["-1", "-1", "-1", "-1", "-1", "0"]
    page.keyboard.press("Home")
    expect(graph_tab).to_be_focused()
    expect(graph_tab).to_have_attribute("aria-selected", "true")


def test_the_backward_calls_row_is_one_tab_stop_too(page: Any) -> None:
    open_stepper(page, (EXAMPLES / "cubic_twice.py").read_text())
    calls = page.locator(".gw-call-tabs [role=tab]")
    expect(calls).to_have_count(2)
    assert [c[1] for c in _stops(page, ".gw-call-tabs [role=tab]")] == ["0", "-1"]
    page.locator(".gw-stepper .gw-step-controls button").first.focus()
    page.keyboard.press("Shift+Tab")
    expect(calls.nth(0)).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(page.locator(".gw-stepper .gw-position")).to_contain_text("backward 2: 1 of")
    # the row is drawn anew for the call: the focus stays on its tab
    expect(calls.nth(1)).to_be_focused()
    expect(calls.nth(1)).to_have_attribute("aria-selected", "true")
    assert [c[1] for c in _stops(page, ".gw-call-tabs [role=tab]")] == ["-1", "0"]
    page.keyboard.press("Home")
    expect(page.locator(".gw-stepper .gw-position")).to_contain_text("backward 1: 1 of")
    expect(calls.nth(0)).to_be_focused()


def test_the_examples_list_says_when_the_code_is_edited(page: Any) -> None:
    open_app(page)
    examples = page.locator("[data-gw=examples]")
    page.select_option("[data-gw=examples]", "cubic")
    cubic = page.evaluate("() => window.gradwalk.editor.source")
    title = page.evaluate(
        "() => document.querySelector('[data-gw=examples] option[value=cubic]').textContent"
    )
    page.click(".gw-editor .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("\nprint('mine')")
    # the list no longer names the example as if this were its code
    shown = examples.evaluate("(s) => s.selectedOptions[0].textContent")
    assert shown == f"Edited: {title}", shown
    assert "choose it again" in (examples.get_attribute("title") or "")
    settle(page)
    shot(page, "review49b-02-examples-edited")
    # undoing the edits names it again
    page.keyboard.press("Control+z")
    page.wait_for_function("(src) => window.gradwalk.editor.source === src", arg=cubic)
    expect(examples).to_have_value("cubic")
    # choosing the example again puts its code back
    page.keyboard.type("# mine")
    assert examples.evaluate("(s) => s.selectedOptions[0].textContent") == f"Edited: {title}"
    page.select_option("[data-gw=examples]", "cubic")
    assert page.evaluate("() => window.gradwalk.editor.source") == cubic
    expect(examples).to_have_value("cubic")
    # a run's own code (no example's) is no example's edit
    page.evaluate("() => { window.gradwalk.editor.source = 'import torch\\n'; }")
    expect(examples).to_have_value("")


def _banner(target: Any) -> dict[str, Any]:
    box: dict[str, Any] = target.evaluate(
        """() => {
            const b = document.querySelector('.gw-graph-banner');
            const t = b.querySelector('.gw-graph-banner-text');
            const c = document.querySelector('.gw-graph-canvas').getBoundingClientRect();
            return { height: b.getBoundingClientRect().height, cut: t.scrollWidth > t.clientWidth + 1,
                     title: b.title, text: t.textContent, canvas: c.height };
        }"""
    )
    return box


def test_the_graph_freed_note_keeps_to_one_line_on_a_phone_embed(page: Any, cubic_run: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{page.server.url}/embed/{cubic_run}?view=graph&step=4")
    wait_viewer(page)
    note = page.locator(".gw-graph-banner")
    expect(note).to_contain_text("Graph freed")
    box = _banner(page)
    # one line (it took three, 77 px of a 496 px graph), the whole text its tooltip
    assert box["height"] < 32 and box["cut"], box
    assert box["title"] == box["text"] and "retain_graph=True" in box["text"]
    settle(page)
    shot(page, "review49b-03-phone-embed-note")
    # a tap shows it whole, another folds it again
    toggle = page.get_by_role("button", name="Show the whole note")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    note.click()
    opened = _banner(page)
    assert opened["height"] > 40 and not opened["cut"], opened
    expect(page.get_by_role("button", name="Show the note on one line")).to_have_attribute(
        "aria-expanded", "true"
    )
    shot(page, "review49b-03-phone-embed-note-open")
    page.get_by_role("button", name="Show the note on one line").click()
    assert _banner(page)["height"] < 32
    # a larger screen shows the whole note, with no button
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_function(
        "() => document.querySelector('.gw-graph-banner').getBoundingClientRect().height > 0"
    )
    wide = _banner(page)
    assert not wide["cut"], wide
    expect(page.locator(".gw-graph-banner-toggle")).to_be_hidden()


COVERED = """() => {
    const cy = window.gradwalk.graph.core;
    const pane = cy.container().getBoundingClientRect();
    const nodes = cy.nodes(':visible').filter((n) => n.isChildless()).map((n) => {
        const b = n.renderedBoundingBox({ includeLabels: true, includeOverlays: false });
        return { name: n.data('label'), x1: pane.left + b.x1, x2: pane.left + b.x2, y1: pane.top + b.y1, y2: pane.top + b.y2 };
    });
    const out = [];
    for (const cue of document.querySelectorAll('.gw-pane-graph .gw-offscreen-cue:not([hidden])')) {
        const r = cue.getBoundingClientRect();
        for (const n of nodes) {
            if (r.right > n.x1 && r.left < n.x2 && r.bottom > n.y1 && r.top < n.y2) out.push([cue.textContent, n.name]);
        }
    }
    return { cues: document.querySelectorAll('.gw-pane-graph .gw-offscreen-cue:not([hidden])').length, out };
}"""


@pytest.mark.parametrize("presenter", [True, False])
def test_the_more_cues_do_not_cover_a_nodes_label(page: Any, presenter: bool) -> None:
    # control_flow at 1280 x 720 in presenter type: "11 more ▸" sat on MaxBackward1's label
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page)
    if presenter:
        presenter_on(page)
    run_example(page, "control_flow")
    page.wait_for_function(
        "() => document.querySelectorAll('.gw-pane-graph .gw-offscreen-cue:not([hidden])').length > 0"
    )
    settle(page)
    found = page.evaluate(COVERED)
    assert found["cues"] >= 1 and found["out"] == [], found
    shot(page, f"review49b-04-cues-{'presenter' if presenter else 'plain'}")
    # a step panned into view keeps them off the labels too
    page.locator("body").press("2")
    page.locator("body").press("End")
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    settle(page)
    assert page.evaluate(COVERED)["out"] == []


def _legend(page: Any) -> list[str]:
    texts: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('.gw-pane-graph .gw-legend li')]
            .filter((li) => li.offsetParent !== null)
            .map((li) => li.querySelector('.gw-legend-text').textContent)"""
    )
    return texts


def test_a_one_backward_mlps_legend_and_first_view(page: Any) -> None:
    open_stepper(page, MLP)
    # its plain inputs x and y are faded: no backward call reaches them, and there is no
    # other call for them to be "not in"
    assert page.evaluate("() => window.gradwalk.graph.core.nodes('.idle').length") > 0
    legend = _legend(page)
    assert "not in this backward call" not in legend, legend
    assert "not reached by backward()" in legend, legend
    # the first view shows the loss whole, toward the middle, not in the pane's far corner
    loss = page.evaluate(
        """() => {
            const cy = window.gradwalk.graph.core;
            const b = cy.nodes().filter((n) => n.data('label')?.startsWith('MseLossBackward0')).renderedBoundingBox();
            return { x1: b.x1, x2: b.x2, y1: b.y1, width: cy.width() };
        }"""
    )
    assert loss["x1"] >= 0 and loss["x2"] <= loss["width"] and loss["y1"] >= 0, loss
    assert (loss["x1"] + loss["x2"]) / 2 < 0.8 * loss["width"], loss
    settle(page)
    shot(page, "review49b-05-mlp-stepper")
    # the graph's own legend, off the stepper, is unchanged
    page.locator("body").press("1")
    wait_graph(page)
    assert "not reached by backward()" not in _legend(page)
