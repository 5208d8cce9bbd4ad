"""A room carries the presenter's pick (the node or tensor the inspector shows and the graph
rings), as links do: viewers saw the presenter's inspector and graph without it, and a room
started from a page with a pick (and a graph call, hidden charts) opened without them
(hunt 64, README claims)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import expect, stored_run
from .test_rooms import Classroom, wait_live

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).parents[2] / "server" / "examples" / "cubic_twice.py"
SELECTION = "() => JSON.stringify(window.gradwalk.store.state.selection)"


def test_viewers_follow_the_presenters_pick_and_a_room_starts_with_it(browser: Any, server: Any) -> None:
    run = stored_run(server, EXAMPLE.read_text())
    room = Classroom(server)
    try:
        presenter = room.page(browser, "presenter")
        presenter.goto(f"{server.url}/?run={run}&view=inspector&sel=t0&hide=lr")
        presenter.wait_for_function("() => window.gradwalk?.model?.isFinished")
        expect(presenter.locator("#gw-panel-inspector")).to_contain_text("29.5")
        presenter.click("[data-gw=classroom]")
        presenter.click("[data-gw=room-start]")
        room.reach_room(presenter, "the presenter", re.compile(r"/room/[A-Z0-9]{6}$"))
        wait_live(presenter)
        room.code = presenter.evaluate("() => window.gradwalkRoom.info.code")
        room.presenter = presenter
        # the room opened on the pick it was started from (x, whose .grad is 29.5)
        presenter.wait_for_function(f"() => {SELECTION} === JSON.stringify({{kind: 'tensor', id: 0}})")
        expect(presenter.locator("#gw-panel-inspector")).to_contain_text("29.5")
        assert presenter.evaluate("() => window.gradwalk.store.state.hide") == ["lr"]
        viewer = room.join(browser)
        viewer.wait_for_function(f"() => {SELECTION} === JSON.stringify({{kind: 'tensor', id: 0}})")
        expect(viewer.locator("#gw-panel-inspector")).to_contain_text("29.5")
        # the presenter picks a node: the viewer's inspector follows
        node = presenter.evaluate("() => window.gradwalk.model.nodes.keys().next().value")
        presenter.evaluate(
            f"() => window.gradwalk.store.set({{ selection: {{ kind: 'node', id: {node} }} }})"
        )
        viewer.wait_for_function(
            f"() => {SELECTION} === JSON.stringify({{kind: 'node', id: {node}}})", timeout=5_000
        )
        # and clears it: the viewer's clears too
        presenter.evaluate("() => window.gradwalk.store.set({ selection: null })")
        viewer.wait_for_function(f"() => {SELECTION} === 'null'", timeout=5_000)
        assert not room.problems, room.problems
    finally:
        for context in room.contexts:
            context.close()
