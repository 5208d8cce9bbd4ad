"""Charts and classroom hunt, in a real Chromium against a real server: the plot areas of the
chart cards line up (every y axis as wide as the widest one needs), whatever is hidden, shown,
resized or streamed in; the Classroom dialog offers to resume only the rooms the server still
has, and says plainly which ended; the run compared with is described with whole numbers."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx
import pytest

from .conftest import expect, open_app, shot, stored_run
from .test_charts import EXAMPLES, open_charts, wait_chart
from .test_compare import run_then_compare
from .test_polish_charts import SCHEDULED

pytestmark = pytest.mark.browser

# Each drawn chart card's plot area (uPlot's .u-over): its left edge on the page, from its
# card's left edge, its width, and the page x of step 20 (the x axis's value) in it.
PLOT_BOXES = """() => Object.fromEntries([...document.querySelectorAll('.gw-chart[data-chart]')]
    .filter((card) => card.querySelector('.u-over'))
    .map((card) => {
        const id = card.dataset.chart;
        const box = card.querySelector('.u-over').getBoundingClientRect();
        const u = window.gradwalk.charts.plotOf(id);
        return [id, { left: box.left, inCard: box.left - card.getBoundingClientRect().left,
                      width: box.width, step20: box.left + u.valToPos(20, 'x'),
                      axis: u.axes[1]._size }];
    }))"""

# Whether every drawn card's plot starts the same distance into its card (within 1 px).
ALIGNED = f"""() => {{
    const boxes = Object.values(({PLOT_BOXES})());
    const lefts = boxes.map((b) => b.inCard);
    return boxes.length >= 2 && Math.max(...lefts) - Math.min(...lefts) <= 1;
}}"""


def plot_boxes(page: Any) -> dict[str, dict[str, float]]:
    """PLOT_BOXES, once the cards' plots line up (or as they are after 15 s, for the assert)."""
    with contextlib.suppress(Exception):  # a timeout: the caller's assert says how they differ
        page.wait_for_function(ALIGNED, timeout=15_000)
    boxes: dict[str, dict[str, float]] = page.evaluate(PLOT_BOXES)
    return boxes


def assert_lined_up(boxes: dict[str, dict[str, float]]) -> None:
    """Every plot starts equally far into its card; cards in one column start (and put
    step 20) at the same page x."""
    lefts = {id: b["inCard"] for id, b in boxes.items()}
    assert max(lefts.values()) - min(lefts.values()) <= 1, lefts
    columns: dict[int, list[str]] = {}
    for id, b in boxes.items():
        columns.setdefault(round(b["left"] - b["inCard"]), []).append(id)
    for ids in columns.values():
        xs = {id: boxes[id]["left"] for id in ids}
        assert max(xs.values()) - min(xs.values()) <= 1, xs
        steps = {id: boxes[id]["step20"] for id in ids if id != "memory"}  # memory's x is time
        assert max(steps.values(), default=0) - min(steps.values(), default=0) <= 1, steps


@pytest.fixture(scope="module")
def scheduled(server: Any) -> str:
    return stored_run(server, SCHEDULED)


def test_the_plots_of_stacked_charts_line_up_when_one_axis_needs_wider_labels(
    page: Any, scheduled: str
) -> None:
    # the learning rate's labels (4.9999e-4) need a wider axis than the loss's (1.14): its
    # plot started 8 px right of the gradient norm's above it, step 20 8 px apart
    open_charts(page, scheduled, "lr", 40)
    boxes = plot_boxes(page)
    shot(page, "charts-aligned-y-axes")
    assert {"loss", "grad", "update", "lr", "memory"} <= boxes.keys(), boxes
    assert_lined_up(boxes)
    wide = boxes["lr"]["axis"]

    # hiding the chart with the widest labels gives the room back to every other plot
    page.click("[data-chart=lr] .gw-chart-hide")
    expect(page.locator("[data-chart=lr]")).to_have_count(0)
    boxes = plot_boxes(page)
    assert "lr" not in boxes and len(boxes) >= 4, boxes
    assert_lined_up(boxes)
    assert max(b["axis"] for b in boxes.values()) < wide, boxes

    # showing it again lines them up at its width again
    page.click(".gw-charts-unhide")
    wait_chart(page, "lr", 40)
    boxes = plot_boxes(page)
    assert_lined_up(boxes)
    assert boxes["loss"]["axis"] == wide, boxes

    # and so does a narrower window (the cards reflow and their plots are resized)
    page.set_viewport_size({"width": 1024, "height": 700})
    page.wait_for_function(
        "(w) => document.querySelector('[data-chart=loss] .u-over').getBoundingClientRect().width !== w",
        arg=boxes["loss"]["width"],
    )
    assert_lined_up(plot_boxes(page))


