"""Review 52b: a classroom projector and a course page, in real Chromium against a real server.

At 1920 × 1080 the charts kept a 168 px plot and left half their panel empty; a 900 × 560
embed of the backward walk left ~200 px blank under a short step card; in presenter type a
"7 more" cue at the graph's edge sat on the `.grad` label of the leaf a step wrote into. Then,
from screenshots of the pitfall examples: a 900 × 560 frame in presenter type cut its theme
button in half at the frame's right edge.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ROOT, expect, open_app, settle, shot, stored_run, wait_graph, wait_viewer

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"

# The charts panel's height, the room left empty under its last card, whether it scrolls,
# and each plot's drawn height (uPlot's, its x axis included)
CHARTS_ROOM = """() => {
    const scroll = document.querySelector('.gw-charts-scroll');
    const box = scroll.getBoundingClientRect();
    const bottom = Math.max(...[...scroll.querySelectorAll('.gw-chart')].map((c) => c.getBoundingClientRect().bottom));
    const plots = [...scroll.querySelectorAll('.gw-chart-plot .uplot')].map((u) => Math.round(u.getBoundingClientRect().height));
    return { panel: Math.round(box.height), empty: Math.round(box.bottom - bottom),
             scrolls: scroll.scrollHeight > scroll.clientHeight + 1, plots };
}"""

# Every shown "N more" cue over a shown edge label (an idle call's labels are not drawn), as
# [cue, label, px across, px down]; boxes in the page's px, after the view came to rest.
CUES_ON_LABELS = """() => {
    const cy = window.gradwalk.graph.core;
    const pane = cy.container().getBoundingClientRect();
    const only = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false };
    const labels = cy.edges(':visible').filter((e) => !!e.data('label') && !e.hasClass('idle'))
        .map((e) => { const b = e.renderedBoundingBox(only);
            return [e.data('label'), { x1: b.x1 + pane.left, x2: b.x2 + pane.left, y1: b.y1 + pane.top, y2: b.y2 + pane.top }]; });
    const hits = [];
    for (const cue of document.querySelectorAll('.gw-offscreen-cue:not([hidden])')) {
        const c = cue.getBoundingClientRect();
        for (const [text, b] of labels) {
            const w = Math.min(c.right, b.x2) - Math.max(c.left, b.x1);
            const h = Math.min(c.bottom, b.y2) - Math.max(c.top, b.y1);
            if (w > 1 && h > 1) hits.push([cue.textContent, text, Math.round(w), Math.round(h)]);
        }
    }
    return hits;
}"""


def _at_rest(page: Any) -> None:
    """Wait until the graph's view stopped moving and its labels and cues were placed."""
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    page.evaluate(
        "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(r))))"
    )


def test_no_more_cue_sits_on_an_edge_label_on_a_projector(page: Any) -> None:
    # data-edit's walk in presenter type at 1280 × 720: at step 18 "▴ 7 more" covered the
    # `.grad` that AccumulateGrad writes into model.2.weight (at step 5 "8 more ▾" another
    # `.grad`, at 8 "3 more ▸" a gradient's ‖·‖ 0.27)
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, "?lesson=data-edit", presenter=True)
    page.wait_for_function("() => window.gradwalk.model.isFinished")
    wait_graph(page)
    steps = page.evaluate("() => window.gradwalk.model.timeline.length")
    covered = []
    for step in range(steps):
        page.evaluate("(s) => window.gradwalk.store.set({ step: s })", step)
        _at_rest(page)
        hits = page.evaluate(CUES_ON_LABELS)
        if hits:
            # asked again once the page is surely at rest: under a loaded CI a cue was seen
            # over a label placed a frame later (once in 13 runs); one that stays is the bug
            page.wait_for_timeout(500)
            _at_rest(page)
            hits = page.evaluate(CUES_ON_LABELS)
        if hits:
            covered.append((step, hits))
        if step == 17:
            shot(page, "review52b-03-cues-off-the-grad-label")
    assert not covered, covered


@pytest.mark.parametrize(
    ("width", "height", "presenter"), [(1920, 1080, False), (1920, 1080, True), (1280, 720, False)]
)
def test_the_charts_grow_to_fill_a_big_screen(page: Any, width: int, height: int, presenter: bool) -> None:
    # at 1920 × 1080 two rows of 168 px plots filled half of a ~930 px panel, the rest blank
    run = stored_run(page.server, (EXAMPLES / "clean_training.py").read_text())
    page.set_viewport_size({"width": width, "height": height})
    open_app(page, f"?run={run}&view=charts", presenter=presenter)
    page.wait_for_function("() => window.gradwalk.model.isFinished")
    expect(page.locator(".gw-chart")).to_have_count(5)
    settle(page)
    room = page.evaluate(CHARTS_ROOM)
    assert len(set(room["plots"])) == 1, room  # the plots of a row, and of every row, line up
    if width == 1920:
        # the cards take the panel's height, the plots 200 px or more, none scrolled away
        assert not room["scrolls"] and room["empty"] <= 80, room
        assert room["plots"][0] >= 200, room
    else:
        # a laptop's three rows do not fit: the plots keep their height, the panel scrolls
        assert room["scrolls"] and room["plots"][0] == 168, room
    shot(page, f"review52b-01-charts-{width}{'-presenter' if presenter else ''}")


