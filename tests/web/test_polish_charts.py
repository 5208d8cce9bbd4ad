"""Charts polish, in a real Chromium against a real server: a learning rate a scheduler moves
by a hair is labelled and read out with the digits that tell its steps apart, its y axis is
as wide as its labels, and the time charts' x axis starts at the run's start, labelled 0 s."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from .conftest import expect, open_app, stored_run
from .test_charts import hovered_step, open_charts, plot_point, wait_chart
from .tracegen import run_lasting

pytestmark = pytest.mark.browser

# Adam at 5e-4 under a cosine schedule 10,000 steps long: 40 steps move the rate by 1.8e-8
# (0.0005 → 0.000499982), labelled 0.00049998 … 0.0005 on a 62 px axis that held 8 characters.
SCHEDULED = """\
import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(64, 4)
y = torch.randn(64, 1)
model = nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters(), lr=5e-4)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10000)
for step in range(40):
    loss = nn.functional.mse_loss(model(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
"""

# Each y tick label's width in the axis's font against the room uPlot gave the axis: the
# labels are drawn right-aligned 4 px (the tick) + 5 px (uPlot's gap) left of the plot.
Y_LABELS_ROOM = """(id) => {
    const u = window.gradwalk.charts.plotOf(id);
    const axis = u.axes[1];
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = axis.font[0].replace(/^\\d+(\\.\\d+)?px/, (px) => `${parseFloat(px) / devicePixelRatio}px`);
    return { room: axis._size, labels: axis._values.filter((v) => v !== ''),
             widths: axis._values.map((v) => ctx.measureText(v).width) };
}"""


@pytest.fixture(scope="module")
def scheduled(server: Any) -> str:
    return stored_run(server, SCHEDULED)


def test_a_scheduled_learning_rate_is_labelled_and_read_with_the_digits_that_tell_it_apart(
    page: Any, scheduled: str
) -> None:
    snap = open_charts(page, scheduled, "lr", 40)
    rates = snap["lr"]["series"][0]["values"]
    assert rates[0] == pytest.approx(5e-4) and rates[-1] < 5e-4

    ticks = snap["lr"]["yTicks"]
    assert len(ticks) == len(set(ticks)) >= 2, ticks
    room = page.evaluate(Y_LABELS_ROOM, "lr")
    # every label fits beside its tick (0.00049998 was cut to "00049998" at the card's edge)
    assert max(room["widths"]) + 4 + 5 <= room["room"], room

    # the readout tells the hovered step's rate from the first one's (it read 5e-4 at all 40)
    x, y = plot_point(page, "lr", 38)
    page.mouse.move(x, y)
    step = hovered_step(page, "lr")
    readout = page.locator("[data-chart=lr] .gw-chart-readout")
    expect(readout).to_contain_text(f"step {step} · ")
    text = readout.text_content() or ""
    shown = text.split(" · ")[1]
    assert float(shown) != 5e-4, text
    assert float(shown) == pytest.approx(rates[step - 1], rel=1e-6), (text, rates[step - 1])
    # the value is on screen in full: a narrow card cuts the hint after it, not the value
    values = page.locator("[data-chart=lr] .gw-chart-readout-values")
    expect(values).to_have_text(" · ".join(text.split(" · ")[:2]))
    assert page.evaluate("(el) => el.scrollWidth <= el.clientWidth", values.element_handle())


def test_a_narrow_card_cuts_the_readouts_hint_before_its_value(page: Any, scheduled: str) -> None:
    # two charts a row in 1100 px: a 340 px readout, which "step 2 · 5e-4 · ● recorded in
    # full: click to open" overflows (it was cut at its end, wherever that fell)
    page.set_viewport_size({"width": 1100, "height": 900})
    open_charts(page, scheduled, "lr", 40)
    x, y = plot_point(page, "lr", 1)
    page.mouse.move(x, y)
    step = hovered_step(page, "lr")
    readout = page.locator("[data-chart=lr] .gw-chart-readout")
    expect(readout).to_contain_text("recorded in full")
    fits = page.evaluate(
        """() => {
            const r = document.querySelector('[data-chart=lr] .gw-chart-readout');
            const v = r.querySelector('.gw-chart-readout-values');
            return { value: v.scrollWidth <= v.clientWidth,
                     right: v.getBoundingClientRect().right <= r.getBoundingClientRect().right + 0.5,
                     title: r.title, text: r.textContent };
        }"""
    )
    assert fits["value"] and fits["right"], fits
    assert fits["text"].startswith(f"step {step} · "), fits
    assert fits["title"] == fits["text"], fits  # the whole line, where the hint is cut short


def test_the_graph_memory_charts_time_axis_starts_at_0_s(page: Any, scheduled: str) -> None:
    # the recorded clock moved so that graph memory is first measured at 1% of the run: a warm
    # worker ran the 40 steps in ~0.05 s and the snippet's first op came past a quarter of
    # them, where the axis starts at the first point (LATE_FIRST_POINT)
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        trace = client.get(f"/api/runs/{scheduled}/trace").raise_for_status().json()
    open_app(page)
    span = max(e["t"] for e in trace["events"])
    page.evaluate(
        "(text) => { window.gradwalk.loadTrace(JSON.parse(text)); }", json.dumps(run_lasting(trace, span))
    )
    page.click("#gw-tab-charts")
    wait_chart(page, "memory")
    axis = page.evaluate(
        """() => {
            const u = window.gradwalk.charts.plotOf('memory');
            return { min: u.scales.x.min, first: u.data[0][0], labels: u.axes[0]._values };
        }"""
    )
    assert axis["first"] > 0, axis  # the first memory event comes after the run's start
    assert axis["min"] == 0, axis
    assert axis["labels"][0] == "0 s", axis
