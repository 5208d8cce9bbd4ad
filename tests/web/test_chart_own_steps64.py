"""A metric logged at steps of its own count (gradwalk.log("val_acc", acc, step=epoch)) keeps
its own cursor: hovering the loss at optimizer step 90 had moved val_acc's to its step 29 (its
last epoch) and read "step 29" beside the loss's "step 90" (hunt 64, README claims)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import expect, open_app, run_example

pytestmark = pytest.mark.browser


def test_an_epoch_metric_keeps_its_cursor_while_the_loss_is_read(page: Any) -> None:
    open_app(page)
    run_example(page, "own_metrics")
    page.click("[role=tab][data-view=charts]")
    val = page.locator("[data-chart='metric:val_acc']")
    expect(val.locator(".gw-chart-readout")).to_have_text("last: its step 29 · 0.9844")
    expect(val.locator(".gw-chart-help")).to_contain_text("at its own steps (step=…, not the optimizer's)")
    plot = page.locator("[data-chart=loss] .u-over").bounding_box()
    page.mouse.move(plot["x"] + plot["width"] * 0.1, plot["y"] + plot["height"] / 2)
    loss = page.locator("[data-chart=loss] .gw-chart-readout")
    expect(loss).to_have_text(re.compile(r"^step \d+ · "))
    at = loss.inner_text().split(" · ")[0]
    assert int(at.split()[1]) < 40, at
    # the gradient norm, on the optimizer's steps, follows; val_acc stays at its last
    expect(page.locator("[data-chart=grad] .gw-chart-readout")).to_contain_text(f"{at} · ")
    expect(val.locator(".gw-chart-readout")).to_have_text("last: its step 29 · 0.9844")
    # read on its own, it says whose steps they are
    box = page.locator("[data-chart='metric:val_acc'] .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    expect(val.locator(".gw-chart-readout")).to_contain_text("its step")
    expect(page.locator("[data-chart=loss] .gw-chart-readout")).to_contain_text("last: step 180")
