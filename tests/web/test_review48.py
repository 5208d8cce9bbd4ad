"""A review of the app as its users see it: a learner stepping a training loop on a laptop or
a phone, a teacher on a projector in presenter type, a course author's embed and download.

Each test is one problem found in screenshots, checked the way a user meets it: charts of a
3-step loop ticked at step 1.2, 1.4 …; seconds on the memory axis running together in
presenter type; the step slider squeezed to a 48 px stub beside a loop's position; a lesson's
long name running out of its tile; a downloaded page on a phone cutting the walk's list off
at the screen's bottom; an embed's bar wrapping onto a second row at 760 to 960 px.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import expect, open_app, shot, stored_run, wait_viewer
from .tracegen import run_lasting

pytestmark = pytest.mark.browser

# A small MLP trained for 3 steps: three backward calls, so the stepper's position reads
# "step 6 of 33 · backward 1: 6 of 11", and the charts have steps 1, 2 and 3.
LOOP = """import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(32, 4)
y = X[:, :1] * 2 - X[:, 1:2]
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(X), y)
    loss.backward()
    opt.step()
print(loss.item())
"""


@pytest.fixture(scope="module")
def loop_run(server: Any) -> str:
    return stored_run(server, LOOP)


@pytest.fixture(scope="module")
def titled_run(server: Any) -> str:
    """The loop with a first comment, which embeds show as the run's title."""
    return stored_run(server, "# Fitting a tiny network with SGD and momentum\n" + LOOP)


# The x axis of chart `id` as drawn: each tick's value, label, and the left and right ends
# of its label (centred on the tick) in CSS px, measured in the axis's own font.
X_TICKS = """(id) => {
    const u = window.gradwalk.charts.plotOf(id);
    const axis = u.axes[0];
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = axis.font[0];
    return axis._splits.map((v, i) => {
        const label = axis._values[i];
        const x = u.valToPos(v, 'x');
        const w = ctx.measureText(String(label)).width / (axis.font[1] / parseFloat(ctx.font));
        return { v, label, left: x - w / 2, right: x + w / 2 };
    }).filter((t) => t.label !== null && t.label !== '');
}"""


def wait_charts(page: Any, ids: list[str]) -> None:
    page.wait_for_function(
        "(ids) => ids.every((id) => { const u = window.gradwalk.charts.plotOf(id); return u && u.axes[0]._splits; })",
        arg=ids,
    )


def test_a_short_loops_charts_tick_whole_steps(page: Any, loop_run: str) -> None:
    # Three optimizer steps: the step axes read 1, 1.2, 1.4 … 3 at 1920 px in presenter type
    # (1, 1.5, 2, 2.5, 3 at 1280), steps no run has. They now tick whole steps only.
    page.set_viewport_size({"width": 1920, "height": 1080})
    open_app(page, presenter=True)
    page.goto(f"{page.server.url}/?run={loop_run}&view=charts")
    steps = ["loss", "grad", "update", "lr"]
    wait_charts(page, steps)
    for chart in steps:
        ticks = page.evaluate(X_TICKS, chart)
        values = [t["v"] for t in ticks]
        assert values and all(float(v).is_integer() for v in values), (chart, ticks)
        assert {1, 3} <= set(values), (chart, ticks)
    shot(page, "review48-01-whole-steps")


def test_the_memory_axis_seconds_do_not_run_together_in_presenter_type(page: Any, loop_run: str) -> None:
    # A run of 0.147 s, in presenter type at 1920 x 1080: the graph memory's time axis
    # ticked every 0.025 s, 50 px apart, and its labels ran together ("0.025 s0.05 s0.075 s").
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        trace = client.get(f"/api/runs/{loop_run}/trace").raise_for_status().json()
    page.set_viewport_size({"width": 1920, "height": 1080})
    open_app(page, presenter=True)
    page.evaluate(
        "(text) => { window.gradwalk.loadTrace(JSON.parse(text)); }", json.dumps(run_lasting(trace, 0.147))
    )
    page.click("#gw-tab-charts")
    wait_charts(page, ["memory"])
    ticks = page.evaluate(X_TICKS, "memory")
    assert len(ticks) >= 3, ticks
    apart = [(a["label"], b["label"], round(b["left"] - a["right"], 1)) for a, b in itertools.pairwise(ticks)]
    assert all(gap >= 4 for _, _, gap in apart), apart
    shot(page, "review48-02-memory-seconds-presenter")


