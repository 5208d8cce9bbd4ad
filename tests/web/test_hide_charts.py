"""Hiding charts, in a real Chromium against a real server: a course page that needs only the
loss curve shows only it, in the app's links, embeds and downloaded pages."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import expect, shot, stored_run
from .test_charts import SNAPSHOT, example, wait_chart

pytestmark = pytest.mark.browser

VIEWER = "() => window.gradwalkViewer && window.gradwalkViewer.charts.snapshot()"
ALL = ["loss", "metric:val_acc", "grad", "update", "lr", "memory"]  # the own metric right after the loss


@pytest.fixture(scope="module")
def run(server: Any) -> str:
    """A training run with every kind of chart, a logged metric (val_acc) among them."""
    return stored_run(server, example("own_metrics"))


def on_screen(page: Any) -> list[str]:
    ids: list[str] = page.eval_on_selector_all(
        ".gw-charts-grid [data-chart]", "(cards) => cards.map((c) => c.dataset.chart)"
    )
    return ids


def test_a_hidden_chart_stays_hidden_in_links_and_comes_back_on_request(page: Any, run: str) -> None:
    server = page.server
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{server.url}/?run={run}&view=charts")
    wait_chart(page, "metric:val_acc")
    assert on_screen(page) == ALL
    unhide = page.locator(".gw-charts-unhide")
    expect(unhide).to_be_hidden()

    page.click("[data-chart=update] .gw-chart-hide")
    expect(page.locator("[data-chart=update]")).to_have_count(0)
    expect(unhide).to_have_text("show the hidden Update norm chart")
    page.get_by_role("button", name="Hide the val_acc chart").click()
    expect(unhide).to_have_text("show 2 hidden charts")
    assert on_screen(page) == ["loss", "grad", "lr", "memory"]
    snap = page.evaluate(SNAPSHOT)
    assert [k for k, c in snap.items() if c["hidden"]] == ["metric:val_acc", "update"]
    page.wait_for_function("() => location.search.includes('hide=update%2Cmetric%3Aval_acc')")

    # the link reopens with them hidden, and so does the embed code
    page.reload()
    wait_chart(page, "loss")
    assert on_screen(page) == ["loss", "grad", "lr", "memory"]
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page.click("[data-gw=copy-embed]")
    expect(page.locator("[data-gw=copy-embed]")).to_have_attribute("data-done", "copied")
    code = page.evaluate("() => navigator.clipboard.readText()")
    assert f"/embed/{run}?view=charts&amp;hide=update%2Cmetric%3Aval_acc" in code, code
    shot(page, "charts-13-two-charts-hidden")

    unhide.click()
    expect(unhide).to_be_hidden()
    wait_chart(page, "metric:val_acc")
    assert on_screen(page) == ALL
    page.wait_for_function("() => !location.search.includes('hide=')")


def test_an_embed_and_a_download_show_only_the_charts_not_hidden(page: Any, run: str, tmp_path: Any) -> None:
    page.set_viewport_size({"width": 960, "height": 640})
    # ids that are no chart of this run (or no chart at all) are ignored
    page.goto(f"{page.server.url}/embed/{run}?view=charts&hide=grad,update,lr,memory,cuda,metric:a%09b")
    wait_chart(page, "loss", snapshot=VIEWER)
    assert on_screen(page) == ["loss", "metric:val_acc"]
    expect(page.locator(".gw-charts-unhide")).to_have_text("show 4 hidden charts")
    expect(page.locator(".gw-viewer-open")).to_have_attribute(
        "href", f"{page.server.url}/?run={run}&view=charts&hide=grad%2Cupdate%2Clr%2Cmemory%2Ccuda"
    )
    shot(page, "charts-14-embed-loss-and-metric")

    # without controls (a picture) there is nothing to hide or show again
    page.goto(f"{page.server.url}/embed/{run}?view=charts&controls=hide&hide=grad")
    wait_chart(page, "loss", snapshot=VIEWER)
    assert "grad" not in on_screen(page)
    expect(page.locator(".gw-chart-hide").first).to_be_hidden()
    expect(page.locator(".gw-charts-unhide")).to_be_hidden()
    # nor the charts' own switches (what they show stays: the optimizer's steps)
    expect(page.get_by_label("Y scale")).to_be_hidden()
    expect(page.get_by_label("Norms per parameter")).to_be_hidden()
    expect(page.locator(".gw-charts-summary")).to_have_text("opt (SGD): 180 steps")

    # every chart hidden: the page says so rather than stay blank
    page.goto(f"{page.server.url}/embed/{run}?view=charts&hide={','.join(ALL)}")
    expect(page.locator(".gw-charts-all-hidden")).to_contain_text("Every chart of this run is hidden (Loss, ")
    assert on_screen(page) == []

    # a downloaded page opens with the same charts hidden, with no server behind it
    with httpx.Client(base_url=page.server.url, timeout=60) as client:
        got = client.get(
            f"/api/runs/{run}/export", params={"view": "charts", "hide": "grad,update,lr,memory"}
        )
        assert got.status_code == 200, got.text
    out = tmp_path / "loss-only.html"
    out.write_text(got.text)
    page.goto(out.resolve().as_uri())
    wait_chart(page, "loss", snapshot=VIEWER)
    assert on_screen(page) == ["loss", "metric:val_acc"]


ODD_NAMES = """
import torch
import gradwalk

w = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(3):
    loss = ((w - 1) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    gradwalk.log("acc (%)", 50.0 + step, step=step)
    gradwalk.log("top-1, top-5", 0.5, step=step)
"""


def test_a_metric_named_with_any_characters_can_be_hidden(page: Any) -> None:
    run = stored_run(page.server, ODD_NAMES)
    page.goto(f"{page.server.url}/?run={run}&view=charts")
    wait_chart(page, "metric:acc (%)")
    wait_chart(page, "metric:top-1, top-5")

    page.get_by_role("button", name="Hide the acc (%) chart").click()
    page.get_by_role("button", name="Hide the top-1, top-5 chart").click()
    expect(page.locator('[data-chart="metric:acc (%)"]')).to_have_count(0)
    expect(page.locator('[data-chart="metric:top-1, top-5"]')).to_have_count(0)
    # the link writes a name's % and , as %25 and %2C, so its commas still separate the ids
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('hide') === 'metric:acc (%25),metric:top-1%2C top-5'"
    )
    page.reload()
    wait_chart(page, "loss")
    expect(page.locator('[data-chart="metric:acc (%)"]')).to_have_count(0)
    expect(page.locator('[data-chart="metric:top-1, top-5"]')).to_have_count(0)
    snap = page.evaluate(SNAPSHOT)
    assert snap["metric:acc (%)"]["hidden"] is True and snap["metric:top-1, top-5"]["hidden"] is True
