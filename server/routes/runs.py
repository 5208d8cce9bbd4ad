"""``/api/runs``: create a run, list runs, read one, its trace, cancel it."""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, Response
from pydantic import ValidationError

from engine.events import Limits, Trace
from runner import PoolBusy

from ..deps import CreatorAuth, LimiterDep, RegistryDep, SettingsDep, ViewerAuth, spend_allowance
from ..errors import no_run
from ..live import LiveRun
from ..models import (
    JSON_BODY_ERRORS,
    ErrorDetail,
    LimitsPatch,
    RunCreate,
    RunList,
    RunPublic,
    run_public,
    run_summary,
)
from ..registry import RunRegistry
from ..settings import Settings
from ..storage import RunRecord

__all__ = ["router", "start_run"]

router = APIRouter(prefix="/api/runs", tags=["runs"])

_404: dict[int | str, dict[str, Any]] = {404: {"model": ErrorDetail, "description": "no such run"}}
_AUTH: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorDetail, "description": "the server needs a token and none was sent"},
    403: {"model": ErrorDetail, "description": "wrong token"},
}
_BUSY: dict[int | str, dict[str, Any]] = {
    **JSON_BODY_ERRORS,
    429: {"model": ErrorDetail, "description": "too many runs: wait Retry-After seconds"},
}
RunId = Annotated[str, "a run id, as returned when the run was created"]


@router.post("", status_code=201, response_model=RunPublic, responses={**_AUTH, **_BUSY})
async def create_run(
    body: RunCreate,
    request: Request,
    registry: RegistryDep,
    settings: SettingsDep,
    limiter: LimiterDep,
    _auth: CreatorAuth,
) -> RunPublic:
    """Run a snippet in a worker; stream its events from ``ws_url``.

    A run the workers cannot serve (``cuda`` on a server without a GPU) is still created
    and ends at once with status ``error`` and a message that says why.
    """
    limits = _limits(body.limits, settings)
    spend_allowance(limiter, request)
    return run_public(await start_run(registry, body.source, body.device, limits))


async def start_run(
    registry: RunRegistry, source: str, device: str, limits: Limits, title: str | None = None
) -> LiveRun:
    """Submit a run to the workers (``title``: see :meth:`RunRegistry.create`); 429 with
    ``Retry-After`` when they and their queue are full."""
    try:
        return await registry.create(source, device, limits, title)
    except PoolBusy as exc:
        retry = max(1, math.ceil(float(getattr(exc, "retry_after", 1) or 1)))
        raise HTTPException(
            429,
            f"all workers are busy and the queue is full; try again in {retry} s",
            headers={"Retry-After": str(retry)},
        ) from None


@router.get("", response_model=RunList)
async def list_runs(
    registry: RegistryDep,
    _auth: ViewerAuth,
    limit: Annotated[int, Query(ge=1, le=500, description="at most this many runs")] = 50,
) -> RunList:
    """List recent runs, newest first, without their sources."""
    return RunList(runs=[run_summary(r) for r in await registry.recent(limit)])


@router.get("/{run_id}", response_model=RunPublic, responses=_404)
async def get_run(run_id: RunId, registry: RegistryDep, _auth: ViewerAuth) -> RunPublic:
    """Describe one run (live or stored)."""
    return run_public(await _find(registry, run_id))


@router.get("/{run_id}/trace", response_model=Trace, responses=_404)
async def get_trace(run_id: RunId, registry: RegistryDep, _auth: ViewerAuth) -> Response:
    """Return the run's trace: every event so far, all of them once it finished."""
    data = await registry.trace(run_id)
    if data is None:
        raise HTTPException(404, no_run(run_id))
    return Response(data, media_type="application/json")


@router.post("/{run_id}/cancel", response_model=RunPublic, responses={**_404, **_AUTH})
async def cancel_run(run_id: RunId, registry: RegistryDep, _auth: CreatorAuth) -> RunPublic:
    """Ask a live run to stop (its stream ends with status ``cancelled``) and answer once it
    has (within ``_CANCEL_WAIT_S``; it answered at once, with the status from before, queued
    or running); a finished run is left as is."""
    run = await _find(registry, run_id)
    if isinstance(run, LiveRun):
        registry.cancel(run)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(_ended(run), _CANCEL_WAIT_S)
    return run_public(run)


_CANCEL_WAIT_S = 5.0


async def _ended(run: LiveRun) -> None:
    while not run.finished:
        await run.wait_beyond(len(run.frames))


async def _find(registry: RunRegistry, run_id: str) -> LiveRun | RunRecord:
    run = await registry.find(run_id) if len(run_id) <= 64 else None
    if run is None:
        raise HTTPException(404, no_run(run_id))
    return run


# Fields where more costs the server more; detail_every is not one (a larger k records less).
_CAPPED = (
    "max_ops",
    "max_nodes",
    "max_events",
    "max_value_elements",
    "max_output_bytes",
    "detail_steps",
    "timeout_s",
    "memory_mb",
)


def _limits(patch: LimitsPatch | None, settings: Settings) -> Limits:
    """Merge a client's limits over the server's defaults, lowered to the server's caps.

    Clamping (rather than refusing) keeps every schema-valid request acceptable; the run's
    ``run_started`` event shows the limits it ran with.
    """
    merged = settings.default_limits.model_dump()
    if patch is not None:
        merged.update(patch.model_dump(exclude_none=True))
    caps = settings.limit_caps
    for name in _CAPPED:
        merged[name] = min(merged[name], getattr(caps, name))
    try:
        return Limits.model_validate(merged)
    except ValidationError as exc:
        raise HTTPException(
            422,
            [
                {"loc": ["body", "limits", *e["loc"]], "msg": e["msg"], "type": e["type"]}
                for e in exc.errors()
            ],
        ) from None
