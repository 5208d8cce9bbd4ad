"""Classroom rooms in real Chromium, the moments a live class runs into: a new run while the
presenter is on a backward step, the presenter's page closing and coming back.

One presenter and one viewer, each in its own browser context, in a room of their own
(module fixture); the tests run in order, as a lesson does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import NEXT, expect, open_app, run_example, run_source, shot
from .test_rooms import POSITION, Classroom, position, wait_live, wait_same_step

pytestmark = [pytest.mark.browser, pytest.mark.sequence]  # NOTE [Modules that tell one story]

# backward() twice: the run ends in an error, and the presenter lands on the tape
TWICE = "import torch\nx = torch.ones(3, requires_grad=True)\ny = (x * 2).sum()\ny.backward()\ny.backward()\n"
AWAY = "The presenter is away"
# a run that takes a few seconds: long enough to press Stop while it runs
SLOW = "import time\nimport torch\nx = torch.tensor(1.0, requires_grad=True)\nfor i in range(40):\n    (x * i).backward()\n    time.sleep(0.1)\n"


@pytest.fixture(scope="module")
def room(browser: Any, server: Any) -> Iterator[Classroom]:
    """A presenter who opened a room from the app, and a viewer who opened its link."""
    room = Classroom(server)
    try:
        room.start(browser)
        room.join(browser)
        yield room
    finally:
        for context in room.contexts:
            context.close()
    assert not room.problems, "the pages logged errors:\n" + "\n".join(room.problems)


def test_a_viewer_who_joins_before_the_first_run_is_told_who_runs_the_code(room: Classroom) -> None:
    """Before the presenter's first run a student's empty graph said "Press ▶ Run (or
    Ctrl+Enter) to run the code", a Run the room refuses them."""
    viewer = room.viewers[0]
    empty = viewer.locator(".gw-graph-empty")
    expect(empty).to_have_text("The graph appears here when the presenter runs the code.")
    # the presenter lets students run their own code: the graph says so
    room.presenter.click("[data-gw=room-allow]")
    expect(empty).to_contain_text("or press ▶ Run to run your own")
    room.presenter.click("[data-gw=room-allow]")
    expect(empty).to_have_text("The graph appears here when the presenter runs the code.")


def test_a_new_run_from_a_backward_step_keeps_the_viewers_following(room: Classroom) -> None:
    """The presenter steps the backward walk, then runs a snippet that raises: the new run,
    whose walk is another, opens at its first step. The viewers come along to it, still
    following, not left "exploring on their own" on the old run's step number."""
    p, viewer = room.presenter, room.viewers[0]
    run_example(p, "cubic")
    p.click("#gw-tab-stepper")
    p.click(NEXT)
    p.click(NEXT)
    wait_same_step(viewer, position(p))

    run_source(p, TWICE, status="error")
    run_id = p.evaluate("() => window.gradwalk.runId")
    p.wait_for_function("() => window.gradwalk.store.state.step === 0")
    viewer.wait_for_function("(id) => window.gradwalk.runId === id", arg=run_id)
    viewer.wait_for_selector("[data-gw=status][data-state=error]")
    expect(viewer.locator("[data-gw=room-bar]")).to_have_attribute("data-following", "true")
    expect(viewer.locator("[data-gw=room-where]")).to_have_text("Following the presenter")
    viewer.wait_for_function("() => window.gradwalk.store.state.step === 0")
    expect(viewer.locator(".gw-output")).to_contain_text("Trying to backward through the graph a second time")
    shot(viewer, "rooms-hunt-01-viewer-follows-an-error-run")

    # and they keep following: the presenter's next step reaches them
    p.click("#gw-tab-stepper")
    p.click(NEXT)
    wait_same_step(viewer, position(p))


def test_viewers_are_told_when_the_presenters_page_closes_and_when_it_is_back(room: Classroom) -> None:
    """A closed presenter tab used to leave the class on "● live · Following the presenter"
    while nothing moved any more. Now the bar says the presenter is away; once they resume the
    room (Classroom → Resume presenting) it says they follow again, and steps reach them."""
    p, viewer = room.presenter, room.viewers[0]
    where = viewer.locator("[data-gw=room-where]")
    expect(where).to_have_text("Following the presenter")
    context = p.context
    p.close()
    expect(where).to_contain_text(AWAY)
    expect(viewer.locator("[data-gw=room-bar]")).to_have_attribute("data-presenter", "away")
    assert viewer.evaluate("() => window.gradwalk.model.timeline.length") > 0  # what they saw stays
    shot(viewer, "rooms-hunt-02-viewer-presenter-away")

    back = context.new_page()
    back.server = room.server
    open_app(back)
    back.click("[data-gw=classroom]")
    back.click(f"text=Resume presenting {room.code[:3]} {room.code[3:]}")
    back.wait_for_url(f"**/room/{room.code}")
    wait_live(back)
    assert back.evaluate("() => window.gradwalkRoom.role") == "presenter"
    room.presenter = back
    expect(where).to_have_text("Following the presenter")
    expect(viewer.locator("[data-gw=room-bar]")).to_have_attribute("data-presenter", "here")
    back.click("#gw-tab-stepper")
    back.click(NEXT)
    wait_same_step(viewer, position(back))


