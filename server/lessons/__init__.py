"""The lessons gallery: ready lessons, each a snippet with a text and where the app opens it.

``lessons.json`` in this folder orders and describes them; a lesson's code is a file of the
examples library (``"example": "cubic.py"``) or of ``snippets/`` here (``"snippet": ...``).
The server records each lesson once and hands that run to everyone who opens the lesson
(:meth:`LessonLibrary.run_for`), so a class opening the same lesson costs one run, and
learners need no token for it: lesson code is the server's own.

>>> from server.settings import Settings
>>> lessons = load_lessons(LESSONS_DIR, Settings().examples_dir)
>>> lessons[0].id, lessons[0].view, lessons[0].step
('scalar', 'stepper', 3)
>>> next(lesson.charts for lesson in lessons if lesson.id == "dead-relu")
LessonCharts(per_param=True, yscale='log', hide=('loss', 'lr'))
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..library import Example
from .tries import TryEdit, TryStep, made, read_tries

__all__ = [
    "CHART_IDS",
    "LESSONS_DIR",
    "Y_SCALES",
    "Lesson",
    "LessonCharts",
    "LessonLibrary",
    "TryEdit",
    "TryStep",
    "load_lessons",
    "snippets_named",
]

LESSONS_DIR = Path(__file__).resolve().parent
# A stored lesson run is reused unless it ended like this (then it is recorded again).
_RERUN = {"crashed", "cancelled", "timeout", "limit"}
# The training charts' y scales (web/src/chart-scales.ts's Y_SCALES).
Y_SCALES = ("auto", "linear", "log")
# The charts the app draws of a run (web/src/charts-data.ts's tables); a snippet's own
# gradwalk.log metric is "metric:" and its name.
CHART_IDS = ("loss", "grad", "update", "lr", "calls", "memory", "cuda")


@dataclass(frozen=True)
class LessonCharts:
    """How the training charts open with a lesson: a line per parameter or one together, the y
    scale, and the charts hidden (their ids: ``loss``, ``grad``, ``update``, ``lr``, …). The
    fields a lesson's entry leaves out take the app's defaults (together, auto, none hidden); a
    lesson with no entry at all has no ``LessonCharts`` (``Lesson.charts`` is None) and leaves the
    learner's chart choices as they are."""

    per_param: bool = False
    yscale: str = "auto"
    hide: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, entry: dict[str, Any] | None, lesson_id: str) -> LessonCharts | None:
        """Read a lesson's ``"charts"`` entry (None for none); raise ValueError, naming the
        lesson, on an unknown key, scale or chart to hide (a typo would otherwise open the
        charts at the defaults unseen)."""
        if entry is None:
            return None
        unknown = set(entry) - {"per_param", "yscale", "hide"}
        if unknown:
            raise ValueError(f"lesson {lesson_id!r}: unknown charts keys {sorted(unknown)}")
        charts = cls(
            per_param=bool(entry.get("per_param", False)),
            yscale=entry.get("yscale", "auto"),
            hide=tuple(entry.get("hide", ())),
        )
        if charts.yscale not in Y_SCALES:
            raise ValueError(
                f"lesson {lesson_id!r}: charts yscale {charts.yscale!r} is not one of {Y_SCALES}"
            )
        for chart in charts.hide:
            if chart not in CHART_IDS and not (isinstance(chart, str) and chart.startswith("metric:")):
                raise ValueError(
                    f"lesson {lesson_id!r}: charts hide {chart!r} is not a chart: one of {CHART_IDS}, "
                    "or 'metric:' and a name the snippet logs"
                )
        return charts


@dataclass(frozen=True)
class Lesson:
    """One lesson: its snippet, its words for the learner, the view and step to open at, and
    how the training charts open (None: as the learner has them)."""

    id: str
    title: str
    part: str
    summary: str
    text: str
    try_next: str
    source: str
    file: str
    view: str
    step: int | None
    charts: LessonCharts | None = None
    try_steps: tuple[TryStep, ...] = ()
    """The changes its try asks for, which the app's Try it makes, a step a press (server/lessons/tries.py)."""

    def tried(self, steps: int | None = None) -> str:
        """Its code with the first ``steps`` of its try made (all of them by default)."""
        return made(self.try_steps, self.source, len(self.try_steps) if steps is None else steps)


def load_lessons(folder: Path, examples_dir: Path) -> list[Lesson]:
    """Read ``folder/lessons.json``; a lesson whose snippet file is missing is left out.

    Raise ValueError, naming the lesson, where a part's lessons do not stand together (the
    gallery shows each part once, under its name, its lessons in the order given).
    """
    index = folder / "lessons.json"
    if not index.is_file():
        return []
    out: list[Lesson] = []
    parts_ended: set[str] = set()
    for entry in json.loads(index.read_text())["lessons"]:
        part = entry.get("part")
        if not part:
            raise ValueError(f"lesson {entry['id']!r}: no part (the gallery shows lessons by part)")
        if part in parts_ended:
            raise ValueError(
                f"lesson {entry['id']!r}: part {part!r} ended before it; a part's lessons stand together"
            )
        if out and out[-1].part != part:
            parts_ended.add(out[-1].part)
        if "example" in entry:
            path, file = examples_dir / entry["example"], f"examples/{entry['example']}"
        else:
            path, file = folder / "snippets" / entry["snippet"], f"lessons/snippets/{entry['snippet']}"
        if not path.is_file():
            continue
        source = path.read_text()
        out.append(
            Lesson(
                id=entry["id"],
                title=entry["title"],
                part=part,
                summary=entry["summary"],
                text=entry["text"],
                try_next=entry.get("try", ""),
                source=source,
                file=file,
                view=entry.get("view", "tape"),
                step=entry.get("step"),
                charts=LessonCharts.from_json(entry.get("charts"), entry["id"]),
                try_steps=read_tries(entry, entry["id"], source),
            )
        )
    return out


def snippets_named(examples: list[Example], lessons: list[Lesson]) -> list[Example]:
    """The snippets a run's code is named after (:func:`server.library.title_for`): the
    examples, then each lesson whose code is its own snippet, under the lesson's title (a
    lesson on an example keeps the example's), so a lesson's run, its embed and its download
    carry the lesson's title rather than its code's first comment."""
    own = [
        Example(
            id=lesson.id, title=lesson.title, summary=lesson.summary, source=lesson.source, file=lesson.file
        )
        for lesson in lessons
        if lesson.file.startswith("lessons/")
    ]
    return [*examples, *own]


@dataclass
class LessonLibrary:
    """The lessons, and the run recorded for each so far (shared by everyone who opens it)."""

    lessons: list[Lesson]
    runs: dict[str, str] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def get(self, lesson_id: str) -> Lesson | None:
        """Return the lesson with this id, or None."""
        return next((lesson for lesson in self.lessons if lesson.id == lesson_id), None)

    async def run_for(
        self,
        lesson: Lesson,
        find: Callable[[str], Awaitable[Any]],
        create: Callable[[str], Awaitable[Any]],
    ) -> tuple[Any, bool]:
        """Return ``(run, created)``: the lesson's recorded run, recorded now if there is none.

        ``find(run_id)`` returns a live or stored run (or None once the store dropped it);
        ``create(source)`` starts a new one. Concurrent callers of one lesson share one run.
        """
        lock = self._locks.setdefault(lesson.id, asyncio.Lock())
        async with lock:
            run_id = self.runs.get(lesson.id)
            if run_id is not None:
                run = await find(run_id)
                if run is not None and run.status not in _RERUN:
                    return run, False
            run = await create(lesson.source)
            self.runs[lesson.id] = run.id
            return run, True
