"""``/api/lessons``: the lessons gallery, and one shared recorded run per lesson."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from ..deps import LimiterDep, RegistryDep, SettingsDep, spend_allowance
from ..lessons import Lesson, LessonLibrary
from ..live import LiveRun
from ..models import ErrorDetail, RunPublic, run_public
from .runs import start_run

__all__ = ["LessonChartsPublic", "LessonList", "LessonPublic", "TryEditPublic", "router"]

router = APIRouter(prefix="/api/lessons", tags=["lessons"])

_404: dict[int | str, dict[str, Any]] = {404: {"model": ErrorDetail, "description": "no such lesson"}}


class LessonChartsPublic(BaseModel):
    """How the training charts open with the lesson (a field its entry leaves out: the app's default)."""

    per_param: bool = Field(description="one line per parameter (true) or one line together (false)")
    yscale: Literal["auto", "linear", "log"] = Field(description="the charts' y scale")
    hide: list[str] = Field(description="the ids of the charts hidden (loss, grad, update, lr, …)")


class TryEditPublic(BaseModel):
    """One change of a lesson's "try": the first ``replace`` in the code becomes ``with``."""

    model_config = ConfigDict(populate_by_name=True)

    replace: str = Field(
        description="the text of the code to change (the code holds it once when the change is made)"
    )
    with_: str = Field(alias="with", description="what it becomes")


class LessonPublic(BaseModel):
    """A lesson: its code, what a learner reads, and where the app opens once it has run."""

    id: str
    title: str
    part: str = Field(description="the part of the course it belongs to; a part's lessons stand together")
    summary: str = Field(description="one line for the gallery")
    text: str = Field(description="a few sentences for the learner")
    try_next: str = Field(description="something to change and run next")
    source: str
    file: str = Field(description="where the snippet lives in the server package")
    view: str = Field(description="the view to open: tape, stepper or inspector")
    step: int | None = Field(description="the stepper position to open at (0-based)")
    charts: LessonChartsPublic | None = Field(
        description="how the training charts open; null: the lesson leaves the learner's chart "
        "choices as they are, putting back only what the lesson before it set"
    )
    try_steps: list[list[TryEditPublic]] = Field(
        default_factory=list,
        description="the changes the try asks for, which the app's Try it button makes and runs: a step "
        "(its edits made together, in order) a press; empty where the try is not edits",
    )


class LessonList(BaseModel):
    lessons: list[LessonPublic]


def _public(lesson: Lesson) -> LessonPublic:
    return LessonPublic(**asdict(lesson))


def _library(request: Request) -> LessonLibrary:
    library: LessonLibrary = request.app.state.lessons
    return library


@router.get("", response_model=LessonList)
async def list_lessons(request: Request) -> LessonList:
    """List the lessons in teaching order."""
    return LessonList(lessons=[_public(lesson) for lesson in _library(request).lessons])


@router.get("/{lesson_id}", response_model=LessonPublic, responses=_404)
async def get_lesson(lesson_id: str, request: Request) -> LessonPublic:
    """Return one lesson."""
    return _public(_find(_library(request), lesson_id))


@router.post(
    "/{lesson_id}/run",
    response_model=RunPublic,
    responses={
        **_404,
        201: {"model": RunPublic, "description": "the lesson was recorded now"},
        429: {"model": ErrorDetail, "description": "too many runs: wait Retry-After seconds"},
    },
)
async def run_lesson(
    lesson_id: str,
    request: Request,
    response: Response,
    registry: RegistryDep,
    settings: SettingsDep,
    limiter: LimiterDep,
) -> RunPublic:
    """Return the lesson's recorded run (200), recording it first if there is none yet (201).

    Needs no token: the code is the server's own lesson. Open the run's ``ws_url`` (or its
    trace) as for any run.
    """
    library = _library(request)
    lesson = _find(library, lesson_id)

    async def create(source: str) -> LiveRun:
        spend_allowance(limiter, request)
        return await start_run(registry, source, "cpu", settings.default_limits, title=lesson.title)

    run, created = await library.run_for(lesson, registry.find, create)
    response.status_code = 201 if created else 200
    return run_public(run)


def _find(library: LessonLibrary, lesson_id: str) -> Lesson:
    lesson = library.get(lesson_id)
    if lesson is None:
        raise HTTPException(404, f"no lesson {lesson_id[:64]!r}")
    return lesson
