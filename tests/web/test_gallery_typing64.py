"""Words typed in the Lessons gallery go to its search box wherever the focus is: the gallery
opens on a lesson's tile, and a presenter typing "chain rule" there opened that tile's lesson
for the class at the first space (hunt 64, classroom)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, open_app

pytestmark = pytest.mark.browser


def test_typing_on_a_tile_finds_lessons(page: Any) -> None:
    open_app(page)
    page.click("[data-gw=lessons]")
    expect(page.locator(".gw-lesson-tile").first).to_be_focused()
    page.keyboard.type("chain rule")
    box = page.locator(".gw-lessons-find")
    expect(box).to_be_focused()
    expect(box).to_have_value("chain rule")
    expect(page.locator(".gw-lessons-dialog")).to_have_attribute("open", "")
    expect(page.locator("[data-gw=lesson-card]")).to_be_hidden()  # nothing opened yet
    page.keyboard.press("Enter")
    expect(page.locator("[data-gw=lesson-card]")).to_have_attribute("data-lesson", "chain-rule")
