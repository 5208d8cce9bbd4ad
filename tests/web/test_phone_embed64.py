"""An embed on a phone (a course page's column, 358 x 560, or the embed alone, 390 x 664)
shows the step card's rule and numbers: the graph's toolbar took two rows and the card kept
32 px (86 px alone) of 276, scrolling without a word (hunt 64, touch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import expect, phone_page, stored_run

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).parents[2] / "server" / "examples" / "clean_training.py"

PARTS = """() => { const q = (s) => document.querySelector(s).getBoundingClientRect();
    const body = document.querySelector('.gw-viewer .gw-step-body');
    return { card: body.clientHeight, whole: body.scrollHeight, graph: q('.gw-viewer-graph').height,
             toolbar: document.querySelector('.gw-viewer .gw-graph-toolbar').offsetHeight,
             bottom: q('.gw-viewer .gw-step-body').bottom }; }"""


@pytest.mark.parametrize(("width", "height", "shown"), [(358, 560, 120), (390, 664, 200)])
def test_a_phone_embed_shows_the_step_cards_rule_and_numbers(
    browser: Any, server: Any, width: int, height: int, shown: int
) -> None:
    run = stored_run(server, EXAMPLE.read_text())
    with phone_page(browser, server, width, height) as page:
        page.goto(f"{server.url}/embed/{run}?view=stepper&step=3")
        expect(page.locator(".gw-viewer .gw-stepper .gw-position")).to_contain_text("step 4 of 39")
        page.wait_for_timeout(300)
        got = page.evaluate(PARTS)
        assert got["toolbar"] == 0, got  # the graph pans and zooms by hand; its cues stay
        assert got["graph"] >= 140, got  # still a graph to look at
        assert got["card"] >= shown, got
        assert got["bottom"] <= height + 1, got
        expect(page.locator(".gw-viewer .gw-offscreen-cue:visible").first).to_be_visible()
