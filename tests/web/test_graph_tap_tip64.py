"""A finger's tap on a parameter in the graph shows its `.grad` at the step in a bubble under
it: the whole value was only in a hover tooltip, which a phone never shows, and the label
shortens it to a norm (hunt 64, touch). A mouse's click shows none (the tooltip is there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import expect, phone_page, stored_run, wait_graph

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).parents[2] / "server" / "examples" / "clean_training.py"

A_PARAMETER = """() => {
    const cy = window.gradwalk.graph.core, box = cy.container().getBoundingClientRect();
    const n = cy.nodes("[kind = 'param']")[0];
    if (!n) return null;
    cy.center(n);  // a pan, as a finger would make
    const p = n.renderedPosition();
    return { x: box.left + p.x, y: box.top + p.y, id: n.id() };
}"""


def test_a_tap_on_a_parameter_shows_its_grad_at_the_step(browser: Any, server: Any) -> None:
    run = stored_run(server, EXAMPLE.read_text())
    with phone_page(browser, server, 390, 844) as page:
        page.goto(f"{server.url}/?run={run}&view=stepper&step=3")
        page.wait_for_function("() => window.gradwalk?.model?.isFinished")
        wait_graph(page)
        page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
        at = page.evaluate(A_PARAMETER)
        page.locator(".gw-graph-stage").scroll_into_view_if_needed()
        at = page.evaluate(A_PARAMETER)  # where it is, once the page has scrolled
        assert at, "a parameter in view"
        page.touchscreen.tap(at["x"], at["y"])
        tip = page.locator("[data-gw=graph-tip]")
        expect(tip).to_be_visible()
        expect(tip).to_contain_text(".grad at this step: ")
        # the next tap, on the graph's background, puts it away
        box = page.locator(".gw-graph-stage").bounding_box()
        page.touchscreen.tap(box["x"] + 8, box["y"] + 8)
        expect(tip).to_be_hidden()


def test_a_mouse_click_on_a_parameter_shows_no_bubble(page: Any) -> None:
    run = stored_run(page.server, EXAMPLE.read_text())
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=3")
    page.wait_for_function("() => window.gradwalk?.model?.isFinished")
    wait_graph(page)
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    at = page.evaluate(A_PARAMETER)
    assert at, "a parameter in view"
    page.mouse.click(at["x"], at["y"])
    page.wait_for_timeout(300)
    expect(page.locator("[data-gw=graph-tip]")).to_be_hidden()