SLIDER = """() => {
    const pane = document.querySelector('.gw-pane-side').getBoundingClientRect();
    const bar = document.querySelector('.gw-stepper .gw-scrubber');
    const slider = bar.querySelector('.gw-slider').getBoundingClientRect();
    const speed = bar.querySelector('select').getBoundingClientRect();
    return { slider: Math.round(slider.width), fits: bar.scrollWidth <= bar.clientWidth && speed.right <= pane.right };
}"""


@pytest.mark.parametrize(
    ("width", "height", "presenter"),
    [(1280, 800, False), (390, 844, False), (1024, 768, True), (1920, 1080, True)],
)
def test_the_step_slider_keeps_a_width_worth_dragging_beside_a_loops_position(
    page: Any, loop_run: str, width: int, height: int, presenter: bool
) -> None:
    # Three backward calls: "step 6 of 33 · backward 1: 6 of 11" took the row, and the slider
    # was a 48 px stub that read as a toggle switch (a step per pixel and a half). It keeps
    # 96 px now (more in presenter type) and the text wraps.
    page.set_viewport_size({"width": width, "height": height})
    open_app(page, presenter=presenter)
    page.goto(f"{page.server.url}/?run={loop_run}&view=stepper&step=5")
    position = page.locator(".gw-stepper .gw-position")
    expect(position).to_have_text("step 6 of 33 · backward 1: 6 of 11")
    got = page.evaluate(SLIDER)
    assert got["slider"] >= 90 and got["fits"], got
    if width == 390:
        page.locator(".gw-stepper .gw-scrubber").scroll_into_view_if_needed()
    shot(page, f"review48-03-slider-{width}")


def test_a_lessons_long_name_stays_inside_its_tile_on_a_projector(page: Any) -> None:
    # Presenter type at 1024 x 768, three tiles a row: "Your own backward:
    # torch.autograd.Function" ran past its tile's right edge, and its summary with it.
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, presenter=True)
    page.click("[data-gw=lessons]")
    tiles = page.locator(".gw-lesson-tile")
    expect(tiles.first).to_be_visible()
    out = page.evaluate(
        """() => [...document.querySelectorAll('.gw-lesson-tile')].flatMap((tile) => {
            const edge = tile.getBoundingClientRect().right;
            return [...tile.querySelectorAll('.gw-lesson-tile-title, .gw-lesson-tile-summary')]
                .filter((el) => el.getBoundingClientRect().right > edge + 0.5 || el.scrollWidth > el.clientWidth + 1)
                .map((el) => el.textContent);
        })"""
    )
    assert out == [], out
    page.locator(".gw-lesson-tile", has_text="torch.autograd.Function").scroll_into_view_if_needed()
    shot(page, "review48-04-lesson-tiles-presenter-1024")


def test_a_downloaded_page_on_a_phone_keeps_the_walk_on_screen(
    page: Any, loop_run: str, tmp_path: Path
) -> None:
    # A student opens the downloaded page on a phone (390 x 844) at a step: the step card
    # took 62% of the pane, the walk's list ran 57 px past the bottom of a page that does
    # not scroll, one cut row of it showing. The card now gives way and scrolls.
    with httpx.Client(base_url=page.server.url, timeout=60) as client:
        html = client.get(
            f"/api/runs/{loop_run}/export", params={"view": "stepper", "step": 3}
        ).raise_for_status()
    out = tmp_path / "loop.html"
    out.write_bytes(html.content)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(out.resolve().as_uri())
    wait_viewer(page)
    expect(page.locator(".gw-stepper .gw-position")).to_contain_text("step 4 of 33")
    got = page.evaluate(
        """() => {
            const box = (s) => document.querySelector(s).getBoundingClientRect();
            const body = box('.gw-step-body'), walk = box('.gw-walk-scroll');
            return { page: document.documentElement.scrollHeight, screen: innerHeight,
                     walkTop: walk.top, walkBottom: walk.bottom, bodyBottom: body.bottom, walkHeight: walk.height };
        }"""
    )
    assert got["page"] <= got["screen"], got
    assert got["walkBottom"] <= got["screen"] + 0.5 and got["walkTop"] >= got["bodyBottom"] - 0.5, got
    assert got["walkHeight"] >= 70, got
    expect(page.locator(".gw-walk-item.current")).to_be_in_viewport()
    shot(page, "review48-05-download-phone-walk")


