"""A viewer whose device goes offline is told so at once, and catches up when it is back: a
phone 50 s offline read "● live · Following the presenter" on a stale step (hunt 64,
classroom)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, run_example
from .test_rooms import Classroom, wait_live

pytestmark = pytest.mark.browser


def test_an_offline_viewer_is_told_and_catches_up(browser: Any, server: Any) -> None:
    room = Classroom(server)
    try:
        room.start(browser)
        presenter = room.presenter
        run_example(presenter, "cubic")
        presenter.click("[role=tab][data-view=stepper]")
        viewer = room.join(browser)
        viewer.wait_for_function("() => window.gradwalk.store.state.view === 'stepper'")
        context = viewer.context
        context.set_offline(True)
        conn = viewer.locator("[data-gw=room-conn]")
        expect(conn).to_have_text("reconnecting…", timeout=3_000)
        expect(conn).to_have_attribute("title", "this device is offline")
        presenter.keyboard.press("End")
        want = presenter.evaluate("() => window.gradwalk.store.state.step")
        context.set_offline(False)
        wait_live(viewer)
        viewer.wait_for_function("(s) => window.gradwalk.store.state.step === s", arg=want, timeout=10_000)
    finally:
        for context in room.contexts:
            context.close()
