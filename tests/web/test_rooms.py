"""Classroom live mode in real Chromium: one presenter and two viewers, each in its own browser context.

The tests share one room (module fixture) and run as a lesson does: the presenter opens the
room and runs the cubic example, the viewers follow each step, one wanders off and snaps
back, one reloads and catches up, a viewer's Run is refused until the presenter allows it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import NEXT, expect, open_app, shot, wait_graph

pytestmark = [pytest.mark.browser, pytest.mark.sequence]  # NOTE [Modules that tell one story]

PREV = "button[aria-label='Prev step']"
POSITION = ".gw-stepper .gw-position"
# Chromium logs every refused fetch; the refused viewer run is one on purpose, and so are
# the sockets refused while the server restarts.
EXPECTED_CONSOLE = re.compile(r"status of 403|ERR_CONNECTION_REFUSED")


@dataclass
class Classroom:
    server: Any
    presenter: Any = None
    viewers: list[Any] = field(default_factory=list)
    code: str = ""
    contexts: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def page(self, browser: Any, name: str, width: int = 1440, height: int = 900) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
        self.contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.server = self.server
        page.on(
            "console",
            lambda m: (
                self.problems.append(f"{name} console: {m.text}")
                if m.type == "error" and not EXPECTED_CONSOLE.search(m.text)
                else None
            ),
        )
        page.on("pageerror", lambda e: self.problems.append(f"{name} page error: {e}"))
        return page

    def join(self, browser: Any, width: int = 1280, height: int = 800) -> Any:
        """A viewer who opened the room's link and follows it live (added to ``viewers``)."""
        viewer = self.page(browser, "viewer", width, height)
        viewer.goto(f"{self.server.url}/room/{self.code}")
        wait_live(viewer)
        self.viewers.append(viewer)
        return viewer

    def reach_room(self, page: Any, who: str, url: Any) -> None:
        """Wait until ``page`` lands on the room page ``url``; if it never does, fail with what
        the Classroom dialog said, what the pages logged and the end of the server's log."""
        try:
            page.wait_for_url(url)
        except PlaywrightTimeout:
            error = page.locator(".gw-classroom-dialog .gw-dialog-error")
            said = error.inner_text() if error.is_visible() else "nothing"
            pytest.fail(
                f"{who} never reached the room (still at {page.url}); the Classroom dialog said: {said}\n"
                + "the pages logged:\n"
                + ("\n".join(self.problems) or "nothing")
                + f"\nthe server's log ends:\n{self.server.log()[-4000:]}"
            )

    def start(self, browser: Any) -> None:
        """Open the app as the presenter and start a room from its Classroom dialog."""
        presenter = self.page(browser, "presenter")
        open_app(presenter)
        presenter.click("[data-gw=classroom]")
        expect(presenter.locator("[data-gw=room-here]")).to_be_hidden()  # not in a room yet
        presenter.click("[data-gw=room-start]")
        self.reach_room(presenter, "the presenter", re.compile(r"/room/[A-Z0-9]{6}$"))
        wait_live(presenter)
        self.code = presenter.evaluate("() => window.gradwalkRoom.info.code")
        self.presenter = presenter


def position(page: Any) -> str:
    text: str = page.locator(POSITION).inner_text()
    return text


def wait_same_step(viewer: Any, want: str, timeout: float = 15_000) -> None:
    viewer.wait_for_function(
        "(want) => document.querySelector('.gw-stepper .gw-position')?.textContent === want",
        arg=want,
        timeout=timeout,
    )


def wait_live(page: Any) -> None:
    page.wait_for_selector("[data-gw=room-bar][data-conn=live]")


@pytest.fixture(scope="module")
def room(browser: Any, server: Any) -> Iterator[Classroom]:
    """A presenter who opened a room from the app, and two viewers: one by link, one by code."""
    room = Classroom(server)
    try:
        room.start(browser)

        by_link = room.page(browser, "viewer 1", 1280, 800)
        by_link.goto(f"{server.url}/room/{room.code}")
        by_code = room.page(browser, "viewer 2", 1280, 800)
        open_app(by_code)
        by_code.click("[data-gw=classroom]")
        by_code.fill("[data-gw=room-code-input]", f"{room.code[:3].lower()} {room.code[3:].lower()}")
        by_code.click("[data-gw=room-join]")
        room.reach_room(by_code, "the viewer who typed the code", f"**/room/{room.code}")
        room.viewers = [by_link, by_code]
        for viewer in room.viewers:
            wait_live(viewer)
        yield room
    finally:
        for context in room.contexts:
            context.close()
    assert not room.problems, "the pages logged errors:\n" + "\n".join(room.problems)


