"""A finger on a chart reads a point with its first tap and opens it with a second: a tap to
read a metrics-only step put a note above the chart, and the next tap, aimed at the chart
moved down, pressed "Record step 20 in full" and ran the whole snippet again; a tap on a step
recorded in full left the charts at once (hunt 64, touch). A mouse click still opens at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import expect, phone_page, stored_run

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).parents[2] / "server" / "examples" / "rent_regression.py"


def _x_of_step(page: Any, step: int) -> tuple[float, float]:
    """The page point over the loss chart's step ``step``."""
    return page.evaluate(
        """(step) => { const c = document.querySelector('[data-chart=loss]'), o = c.querySelector('.u-over');
        const r = o.getBoundingClientRect();
        const plot = [...window.gradwalk.charts.charts.values()].find((ch) => ch.table.id === 'loss').plot;
        return [r.left + plot.valToPos(step, 'x'), r.top + r.height / 2]; }""",
        step,
    )


def test_a_tap_reads_a_step_and_a_second_tap_on_it_opens_it(browser: Any, server: Any) -> None:
    run = stored_run(server, EXAMPLE.read_text())
    with phone_page(browser, server, 390, 664) as page:
        page.goto(f"{server.url}/?run={run}&view=charts")
        page.wait_for_function("() => window.gradwalk?.model?.isFinished")
        loss = page.locator("[data-chart=loss]")
        loss.scroll_into_view_if_needed()
        readout = loss.locator(".gw-chart-readout")
        # a metrics-only step: read, nothing said above the chart, no new run
        x, y = _x_of_step(page, 200)
        page.touchscreen.tap(x, y)
        expect(readout).to_contain_text("metrics only")
        expect(page.locator(".gw-charts-note")).to_be_hidden()
        # a step recorded in full: the first tap reads it and says how to open it
        x, y = _x_of_step(page, 1)
        page.touchscreen.tap(x, y)
        expect(readout).to_contain_text("● recorded in full: tap again to open")
        page.wait_for_timeout(300)
        assert page.evaluate("() => window.gradwalk.store.state.view") == "charts"
        page.touchscreen.tap(x, y)
        page.wait_for_function("() => window.gradwalk.store.state.view === 'stepper'")
        assert page.evaluate("() => window.gradwalk.runId") == run  # no run started


def test_a_mouse_click_on_a_step_recorded_in_full_opens_it_at_once(page: Any) -> None:
    run = stored_run(page.server, EXAMPLE.read_text())
    page.goto(f"{page.server.url}/?run={run}&view=charts")
    page.wait_for_function("() => window.gradwalk?.model?.isFinished")
    x, y = _x_of_step(page, 1)
    page.mouse.move(x, y)
    expect(page.locator("[data-chart=loss] .gw-chart-readout")).to_contain_text("click to open")
    page.mouse.click(x, y)
    page.wait_for_function("() => window.gradwalk.store.state.view === 'stepper'")
