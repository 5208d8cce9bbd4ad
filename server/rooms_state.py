"""A room's state and codes: what the presenter shares (:class:`RoomState`), its changes, the codes.

Split out of :mod:`server.rooms` (which re-exports everything here).
"""

from __future__ import annotations

from pydantic import Field, field_validator

from .chart_choices import (
    CALL_CHOICE,
    COMPARE_PATTERN,
    HIDE_IDS_TEXT,
    HIDE_PATTERN,
    MAX_HIDDEN,
    MAX_HIDE_LENGTH,
    SELECTION_PATTERN,
    Norms,
    YScale,
)
from .models import StrictRequest, refuse_nul

__all__ = ["CODE_ALPHABET", "CODE_LENGTH", "RoomState", "RoomStatePatch", "normalize_code"]

# No 0/O, 1/I/L: a code is read aloud and typed from a projector.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
_ID_PATTERN = r"^[A-Za-z0-9_-]+$"
_VIEW_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"


def normalize_code(text: str) -> str | None:
    """Return the room code ``text`` names (any case, spaces or dashes), or None if it cannot be one.

    >>> normalize_code(" k7m-q2x "), normalize_code("K7M0Q2"), normalize_code("abc")
    ('K7MQ2X', None, None)
    """
    code = text.strip().replace("-", "").replace(" ", "").upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        return None
    return code


class RoomState(StrictRequest):
    """What every viewer of a room sees: the presenter's code, run, view and step.

    And the charts' choices (:mod:`server.chart_choices`): ``yscale``, ``norms``, ``compare``
    (a run id) and ``hide`` (comma-separated chart ids, ``""`` for none).
    """

    source: str = Field(default="", max_length=100_000, description="the code in the presenter's editor")
    run_id: str | None = Field(
        default=None, max_length=64, pattern=_ID_PATTERN, description="the run the presenter shows"
    )
    view: str = Field(default="tape", pattern=_VIEW_PATTERN, description="the open view: tape, stepper, ...")
    step: int | None = Field(default=None, ge=0, le=10_000_000, description="the backward stepper's step")
    op: int | None = Field(default=None, ge=0, le=10_000_000, description="the tape scrubber's op")
    call: CALL_CHOICE | None = Field(
        default=None,
        description="the backward() call whose graph alone is drawn, counted from 1; all: every call's; "
        "null: the run's default (its first call where a loop's calls copy one big graph, else every call's)",
    )
    sel: str | None = Field(
        default=None,
        pattern=SELECTION_PATTERN,
        description="the node (n12) or tensor (t3) the presenter picked, as the app's links write it; "
        "null: none",
    )
    allow_viewer_runs: bool = Field(default=False, description="viewers may run their own code")
    lesson: str | None = Field(
        default=None, max_length=64, pattern=_ID_PATTERN, description="the lesson the presenter opened"
    )
    yscale: YScale = Field(default="auto", description="the charts' y axes")
    norms: Norms = Field(default="together", description="the charts' gradient and update norms")
    compare: str | None = Field(
        default=None,
        pattern=COMPARE_PATTERN,
        description="the run drawn dashed under the shown one on the charts",
    )
    hide: str = Field(
        default="",
        max_length=MAX_HIDE_LENGTH,
        pattern=HIDE_PATTERN,
        description=f"the charts hidden: up to {MAX_HIDDEN} comma-separated chart ids ({HIDE_IDS_TEXT}); "
        "empty: none",
    )

    _no_nul = field_validator("source")(refuse_nul)


class RoomStatePatch(RoomState):
    """Some of :class:`RoomState`: the fields given replace the room's, the rest stay.

    ``run_id``, ``step``, ``op``, ``call``, ``sel``, ``lesson`` and ``compare`` may be ``null`` (nothing shown,
    the run's default graph); the others
    (``hide`` among them: ``""`` hides no chart) may be left out but not set to ``null``.
    """

    # Defaults are not validated, so None means "not given"; a null sent for a
    # non-nullable field still fails validation.
    source: str = Field(default=None, max_length=100_000)  # type: ignore[assignment]
    view: str = Field(default=None, pattern=_VIEW_PATTERN)  # type: ignore[assignment]
    allow_viewer_runs: bool = Field(default=None)  # type: ignore[assignment]
    yscale: YScale = Field(default=None)  # type: ignore[arg-type]
    norms: Norms = Field(default=None)  # type: ignore[arg-type]
    hide: str = Field(default=None, max_length=MAX_HIDE_LENGTH, pattern=HIDE_PATTERN)  # type: ignore[assignment]
