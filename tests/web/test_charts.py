"""The Charts view in a real Chromium against a real server: training runs drawn with uPlot."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from .conftest import ROOT, expect, load_trace, open_app, run_example, shot, stored_run

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"
SNAPSHOT = "() => window.gradwalk.charts.snapshot()"


def example(name: str) -> str:
    return (EXAMPLES / f"{name}.py").read_text()


def trace(server: Any, run_id: str) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        data: dict[str, Any] = client.get(f"/api/runs/{run_id}/trace").raise_for_status().json()
    return data


def open_charts(page: Any, run_id: str, chart: str, rows: int | None = None) -> dict[str, Any]:
    """Open a stored run on the Charts view and wait until `chart` is drawn (with `rows` rows)."""
    page.goto(f"{page.server.url}/?run={run_id}&view=charts")
    return wait_chart(page, chart, rows)


def wait_chart(page: Any, chart: str, rows: int | None = None, snapshot: str = SNAPSHOT) -> dict[str, Any]:
    page.wait_for_function(
        f"""([id, rows]) => {{
            const s = ({snapshot})();
            const c = s && s[id];
            return c && c.drawn > 0 && (rows === null || c.drawn === rows);
        }}""",
        arg=[chart, rows],
    )
    snap: dict[str, Any] = page.evaluate(snapshot)
    return snap


def plot_point(
    page: Any, chart: str, index: int, root: str = "window.gradwalk.charts"
) -> tuple[float, float]:
    """The page coordinates of row `index` of the first series of `chart` (kept inside the plot)."""
    xy: list[float] = page.evaluate(
        f"""([id, i]) => {{
            const el = document.querySelector(`[data-chart="${{id}}"] .u-over`);
            const u = {root}.plotOf(id);
            const box = el.getBoundingClientRect();
            const y = Math.min(Math.max(u.valToPos(u.data[1][i], 'y'), 4), box.height - 4);
            return [box.left + u.valToPos(u.data[0][i], 'x'), box.top + y];
        }}""",
        [chart, index],
    )
    return xy[0], xy[1]


def hovered_step(page: Any, chart: str, root: str = "window.gradwalk.charts") -> int:
    page.wait_for_function(f"() => {root}.plotOf('{chart}')?.cursor.idx != null")
    step: int = page.evaluate(
        f"() => {{ const u = {root}.plotOf('{chart}'); return u.data[0][u.cursor.idx]; }}"
    )
    return step


@pytest.fixture(scope="module")
def runs(server: Any) -> dict[str, str]:
    """Stored runs shared by the tests below (each recorded once)."""
    total = example("pitfall_loss_tensor_total")
    twin = total.replace("    total += loss ", "    total += loss.item() ")
    assert twin != total
    return {
        "rent": stored_run(server, example("rent_regression")),
        "clean": stored_run(server, example("clean_training")),
        "total": stored_run(server, total),
        "item": stored_run(server, twin),
    }


def test_rent_regression_run_live_draws_the_loss_of_400_steps(page: Any) -> None:
    open_app(page)
    page.click("#gw-tab-charts")
    expect(page.locator(".gw-charts-empty")).to_be_visible()
    run_example(page, "rent_regression")
    # the header's list shows as much of the title as fits; hovering it reads the whole
    title = page.get_attribute("[data-gw=examples]", "title") or ""
    assert title.startswith("Training a line: linear regression: "), title
    snap = wait_chart(page, "loss", 400)
    loss = snap["loss"]
    assert loss["x"] == list(range(1, 401))
    assert [s["label"] for s in loss["series"]] == ["opt (SGD)"]
    values = loss["series"][0]["values"]
    assert len(values) == 400 and None not in values
    assert values[0] > 50 and values[-1] < 1e-3, (values[0], values[-1])
    assert all(b <= a * 1.0001 for a, b in itertools.pairwise(values[5:])), "the loss should fall"
    for chart in ("grad", "update", "lr", "memory"):
        assert snap[chart]["drawn"] > 0, chart
    assert snap["lr"]["series"][0]["values"][0] == pytest.approx(0.05)
    # The canvas really has the curve: a card per chart, a uPlot canvas in each.
    expect(page.locator("[data-chart=loss] canvas")).to_have_count(1)
    expect(page.locator("#gw-tab-charts")).to_have_attribute("data-count", "400")
    expect(page).to_have_url(re.compile(r"[?&]view=charts"))  # (written 120 ms after a change)
    expect(page.locator(".gw-pane-graph")).to_be_hidden()
    shot(page, "charts-01-rent-regression")


def test_hover_reads_a_point_and_click_opens_a_detailed_step(page: Any, runs: dict[str, str]) -> None:
    open_charts(page, runs["rent"], "loss", 400)
    readout = page.locator("[data-chart=loss] .gw-chart-readout")
    expect(readout).to_contain_text("last: step 400")

    # 400 steps on ~370 px: read which step the cursor landed on, then check it is shown.
    x, y = plot_point(page, "loss", 199)
    page.mouse.move(x, y)
    step = hovered_step(page, "loss")
    assert 195 <= step <= 205
    expect(readout).to_contain_text(f"step {step} · ")
    expect(readout).to_contain_text("metrics only")
    # The cursors of all step charts move together.
    expect(page.locator("[data-chart=grad] .gw-chart-readout")).to_contain_text(f"step {step} · ")
    shot(page, "charts-02-hover")
    page.mouse.click(x, y)
    expect(page.locator(".gw-charts-note")).to_contain_text(f"Step {step} of opt (SGD) carries metrics only")
    expect(page.locator(".gw-charts-note")).to_contain_text("steps 1–3")
    expect(page.locator(".gw-charts-note button")).to_have_text(f"Record step {step} in full")

    x, y = plot_point(page, "loss", 1)
    page.mouse.move(x, y)
    step = hovered_step(page, "loss")
    assert step in (1, 2, 3)
    expect(readout).to_contain_text("recorded in full")
    page.mouse.click(x, y)
    expect(page.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")
    expect(page.locator(".gw-pane-graph")).to_be_visible()
    # Step k's gradients came from the k-th backward() call of the run.
    state = page.evaluate(
        "() => { const a = window.gradwalk; const e = a.model.timeline[a.store.state.step]; return [e.backward, a.store.state.view]; }"
    )
    assert state == [step - 1, "stepper"]
    page.wait_for_function("() => !window.gradwalk.graph.busy && window.gradwalk.graph.core.width() > 0")
    shot(page, "charts-03-opened-step-2")


def test_a_charts_steps_are_read_and_opened_with_the_keyboard(page: Any, runs: dict[str, str]) -> None:
    # Points could only be hovered and clicked: a keyboard user could not read a step or
    # reach "Record step N in full". The plot is a slider over its steps.
    open_charts(page, runs["rent"], "loss", 400)
    slider = page.locator("[data-chart=loss] [role=slider]")
    readout = page.locator("[data-chart=loss] .gw-chart-readout")
    slider.focus()
    page.keyboard.press("Home")
    expect(slider).to_have_attribute("aria-valuenow", "1")
    expect(readout).to_contain_text("step 1 · ")
    for _ in range(2):
        page.keyboard.press("ArrowRight")
    expect(slider).to_have_attribute("aria-valuenow", "3")
    expect(slider).to_have_attribute("aria-valuetext", re.compile(r"^step 3 · .*recorded in full"))
    page.keyboard.press("Shift+ArrowRight")
    expect(slider).to_have_attribute("aria-valuenow", "13")
    expect(page.locator("[data-chart=grad] .gw-chart-readout")).to_contain_text(
        "step 13 · "
    )  # cursors move together
    assert page.evaluate("() => window.gradwalk.store.state.view") == "charts"  # the stepper's → did not act
    page.keyboard.press("Enter")
    expect(page.locator(".gw-charts-note button")).to_have_text("Record step 13 in full")
    page.keyboard.press("End")
    expect(slider).to_have_attribute("aria-valuenow", "400")
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    expect(page.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")
    assert (
        page.evaluate("() => window.gradwalk.model.timeline[window.gradwalk.store.state.step].backward") == 0
    )


def test_the_last_step_is_recorded_in_full_on_request_and_opens(page: Any, runs: dict[str, str]) -> None:
    # the first 3 steps are recorded in full; the last one, of a long run, is one click away
    open_charts(page, runs["rent"], "loss", 400)
    first = page.evaluate("() => window.gradwalk.runId")
    x, y = plot_point(page, "loss", 399)
    for nudge in range(4):  # 400 steps on ~370 px: the last one may be a pixel further right
        page.mouse.move(x + nudge, y)
        if hovered_step(page, "loss") == 400:
            break
    assert hovered_step(page, "loss") == 400
    page.mouse.click(x + nudge, y)
    note = page.locator(".gw-charts-note")
    expect(note).to_contain_text("Step 400 of opt (SGD) carries metrics only")
    note.locator("button", has_text="Record step 400 in full").click()
    # the code runs again with step 400 recorded in full, and the app opens its backward walk
    page.wait_for_function(
        "(first) => { const a = window.gradwalk; return a.runId !== first && a.model.isFinished; }", arg=first
    )
    expect(page.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")
    state = page.evaluate(
        """() => {
            const a = window.gradwalk;
            const steps = a.model.events.filter((e) => e.type === 'optimizer_step');
            return [a.model.timeline[a.store.state.step].backward, steps.filter((e) => e.detail).map((e) => e.step)];
        }"""
    )
    assert state == [399, [1, 2, 3, 400]]
    page.wait_for_function("() => !window.gradwalk.graph.busy && window.gradwalk.graph.core.width() > 0")
    shot(page, "charts-14-last-step-recorded-in-full")


def test_y_scales_auto_linear_log_and_dark_theme(page: Any, runs: dict[str, str]) -> None:
    def distr(chart: str) -> int:
        value: int = page.evaluate(f"() => window.gradwalk.charts.plotOf('{chart}').scales.y.distr")
        return value

    snap = open_charts(page, runs["rent"], "loss", 400)
    wait_chart(page, "lr", 400)
    # auto: the loss falls from ~100 to ~1e-6, a spike and a flat line on a linear axis,
    # so it is drawn on a log one and says so; the constant learning rate stays linear
    assert snap["loss"]["log"] is True and snap["lr"]["log"] is False and snap["memory"]["log"] is False
    assert distr("loss") == 3 and distr("lr") == 1
    expect(page.locator("[data-chart=loss] .gw-chart-scale")).to_be_visible()
    expect(page.locator("[data-chart=lr] .gw-chart-scale")).to_be_hidden()
    shot(page, "charts-04-auto-log-loss")

    page.select_option("select[aria-label='Y scale']", "linear")
    # each chart is drawn again on its new scale; until then it has no plot
    page.wait_for_function("() => window.gradwalk.charts.plotOf('loss')?.scales.y.distr === 1")
    expect(page.locator("[data-chart=loss] .gw-chart-scale")).to_be_hidden()

    page.select_option("select[aria-label='Y scale']", "log")
    page.wait_for_function("() => window.gradwalk.charts.plotOf('lr')?.scales.y.distr === 3")
    expect(page.locator("[data-chart=lr] .gw-chart-scale")).to_be_visible()
    page.click("[data-gw=theme]")
    wait_chart(page, "loss", 400)
    shot(page, "charts-04-log-dark")


def test_an_exploding_loss_keeps_its_log_axis_labelled(page: Any, server: Any) -> None:
    # lr=0.5 takes the loss from ~100 to 8e35 in 19 steps, then inf and NaN: past 1e32
    # uPlot's own log ticks found no increment and the axes were drawn without a label
    run_id = stored_run(server, example("pitfall_nan_loss"))
    snap = open_charts(page, run_id, "loss")
    wait_chart(page, "grad")
    snap = page.evaluate(SNAPSHOT)
    for chart in ("loss", "grad", "update"):
        values = [v for v in snap[chart]["series"][0]["values"] if v is not None]
        assert snap[chart]["log"] is True and max(values) > 1e32, (chart, max(values))
        ticks = snap[chart]["yTicks"]
        assert len(ticks) >= 3 and all(re.fullmatch(r"1e\d+|\d+", t) for t in ticks), (chart, ticks)
    # the steps after it are gaps in the line, read out as what they were
    expect(page.locator("[data-chart=loss] .gw-chart-readout")).to_have_text("last: step 400 · NaN")
    shot(page, "charts-13-exploding-loss")


def test_the_charts_fit_a_phone(page: Any, runs: dict[str, str]) -> None:
    # the Charts view kept two columns at every width: on a phone the side pane, and the
    # charts in it, lay off the right of the screen
    page.set_viewport_size({"width": 390, "height": 844})
    open_charts(page, runs["rent"], "loss", 400)
    boxes = page.evaluate(
        """() => ['.gw-pane-code', '.gw-pane-side', '.gw-chart'].map((s) => {
            const r = document.querySelector(s).getBoundingClientRect();
            return [s, r.left, r.right];
        })"""
    )
    assert all(left >= 0 and right <= 390 for _, left, right in boxes), boxes
    assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 390
    # and the four tabs with their counts (Backward 18, Charts 400) fit the pane
    assert page.evaluate(
        "() => { const t = document.querySelector('.gw-pane-side .gw-tabs'); return t.scrollWidth <= t.clientWidth; }"
    )
    page.locator(".gw-pane-side").scroll_into_view_if_needed()
    shot(page, "charts-11-phone")


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_the_tabs_and_the_step_bar_fit_the_side_pane_on_a_laptop(
    page: Any, runs: dict[str, str], presenter: bool
) -> None:
    # from 1180 to 1440 px wide the side pane is 330-400 px: "Charts 400", the stepper's
    # speed select and (in presenter type) its buttons ran off its edge
    open_charts(page, runs["rent"], "loss", 400)
    page.click("#gw-tab-stepper")  # the side pane beside the graph
    if presenter:
        if page.locator("[data-gw=more]").is_visible():  # the header's tools fold under More
            page.click("[data-gw=more]")
        page.click("[data-gw=presenter]")
        assert page.evaluate("() => document.documentElement.dataset.presenter") == "on"
    expect(page.locator("#gw-tab-charts")).to_have_attribute("data-count", "400")
    for width in (1180, 1280, 1366, 1440, 1600, 800):
        page.set_viewport_size({"width": width, "height": 720})
        fits = page.evaluate(
            """() => ['.gw-tabs', '.gw-step-controls', '.gw-step-bar .gw-scrubber'].map((s) => {
                const row = document.querySelector(`.gw-pane-side ${s}`);
                const pane = document.querySelector('.gw-pane-side').getBoundingClientRect();
                const last = row.lastElementChild.getBoundingClientRect();
                return row.scrollWidth <= row.clientWidth && last.right <= pane.right;
            })"""
        )
        assert fits == [True, True, True], (width, presenter)
    shot(page, f"charts-13-tabs-fit-{'presenter' if presenter else 'normal'}")


def test_clean_training_has_per_parameter_norms_for_every_parameter(page: Any, runs: dict[str, str]) -> None:
    events = trace(page.server, runs["clean"])["events"]
    steps = [e for e in events if e["type"] == "optimizer_step"]
    assert len(steps) == 30
    names = [p["name"] for p in steps[0]["params"]]
    assert names and all(sorted(p["name"] for p in s["params"]) == sorted(names) for s in steps)

    snap = open_charts(page, runs["clean"], "grad", 30)
    assert [s["label"] for s in snap["grad"]["series"]] == ["opt (AdamW)"]
    page.check("text=per parameter")
    snap = wait_chart(page, "grad", 30)
    for chart in ("grad", "update"):
        labels = [s["label"] for s in snap[chart]["series"]]
        assert sorted(labels) == sorted(names), (chart, labels)
        for s in snap[chart]["series"]:
            assert len(s["values"]) == 30 and None not in s["values"], s["label"]
    chips = page.locator("[data-chart=grad] .gw-chart-chip")
    expect(chips).to_have_count(len(names))
    # A legend chip hides its series.
    chips.first.click()
    assert page.evaluate("() => window.gradwalk.charts.plotOf('grad').series[1].show") is False
    shot(page, "charts-05-clean-training-per-parameter")


def test_graph_memory_climbs_with_a_tensor_total_and_stays_flat_with_item(
    page: Any, runs: dict[str, str]
) -> None:
    snap = open_charts(page, runs["total"], "memory")
    climbing = [v for v in snap["memory"]["series"][0]["values"] if v is not None]
    assert snap["memory"]["unit"] == "bytes" and snap["memory"]["kind"] == "time"
    assert len(climbing) >= 10
    assert all(b >= a for a, b in itertools.pairwise(climbing)), climbing
    assert climbing[-1] > 10 * climbing[0] > 0, climbing
    expect(page.locator("[data-chart=memory] .gw-chart-readout")).to_contain_text("KiB")
    expect(page.locator("[data-chart=memory]")).to_have_attribute("data-floor", "rising")
    expect(page.locator("[data-chart=memory] .gw-chart-foot")).to_contain_text(
        "memory is kept from one iteration to the next"
    )
    expect(page.locator(".gw-notice-pitfall")).to_contain_text("keeps every iteration's graph alive")
    # the byte axis ticks at whole binary units (64 KiB, 128 KiB), not at 97.7 KiB
    ticks = [t for t in open_charts(page, runs["total"], "memory")["memory"]["yTicks"] if t]
    assert len(ticks) >= 3 and all(re.fullmatch(r"\d+ (B|KiB)", t) for t in ticks), ticks
    shot(page, "charts-06-memory-total-loss")
    # on the log scale at powers of two (1 KiB, 4 KiB), not at 100 B, 1000 B, 9.77 KiB
    page.goto(f"{page.server.url}/?run={runs['total']}&view=charts&yscale=log")
    log_ticks = [t for t in wait_chart(page, "memory")["memory"]["yTicks"] if t]
    powers = r"(1|2|4|8|16|32|64|128|256|512) (B|KiB|MiB)"
    assert len(log_ticks) >= 2 and all(re.fullmatch(powers, t) for t in log_ticks), log_ticks

    snap = open_charts(page, runs["item"], "memory")
    flat = [v for v in snap["memory"]["series"][0]["values"] if v is not None]
    assert len(flat) >= 10
    assert max(flat) <= 2 * max(flat[:3]), flat
    assert max(flat) * 5 < climbing[-1]
    expect(page.locator(".gw-notice-pitfall")).to_have_count(0)
    expect(page.locator("[data-chart=memory]")).to_have_attribute("data-floor", "steady")
    expect(page.locator("[data-chart=memory] .gw-chart-foot")).to_contain_text("floor steady at")
    shot(page, "charts-07-memory-total-item")


def test_a_long_runs_memory_is_drawn_as_peak_and_floor(page: Any, runs: dict[str, str]) -> None:
    # 400 steps each building and freeing a graph were 1,000+ vertical strokes: a solid block
    def plotted() -> tuple[list[float], list[float], list[float]]:
        data: tuple[list[float], list[float], list[float]] = page.evaluate(
            "() => window.gradwalk.charts.plotOf('memory').data"
        )
        return data

    snap = open_charts(page, runs["rent"], "memory")
    memory = snap["memory"]
    raw = [v for v in memory["series"][0]["values"] if v is not None]
    assert memory["sliced"] is True and len(raw) > 400
    xs, peak, floor = plotted()
    assert len(xs) == len(peak) == len(floor) < len(raw)
    assert max(peak) == max(raw) == 96 and min(floor) == 0
    # most slices of the run go up to the graph's 96 B and back to nothing
    assert sum(1 for p, f in zip(peak, floor, strict=True) if p == 96 and f == 0) > len(xs) / 2
    box = page.locator("[data-chart=memory] .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(page.locator("[data-chart=memory] .gw-chart-readout")).to_contain_text(" · floor ")
    expect(page.locator("[data-chart=memory] .gw-chart-readout")).to_contain_text("s · peak ")
    # the legend says which is which, and each can be hidden
    chips = page.locator("[data-chart=memory] .gw-chart-chip")
    expect(chips).to_have_text(["peak", "floor"])
    chips.nth(1).click()
    expect(chips.nth(1)).to_have_attribute("aria-pressed", "false")
    shown = "() => window.gradwalk.charts.plotOf('memory').series.slice(1).map((s) => s.show)"
    assert page.evaluate(shown) == [True, False]
    chips.nth(1).click()
    assert page.evaluate(shown) == [True, True]
    shot(page, "charts-12-memory-peak-and-floor")


def test_a_log_axis_breaks_its_line_where_a_value_cannot_be_drawn(page: Any, runs: dict[str, str]) -> None:
    # A log axis cannot draw 0 B: the line was joined over every freed graph, so the memory
    # of clean_training's 27 metrics-only steps read as a graph held from step to step, and
    # each of those steps (a peak between two 0 B) now is a dot between two breaks.
    snap = open_charts(page, runs["clean"], "memory")
    held = snap["memory"]["series"][0]["values"]
    freed = sum(1 for v in held if v == 0)
    assert freed >= 27 and snap["memory"]["breaks"] == [{"gaps": 0, "dots": 0}], snap["memory"]["breaks"]
    page.goto(f"{page.server.url}/?run={runs['clean']}&view=charts&yscale=log")
    log = wait_chart(page, "memory")["memory"]
    assert log["log"] is True and log["breaks"][0]["gaps"] == freed, (log["breaks"], freed)
    assert log["breaks"][0]["dots"] >= 27, log["breaks"]
    shot(page, "charts-17-log-memory-breaks")
    # a NaN step breaks a step chart's line on either axis
    run_id = stored_run(page.server, example("pitfall_nan_loss"))
    loss = open_charts(page, run_id, "loss", 400)["loss"]
    nan = sum(1 for v in loss["series"][0]["values"] if v is None)
    assert nan > 300 and loss["breaks"][0]["gaps"] == nan, (nan, loss["breaks"])


def test_embed_opens_on_the_charts(page: Any, runs: dict[str, str]) -> None:
    page.set_viewport_size({"width": 960, "height": 640})
    page.goto(f"{page.server.url}/embed/{runs['rent']}?view=charts")
    snap = wait_chart(
        page, "loss", 400, snapshot="() => window.gradwalkViewer && window.gradwalkViewer.charts.snapshot()"
    )
    assert snap["loss"]["series"][0]["values"][-1] < 1e-3
    expect(page.locator(".gw-viewer-graph")).to_be_hidden()
    expect(page.locator(".gw-viewer-tabs [data-view=charts]")).to_have_attribute("aria-selected", "true")
    shot(page, "charts-08-embed")
    # A detailed step opens the backward walk (and the graph) in the embed too.
    x, y = plot_point(page, "loss", 0, root="window.gradwalkViewer.charts")
    page.mouse.click(x, y)
    expect(page.locator(".gw-viewer-tabs [data-view=stepper]")).to_have_attribute("aria-selected", "true")
    expect(page.locator(".gw-viewer-graph")).to_be_visible()


def test_the_charts_choices_travel_in_links_embeds_and_exports(
    page: Any, runs: dict[str, str], tmp_path: Any
) -> None:
    viewer = "() => window.gradwalkViewer && window.gradwalkViewer.charts.snapshot()"

    def per_parameter(snap: dict[str, Any]) -> bool:
        return [s["label"] for s in snap["grad"]["series"]] != ["opt (AdamW)"]

    # a link carries the y scale and the norms: the page opens on them
    page.goto(f"{page.server.url}/?run={runs['clean']}&view=charts&yscale=log&norms=per-parameter")
    snap = wait_chart(page, "grad", 30)
    assert per_parameter(snap) and all(c["log"] for c in snap.values() if c["unit"] == "number")
    expect(page.locator("select[aria-label='Y scale']")).to_have_value("log")
    expect(page.locator("text=per parameter >> input")).to_be_checked()
    # choosing writes them back (the defaults leave the address bar)
    page.select_option("select[aria-label='Y scale']", "linear")
    page.uncheck("text=per parameter")
    page.wait_for_function(
        "() => location.search.includes('yscale=linear') && !location.search.includes('norms')"
    )
    page.check("text=per parameter")
    page.wait_for_function("() => location.search.includes('norms=per-parameter')")
    page.reload()
    snap = wait_chart(page, "grad", 30)
    assert per_parameter(snap) and not any(c["log"] for c in snap.values())
    # the embed code holds them too
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.server.url)
    page.click("[data-gw=copy-embed]")
    expect(page.locator("[data-gw=copy-embed]")).to_have_attribute("data-done", "copied")
    code = page.evaluate("() => navigator.clipboard.readText()")
    assert f"/embed/{runs['clean']}?view=charts&amp;yscale=linear&amp;norms=per-parameter" in code, code

    # an embed reads them from its query
    page.goto(f"{page.server.url}/embed/{runs['rent']}?view=charts&yscale=linear&norms=per-parameter")
    snap = wait_chart(page, "loss", 400, snapshot=viewer)
    assert snap["loss"]["log"] is False  # auto would draw this loss on a log axis
    assert [s["label"] for s in snap["grad"]["series"]] == ["weight", "bias"]
    expect(page.locator("select[aria-label='Y scale']")).to_have_value("linear")
    # its "open in gradwalk" link opens the app on them too
    expect(page.locator(".gw-viewer-open")).to_have_attribute(
        "href", re.compile(r"yscale=linear&norms=per-parameter")
    )

    # and so does a downloaded page, from the export's query
    with httpx.Client(base_url=page.server.url, timeout=60) as client:
        got = client.get(
            f"/api/runs/{runs['rent']}/export",
            params={"view": "charts", "yscale": "log", "norms": "per-parameter"},
        )
        assert got.status_code == 200
        bad = client.get(f"/api/runs/{runs['rent']}/export", params={"yscale": "cubic"})
        assert bad.status_code == 422 and "yscale" in bad.text
    out = tmp_path / "rent.html"
    out.write_text(got.text)
    page.goto(out.resolve().as_uri())
    snap = wait_chart(page, "lr", 400, snapshot=viewer)
    assert snap["lr"]["log"] is True and [s["label"] for s in snap["grad"]["series"]] == ["weight", "bias"]
    # or from `gradwalk export`'s flags
    db = str(page.server.log_path.parent / "gradwalk.sqlite3")
    cli = [sys.executable, "-m", "gradwalk.cli", "export", runs["rent"], "--db", db, "-o", str(out)]
    done = subprocess.run(
        [*cli, "--yscale", "linear", "--per-parameter"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert '"yscale": "linear", "perParam": true' in out.read_text()
    done = subprocess.run([*cli, "--yscale", "cubic"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--yscale: invalid choice: 'cubic'" in done.stderr


def test_a_1000_step_loop_streams_live_into_the_charts(page: Any) -> None:
    # A little sleep per step keeps the run going while the page follows it, even on a fast machine.
    source = (
        "import time\n"
        "import torch\n"
        "torch.manual_seed(0)\n"
        "X = torch.randn(32, 4)\n"
        "y = X @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])\n"
        "model = torch.nn.Linear(4, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.05)\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, step_size=250, gamma=0.5)\n"
        "for step in range(1, 1001):\n"
        "    loss = torch.nn.functional.mse_loss(model(X), y)\n"
        "    opt.zero_grad()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    sched.step()\n"
        "    time.sleep(0.003)\n"
    )
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        run = (
            client.post("/api/runs", json={"source": source, "limits": {"timeout_s": 60}})
            .raise_for_status()
            .json()
        )
    page.goto(f"{page.server.url}/?run={run['id']}&view=charts")
    # Count frames and the longest gap between them while the run streams.
    page.evaluate(
        """() => {
            const w = window; w.__frames = { n: 0, worst: 0, last: performance.now(), on: true, seen: [] };
            const tick = (t) => {
                const f = w.__frames; f.worst = Math.max(f.worst, t - f.last); f.last = t; f.n++;
                const u = w.gradwalk.charts.plotOf('loss');
                const rows = u ? u.data[0].length : 0;
                if (rows && rows !== f.seen[f.seen.length - 1]) f.seen.push(rows);
                if (f.on) requestAnimationFrame(tick);
            };
            requestAnimationFrame(tick);
        }"""
    )
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=120_000)
    snap = wait_chart(page, "loss", 1000)
    frames = page.evaluate("() => { window.__frames.on = false; return window.__frames; }")
    print(
        f"frames while streaming: {frames['n']}, worst gap {frames['worst']:.0f} ms, loss rows drawn: {frames['seen']}"
    )
    # Drawn while it ran: the loss chart grew in several steps before reaching 1,000 rows.
    # (How fast the page stays is measured by bench/bench_web.py, not asserted here.)
    assert len([n for n in frames["seen"] if n < 1000]) >= 2, frames["seen"]
    lr = snap["lr"]["series"][0]["values"]
    assert lr[0] == pytest.approx(0.05) and lr[-1] == pytest.approx(0.05 * 0.5**3)
    shot(page, "charts-09-1000-steps-live")


def test_logged_metrics_get_a_chart_each(page: Any) -> None:
    from engine.run import record

    # Two optimizers (a model and a probe) kept apart, and two logged metrics.
    source = (
        example("rent_regression")
        .replace(
            "for epoch in range(1, 401):",
            "probe = nn.Linear(1, 1)\nopt2 = torch.optim.Adam(probe.parameters(), lr=0.1)\nfor epoch in range(1, 41):",
        )
        .replace(
            "    opt.step()\n",
            "    opt.step()\n"
            "    opt2.zero_grad()\n"
            "    lossfn(probe(X), y).backward()\n"
            "    opt2.step()\n"
            "    if epoch % 10 == 0:\n"
            "        gradwalk.log('val_loss', loss.item() * 1.1, step=epoch)\n"
            "        gradwalk.log('val_acc', 1 - 1 / epoch)\n",
        )
    )
    trace = record("import gradwalk\n" + source).model_dump(mode="json")
    open_app(page, "?view=charts")
    load_trace(page, trace)
    snap = wait_chart(page, "metric:val_acc", 4)
    assert snap["metric:val_loss"]["x"] == [10, 20, 30, 40]
    assert snap["metric:val_acc"]["series"][0]["values"] == pytest.approx([0.9, 0.95, 1 - 1 / 30, 0.975])
    # Logged without a step, a metric sits at the training step it was logged at.
    assert snap["metric:val_acc"]["x"] == [10, 20, 30, 40]
    assert [s["label"] for s in snap["loss"]["series"]] == ["opt (SGD)", "opt2 (Adam)"]
    for s in snap["loss"]["series"]:
        assert len(s["values"]) == 40 and None not in s["values"], s["label"]
    expect(page.locator("[data-chart='metric:val_acc']")).to_be_visible()
    expect(page.locator("[data-chart=loss] .gw-chart-chip")).to_have_count(2)
    # the snippet's own metrics come right after the loss, in the order first logged, and
    # on one screen with it (at the end, val_acc was four charts down, out of view)
    order = page.evaluate("() => [...document.querySelectorAll('[data-chart]')].map((c) => c.dataset.chart)")
    assert order[:3] == ["loss", "metric:val_loss", "metric:val_acc"], order
    expect(page.locator("[data-chart='metric:val_acc']")).to_be_in_viewport()
    shot(page, "charts-10-metrics-two-optimizers")


MANUAL_GD = """import torch
X = torch.linspace(-1, 1, 20)
y = 3 * X + 2
w = torch.zeros(1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for step in range(30):
    loss = ((w * X + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        b -= 0.1 * b.grad
        w.grad.zero_()
        b.grad.zero_()
"""


def test_a_loop_that_steps_by_hand_charts_its_loss_and_opens_each_call(page: Any) -> None:
    # Gradient descent written out (w -= lr * w.grad), the loop courses teach before
    # torch.optim: no optimizer step, so the Charts tab had only the graph's memory.
    from engine.run import record

    trace = record(MANUAL_GD).model_dump(mode="json")
    open_app(page, "?view=charts")
    load_trace(page, trace)
    snap = wait_chart(page, "calls", 30)
    assert snap["calls"]["title"] == "Loss" and snap["calls"]["x"] == list(range(1, 31))
    values = snap["calls"]["series"][0]["values"]
    assert values[-1] < values[0] / 10, values  # the loss the code printed falls
    x, y = plot_point(page, "calls", 9)
    page.mouse.move(x, y)
    call = hovered_step(page, "calls")
    expect(page.locator("[data-chart=calls] .gw-chart-readout")).to_contain_text(
        "click to open this backward() call"
    )
    page.mouse.click(x, y)
    expect(page.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")
    state = page.evaluate(
        "() => { const a = window.gradwalk; const e = a.model.timeline[a.store.state.step]; return [e.backward, a.store.state.view]; }"
    )
    assert state == [call - 1, "stepper"]


def test_the_tutorials_loop_by_hand_runs_in_time_and_opens_any_call_in_full(page: Any) -> None:
    # The PyTorch tutorial's sin(x) fit, 2,000 steps of w -= lr * w.grad: every backward()
    # call recorded in full took 9 s (its custom-Function twin ran past the 10 s limit).
    # The first 10 calls are whole (the dots); every other call brings its loss.
    open_app(page, "?view=charts")
    run_example(page, "fit_by_hand")
    snap = wait_chart(page, "calls", 2000)
    assert snap["calls"]["x"] == list(range(1, 2001))
    whole = page.evaluate("() => window.gradwalk.model.backwards.map((b) => b.index)")
    assert whole == list(range(10))
    expect(page.locator(".gw-run-status")).to_contain_text("2000 backward (10 in full)")
    readout = page.locator("[data-chart=calls] .gw-chart-readout")
    x, y = plot_point(page, "calls", 4)
    page.mouse.move(x, y)
    expect(readout).to_contain_text("● recorded in full: click to open this backward() call")
    x, y = plot_point(page, "calls", 1499)
    page.mouse.move(x, y)
    call = hovered_step(page, "calls")
    assert call > 1000
    expect(readout).to_contain_text("loss only")
    first = page.evaluate("() => window.gradwalk.runId")
    page.mouse.click(x, y)
    note = page.locator(".gw-charts-note")
    expect(note).to_contain_text(f"Call {call} of backward() carries its loss only.")
    expect(note).to_contain_text("recorded for calls 1–10 (the dots)")
    shot(page, "charts-15-loop-by-hand")
    # the code runs again with that call recorded in full, and the app opens its walk
    note.locator("button", has_text=f"Record call {call} in full").click()
    page.wait_for_function(
        "(first) => { const a = window.gradwalk; return a.runId !== first && a.model.isFinished; }", arg=first
    )
    expect(page.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")
    opened = page.evaluate(
        "() => { const a = window.gradwalk; return a.model.timeline[a.store.state.step].backward; }"
    )
    assert opened == call - 1


AFTER_THE_LOOP = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(8, 3), torch.randn(8, 1)
for step in range(100):
    opt.zero_grad()
    loss = (model(X) - Y).pow(2).mean()
    loss.backward()
    opt.step()
x_test = torch.tensor([[1.0, 2.0, 3.0]])
pred = model(x_test)
"""


def test_the_tape_says_where_steps_ran_metrics_only_and_opens_their_charts(
    page: Any, server: Any, runs: dict[str, str]
) -> None:
    # The tape jumped from step 3's ops to the code after the loop (recorded in full again:
    # NOTE [Code after the loop]) with nothing to say that 97 steps ran in between
    run_id = stored_run(server, AFTER_THE_LOOP)
    page.goto(f"{page.server.url}/?run={run_id}&view=tape")
    gap = page.locator(".gw-op-gap:not([hidden])")
    expect(gap).to_have_count(1)
    expect(gap).to_contain_text("97 optimizer steps recorded metrics-only (no ops)")
    # between the last op of step 3 (line 8) and the first after the loop (line 11)
    lines = page.evaluate(
        """() => { const rows = [...document.querySelectorAll('.gw-op-row, .gw-op-gap:not([hidden])')];
        const at = rows.findIndex((r) => r.classList.contains('gw-op-gap'));
        const line = (r) => r.querySelector('.gw-op-line').textContent;
        return [line(rows[at - 1]), line(rows[at + 1])]; }"""
    )
    assert lines == ["L8", "L11"], lines
    gap.scroll_into_view_if_needed()
    expect(page.locator(".gw-run-status")).to_contain_text("100 optimizer steps (3 in full)")
    shot(page, "charts-16-tape-gap")
    gap.locator("button", has_text="Charts").click()
    expect(page.locator("#gw-tab-charts")).to_have_attribute("aria-selected", "true")
    wait_chart(page, "loss", 100)
    # a run that ends in its loop: the gap is the tape's last row
    page.goto(f"{page.server.url}/?run={runs['rent']}&view=tape")
    last = page.locator(".gw-op-list > :last-child")
    expect(last).to_have_class(re.compile("gw-op-gap"))
    expect(last).to_contain_text("397 optimizer steps recorded metrics-only")


def test_a_run_whose_steps_found_no_gradients_says_so_on_its_empty_chart(page: Any) -> None:
    # zero_grad() between backward() and step(): five steps, none with a gradient to plot
    run = stored_run(
        page.server,
        "import torch\nw = torch.zeros(1, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
        "for i in range(5):\n    loss = ((w - 3) ** 2).sum()\n    loss.backward()\n    opt.zero_grad()\n"
        "    opt.step()\n",
    )
    page.goto(f"{page.server.url}/?run={run}&view=charts")
    readout = page.locator("[data-chart=grad] .gw-chart-readout")
    expect(readout).to_have_text("5 steps, none with a value: no parameter had a gradient")
    expect(page.locator("[data-chart=update] .gw-chart-readout")).to_contain_text("last: step 5 · 0")
    expect(page.locator(".gw-notice-pitfall[data-kind=step-without-gradients]")).to_have_count(1)
    shot(page, "charts-no-gradients")