def test_presenter_runs_and_steps_and_the_viewers_follow_within_a_second(room: Classroom) -> None:
    p = room.presenter
    assert p.evaluate("() => window.gradwalkRoom.role") == "presenter"
    for viewer in room.viewers:
        assert viewer.evaluate("() => window.gradwalkRoom.role") == "viewer"
    expect(p.locator("[data-gw=room-viewers]")).to_have_text("2 viewers")

    p.select_option("[data-gw=examples]", "cubic")
    p.click("[data-gw=run]")
    p.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    run_id = p.evaluate("() => window.gradwalk.runId")
    for viewer in room.viewers:
        viewer.wait_for_function("(id) => window.gradwalk.runId === id", arg=run_id)
        viewer.wait_for_selector("[data-gw=status][data-state=ok]")
        wait_graph(viewer)

    p.click("#gw-tab-stepper")
    for _ in range(3):  # how fast they follow: bench/bench_rooms.py
        p.click(NEXT)
        want = position(p)
        for viewer in room.viewers:
            wait_same_step(viewer, want)
    assert want == "step 4 of 5"
    for viewer in room.viewers:
        expect(viewer.locator(".gw-step-card")).to_contain_text("x.grad: None → 14.75")
        expect(viewer.locator("[data-gw=room-where]")).to_have_text("Following the presenter")
    wait_graph(room.viewers[0])
    shot(p, "rooms-01-presenter")
    shot(room.viewers[0], "rooms-02-viewer-following")


def test_the_room_survives_a_server_restart(room: Classroom) -> None:
    """The server restarts mid-lesson (same address): every page reconnects to the same room
    on its own, and the class goes on following the presenter."""
    p = room.presenter
    before = position(p)
    room.server.restart(same_port=True)
    for page in (p, *room.viewers):
        page.wait_for_selector("[data-gw=room-bar][data-conn=live]", timeout=30_000)
        assert page.evaluate("() => window.gradwalkRoom.info.code") == room.code
    p.click(NEXT if before != "step 5 of 5" else PREV)
    want = position(p)
    assert want != before
    for viewer in room.viewers:
        wait_same_step(viewer, want, timeout=10_000)
    expect(p.locator("[data-gw=room-viewers]")).to_have_text("2 viewers")
    p.click(PREV if before != "step 5 of 5" else NEXT)  # back where the lesson was
    for viewer in room.viewers:
        wait_same_step(viewer, before, timeout=10_000)


def test_the_presenters_typing_reaches_the_viewers(room: Classroom) -> None:
    p = room.presenter
    p.click(".cm-content")
    p.keyboard.press("Control+End")
    p.keyboard.type("# hello, class\n")
    for viewer in room.viewers:
        viewer.wait_for_function("() => window.gradwalk.editor.source.includes('# hello, class')")
    # Typing is the presenter's: the viewers' step stays where the presenter is.
    assert position(room.viewers[0]) == position(p)


def test_a_viewer_wanders_off_and_snaps_back(room: Classroom) -> None:
    p, (wanderer, follower) = room.presenter, room.viewers
    wanderer.click(PREV)
    bar = wanderer.locator("[data-gw=room-bar]")
    expect(bar).to_have_attribute("data-following", "false")
    expect(wanderer.locator("[data-gw=room-where]")).to_contain_text("Exploring on your own")
    expect(wanderer.locator(POSITION)).to_have_text("step 3 of 5")

    p.click(NEXT)  # step 5: the follower comes along, the wanderer stays
    wait_same_step(follower, "step 5 of 5")
    time.sleep(0.5)
    assert position(wanderer) == "step 3 of 5"
    expect(wanderer.locator("[data-gw=room-where]")).to_contain_text("the presenter is on backward step 5")
    shot(wanderer, "rooms-03-viewer-exploring")

    wanderer.click("[data-gw=room-follow]")
    wait_same_step(wanderer, "step 5 of 5")
    expect(bar).to_have_attribute("data-following", "true")


def test_a_viewer_that_reloads_catches_up_at_once(room: Classroom) -> None:
    p, viewer = room.presenter, room.viewers[1]
    viewer.reload()
    p.click(PREV)
    p.click(PREV)  # the presenter moves on while the viewer's page loads
    want = position(p)
    assert want == "step 3 of 5"
    wait_live(viewer)
    wait_same_step(viewer, want, timeout=10_000)
    expect(viewer.locator(".gw-step-card")).to_contain_text("PowBackward0")
    assert viewer.evaluate("() => window.gradwalkRoom.following") is True


