"""``GET /api/runs/{id}/export``: a stored run as one self-contained HTML page, downloaded.

The page is :func:`server.export.render_export`'s: the trace, the viewer and its CSS inline,
working from disk or any static host with no server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response

from ..chart_choices import (
    CALL_CHOICE,
    COMPARE_PATTERN,
    HIDE_IDS_TEXT,
    HIDE_PATTERN,
    MAX_HIDDEN,
    CallChoice,
    Norms,
    YScale,
    parse_hide,
)
from ..deps import RegistryDep, ViewerAuth
from ..errors import no_run
from ..export import (
    SELECTION_PATTERN,
    BundleMissing,
    check_call_in,
    check_selection_in,
    check_step_in,
    render_export,
    safe_id,
)
from ..live import LiveRun
from ..models import json_error
from ..storage import RunRecord

__all__ = ["router"]

router = APIRouter(prefix="/api/runs", tags=["runs"])

_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/html": {}}, "description": "the page, as an attachment"},
    404: json_error("no such run"),
    409: json_error("the run is still going"),
    503: json_error("the viewer bundle is not built on this server"),
}


@router.get("/{run_id}/export", response_class=HTMLResponse, responses=_ANSWERS)
async def export_run(
    run_id: str,
    registry: RegistryDep,
    _auth: ViewerAuth,
    view: Annotated[
        Literal["graph", "stepper", "tape", "inspector", "code", "charts"] | None,
        Query(description="the tab the page opens on (default: the stepper)"),
    ] = None,
    step: Annotated[int | None, Query(ge=0, le=10_000_000, description="backward step, 0-based")] = None,
    call: Annotated[
        CALL_CHOICE | None,
        Query(
            description="draw this backward() call's graph only, counted from 1; all: every call's "
            "(default: the run's own, its first call where a loop's calls copy one big graph)"
        ),
    ] = None,
    sel: Annotated[
        str | None,
        Query(
            pattern=SELECTION_PATTERN,
            description="the node (n12) or tensor (t3) picked, as the app's links write it: "
            "the inspector shows it, the graph rings it",
        ),
    ] = None,
    controls: Annotated[
        bool | Literal["show", "shown", "hide", "hidden"],
        Query(
            description="show the tabs and the stepper's buttons: true or show (the default), false or hide, "
            "as an embed's link writes it"
        ),
    ] = True,
    theme: Annotated[Literal["light", "dark"] | None, Query(description="default: the reader's")] = None,
    yscale: Annotated[YScale | None, Query(description="the charts' y axes (default: auto)")] = None,
    norms: Annotated[
        Norms | None, Query(description="the charts' gradient and update norms (default: together)")
    ] = None,
    compare: Annotated[
        str | None,
        Query(
            max_length=64,
            pattern=COMPARE_PATTERN,
            description="a finished run drawn dashed under this one on the charts",
        ),
    ] = None,
    hide: Annotated[
        str | None,
        Query(
            description=f"the charts hidden, comma-separated (at most {MAX_HIDDEN}): {HIDE_IDS_TEXT}",
            # checked by parse_hide, whose refusal names the bad id; the schema says the same
            json_schema_extra={"pattern": HIDE_PATTERN},
        ),
    ] = None,
) -> Response:
    """Download a finished run as one HTML file that works offline (``file://``, an LMS)."""
    try:
        hidden = parse_hide(hide)
    except ValueError as exc:
        # a validation error as FastAPI's own (detail: a list), in parse_hide's words
        error = {"type": "value_error", "loc": ("query", "hide"), "msg": str(exc), "input": hide}
        raise RequestValidationError([error]) from None
    run = await registry.find(run_id) if len(run_id) <= 64 else None
    if run is None:
        raise HTTPException(404, no_run(run_id))
    if not _finished(run):
        raise HTTPException(409, "the run is still going; export it once it has finished")
    data = await registry.trace(run_id)
    if data is None:
        raise HTTPException(404, f"run {run_id[:64]!r} has no stored trace")
    if step is not None or call is not None or sel is not None:
        _check_in_run(await asyncio.to_thread(_events_of, data), step=step, call=call, sel=sel)
    compared = None
    if compare is not None:
        other = await registry.find(compare)
        if other is None or not _finished(other) or (other_data := await registry.trace(compare)) is None:
            raise HTTPException(404, f"no finished run {compare[:64]!r} to compare with")
        compared = (compare, other_data)
    try:
        page = await asyncio.to_thread(
            render_export,
            data,
            title=run.title,
            view=view,
            step=step,
            controls=controls if isinstance(controls, bool) else controls in ("show", "shown"),
            theme=theme,
            yscale=yscale,
            per_parameter=norms == "per-parameter",
            compare=compared,
            hide=hidden,
            call=call,
            sel=sel,
        )
    except BundleMissing as exc:
        raise HTTPException(503, str(exc)) from None
    return HTMLResponse(
        page,
        headers={
            "Content-Disposition": f'attachment; filename="gradwalk-{safe_id(run_id, "run")}.html"',
            "Cache-Control": "no-store",
        },
    )


def _events_of(data: str | bytes) -> list[Any]:
    """The events of a stored trace (``[]`` where it has none: render_export says so)."""
    trace = json.loads(data)
    events = trace.get("events") if isinstance(trace, dict) else None
    return events if isinstance(events, list) else []


def _check_in_run(events: list[Any], *, step: int | None, call: CallChoice | None, sel: str | None) -> None:
    """Refuse, as FastAPI's own validation errors at the query's name, a ``step`` past the end
    of the run's backward walk, a ``call`` it did not record in full and a ``sel`` naming a node
    or tensor it never made: the page would open on the last step, the default graph or "not
    in this trace" without a word (``gradwalk export`` refuses the same)."""
    errors = []
    checks: list[tuple[str, Any, Callable[[], None]]] = [
        ("step", step, lambda: check_step_in(events, step)),
        ("call", call, lambda: check_call_in(events, call)),
        ("sel", sel, lambda: check_selection_in(events, sel)),
    ]
    for name, value, check in checks:
        try:
            check()
        except ValueError as exc:
            errors.append({"type": "value_error", "loc": ("query", name), "msg": str(exc), "input": value})
    if errors:
        raise RequestValidationError(errors)


def _finished(run: LiveRun | RunRecord) -> bool:
    """Whether ``run`` has finished: stored, or still in memory after its ``run_finished``
    (being stored: its status already says it finished, and a Download right then must not
    be told to wait)."""
    return not isinstance(run, LiveRun) or run.finished
