"""The gallery's lessons in the order the server serves them, for the browser tests that read
a lesson's place in it off its card."""

from __future__ import annotations

from tests.server.lesson_traces import LESSONS

COUNT = len(LESSONS)


def numbered(lesson_id: str) -> str:
    """What the card of ``lesson_id`` says of its place: "Lesson N of COUNT"."""
    number = next(n for n, lesson in enumerate(LESSONS, 1) if lesson.id == lesson_id)
    return f"Lesson {number} of {COUNT}"
