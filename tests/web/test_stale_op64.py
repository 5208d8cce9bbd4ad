"""Another run opened (a lesson, a link, a room's next run) drops the last run's tape position,
pick and graph call where it names none: a tape row clicked in one lesson left the next one's
graph empty at "op 2 of 10", and in a room every viewer carried it (hunt 64, classroom)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, wait_graph
from .lessons_served import opened_at

pytestmark = pytest.mark.browser

STATE = "() => { const s = window.gradwalk.store.state; return [s.op, s.selection, s.graphCall]; }"


def test_a_tape_position_and_a_pick_do_not_follow_into_the_next_lesson(page: Any) -> None:
    opened_at(page, "chain-rule")
    page.wait_for_function("() => window.gradwalk.model.isFinished")
    page.click("[role=tab][data-view=tape]")
    page.locator(".gw-tape [data-op]").nth(1).click()  # a tape row: the graph as it was at that op
    page.wait_for_function("() => window.gradwalk.store.state.op !== null")
    page.evaluate("() => window.gradwalk.store.set({ selection: { kind: 'tensor', id: 0 } })")
    # the next lesson, from the card (the page stays: a link would load it afresh)
    page.locator("[data-gw=lesson-card] [data-nav=next]").click()
    expect(page.locator("[data-gw=lesson-card]")).to_have_attribute("data-lesson", "accumulate")
    page.wait_for_function(
        "() => window.gradwalk.model.isFinished && window.gradwalk.store.state.view !== 'tape'"
    )
    page.wait_for_function(f"() => JSON.stringify(({STATE})()) === JSON.stringify([null, null, null])")
    # its graph is drawn whole, not as it was at the last lesson's op
    wait_graph(page)
    page.wait_for_function("() => window.gradwalk.graph.core.nodes(':visible').length > 0")
