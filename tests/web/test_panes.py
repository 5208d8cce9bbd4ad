"""Resizable panes: the dividers between the code, the graph and the side panel
(web/src/pane-splitters.ts), dragged with a real mouse and moved with the keyboard."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import open_app, run_example, run_source, settle, shot, wait_graph

pytestmark = pytest.mark.browser

_BOXES = """() => Object.fromEntries(['code', 'graph', 'side'].map((name) => {
    const r = document.querySelector(`.gw-pane-${name}`).getBoundingClientRect();
    return [name, [Math.round(r.width), Math.round(r.height)]];
}))"""

_GRAPH = """() => {
    const cy = window.gradwalk.graph.core, b = cy.nodes().renderedBoundingBox({ includeLabels: false });
    return { w: cy.width(), zoom: cy.zoom(), whole: b.x1 >= 0 && b.x2 <= cy.width() };
}"""


def widths(page: Any) -> dict[str, int]:
    """Each pane's width (px): code, graph, side."""
    return {name: box[0] for name, box in page.evaluate(_BOXES).items()}


def drag(page: Any, edge: str, dx: float) -> None:
    """Drag divider ``edge`` (code, side) ``dx`` px to the right with the mouse."""
    box = page.locator(f"[data-gw=divider-{edge}]").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx / 2, y, steps=4)
    page.mouse.move(x + dx, y, steps=4)
    page.mouse.up()


def drag_down(page: Any, dy: float) -> None:
    """Drag the divider between the graph and the code under it ``dy`` px down."""
    box = page.locator("[data-gw=divider-code]").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y + dy, steps=6)
    page.mouse.up()


def refitted(page: Any, before: dict[str, float]) -> dict[str, float]:
    """Wait until the graph's canvas has a new width and its fit settled; return both."""
    page.wait_for_function(
        "(w) => { const g = window.gradwalk.graph; return g.core.width() !== w && !g.busy && !g.core.animated(); }",
        arg=before["w"],
    )
    settle(page)
    result: dict[str, float] = page.evaluate(_GRAPH)
    return result


def test_dragging_a_divider_gives_the_graph_the_width_and_shows_more_of_it(page: Any) -> None:
    open_app(page)
    run_example(page, "small_net")  # 11 nodes, too tall for the pane: shown from the top, in part
    start, graph = widths(page), page.evaluate(_GRAPH)
    drag(page, "code", -150)
    after = widths(page)
    # only the two panes beside the divider change: the side panel keeps its width
    assert after["code"] == pytest.approx(start["code"] - 150, abs=3), (start, after)
    assert after["graph"] == pytest.approx(start["graph"] + 150, abs=3), (start, after)
    assert after["side"] == start["side"], (start, after)
    wider = refitted(page, graph)
    assert wider["w"] > graph["w"] + 140, (graph, wider)
    # refitted: as readable as before, and the lesson-sized graph now shows its whole width
    assert not graph["whole"] and wider["whole"], (graph, wider)
    assert wider["zoom"] >= graph["zoom"], (graph, wider)

    drag(page, "side", 100)
    final = widths(page)
    assert final["side"] == pytest.approx(after["side"] - 100, abs=3), (after, final)
    assert final["code"] == after["code"], (after, final)
    assert final["graph"] == pytest.approx(after["graph"] + 100, abs=3), (after, final)
    page.mouse.move(5, 5)
    settle(page)
    shot(page, "30-panes-wide-graph")

    # remembered by this browser
    page.reload()
    page.wait_for_selector("[data-gw=examples] option[value=cubic]", state="attached")
    assert widths(page) == final

    # a double-click gives each pane back its default share
    page.dblclick("[data-gw=divider-code]")
    page.dblclick("[data-gw=divider-side]")
    assert widths(page) == start
    assert page.evaluate("() => localStorage.getItem('gradwalk-panes')") is None


def test_a_pane_is_never_dragged_narrower_than_it_can_be_read(page: Any) -> None:
    open_app(page)
    drag(page, "code", -2000)
    assert widths(page)["code"] == 220
    drag(page, "side", -2000)  # the side panel as wide as it goes: the graph keeps its 320 px
    assert widths(page)["graph"] == 320
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= window.innerWidth")
    assert page.locator("[data-gw=divider-side]").get_attribute("aria-valuenow") == str(widths(page)["side"])


def test_the_dividers_move_with_the_keyboard_without_stepping_backward(page: Any) -> None:
    open_app(page)
    run_example(page, "cubic")
    page.click("#gw-tab-stepper")
    page.wait_for_function("() => window.gradwalk.store.state.step === 0")
    start = widths(page)
    divider = page.locator("[data-gw=divider-side]")
    assert divider.get_attribute("aria-label") == "Width of the side panel"
    # in the tab order between the panes each resizes
    assert page.evaluate(
        """() => [document.querySelector('.gw-pane-code').nextElementSibling.dataset.gw,
            document.querySelector('.gw-pane-side').previousElementSibling.dataset.gw]"""
    ) == ["divider-code", "divider-side"]
    divider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowLeft")  # the side panel widens, 16 px a press
    assert widths(page)["side"] == start["side"] + 48
    page.keyboard.press("Shift+ArrowRight")
    assert widths(page)["side"] == start["side"] + 48 - 96
    # the stepper's own ← → listen on the page: the divider's keys are not steps
    assert page.evaluate("() => window.gradwalk.store.state.step") == 0
    page.keyboard.press("End")
    assert widths(page)["side"] == 280
    page.keyboard.press("Enter")
    assert widths(page) == start


