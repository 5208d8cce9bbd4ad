"""Start a room when the server does not answer: the teacher is told, and can try again.

The stall is the network's (Playwright holds the request back); the second try goes to the
real server and opens a real room.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import expect, open_app

pytestmark = pytest.mark.browser


def test_start_a_room_says_when_the_server_does_not_answer_and_the_next_try_opens_it(page: Any) -> None:
    held: list[Any] = []  # the request, held back: never answered
    page.route("**/api/rooms", lambda route: held.append(route))
    page.clock.install()
    open_app(page)
    page.click("[data-gw=classroom]")
    start = page.locator("[data-gw=room-start]")
    with page.expect_request("**/api/rooms"):  # sent before the clock moves on
        start.click()
    expect(start).to_be_disabled()
    expect(start).to_have_text("Opening a room…")
    page.clock.fast_forward(21_000)
    error = page.locator(".gw-classroom-dialog .gw-dialog-error")
    expect(error).to_be_visible()
    expect(error).to_have_text(re.compile(r"did not answer within 20 s.*try again"))
    expect(start).to_be_enabled()
    expect(start).to_have_text("Start a room")
    assert "/room/" not in page.url  # still in the app, with what it shows

    page.unroute("**/api/rooms")
    start.click()
    page.wait_for_url(re.compile(r"/room/[A-Z0-9]{6}$"))
    page.wait_for_selector("[data-gw=room-bar][data-conn=live]")
