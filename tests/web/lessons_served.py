"""The gallery's lessons in the order the server serves them, for the browser tests that read
a lesson's place in it off its card, and a lesson opened (at its stepper position)."""

from __future__ import annotations

from typing import Any

from tests.server.lesson_traces import LESSONS

from .conftest import expect, open_app

COUNT = len(LESSONS)
CARD = "[data-gw=lesson-card]"
STEP_CARD = ".gw-step-card"


def numbered(lesson_id: str) -> str:
    """What the card of ``lesson_id`` says of its place: "Lesson N of COUNT"."""
    number = next(n for n, lesson in enumerate(LESSONS, 1) if lesson.id == lesson_id)
    return f"Lesson {number} of {COUNT}"


def opened_at(page: Any, lesson: str, position: str | None = None) -> Any:
    """Open ``lesson``, check its card gives its place in the gallery and, given a stepper
    ``position`` ("step 3 of 5"), that it opens there; return its card."""
    open_app(page, f"?lesson={lesson}")
    card = page.locator(CARD)
    expect(card).to_contain_text(numbered(lesson))
    if position is not None:
        expect(page.locator(".gw-stepper .gw-position")).to_have_text(position)
    return card