def test_in_the_charts_view_the_code_pane_and_the_charts_share_one_divider(page: Any) -> None:
    open_app(page)
    run_example(page, "rent_regression")
    page.click("#gw-tab-charts")
    page.wait_for_selector("[data-gw=divider-side]", state="hidden")
    before = widths(page)
    chart = page.evaluate(
        "() => document.querySelector('.gw-chart-plot .uplot').getBoundingClientRect().width"
    )
    drag(page, "code", 120)
    after = widths(page)
    assert after["code"] == pytest.approx(before["code"] + 120, abs=3), (before, after)
    assert after["side"] == pytest.approx(before["side"] - 120, abs=3), (before, after)
    # the charts follow their pane's new width
    page.wait_for_function(
        """(w) => { const plot = document.querySelector('.gw-chart-plot');
            const drawn = plot.querySelector('.uplot').getBoundingClientRect().width;
            return drawn < w - 40 && Math.abs(drawn - plot.clientWidth) < 2; }""",
        arg=chart,
        timeout=5000,
    )
    # back to the graph: the code pane keeps its width, the graph and the side panel share the rest
    page.click("#gw-tab-tape")
    wait_graph(page)
    assert widths(page)["code"] == after["code"]


def test_a_projectors_graph_gets_the_room_of_the_side_panel_and_the_code(page: Any) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page)
    run_example(page, "small_net")
    start = page.evaluate(_BOXES)
    graph = page.evaluate(_GRAPH)
    code_divider = page.locator("[data-gw=divider-code]")
    assert code_divider.get_attribute("aria-orientation") == "horizontal"
    assert code_divider.get_attribute("aria-label") == "Height of the code pane"
    drag(page, "side", 140)  # the side panel narrower, the graph (and the code under it) wider
    after = page.evaluate(_BOXES)
    assert after["side"][0] == pytest.approx(start["side"][0] - 140, abs=3), (start, after)
    assert after["graph"][0] == pytest.approx(start["graph"][0] + 140, abs=3), (start, after)
    assert after["code"][0] == after["graph"][0]
    drag_down(page, 90)  # the code shorter, the graph taller
    lower = page.evaluate(_BOXES)
    assert lower["code"][1] == pytest.approx(after["code"][1] - 90, abs=3), (after, lower)
    assert lower["graph"][1] == pytest.approx(after["graph"][1] + 90, abs=3), (after, lower)
    wider = refitted(page, graph)
    # refitted to the wider pane: small_net, cut at its sides before, shows its whole width
    assert not graph["whole"] and wider["whole"], (graph, wider)
    assert wider["zoom"] >= graph["zoom"], (graph, wider)
    # ↑ moves the divider up: the code taller again
    code_divider.focus()
    page.keyboard.press("ArrowUp")
    assert page.evaluate(_BOXES)["code"][1] == lower["code"][1] + 16
    assert page.evaluate("() => document.scrollingElement.scrollHeight <= window.innerHeight")
    page.mouse.move(5, 5)
    settle(page)
    shot(page, "31-panes-projector")
    # the charts view keeps its shape: no dividers
    page.click("#gw-tab-charts")
    page.wait_for_selector("[data-gw=divider-code]", state="hidden")
    assert page.locator("[data-gw=divider-side]").is_hidden()
    page.click("#gw-tab-tape")
    page.wait_for_selector("[data-gw=divider-code]", state="visible")
    # each layout keeps its own sizes: the wide one is as it was
    page.set_viewport_size({"width": 1440, "height": 900})
    page.wait_for_function(
        "() => document.querySelector('[data-gw=divider-code]').getAttribute('aria-orientation') === 'vertical'"
    )
    assert page.evaluate("() => localStorage.getItem('gradwalk-panes')") is None
    page.set_viewport_size({"width": 1024, "height": 768})
    page.wait_for_function(
        "() => document.querySelector('[data-gw=divider-code]').getAttribute('aria-orientation') === 'horizontal'"
    )
    assert page.evaluate(_BOXES)["side"][0] == after["side"][0]


def test_phones_have_no_dividers(page: Any) -> None:
    open_app(page)
    drag(page, "code", -150)
    page.set_viewport_size({"width": 600, "height": 900})
    page.wait_for_selector("[data-gw=divider-code]", state="hidden")
    assert page.locator("[data-gw=divider-side]").is_hidden()
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= window.innerWidth")


_PAN = "() => window.gradwalk.graph.core.pan().x"


def test_a_big_graph_is_fitted_again_when_the_drag_ends(page: Any) -> None:
    # thousands of nodes take tens of ms to fit and draw: not on every frame of a drag
    chain = "import torch\nx = torch.randn(4, requires_grad=True)\nh = x\nfor _ in range(700):\n    h = torch.tanh(h * 1.01)\nh.sum().backward()\n"
    open_app(page)
    run_source(page, chain)
    assert page.evaluate("() => window.gradwalk.graph.big")
    pan = page.evaluate(_PAN)
    box = page.locator("[data-gw=divider-code]").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 150, y, steps=6)
    page.wait_for_timeout(300)
    assert page.evaluate(_PAN) == pan  # not fitted mid-drag
    page.mouse.up()
    # fitted to the wider pane once dropped: centred 75 px further right
    page.wait_for_function("(x) => Math.abs(window.gradwalk.graph.core.pan().x - (x + 75)) < 4", arg=pan)
