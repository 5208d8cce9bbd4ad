"""Request and response models of the HTTP API, named by role (``RunCreate``, ``RunPublic``)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.events import Counts

from .library import first_code_line
from .live import LiveRun
from .storage import RunRecord


def refuse_nul(source: str) -> str:
    """A ``source`` validator: compile() refuses NUL, so say so up front rather than as a
    failed run. (Lone surrogates never get this far: pydantic refuses invalid Unicode.)"""
    if "\x00" in source:
        raise ValueError("source contains a NUL character")
    return source


def pasted_source(source: str) -> str:
    """The ``source`` validator of a snippet to run: read as Python reads a script file, so
    that the source stored is the one that runs and the one every view shows. One leading
    UTF-8 BOM is dropped (``compile()`` of a string refuses it: "invalid non-printable
    character U+FEFF"), ``\\r\\n`` and a lone ``\\r`` become ``\\n`` (the Code tab split a
    lone-``\\r`` paste at no line, and a ``\\r\\n`` one's carets were a column off), and a
    NUL is refused (:func:`refuse_nul`)."""
    source = source.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return refuse_nul(source)


class StrictRequest(BaseModel):
    """A request body validated strictly: a number is a number and a flag a flag (lax
    validation took ``true`` for 1 and ``"5"`` for 5, where the schema says integer), no
    unknown fields. A whole number written ``5.0`` is still 5, as JSON Schema has it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _whole_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in data.items()}


__all__ = [
    "JSON_BODY_ERRORS",
    "ErrorDetail",
    "ExampleList",
    "ExamplePublic",
    "Health",
    "LimitsPatch",
    "RunCreate",
    "RunList",
    "RunPublic",
    "RunState",
    "RunSummary",
    "StrictRequest",
    "json_error",
    "pasted_source",
    "run_public",
    "run_summary",
]

RunState = Literal["queued", "running", "ok", "error", "timeout", "cancelled", "crashed", "limit"]


class LimitsPatch(StrictRequest):
    """Some of :class:`engine.events.Limits`; what is left out keeps the server's default.

    Mirrors ``Limits`` field for field (``tests/server/test_models.py`` keeps them in step).
    """

    max_ops: int | None = Field(default=None, ge=0, description="ops recorded on the tape")
    max_nodes: int | None = Field(default=None, ge=0, description="grad_fn nodes recorded")
    max_events: int | None = Field(default=None, ge=100, description="events in one trace")
    max_value_elements: int | None = Field(
        default=None, ge=0, le=4096, description="tensors up to this size travel whole"
    )
    max_output_bytes: int | None = Field(default=None, ge=0, description="stdout+stderr kept")
    detail_steps: int | None = Field(
        default=None, ge=0, description="optimizer steps recorded in full detail at the start"
    )
    detail_every: int | None = Field(
        default=None, ge=0, description="also record every k-th step in full (0: never)"
    )
    detail_calls: int | None = Field(
        default=None,
        ge=0,
        description="backward() calls recorded in full while no optimizer has stepped (a loop that steps "
        "by hand); each later one sends its loss and memory only (detail_every applies to them too)",
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=600, allow_inf_nan=False, description="wall-clock limit (runner)"
    )
    memory_mb: int | None = Field(default=None, ge=256, le=65536, description="address-space limit (runner)")


class RunCreate(StrictRequest):
    """A snippet to run: ``source`` is at most 100,000 characters."""

    source: str = Field(
        max_length=100_000,
        description="the PyTorch snippet, run as a script (no NUL characters); as Python reads "
        "a file, a leading UTF-8 BOM is dropped and \\r\\n and \\r line ends become \\n",
        json_schema_extra={"pattern": "^[^\\x00]*$"},
    )
    device: Literal["cpu", "cuda"] = Field(default="cpu", description="offered to the snippet as `device`")
    limits: LimitsPatch | None = Field(default=None, description="caps for this run; the server bounds them")

    _as_python_reads = field_validator("source")(pasted_source)


class RunSummary(BaseModel):
    """A run as listed: everything but its source."""

    id: str
    status: RunState
    created_at: datetime
    finished_at: datetime | None = None
    device: str
    title: str | None = None
    first_line: str = Field(
        default="",
        description="the source's first line of code that is not an import (else its first import; "
        "at most 80 characters), to name a run with no title, as the web app's recent runs list does",
    )
    message: str = Field(default="", description="why the run ended, when it did not end ok")
    counts: Counts | None = None
    event_count: int = Field(description="events so far (all of them once finished)")
    ws_url: str = Field(description="websocket streaming this run's events")


class RunPublic(RunSummary):
    """A run with its source."""

    source: str


class RunList(BaseModel):
    runs: list[RunSummary]


class ExamplePublic(BaseModel):
    id: str
    title: str
    summary: str
    source: str
    file: str


class ExampleList(BaseModel):
    examples: list[ExamplePublic]


class Health(BaseModel):
    ok: bool
    workers: int
    isolation: dict[str, bool]
    cuda: bool
    version: str
    live_runs: int


class ErrorDetail(BaseModel):
    """Every 4xx answer: ``detail`` says what was wrong."""

    detail: Any


#: What every operation that reads a JSON body may also answer (documented on each).
JSON_BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorDetail, "description": "the body is not valid UTF-8 JSON text"},
    408: {"model": ErrorDetail, "description": "the request body stopped arriving"},
    413: {"model": ErrorDetail, "description": "the request body is too large"},
    415: {
        "model": ErrorDetail,
        "description": "the body was sent as another type than application/json, or compressed",
    },
}


def json_error(description: str) -> dict[str, Any]:
    """The OpenAPI entry of a JSON ``ErrorDetail`` answer on a route that returns HTML."""
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorDetail"}}},
    }


def _time(t: float | None) -> datetime | None:
    return datetime.fromtimestamp(t, tz=timezone.utc) if t is not None else None


def _fields(run: LiveRun | RunRecord) -> dict[str, Any]:
    if isinstance(run, LiveRun):
        status, count = run.status, len(run.frames)
    else:
        status, count = run.status, run.event_count
    return {
        "id": run.id,
        "status": status,
        "created_at": _time(run.created_at),
        "finished_at": _time(run.finished_at),
        "device": run.device,
        "title": run.title,
        "first_line": first_code_line(run.source),
        "message": run.message,
        "counts": Counts.model_validate(run.counts) if run.counts else None,
        "event_count": count,
        "ws_url": f"/api/runs/{run.id}/events",
    }


def run_summary(run: LiveRun | RunRecord) -> RunSummary:
    """Describe a live or stored run without its source (its first line of code stands for it)."""
    return RunSummary(**_fields(run))


def run_public(run: LiveRun | RunRecord) -> RunPublic:
    """Describe a live or stored run with its source."""
    return RunPublic(**_fields(run), source=run.source)