def test_a_viewers_run_is_refused_until_the_presenter_allows_it(room: Classroom) -> None:
    p, viewer, other = room.presenter, room.viewers[0], room.viewers[1]
    presenter_run = p.evaluate("() => window.gradwalk.runId")
    expect(viewer.locator("[data-gw=room-runs]")).to_have_text("Only the presenter runs code")
    # ▶ Run is off, and says why; Ctrl+Enter in the editor says it in the output
    run = viewer.locator("[data-gw=run]")
    expect(run).to_be_disabled()
    expect(run).to_have_attribute("title", re.compile("Only the presenter runs code in this room"))
    viewer.click("[data-gw=editor] .cm-content")
    viewer.keyboard.press("Control+Enter")
    expect(viewer.locator(".gw-notice").last).to_contain_text("tick “Viewers may run code”")
    assert viewer.evaluate("() => window.gradwalk.runId") == presenter_run
    shot(viewer, "rooms-04-viewer-run-refused")

    p.check("[data-gw=room-allow]")
    expect(viewer.locator("[data-gw=room-runs]")).to_have_text("You may run your own code")
    expect(run).to_be_enabled()
    expect(run).to_have_attribute("title", "Run the code (Ctrl+Enter)")
    viewer.click("[data-gw=run]")
    viewer.wait_for_function(
        "(id) => window.gradwalk.runId && window.gradwalk.runId !== id", arg=presenter_run
    )
    viewer.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(viewer.locator("[data-gw=room-bar]")).to_have_attribute("data-following", "false")
    # The viewer's own run is theirs alone.
    assert p.evaluate("() => window.gradwalk.runId") == presenter_run
    assert other.evaluate("() => window.gradwalk.runId") == presenter_run
    p.uncheck("[data-gw=room-allow]")
    expect(viewer.locator("[data-gw=room-runs]")).to_have_text("Only the presenter runs code")
    expect(run).to_be_disabled()


def test_a_lesson_the_presenter_opens_reaches_the_following_viewers(room: Classroom) -> None:
    p, explorer, follower = room.presenter, room.viewers[0], room.viewers[1]
    p.click("[data-gw=lessons]")
    p.click("[data-lesson=accumulate]")
    expect(p.locator("[data-gw=lesson-card]")).to_have_attribute("data-collapsed", "true")  # projector
    expect(p.locator(POSITION)).to_contain_text("step 8 of 12")
    card = follower.locator("[data-gw=lesson-card]")
    expect(card).to_have_attribute("data-lesson", "accumulate")
    expect(card).to_contain_text("backward() does not set .grad, it adds to it")  # the text, in full
    expect(follower.locator(POSITION)).to_contain_text("step 8 of 12")
    expect(follower.locator(".gw-step-card")).to_contain_text("8 + 4 → 12")
    # The viewer exploring their own run stays on it.
    expect(explorer.locator("[data-gw=lesson-card]")).to_be_hidden()
    wait_graph(follower)
    shot(follower, "rooms-05-viewer-following-a-lesson")


