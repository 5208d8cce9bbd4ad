"""The lessons as the gallery serves them, and what the lesson tests share: readings of a
lesson's trace (the stepper's positions, what the snippet printed) and a lesson recorded with
the change its "try" asks for."""

from __future__ import annotations

from typing import Any

from engine import record
from engine.events import OptimizerStep, Trace
from server.lessons import LESSONS_DIR, Lesson, load_lessons
from server.settings import Settings

LESSONS = load_lessons(LESSONS_DIR, Settings().examples_dir)
BY_ID = {lesson.id: lesson for lesson in LESSONS}


def stepper_timeline(trace: Trace) -> list[tuple[str, Any]]:
    """The web stepper's positions (trace-model.ts): each node run, then each call's end."""
    names = {e.id: e.name for e in trace.events if e.type == "node"}
    out: list[tuple[str, Any]] = []
    for e in trace.events:
        if e.type == "node_executed":
            out.append((names[e.node], e))
        elif e.type == "backward_finished":
            out.append(("end", e))
    return out


def optimizer_steps(trace: Trace) -> list[OptimizerStep]:
    """The trace's optimizer steps, in order."""
    return [e for e in trace.events if isinstance(e, OptimizerStep)]


def stdout_text(trace: Trace) -> str:
    """What the snippet wrote to stdout."""
    return "".join(e.text for e in trace.events if e.type == "output" and e.stream == "stdout")


def quoted(text: str, *fragments: str) -> None:
    """Each fragment, as a lesson's text (or its try) quotes it."""
    for fragment in fragments:
        assert fragment in text, fragment


def tried(lesson: Lesson, old: str, new: str, asks: str, *, second: bool = False) -> Trace:
    """Record ``lesson`` with the change its "try" asks for, checking that the try says
    ``asks`` and that the snippet holds ``old``, which is replaced by ``new``; that change is
    the one edit of the lesson's try (what the app's Try it button makes) where that replaces
    the same text, unless it is a ``second`` try the learner makes by hand."""
    assert asks in lesson.try_next, lesson.try_next
    assert old in lesson.source, old
    if lesson.try_steps and len(lesson.try_steps[0]) == 1 and not second:
        edit = lesson.try_steps[0][0]
        if edit.replace == old:
            assert edit.with_ == new, (lesson.id, edit, new)
    return record(lesson.source.replace(old, new))