def test_a_viewers_stop_leaves_the_presenters_run_alone_and_says_so(room: Classroom) -> None:
    """A viewer's Stop on the presenter's run used to stop it for the whole class (on a
    server without a token) or be refused without a word (with one)."""
    p, viewer = room.presenter, room.viewers[0]
    before = p.evaluate("() => window.gradwalk.runId")
    p.evaluate("(src) => { window.gradwalk.editor.source = src; }", SLOW)
    p.click("[data-gw=run]")
    p.wait_for_function("(id) => window.gradwalk.runId && window.gradwalk.runId !== id", arg=before)
    run_id = p.evaluate("() => window.gradwalk.runId")
    viewer.wait_for_function("(id) => window.gradwalk.runId === id", arg=run_id)
    viewer.wait_for_selector("[data-gw=status][data-state=running]")
    viewer.click("[data-gw=stop]")
    expect(viewer.locator(".gw-notice").last).to_contain_text("Only the presenter can stop")
    p.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    viewer.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(viewer.locator("[data-gw=room-bar]")).to_have_attribute("data-following", "true")


def test_presenter_type_turned_off_in_a_room_stays_off_when_the_page_reloads(room: Classroom) -> None:
    """A room's presenter page turns presenter type on; a teacher who turned it off (a small
    room, a big screen) had it forced on again by every reload."""
    p = room.presenter
    root = p.locator(":root")
    expect(root).to_have_attribute("data-presenter", "on")
    if p.locator("[data-gw=more]").is_visible():
        p.click("[data-gw=more]")
    p.click("[data-gw=presenter]")
    expect(root).to_have_attribute("data-presenter", "off")
    p.reload()
    wait_live(p)
    expect(root).to_have_attribute("data-presenter", "off")


def test_the_classroom_dialog_opened_in_a_room_says_which_room(room: Classroom) -> None:
    """Opened by a student inside a room (the presenter's room page has no Classroom button),
    the Classroom dialog offered "Start a room" and "Join a class" without a word about the
    room the page was in."""
    viewer = room.viewers[0]
    if viewer.locator("[data-gw=more]").is_visible():
        viewer.click("[data-gw=more]")
    viewer.click("[data-gw=classroom]")
    expect(viewer.locator("[data-gw=room-here]")).to_have_text(
        f"You are in room {room.code[:3]} {room.code[3:]}, following. Starting or joining another room leaves this one."
    )
    shot(viewer, "rooms-hunt-05-classroom-dialog-in-a-room")
    viewer.keyboard.press("Escape")


def test_a_viewer_who_explored_follows_again_with_f_as_the_shortcuts_list_writes_it(room: Classroom) -> None:
    """The shortcuts dialog and the Follow button say F; only a lowercase f worked."""
    p, viewer = room.presenter, room.viewers[0]
    run_example(p, "cubic")
    p.click("#gw-tab-stepper")
    p.click("button[aria-label='First step']")  # a run from the stepper may come back at a late step
    p.click(NEXT)
    wait_same_step(viewer, position(p))
    bar = viewer.locator("[data-gw=room-bar]")
    expect(bar).to_have_attribute("data-following", "true")
    viewer.click("#gw-tab-stepper")
    viewer.click(NEXT)  # a step of their own: exploring
    expect(bar).to_have_attribute("data-following", "false")
    viewer.keyboard.press("Shift+F")
    expect(bar).to_have_attribute("data-following", "true")
    wait_same_step(viewer, position(p))


def test_after_the_room_ends_a_viewer_opens_the_app_on_what_they_were_looking_at(room: Classroom) -> None:
    """ "Open gradwalk on your own" under "The presenter ended the room" used to open a blank
    app (the first example, no run): the viewer lost the run they had just been shown."""
    p, viewer = room.presenter, room.viewers[0]
    run_id = p.evaluate("() => window.gradwalk.runId")
    p.click("#gw-tab-stepper")
    p.click(NEXT)
    want = position(p)
    wait_same_step(viewer, want)
    step = viewer.evaluate("() => window.gradwalk.store.state.step")
    p.once("dialog", lambda d: d.accept())
    p.click("[data-gw=room-end]")
    expect(viewer.locator("[data-gw=room-bar]")).to_have_attribute("data-conn", "ended")
    viewer.click("text=Open gradwalk on your own")
    viewer.wait_for_url(re.compile(rf"/\?run={run_id}&view=stepper&step={step}\b"))
    expect(viewer.locator(POSITION)).to_have_text(want)
    assert viewer.evaluate("() => window.gradwalk.runId") == run_id
