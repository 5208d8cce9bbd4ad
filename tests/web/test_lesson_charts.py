"""A lesson opens the training charts as it says (per parameter, y scale) in real Chromium;
a reload keeps them, and the next lesson sets them as it says, or back to the defaults."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, open_app, shot

pytestmark = pytest.mark.browser

CARD = "[data-gw=lesson-card]"


def _charts_state(page: Any) -> dict[str, Any]:
    """The store's charts choices and what the chart controls show."""
    return page.evaluate(
        """() => {
            const state = window.gradwalk.store.state;
            const scale = document.querySelector('select[aria-label="Y scale"]');
            const perParam = document.querySelector('input[aria-label="Norms per parameter"]');
            return { perParam: state.perParam, yscale: state.yscale, hide: state.hide, view: state.view,
                     scaleShown: scale.value, perParamShown: perParam.checked };
        }"""
    )


PER_PARAMETER_LOG = {
    "perParam": True,
    "yscale": "log",
    "hide": ["loss", "lr"],
    "view": "charts",
    "scaleShown": "log",
    "perParamShown": True,
}


def _settled_url(page: Any, lesson_run_view: str) -> None:
    """Wait until the address bar holds the lesson's run and view (writes are coalesced)."""
    page.wait_for_function(
        "view => { const q = new URLSearchParams(location.search); return q.get('run') !== null && q.get('view') === view; }",
        arg=lesson_run_view,
    )


def test_the_dead_relu_lesson_opens_the_charts_per_parameter_on_a_log_scale_and_a_reload_keeps_them(
    page: Any,
) -> None:
    open_app(page, "?lesson=dead-relu")
    card = page.locator(CARD)
    expect(card).to_have_attribute("data-lesson", "dead-relu")
    expect(card).to_contain_text("The gradient chart opens per parameter on a log scale")
    page.wait_for_function("() => window.gradwalk.model.isFinished")
    assert _charts_state(page) == PER_PARAMETER_LOG
    expect(page.locator(".gw-charts")).to_contain_text("fc1.weight")  # a line per parameter
    # the gradient chart comes first, the loss and learning rate a click away
    expect(page.locator(".gw-charts-unhide")).to_be_visible()
    expect(page.locator(".gw-charts h3").first).to_contain_text("Gradient norm")
    _settled_url(page, "charts")
    query = page.evaluate("() => location.search")
    assert "yscale=log" in query and "norms=per-parameter" in query and "hide=loss%2Clr" in query, query
    page.reload()
    expect(card).to_have_attribute("data-lesson", "dead-relu")
    page.wait_for_function("() => window.gradwalk.model.isFinished")
    assert _charts_state(page) == PER_PARAMETER_LOG


def test_moving_to_another_lesson_sets_the_charts_as_it_says_or_back_to_the_defaults(page: Any) -> None:
    open_app(page, "?lesson=dead-relu")
    card = page.locator(CARD)
    expect(card).to_have_attribute("data-lesson", "dead-relu")
    page.wait_for_function("() => window.gradwalk.store.state.perParam === true")
    # back to a lesson that says nothing about the charts: together, auto
    card.get_by_role("button", name="◀ Previous").click()
    expect(card).to_have_attribute("data-lesson", "copy-vs-stack")
    _settled_url(page, "stepper")
    state = _charts_state(page)
    assert (state["perParam"], state["yscale"], state["scaleShown"], state["perParamShown"]) == (
        False,
        "auto",
        "auto",
        False,
    )
    query = page.evaluate("() => location.search")
    assert "yscale" not in query and "norms" not in query, query
    # on to dead-relu, then vanishing-gradients: both per parameter, log
    card.get_by_role("button", name="Next ▶").click()
    expect(card).to_have_attribute("data-lesson", "dead-relu")
    card.get_by_role("button", name="Next ▶").click()
    expect(card).to_have_attribute("data-lesson", "vanishing-gradients")
    page.wait_for_function(
        "() => window.gradwalk.model.isFinished && window.gradwalk.store.state.view === 'charts'"
    )
    assert _charts_state(page) == PER_PARAMETER_LOG
    charts = page.locator(".gw-charts")
    for i in (1, 9, 10):
        expect(charts).to_contain_text(f"fc{i}.weight")
    shot(page, "lesson-charts-vanishing-gradients")
