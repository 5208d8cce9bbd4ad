"""``POST /api/traces``: store a trace recorded elsewhere (a notebook, ``gradwalk record``) as a run.

The body is a trace as ``engine.events.Trace`` serializes it, as JSON, optionally
gzip-compressed (``Content-Encoding: gzip``: a trace compresses about tenfold, so big ones
fit under the server's body limit). It is validated event by event against the contract;
the stored run then opens in the app (``/?run=ID``), embeds and exports like any other.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
import zlib
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, Field, ValidationError

from engine.events import SCHEMA_VERSION, RunFinished, RunStarted, trace_adapter

from ..deps import CreatorAuth, LimiterDep, RegistryDep, spend_allowance
from ..library import title_for
from ..live import join_trace
from ..models import ErrorDetail
from ..storage import RunRecord

__all__ = ["MAX_TRACE_BYTES", "TraceImported", "router"]

router = APIRouter(prefix="/api/traces", tags=["traces"])

#: A trace's size once decompressed; a bigger one is refused with 413.
MAX_TRACE_BYTES = 64 * 1024 * 1024
_MAX_ERRORS = 10

_ANSWERS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorDetail, "description": "the body is not JSON (or not gzip when it says so)"},
    401: {"model": ErrorDetail, "description": "the server needs a token and none was sent"},
    403: {"model": ErrorDetail, "description": "wrong token"},
    408: {"model": ErrorDetail, "description": "the request body stopped arriving"},
    413: {"model": ErrorDetail, "description": "the trace is too large"},
    415: {"model": ErrorDetail, "description": "a content encoding other than gzip"},
    422: {"model": ErrorDetail, "description": "not a valid gradwalk trace"},
    429: {"model": ErrorDetail, "description": "too many requests: wait Retry-After seconds"},
}


class TraceImported(BaseModel):
    """Where a stored trace can be seen."""

    id: str = Field(description="the new run's id")
    app_url: str = Field(description="the run in the app")
    embed_url: str = Field(description="the run as an embed, for an iframe")
    export_url: str = Field(description="the run as one self-contained HTML file")


# The body is read raw (it may be gzip), so FastAPI cannot infer it: documented here.
_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "a trace as `gradwalk record` writes it; send `Content-Encoding: gzip` to compress it."
        " Besides the schema: events[0] is run_started, the last is run_finished, and seq counts from 0.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Trace"}}},
    }
}


@router.post("", status_code=201, response_model=TraceImported, responses=_ANSWERS, openapi_extra=_BODY)
async def import_trace(
    request: Request, registry: RegistryDep, limiter: LimiterDep, _auth: CreatorAuth
) -> TraceImported:
    """Store a recorded trace as a finished run; 201 with the run's id and its URLs."""
    spend_allowance(limiter, request, "requests")
    body = _decoded(await request.body(), request.headers.get("content-encoding", "identity"))
    record, trace_json = await asyncio.to_thread(_parse, body, registry.named)
    await asyncio.to_thread(registry.store.insert, record)
    await asyncio.to_thread(registry.store.finish, record, trace_json)
    return TraceImported(
        id=record.id,
        app_url=f"/?run={record.id}",
        embed_url=f"/embed/{record.id}",
        export_url=f"/api/runs/{record.id}/export",
    )


def _decoded(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        if len(body) > MAX_TRACE_BYTES:
            raise HTTPException(413, f"the trace is over {MAX_TRACE_BYTES} bytes")
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise HTTPException(415, f"content encoding {encoding[:40]!r} is not supported; send gzip or none")
    # wbits 47: a gzip or zlib header, detected. Decompressing stops at the cap (no zip bombs).
    inflater = zlib.decompressobj(wbits=47)
    try:
        out = inflater.decompress(body, MAX_TRACE_BYTES + 1)
    except zlib.error as exc:
        raise HTTPException(400, f"the body is not valid {encoding} data ({exc})") from None
    if len(out) > MAX_TRACE_BYTES:
        raise HTTPException(413, f"the trace is over {MAX_TRACE_BYTES} bytes once decompressed")
    return out


def _parse(body: bytes, examples: list[Any]) -> tuple[RunRecord, bytes]:
    """Validate a trace and build its run record and stored JSON; raise a 4xx when it is not one."""
    try:
        trace = trace_adapter.validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        if errors and errors[0]["type"] == "json_invalid":
            raise HTTPException(400, f"the body is not JSON: {errors[0]['msg']}") from None
        detail = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in errors[:_MAX_ERRORS]]
        raise HTTPException(422, detail) from None
    if trace.version > SCHEMA_VERSION:
        raise HTTPException(
            422,
            f"the trace is format version {trace.version}, from a newer gradwalk; this server reads "
            f"versions up to {SCHEMA_VERSION}",
        )
    if trace.version < 1:
        raise HTTPException(422, f"the trace is format version {trace.version}; versions count from 1")
    if "\x00" in trace.source:
        raise HTTPException(422, "the trace's source holds a NUL character, which no snippet can")
    events = trace.events
    if len(events) < 2 or not isinstance(events[0], RunStarted) or not isinstance(events[-1], RunFinished):
        raise HTTPException(422, "a trace starts with run_started and ends with run_finished")
    for i, event in enumerate(events):
        if event.seq != i:
            raise HTTPException(422, f"events[{i}] has seq {event.seq}; seq must count from 0 without gaps")
        if 0 < i < len(events) - 1 and isinstance(event, RunStarted | RunFinished):
            # a run starts once and finishes once: the viewer reads the stream's ends as the run's
            where = "start" if isinstance(event, RunStarted) else "end"
            raise HTTPException(422, f"events[{i}] is a {event.type}; a trace has one, at its {where}")
        if not math.isfinite(event.t):
            # the charts' time axis needs a number; JSON would carry this one as a string
            raise HTTPException(422, f"events[{i}] has t {event.t}; t must be a finite number of seconds")
    started, finished = events[0], events[-1]
    assert isinstance(started, RunStarted) and isinstance(finished, RunFinished)
    now = time.time()
    record = RunRecord(
        id=secrets.token_hex(6),
        created_at=now,
        status=finished.status,
        device=started.device,
        source=trace.source,
        title=title_for(trace.source, examples) or "imported trace",
        finished_at=now,
        message=finished.message,
        counts=finished.counts.model_dump(),
        event_count=len(events),
    )
    frames = [e.model_dump_json() for e in events]
    return record, join_trace(trace.source, frames)
