"""The Charts view with training loops the other chart tests do not cover, in a real Chromium
against a real server: gradients clipped to a constant norm, metrics that barely move, a
loss under a decade on the log scale, a logged zero on a log axis, and a memory chart of a
few hundred points."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import expect, presenter_on, shot, stored_run
from .test_charts import SNAPSHOT, example, open_charts, wait_chart

pytestmark = pytest.mark.browser

# clip_grad_norm_ holds the gradient norm at max_norm: 1.0000000005 … 1.00000005, float
# noise around 1, and the update norm at lr * 1 the same way
CLIPPED = """import torch
torch.manual_seed(0)
X = torch.randn(64, 4) * 10
y = X @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.001)
for step in range(1, 31):
    loss = torch.nn.functional.mse_loss(model(X), y)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
"""

# three metrics logged at their own cadences: one that barely moves, one falling from 0.9
# to 0.2 (under a decade), one crossing zero
METRICS = """import gradwalk
for step in range(1, 21):
    gradwalk.log("nearly_flat", 1727.5 + step * 0.001)
    gradwalk.log("falling", 0.9 - step * 0.035)
    if step % 5 == 0:
        gradwalk.log("margin", float(step - 10), step=step)
"""


@pytest.fixture(scope="module")
def runs(server: Any) -> dict[str, str]:
    return {"clipped": stored_run(server, CLIPPED), "metrics": stored_run(server, METRICS)}


def y_range(page: Any, chart: str) -> list[float]:
    span: list[float] = page.evaluate(
        f"() => {{ const u = window.gradwalk.charts.plotOf('{chart}'); return [u.scales.y.min, u.scales.y.max]; }}"
    )
    return span


def test_a_clipped_gradient_norm_is_a_flat_line_at_max_norm(page: Any, runs: dict[str, str]) -> None:
    # the norm clip_grad_norm_ leaves differs from 1 by float noise: uPlot rounded its range
    # to [1, 1], the page threw "Invalid array length" (the page fixture fails on it) and
    # the gradient norm and update norm charts were drawn without their line
    open_charts(page, runs["clipped"], "grad", 30)
    snap = wait_chart(page, "update", 30)
    for chart, level in (("grad", "1"), ("update", "0.001")):
        low, high = y_range(page, chart)
        assert low < 1e-3 * float(level) and high > 1.5 * float(level), (chart, low, high)
        ticks = snap[chart]["yTicks"]
        assert level in ticks and len(ticks) >= 3, (chart, ticks)
    expect(page.locator("[data-chart=grad] .gw-chart-readout")).to_have_text("last: step 30 · 1")
    shot(page, "charts-hunt-clipped-norm")


def test_a_metric_that_barely_moves_has_tick_labels_that_differ(page: Any, runs: dict[str, str]) -> None:
    # 1727.501 … 1727.52 was ticked "1728" three times: four significant digits were all the
    # axis wrote, so its labels said nothing
    snap = open_charts(page, runs["metrics"], "metric:nearly_flat", 20)
    ticks = snap["metric:nearly_flat"]["yTicks"]
    assert len(ticks) >= 2 and len(set(ticks)) == len(ticks), ticks
    assert all(t.startswith("1727.") for t in ticks), ticks


def test_a_log_axis_under_a_decade_is_ticked_between_its_powers(page: Any, runs: dict[str, str]) -> None:
    # on the log scale, values from 0.865 to 0.2 had one tick, "1", at the top of the plot
    page.goto(f"{page.server.url}/?run={runs['metrics']}&view=charts&yscale=log")
    snap = wait_chart(page, "metric:falling", 20)
    assert snap["metric:falling"]["log"] is True
    ticks = snap["metric:falling"]["yTicks"]
    assert {"0.2", "0.5"} <= set(ticks), ticks


def test_a_logged_zero_reads_as_zero_on_a_log_axis(page: Any, runs: dict[str, str]) -> None:
    # a log axis leaves out values <= 0, and hovering one read "–", as if nothing had been
    # logged there: the readout reads the value logged
    page.goto(f"{page.server.url}/?run={runs['metrics']}&view=charts&yscale=log")
    wait_chart(page, "metric:margin", 4)
    assert page.evaluate(SNAPSHOT)["metric:margin"]["series"][0]["values"] == [-5, 0, 5, 10]
    slider = page.locator("[data-chart='metric:margin'] [role=slider]")
    readout = page.locator("[data-chart='metric:margin'] .gw-chart-readout")
    slider.focus()
    page.keyboard.press("Home")
    expect(readout).to_have_text("step 5 · -5")
    page.keyboard.press("ArrowRight")
    expect(readout).to_have_text("step 10 · 0")
    page.keyboard.press("ArrowRight")
    expect(readout).to_have_text("step 15 · 5")


def test_thirty_epochs_of_memory_are_a_band_not_a_barcode(page: Any, server: Any) -> None:
    # own_metrics' 30 epochs of 6 steps bring some 370 memory rows: under the 400 it took to
    # draw them as peak and floor, they were strokes a pixel apart across the whole plot
    run = stored_run(server, example("own_metrics"))
    snap = open_charts(page, run, "memory")
    raw = [v for v in snap["memory"]["series"][0]["values"] if v is not None]
    assert 150 < len(raw) < 400, len(raw)
    assert snap["memory"]["sliced"] is True
    expect(page.locator("[data-chart=memory] .gw-chart-chip")).to_have_text(["peak", "floor"])
    shot(page, "charts-hunt-memory-band")


def test_a_short_runs_memory_still_shows_each_graph_built_and_freed(page: Any, server: Any) -> None:
    # clean_training's 30 steps (under 150 rows) stay a line: its first graphs rise op by op
    run = stored_run(server, example("clean_training"))
    snap = open_charts(page, run, "memory")
    assert snap["memory"]["sliced"] is False
    values = [v for v in snap["memory"]["series"][0]["values"] if v is not None]
    assert len(values) < 150 and values.count(0) >= 25, values


def test_presenter_type_sets_the_charts_tick_labels_large(page: Any, runs: dict[str, str]) -> None:
    # uPlot draws its axes on a canvas in a font of its own: at 11 px, the tick labels were
    # the one text that presenter type (for a projector) left small
    def axis_fonts() -> list[str]:
        fonts: list[str] = page.evaluate(
            "() => window.gradwalk.charts.plotOf('loss').axes.map((a) => String(a.font[0] ?? a.font))"
        )
        return fonts

    open_charts(page, runs["clipped"], "loss", 30)
    assert all(f.startswith("11px") for f in axis_fonts()), axis_fonts()
    presenter_on(page)
    # (the charts rebuild for the new type: while they do, the plot may not be there yet)
    page.wait_for_function(
        "() => window.gradwalk.charts.plotOf('loss')?.axes.every((a) => String(a.font[0] ?? a.font).startsWith('15px')) ?? false"
    )
    plot = page.locator("[data-chart=loss] .u-over").bounding_box()
    assert plot is not None and plot["width"] > 150, plot
    shot(page, "charts-hunt-presenter-ticks")


# six layers, twelve parameters: two more than the charts' ten colours
TWELVE_PARAMETERS = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(*[nn.Linear(3, 3) for _ in range(6)])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 3)
for step in range(5):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_parameters_past_the_tenth_colour_are_drawn_dotted(page: Any, server: Any) -> None:
    # with twelve parameters, 10.weight and 10.bias were drawn in the colour and the line of
    # 0.weight and 0.bias: two series the legend could not tell apart
    run = stored_run(server, TWELVE_PARAMETERS)
    page.goto(f"{page.server.url}/?run={run}&view=charts&norms=per-parameter")
    snap = wait_chart(page, "grad", 5)
    assert len(snap["grad"]["series"]) == 12
    dashes = page.evaluate(
        "() => window.gradwalk.charts.plotOf('grad').series.slice(1).map((s) => s.dash ?? null)"
    )
    assert dashes[:10] == [None] * 10 and all(d for d in dashes[10:]), dashes
    swatches = page.locator("[data-chart=grad] .gw-chart-chip .gw-chart-swatch")
    expect(swatches).to_have_count(12)
    assert "gw-chart-swatch-dotted" not in (swatches.nth(0).get_attribute("class") or "")
    expect(swatches.nth(10)).to_have_class(re.compile("gw-chart-swatch-dotted"))
    shot(page, "charts-hunt-twelve-parameters")


def test_a_loss_that_overflows_says_under_its_chart_where_the_line_stops(page: Any, server: Any) -> None:
    # the line just ended at step 20: nothing on the chart said that the loss went inf there
    # and stayed so (a learner read it as the run having stopped)
    run = stored_run(server, example("pitfall_nan_loss"))
    open_charts(page, run, "loss", 400)
    foot = page.locator("[data-chart=loss] .gw-chart-foot")
    expect(foot).to_be_visible()
    expect(foot).to_contain_text("inf first at step 20")
    expect(page.locator("[data-chart=loss]")).to_have_attribute("data-not-finite", "20")
    expect(page.locator("[data-chart=lr] .gw-chart-foot")).to_be_hidden()
    shot(page, "charts-hunt-loss-overflows")