def test_the_presenters_y_scale_and_norms_reach_the_following_viewers(room: Classroom) -> None:
    p, explorer, follower = room.presenter, room.viewers[0], room.viewers[1]
    scale = "select[aria-label='Y scale']"
    p.click("[data-gw=lessons]")
    p.click("[data-lesson=own-metrics]")  # a training run: it opens on the charts
    expect(p.locator("#gw-tab-charts")).to_have_attribute("aria-selected", "true")
    expect(p.locator("text=per parameter >> input")).to_be_enabled()
    p.select_option(scale, "log")
    p.check("text=per parameter")
    expect(follower.locator("#gw-tab-charts")).to_have_attribute("aria-selected", "true")
    expect(follower.locator(scale)).to_have_value("log")
    expect(follower.locator("text=per parameter >> input")).to_be_checked()
    # the viewer exploring on their own keeps their own charts
    expect(explorer.locator(scale)).to_have_value("auto")
    p.select_option(scale, "auto")
    p.uncheck("text=per parameter")
    expect(follower.locator(scale)).to_have_value("auto")
    expect(follower.locator("text=per parameter >> input")).not_to_be_checked()
    # the presenter runs it again and compares: the followers see the run before dashed
    first = p.evaluate("() => window.gradwalk.runId")
    p.click("[data-gw=run]")
    p.wait_for_function("(id) => window.gradwalk.runId !== id && window.gradwalk.model.isFinished", arg=first)
    p.check("input[aria-label='Compare with the run before']")
    follower.wait_for_function(
        "(id) => { const c = window.gradwalk.charts.snapshot().loss; return c && c.compared && location.search.includes(`compare=${id}`); }",
        arg=first,
    )
    expect(follower.locator("input[aria-label='Compare with the run before']")).to_be_checked()
    assert explorer.evaluate("() => window.gradwalk.store.state.compare") is None
    p.uncheck("input[aria-label='Compare with the run before']")
    follower.wait_for_function("() => window.gradwalk.store.state.compare === null")
    # a chart the presenter hides goes from the followers' screens too, and comes back
    p.click("[data-chart=lr] .gw-chart-hide")
    expect(follower.locator("[data-chart=lr]")).to_have_count(0)
    expect(follower.locator("[data-chart=loss]")).to_have_count(1)
    assert explorer.evaluate("() => window.gradwalk.store.state.hide") == []
    p.click(".gw-charts-unhide")
    expect(follower.locator("[data-chart=lr]")).to_have_count(1)
    p.click("#gw-tab-stepper")
    expect(follower.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")


def test_the_backward_call_the_presenter_draws_reaches_the_following_viewers(room: Classroom) -> None:
    # a loop recorded in full draws a graph per iteration: the presenter narrows the graph to
    # one call (graph-calls.ts), and the followers' graphs show that call too
    p, explorer, follower = room.presenter, room.viewers[0], room.viewers[1]
    first = p.evaluate("() => window.gradwalk.runId")
    p.select_option("[data-gw=examples]", "fit_by_hand")
    p.click("[data-gw=run]")
    p.wait_for_function("(id) => window.gradwalk.runId !== id && window.gradwalk.model.isFinished", arg=first)
    wait_graph(p)
    # everyone opens on the run's default, its first call (ten copies of one graph)
    follower.wait_for_function(
        "(id) => window.gradwalk.runId !== id && window.gradwalk.model.isFinished", arg=first
    )
    expect(follower.locator(".gw-graph-calls select")).to_have_value("0")
    expect(follower.locator(".gw-graph-info")).to_have_text("13 nodes")
    p.select_option(".gw-graph-calls select", "2")
    follower.wait_for_function("() => window.gradwalk.store.state.graphCall === 2")
    expect(follower.locator(".gw-graph-calls select")).to_have_value("2")
    expect(follower.locator(".gw-graph-info")).to_have_text("13 nodes")
    assert explorer.evaluate("() => window.gradwalk.store.state.graphCall") is None
    p.select_option(".gw-graph-calls select", "all")
    follower.wait_for_function("() => window.gradwalk.store.state.graphCall === 'all'")
    expect(follower.locator(".gw-graph-info")).to_have_text("94 nodes")
    expect(follower.locator(".gw-graph-calls select")).to_have_value("all")


def test_the_presenter_view_is_large_for_projectors_and_survives_a_reload(room: Classroom) -> None:
    p, viewer = room.presenter, room.viewers[1]
    size = "() => parseFloat(getComputedStyle(document.documentElement).fontSize)"
    assert p.evaluate(size) >= 20 > viewer.evaluate(size)
    code_px = p.evaluate(
        "() => parseFloat(getComputedStyle(document.querySelector('[data-gw=room-code]')).fontSize)"
    )
    assert code_px >= 32
    want = position(p)
    p.reload()
    wait_live(p)
    assert p.evaluate("() => window.gradwalkRoom.role") == "presenter"
    p.wait_for_function(
        "(want) => document.querySelector('.gw-stepper .gw-position')?.textContent === want", arg=want
    )
    p.click(NEXT)
    wait_same_step(viewer, position(p))


def test_ending_the_room_leaves_viewers_with_what_they_see(room: Classroom) -> None:
    p = room.presenter
    p.click("#gw-tab-stepper")
    p.click(PREV)
    want = position(p)
    step = p.evaluate("() => window.gradwalk.store.state.step")
    p.once("dialog", lambda d: d.accept())
    p.click("[data-gw=room-end]")
    # the presenter lands back in the app where the class was looking (it went to the tape),
    # every call's graph included where the test before chose it
    p.wait_for_url(re.compile(rf"/\?run=\w+&view=stepper&step={step}(&call=all)?$"))
    expect(p.locator(POSITION)).to_have_text(want)
    for viewer in room.viewers:
        expect(viewer.locator("[data-gw=room-bar]")).to_have_attribute("data-conn", "ended")
        expect(viewer.locator("[data-gw=room-conn]")).to_have_text("room ended")
        expect(viewer.locator("[data-gw=room-ended-why]")).to_contain_text("The presenter ended the room")
        expect(viewer.locator("[data-gw=room-follow]")).to_be_hidden()
        assert viewer.evaluate("() => window.gradwalk.model.timeline.length") > 0
    shot(room.viewers[1], "rooms-06-viewer-room-ended")