def test_charts_streamed_live_line_up_once_the_labels_grow(page: Any) -> None:
    # run live: the learning-rate chart starts with one step (5e-4) and its labels grow to
    # 4.9999e-4 as the schedule moves it, after the other charts were drawn
    page.goto(f"{page.server.url}/?view=charts")
    page.wait_for_selector("[data-gw=examples] option[value=cubic]", state="attached")
    live = "import time\n" + SCHEDULED + "    time.sleep(0.02)\n"  # streams for about a second
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", live)
    page.click("[data-gw=run]")
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "ok", timeout=90_000)
    wait_chart(page, "lr", 40)
    assert_lined_up(plot_boxes(page))


# --- the Classroom dialog's rooms to resume ---------------------------------------------------


def open_room(server: Any) -> tuple[str, str]:
    """Open a room on the server as a presenter would; return its code and presenter key."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        room = client.post("/api/rooms", json={}).raise_for_status().json()
    return str(room["code"]), str(room["presenter_key"])


def end_room(server: Any, code: str, key: str) -> None:
    """End room `code` on the server (its presenter, from another tab or a script)."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        client.delete(f"/api/rooms/{code}", headers={"X-Presenter-Key": key}).raise_for_status()


def remember_rooms(page: Any, rooms: list[tuple[str, str]]) -> None:
    """Make this browser remember having opened `rooms` (as starting them from its app does)."""
    page.evaluate(
        "(rooms) => localStorage.setItem('gradwalk-rooms', JSON.stringify(rooms.map(([code, key]) => ({ code, key, at: Date.now() }))))",
        rooms,
    )


def remembered(page: Any) -> list[str]:
    codes: list[str] = page.evaluate(
        "() => JSON.parse(localStorage.getItem('gradwalk-rooms') ?? '[]').map((r) => r.code)"
    )
    return codes


def spaced(code: str) -> str:
    return f"{code[:3]} {code[3:]}"


def only_404s(page: Any, request: pytest.FixtureRequest) -> None:
    """Allow Chromium's log line for each 404 asking after an ended room, and nothing else."""
    request.node.allow_console_errors = True
    others = [p for p in page.problems if "status of 404" not in p]
    assert not others, others


def test_the_classroom_dialog_does_not_offer_to_resume_an_ended_room(
    page: Any, request: pytest.FixtureRequest
) -> None:
    # a room that ended while this browser remembered its key was offered as "Resume
    # presenting ..."; its button led to the join page's "No room ...: it may have ended"
    ended, alive = open_room(page.server), open_room(page.server)
    open_app(page)
    remember_rooms(page, [ended, alive])
    end_room(page.server, *ended)

    page.click("[data-gw=classroom]")
    note = page.locator("[data-gw=room-ended-note]")
    expect(note).to_have_text(f"Room {spaced(ended[0])} has ended; start a new room to present again.")
    resume = page.locator(".gw-room-resume button")
    expect(resume).to_have_count(1)
    expect(resume).to_have_text(f"Resume presenting {spaced(alive[0])}")
    assert remembered(page) == [alive[0]]  # the ended room's key is forgotten
    shot(page, "classroom-ended-room-not-offered")

    # the next time the dialog opens, the ended room is neither offered nor mentioned
    page.click(".gw-classroom-dialog button[aria-label=Close]")
    page.click("[data-gw=classroom]")
    expect(resume).to_have_count(1)
    expect(note).to_have_count(0)
    only_404s(page, request)


def test_resuming_a_room_that_ended_since_the_dialog_opened_says_so_and_stays(
    page: Any, request: pytest.FixtureRequest
) -> None:
    room = open_room(page.server)
    open_app(page)
    remember_rooms(page, [room])
    page.click("[data-gw=classroom]")
    resume = page.locator(".gw-room-resume button")
    expect(resume).to_have_text(f"Resume presenting {spaced(room[0])}")

    end_room(page.server, *room)  # it ends (or expires) while the dialog is open
    resume.click()
    expect(page.locator("[data-gw=room-ended-note]")).to_have_text(
        f"Room {spaced(room[0])} has ended; start a new room to present again."
    )
    expect(resume).to_have_count(0)
    assert "/room/" not in page.url  # still in the app, not on the join page's 404
    expect(page.locator(".gw-classroom-dialog")).not_to_contain_text("No room")
    assert remembered(page) == []
    only_404s(page, request)


# --- what the dashed lines are ----------------------------------------------------------------


def test_the_compared_runs_change_keeps_a_learning_rates_exponent(page: Any) -> None:
    # the textbook loop at lr=3e-3, then at lr=1e-3: the toolbar said "line 23: lr=3e → lr=1e",
    # the exponent's "-3" cut off as if it were not part of the number
    source = (EXAMPLES / "clean_training.py").read_text()
    assert "lr=3e-3" in source
    run_then_compare(page, source, source.replace("lr=3e-3", "lr=1e-3"))
    line = source[: source.index("lr=3e-3")].count("\n") + 1
    expect(page.locator(".gw-charts-compare-what")).to_have_text(f"dashed: line {line}: lr=3e-3 → lr=1e-3")