# In an embed: the step card's body (whether it is cut), the walk's list (shown or not; its
# rows wholly inside it; the current one among them) and the blank under both in the side pane
EMBED_STEPPER = """() => {
    const q = (s) => document.querySelector('.gw-viewer ' + s);
    const body = q('.gw-step-body'), list = q('.gw-walk-scroll'), side = q('.gw-viewer-side').getBoundingClientRect();
    const box = list.getBoundingClientRect();
    const shown = getComputedStyle(list).display !== 'none' && getComputedStyle(list).visibility !== 'hidden' && box.height > 0;
    const rows = [...list.querySelectorAll('.gw-walk-item')].filter((li) => {
        const r = li.getBoundingClientRect(); return r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5; });
    const bottom = shown ? box.bottom : body.getBoundingClientRect().bottom;
    return { cut: body.scrollHeight > body.clientHeight + 1, shown, rows: rows.length,
             current: rows.some((li) => li.classList.contains('current')), blank: Math.round(side.bottom - bottom) };
}"""


def test_a_course_frame_shows_the_walk_under_a_short_step_card(page: Any) -> None:
    # a 900 × 560 frame at cubic's AccumulateGrad: the card, then ~200 px blank (the walk's
    # list hidden in every frame 640 px high or less)
    run = stored_run(page.server, (EXAMPLES / "cubic.py").read_text())
    page.set_viewport_size({"width": 900, "height": 560})
    page.goto(f"{page.server.url}/embed/{run}?view=stepper&step=3")
    wait_viewer(page)
    expect(page.locator(".gw-viewer .gw-step-card .gw-acc")).to_have_text("x.grad: None → 14.75")
    settle(page)
    got = page.evaluate(EMBED_STEPPER)
    assert got["shown"] and got["rows"] == 5 and got["current"] and not got["cut"], got
    assert got["blank"] <= 100, got
    shot(page, "review52b-02-embed-walk-under-the-card")
    # a long card (small_net's ReluBackward0 with its numbers) keeps the pane: no sliver of a list
    run = stored_run(page.server, (EXAMPLES / "small_net.py").read_text())
    page.set_viewport_size({"width": 900, "height": 480})
    page.goto(f"{page.server.url}/embed/{run}?view=stepper&step=0")
    wait_viewer(page)
    settle(page)
    got = page.evaluate(EMBED_STEPPER)
    assert not got["shown"] and got["blank"] <= 16, got
    # stepped on to a short card, the list comes back with the step in it
    page.evaluate("() => window.gradwalkViewer.store.set({ step: 3 })")
    expect(page.locator(".gw-viewer .gw-stepper .gw-position")).to_contain_text("step 4 of 12")
    settle(page)
    got = page.evaluate(EMBED_STEPPER)
    assert got["shown"] and got["rows"] >= 2 and got["current"], got


# The embed's bar: each tab and the theme button, whether it lies wholly inside the frame
# and (a tab) inside the tab row's box, which scrolls sideways
BAR_CUT = """() => {
    const row = document.querySelector('.gw-viewer-tabs').getBoundingClientRect();
    const inside = (r, box) => r.left >= box.left - 0.5 && r.right <= box.right + 0.5;
    const frame = { left: 0, right: innerWidth };
    const tabs = [...document.querySelectorAll('.gw-viewer-tabs [role=tab]')]
        .filter((t) => !(inside(t.getBoundingClientRect(), row) && inside(t.getBoundingClientRect(), frame)))
        .map((t) => t.dataset.view);
    const tools = [...document.querySelectorAll('.gw-viewer-tools button')]
        .filter((b) => !inside(b.getBoundingClientRect(), frame)).map((b) => b.getAttribute('aria-label'));
    return [...tabs, ...tools];
}"""


def test_a_course_frame_in_presenter_type_keeps_its_bar_inside(page: Any) -> None:
    # a teacher with presenter type on opens a course page's 900 × 560 frame of
    # pitfall_data_edit: the theme button went 15 px past the frame's right edge, cut in half
    # (the tabs never shrank), and with that fixed "Charts" was cut to "Chart"
    run = stored_run(page.server, (EXAMPLES / "pitfall_data_edit.py").read_text())
    page.set_viewport_size({"width": 900, "height": 560})
    # the app's choice stays the app's (review 53): the embed's link asks for presenter type
    page.goto(f"{page.server.url}/embed/{run}?view=code&presenter=on")
    wait_viewer(page)
    expect(page.locator(":root")).to_have_attribute("data-presenter", "on")
    expect(page.locator(".gw-viewer .gw-pitfall-head").first).to_be_visible()
    settle(page)
    assert page.evaluate(BAR_CUT) == []
    shot(page, "review52b-04-presenter-embed-bar")