def test_an_embeds_bar_keeps_one_row_in_a_course_pages_column(
    page: Any, loop_run: str, titled_run: str
) -> None:
    # An embed 760 to 960 px wide (a course page's column): with the run's title the tabs
    # went to a second row, untitled the theme button alone did; 31 to 37 px of a 560 px
    # frame gone from the graph. The title now gives way (an ellipsis, whole in its tooltip).
    rows = []
    for run in (titled_run, loop_run):
        page.set_viewport_size({"width": 760, "height": 560})
        page.goto(f"{page.server.url}/embed/{run}?view=stepper&step=5")
        wait_viewer(page)
        for width in range(760, 981, 20):
            page.set_viewport_size({"width": width, "height": 560})
            got = page.evaluate(
                """() => {
                    const bar = document.querySelector('.gw-viewer-bar');
                    const tabs = bar.querySelector('.gw-viewer-tabs');
                    const theme = bar.querySelector('.gw-viewer-theme').getBoundingClientRect();
                    const tops = [...bar.children].filter((k) => k.getBoundingClientRect().width > 1)
                        .map((k) => Math.round(k.getBoundingClientRect().top));
                    return { rows: new Set(tops.map((t) => Math.round(t / 20))).size, height: bar.getBoundingClientRect().height,
                             tabsWhole: tabs.scrollWidth <= tabs.clientWidth + 1, themeIn: theme.right <= innerWidth };
                }"""
            )
            if got["height"] > 45 or not got["tabsWhole"] or not got["themeIn"]:
                rows.append((run == titled_run, width, got))
    assert rows == [], rows
    page.set_viewport_size({"width": 760, "height": 560})
    page.goto(f"{page.server.url}/embed/{titled_run}?view=stepper&step=5")
    wait_viewer(page)
    title = page.locator(".gw-viewer-title")
    expect(title).to_have_attribute("title", "Fitting a tiny network with SGD and momentum")
    shot(page, "review48-06-embed-bar-760")


def test_a_run_that_raised_before_backward_does_not_say_it_never_called_it(page: Any) -> None:
    # c = a @ b raises (3x4 and 5x2) on the line above c.sum().backward(): the Backward tab
    # said "This run never called backward()", under code that plainly calls it. It now
    # says how the run ended; a run that finished without backward() still says so, also
    # when the tab was open as it ran (it kept "appears here once the code calls backward()").
    open_app(page)
    page.evaluate(
        "(src) => { window.gradwalk.editor.source = src; }",
        "import torch\na = torch.randn(3, 4, requires_grad=True)\nb = torch.randn(5, 2)\nc = a @ b\nc.sum().backward()\n",
    )
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=error]", timeout=60_000)
    page.click("#gw-tab-stepper")
    card = page.locator(".gw-stepper .gw-step-card")
    expect(card).to_have_text(
        "No backward walk: the run stopped on RuntimeError at line 4. The output panel says more."
    )
    shot(page, "review48-07-raised-before-backward")
    page.evaluate(
        "(src) => { window.gradwalk.editor.source = src; }",
        "import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\n",
    )
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(card).to_have_text("This run never called backward().")


def test_another_tab_opens_during_the_tapes_replay(page: Any, loop_run: str) -> None:
    # The teacher presses Replay on the Tape, then clicks Charts: each next op (every 450 ms)
    # set the view back to the tape, so the click did nothing, and the Tape stayed open after
    # the replay ended. The replay now stops there and the graph shows every op again.
    page.goto(f"{page.server.url}/?run={loop_run}&view=tape")
    position = page.locator(".gw-tape .gw-position")
    expect(position).to_have_text("all 17 ops")
    page.click(".gw-tape .gw-scrubber button")
    expect(position).to_contain_text("op ")
    page.click("#gw-tab-charts")
    page.wait_for_timeout(1_500)  # three more of the replay's ticks
    expect(page.locator("#gw-tab-charts")).to_have_attribute("aria-selected", "true")
    assert page.evaluate("() => [window.gradwalk.store.state.view, window.gradwalk.store.state.op]") == [
        "charts",
        None,
    ]
    page.click("#gw-tab-tape")
    expect(position).to_have_text("all 17 ops")
    expect(page.locator(".gw-tape .gw-scrubber button")).to_have_text("Replay")
