"""What README.md says of the app, checked in real Chromium against a real server: claims a
README audit found the app did not keep."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import expect, open_app, run_example

pytestmark = pytest.mark.browser

LOSS = "[data-chart=loss]"


def open_rent_charts(page: Any) -> Any:
    """Run the 400-step rent regression, open Charts and focus the loss chart's plot; return it."""
    open_app(page)
    run_example(page, "rent_regression")
    page.keyboard.press("4")
    plot = page.locator(f"{LOSS} [role=slider]")
    expect(plot).to_have_attribute("aria-valuemax", "400")
    plot.focus()
    return plot


def test_a_charts_keys_move_its_cursor_and_readout_one_step_at_a_time(page: Any) -> None:
    # README: "← → (Shift for ten steps), Home and End move the cursor and its readout". On
    # a chart of more steps than pixels (400 on ~370 px) the keys moved a mouse to a whole
    # pixel: End read step 399 while aria-valuenow said 400, and ← moved two steps at a time.
    plot = open_rent_charts(page)
    readout = page.locator(f"{LOSS} .gw-chart-readout")
    page.keyboard.press("End")
    expect(plot).to_have_attribute("aria-valuenow", "400")
    expect(readout).to_contain_text("step 400 · ")
    for left, want in [("ArrowLeft", 399), ("ArrowLeft", 398), ("Shift+ArrowLeft", 388)]:
        page.keyboard.press(left)
        expect(plot).to_have_attribute("aria-valuenow", str(want))
        expect(readout).to_contain_text(f"step {want} · ")
        expect(plot).to_have_attribute("aria-valuetext", re.compile(rf"^step {want} · "))  # read out
        # the step charts move their cursors together
        expect(page.locator("[data-chart=grad] .gw-chart-readout")).to_contain_text(f"step {want} · ")
    page.keyboard.press("Enter")  # what a click does: the step it reads, not a neighbour
    expect(page.locator(".gw-charts-note button")).to_have_text("Record step 388 in full")


def test_the_keys_dialog_lists_the_charts_keys_as_it_lists_every_other(page: Any) -> None:
    # README: "? (or the header's ? button) lists every key in one dialog"; a step chart's
    # plot is a slider that ← →, Shift, Home, End and Enter drive. The dialog left them out.
    open_app(page)
    page.locator("[data-gw=shortcuts]").click()
    dialog = page.locator("[data-gw=shortcuts-dialog]")
    expect(dialog).to_be_visible()
    group = dialog.locator("table", has=page.locator("caption", has_text="chart"))
    expect(group).to_have_count(1)
    rows = group.locator("tr")
    expect(rows.filter(has=page.locator("kbd", has_text="← →"))).to_contain_text("Shift: ten steps")
    expect(rows.filter(has=page.locator("kbd", has_text="Home End"))).to_have_count(1)
    expect(rows.filter(has=page.locator("kbd", has_text="Enter"))).to_contain_text("what a click does")
