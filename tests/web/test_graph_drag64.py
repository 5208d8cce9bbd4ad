"""A drag on the graph pans it, wherever it starts, with a mouse or a finger: nodes and a
module's box were grabbable, so a phone's swipe (and a mouse drag begun on a node) moved them
off their edges' labels, and the `net` box, covering most of a network's graph, was moved
whole; nothing but a reload put them back (hunt 64, touch)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, open_app, phone_page, run_example, wait_graph

pytestmark = pytest.mark.browser

PLACES = """() => {
    const cy = window.gradwalk.graph.core;
    // a module's box is drawn around its members (its place is theirs): the members count
    const places = cy.nodes().filter((n) => n.isChildless()).map((n) => [n.id(), n.position()]);
    return { pan: cy.pan(), nodes: Object.fromEntries(places) };
}"""

ON_A_NODE = """() => {
    const cy = window.gradwalk.graph.core, box = cy.container().getBoundingClientRect();
    // a module's box: the biggest parent, where a swipe most often starts
    const target = cy.nodes(':parent:visible').max((n) => n.renderedWidth()).ele;
    // inside its frame, by its top-left corner (or the pane's), clear of its members
    const b = target.renderedBoundingBox({ includeLabels: false });
    const x = Math.max(b.x1, 0) + 8, y = Math.max(b.y1, 0) + 8;
    const on = cy.nodes(':visible').filter((n) => { const r = n.renderedBoundingBox({ includeLabels: false });
        return r.x1 <= x && x <= r.x2 && r.y1 <= y && y <= r.y2; });
    return { x: box.left + x, y: box.top + y, on: on.map((n) => n.id()) };
}"""


def _moved_the_view_not_the_nodes(page: Any, before: dict[str, Any], by: tuple[float, float]) -> None:
    after = page.evaluate(PLACES)
    assert after["nodes"] == before["nodes"], "a node was moved"
    assert abs(after["pan"]["x"] - before["pan"]["x"] - by[0]) < 8, (before["pan"], after["pan"])
    assert abs(after["pan"]["y"] - before["pan"]["y"] - by[1]) < 8, (before["pan"], after["pan"])


def test_a_mouse_drag_begun_on_a_module_box_pans_the_graph(page: Any) -> None:
    open_app(page)
    run_example(page, "clean_training")
    page.click("[role=tab][data-view=tape]")
    wait_graph(page)
    at = page.evaluate(ON_A_NODE)
    assert at["on"], "the drag starts on the module's box"
    before = page.evaluate(PLACES)
    page.mouse.move(at["x"], at["y"])
    page.mouse.down()
    for i in range(1, 9):
        page.mouse.move(at["x"] + 10 * i, at["y"] + 5 * i)
    page.mouse.up()
    _moved_the_view_not_the_nodes(page, before, (80, 40))


def test_a_finger_swipe_on_a_phone_pans_the_graph(browser: Any, server: Any) -> None:
    with phone_page(browser, server, 390, 844) as page:
        open_app(page)
        run_example(page, "clean_training")
        page.locator(".gw-graph-stage").scroll_into_view_if_needed()
        wait_graph(page)
        at = page.evaluate(ON_A_NODE)
        assert at["on"], "the swipe starts on the module's box"
        before = page.evaluate(PLACES)
        cdp = page.context.new_cdp_session(page)

        def touch(kind: str, x: float, y: float) -> None:
            points = [] if kind == "touchEnd" else [{"x": x, "y": y}]
            cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

        touch("touchStart", at["x"], at["y"])
        for i in range(1, 9):
            touch("touchMove", at["x"] - 6 * i, at["y"] - 3 * i)
        touch("touchEnd", 0, 0)
        page.wait_for_timeout(200)
        _moved_the_view_not_the_nodes(page, before, (-48, -24))
        expect(page.locator(".gw-graph")).to_be_visible()
