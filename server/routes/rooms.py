"""``/api/rooms`` and ``/room/{code}``: classroom live mode, one presenter followed by many viewers.

# NOTE [Room protocol]
``POST /api/rooms`` (the server's token when it has one) opens a room and answers its
``code`` (6 characters, no 0/O/1/I/L), the ``presenter_key`` and the page ``url``.

``WS /api/rooms/{code}/ws?role=viewer`` (``&token=`` when viewing needs the token) or
``?role=presenter&key=KEY``. Server -> client, JSON text frames:

* ``{"type": "state", "version": V, "source_version": S, "state": {...}}``: the room's
  latest :class:`server.rooms.RoomState`; the first frame of every connection, then (to
  viewers) each newer version. ``state`` leaves out ``source`` when this connection was
  already sent the source of version ``S``. A slow viewer skips versions, never falls
  behind (see NOTE [Room fan-out]).
* to presenters only: ``{"type": "ack", "version": V}`` once their change is version V,
  and ``{"type": "presence", "viewers": N}`` when viewers join or leave (at most 4 a second).
* to viewers only: ``{"type": "presence", "version": V, "presenter": false}`` when no
  presenter is connected (after the first state, if none is), ``... true`` when one is
  again; ``V`` is the last state version this viewer was sent.

Presenter -> server: ``{"type": "state", "state": {...some fields of RoomState}}``; the
fields given replace the room's. A frame is at most 64 KiB (close 1009): send a larger
source with ``PATCH /api/rooms/{code}/state``. Viewers send nothing. Close codes:

* 1003 a binary frame; 1008 a frame that is not a valid state change, or any frame from a viewer;
* 1013 a send to this viewer stalled for ``viewer_send_timeout_s``: reconnect (you get the latest state);
* 4400 a bad ``role``; 4401/4403 a missing/wrong key (or token); 4404 no such room;
* 4410 the room ended (the presenter ended it, or it expired);
* 4429 the room has ``max_viewers`` viewers.

HTTP, with the key in the ``X-Presenter-Key`` header: ``PATCH /api/rooms/{code}/state``
changes the state, ``DELETE /api/rooms/{code}`` ends the room. ``POST
/api/rooms/{code}/runs`` runs code for the room: the presenter always (with the key),
viewers only while ``allow_viewer_runs`` is on (else 403), whether or not the server
needs its token for ``POST /api/runs``.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, HTTPException, Request, WebSocket
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import HTTPConnection

from ..deps import CreatorAuth, LimiterDep, RegistryDep, SettingsDep, ViewerAuth, spend_allowance
from ..models import JSON_BODY_ERRORS, ErrorDetail, RunCreate, RunPublic
from ..rooms import CODE_LENGTH, Room, RoomRegistry, RoomsFull, RoomState, RoomStatePatch, normalize_code
from ..security import token_matches
from ..settings import Settings
from ..version import VERSION
from ..ws_close import close as _close
from .runs import create_run

__all__ = ["RoomCreate", "RoomCreated", "RoomPublic", "RoomsDep", "get_rooms", "router"]

router = APIRouter(tags=["rooms"])

_Close = tuple[int, str]
_PRESENCE_EVERY_S = 0.25
_404: dict[int | str, dict[str, Any]] = {404: {"model": ErrorDetail, "description": "no such room"}}
_KEY: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorDetail, "description": "no X-Presenter-Key header"},
    403: {"model": ErrorDetail, "description": "wrong presenter key"},
}


def get_rooms(conn: HTTPConnection) -> RoomRegistry:
    """Return the server's rooms."""
    rooms: RoomRegistry = conn.app.state.rooms
    return rooms


RoomsDep = Annotated[RoomRegistry, Depends(get_rooms)]
PresenterKey = Annotated[
    str | None, Header(alias="X-Presenter-Key", description="the presenter_key the room was opened with")
]


class RoomCreate(BaseModel):
    """What a new room starts with (the presenter's current code and view, say)."""

    model_config = ConfigDict(extra="forbid")
    state: RoomState | None = None


class RoomPublic(BaseModel):
    """A room as anyone with its code sees it."""

    code: str
    version: int = Field(description="grows by one with every change of state")
    state: RoomState
    viewers: int
    presenters: int
    url: str = Field(description="the page viewers open")
    ws_url: str = Field(description="the room's websocket (see the room protocol)")


class RoomCreated(RoomPublic):
    """A new room, with the key only its presenter gets."""

    presenter_key: str
    idle_s: float = Field(description="the room ends after this long without its presenter")


# --- HTTP ------------------------------------------------------------------------------------


@router.post(
    "/api/rooms",
    status_code=201,
    response_model=RoomCreated,
    responses={
        **_KEY,
        **JSON_BODY_ERRORS,
        429: {"model": ErrorDetail, "description": "too many requests"},
        503: {"model": ErrorDetail, "description": "too many rooms"},
    },
)
async def create_room(
    request: Request,
    rooms: RoomsDep,
    limiter: LimiterDep,
    _auth: CreatorAuth,
    body: RoomCreate | None = None,
) -> RoomCreated:
    """Open a room; keep ``presenter_key`` to present, give viewers the ``code`` or the ``url``."""
    spend_allowance(limiter, request, "requests")
    try:
        room = rooms.create(body.state if body else None)
    except RoomsFull as exc:
        raise HTTPException(503, f"{exc}; end a room or try later", headers={"Retry-After": "60"}) from None
    return RoomCreated(
        **_public(room, request).model_dump(), presenter_key=room.key, idle_s=rooms.limits.idle_s
    )


@router.get("/api/rooms/{code}", response_model=RoomPublic, responses=_404)
async def get_room(code: str, request: Request, rooms: RoomsDep, _auth: ViewerAuth) -> RoomPublic:
    """Describe a room and its latest state."""
    return _public(_find(rooms, code), request)


@router.patch(
    "/api/rooms/{code}/state", response_model=RoomPublic, responses={**_404, **_KEY, **JSON_BODY_ERRORS}
)
async def update_room_state(
    code: str, patch: RoomStatePatch, request: Request, rooms: RoomsDep, key: PresenterKey = None
) -> RoomPublic:
    """Change the room's state (the presenter only); every viewer gets it at once."""
    room = _find(rooms, code)
    _check_presenter(room, key)
    room.update(patch, rooms.clock())
    return _public(room, request)


@router.delete("/api/rooms/{code}", status_code=204, responses={**_404, **_KEY})
async def end_room(code: str, rooms: RoomsDep, key: PresenterKey = None) -> Response:
    """End the room (the presenter only): every viewer's socket closes with 4410."""
    room = _find(rooms, code)
    _check_presenter(room, key)
    rooms.end(room, "the presenter ended the room")
    return Response(status_code=204)


@router.post(
    "/api/rooms/{code}/runs",
    status_code=201,
    response_model=RunPublic,
    responses={
        **_404,
        **JSON_BODY_ERRORS,
        403: {"model": ErrorDetail, "description": "viewers may not run code now, or a wrong key"},
        429: {"model": ErrorDetail, "description": "too many runs: wait Retry-After seconds"},
    },
)
async def create_room_run(
    code: str,
    body: RunCreate,
    request: Request,
    rooms: RoomsDep,
    registry: RegistryDep,
    settings: SettingsDep,
    limiter: LimiterDep,
    key: PresenterKey = None,
) -> RunPublic:
    """Run code as the room's presenter (with the key) or, when the presenter allows it, as a viewer.

    The room stands in for the server's token: a viewer needs none, only the presenter's
    permission. Runs are rate-limited per client exactly like ``POST /api/runs``.
    """
    room = _find(rooms, code)
    if key is not None:
        _check_presenter(room, key)
    elif not room.state.allow_viewer_runs:
        raise HTTPException(403, f"the presenter of room {room.code} has not allowed viewers to run code")
    return await create_run(
        body=body, request=request, registry=registry, settings=settings, limiter=limiter, _auth=None
    )


def _find(rooms: RoomRegistry, code: str) -> Room:
    room = rooms.get(code)
    if room is None:
        raise HTTPException(404, _no_room(code))
    return room


def _no_room(code: str) -> str:
    if normalize_code(code) is None:
        return f"{code[:20]!r} is not a room code: a code is {CODE_LENGTH} letters and digits"
    return f"no room {normalize_code(code)}: it may have ended; ask the presenter for the code"


def _check_presenter(room: Room, key: str | None) -> None:
    if key is None:
        raise HTTPException(401, "only the presenter may do this: send the X-Presenter-Key header")
    if not room.key_matches(key):
        raise HTTPException(403, "wrong presenter key for this room")


def _public(room: Room, request: Request) -> RoomPublic:
    url = str(request.base_url).rstrip("/") + f"/room/{room.code}"
    return RoomPublic(**room.public(), url=url)


# --- the websocket ---------------------------------------------------------------------------


class PresenterMessage(BaseModel):
    """The one message a presenter sends: a change of state."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["state"]
    state: RoomStatePatch


class _Conn:
    """One connection's progress: since when a send is pending, and the presenter's last version."""

    __slots__ = ("acked", "poke", "sending_since")

    def __init__(self) -> None:
        self.sending_since: float | None = None
        self.acked = 0
        self.poke = asyncio.Event()


@router.websocket("/api/rooms/{code}/ws")
async def room_socket(ws: WebSocket, code: str, rooms: RoomsDep, settings: SettingsDep) -> None:
    """Follow a room, or present to it (see NOTE [Room protocol])."""
    # Accept first: a close before accepting reaches the client as a bare HTTP 403, no reason.
    await ws.accept()
    role = ws.query_params.get("role", "viewer")
    if role not in ("viewer", "presenter"):
        await _close(ws, 4400, f"role must be 'viewer' or 'presenter', not {role[:30]!r}")
        return
    room = rooms.get(code)
    if room is None:
        await _close(ws, 4404, _no_room(code))
        return
    presenter = role == "presenter"
    refused = _refusal(ws, room, rooms, settings, presenter)
    if refused is not None:
        await _close(ws, *refused)
        return
    conn = _Conn()
    room.join(presenter, rooms.clock())
    if presenter:
        room.watchers.add(conn.poke)
    try:
        close_code, reason = await _serve(ws, room, rooms, settings, conn, presenter)
    finally:
        room.watchers.discard(conn.poke)
        room.leave(presenter, rooms.clock())
    if close_code:
        await _close(ws, close_code, reason)


def _refusal(
    ws: WebSocket, room: Room, rooms: RoomRegistry, settings: Settings, presenter: bool
) -> _Close | None:
    if presenter:
        key = ws.query_params.get("key")
        if key is None:
            return 4401, "presenting needs the room's key: connect with ?role=presenter&key="
        if not room.key_matches(key):
            return 4403, "wrong presenter key for this room"
        return None
    token = ws.query_params.get("token")
    if settings.token_for_viewing and not (settings.token and token_matches(token, settings.token)):
        return (4401 if token is None else 4403), "this server needs ?token= to view"
    if room.viewers >= rooms.limits.max_viewers:
        return 4429, f"room {room.code} is full ({room.viewers} viewers)"
    return None


async def _serve(
    ws: WebSocket, room: Room, rooms: RoomRegistry, settings: Settings, conn: _Conn, presenter: bool
) -> _Close:
    """Send and listen until one side is done; return the close to send (code 0: none)."""
    if presenter:
        sender = asyncio.create_task(_send_presenter(ws, room, conn))
        reader = asyncio.create_task(_read_presenter(ws, room, rooms, conn))
    else:
        sender = asyncio.create_task(_send_viewer(ws, room, conn))
        reader = asyncio.create_task(_read_viewer(ws))
    loop = asyncio.get_running_loop()
    check_every = min(5.0, settings.viewer_send_timeout_s / 2)
    try:
        while True:
            done, _ = await asyncio.wait(
                {sender, reader}, timeout=check_every, return_when=asyncio.FIRST_COMPLETED
            )
            for task in (sender, reader):
                if task in done:
                    return task.result() if not task.exception() else (0, "")
            if not rooms.check(room):
                return 4410, room.ended or "the room ended"
            since = conn.sending_since
            if since is not None and loop.time() - since > settings.viewer_send_timeout_s:
                return 1013, "this viewer stalled; reconnect to get the latest state"
    finally:
        for task in (sender, reader):
            task.cancel()
        await asyncio.gather(sender, reader, return_exceptions=True)


async def _send_viewer(ws: WebSocket, room: Room, conn: _Conn) -> _Close:
    loop = asyncio.get_running_loop()
    sent = have_source = 0
    told_here = True  # a viewer takes the presenter to be there until told otherwise
    while room.ended is None:
        if room.version > sent:
            # Read version, source version and frame together: nothing can change between them.
            version, source_version, frame = room.version, room.source_version, room.frame(have_source)
            conn.sending_since = loop.time()
            await ws.send_text(frame)
            conn.sending_since = None
            sent, have_source = version, source_version
        elif (room.presenters > 0) != told_here:
            told_here = room.presenters > 0
            presence = {"type": "presence", "version": sent, "presenter": told_here}
            conn.sending_since = loop.time()
            await ws.send_text(json.dumps(presence))
            conn.sending_since = None
        else:
            await room.wait_beyond(sent, told_here)
    return 4410, room.ended


async def _read_viewer(ws: WebSocket) -> _Close:
    message = await ws.receive()
    if message["type"] == "websocket.disconnect":
        return 0, ""
    if message.get("text") is None:
        return 1003, "binary frames are not accepted (viewers send nothing)"
    return 1008, "viewers send nothing on this socket"


async def _send_presenter(ws: WebSocket, room: Room, conn: _Conn) -> _Close:
    loop = asyncio.get_running_loop()
    # The latest state first: a presenter page that reloads picks up where it was.
    conn.acked = sent_ack = room.version
    await ws.send_text(room.frame(0))
    sent_viewers, last_presence = -1, -math.inf
    while room.ended is None:
        if conn.acked > sent_ack:
            sent_ack = conn.acked
            await ws.send_text(json.dumps({"type": "ack", "version": sent_ack}))
            continue
        if room.viewers != sent_viewers:
            pause = last_presence + _PRESENCE_EVERY_S - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)
            sent_viewers, last_presence = room.viewers, loop.time()
            await ws.send_text(json.dumps({"type": "presence", "viewers": sent_viewers}))
            continue
        await conn.poke.wait()
        conn.poke.clear()
    return 4410, room.ended


async def _read_presenter(ws: WebSocket, room: Room, rooms: RoomRegistry, conn: _Conn) -> _Close:
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return 0, ""
        text = message.get("text")
        if text is None:
            return 1003, 'binary frames are not accepted; send JSON text {"type": "state", ...}'
        try:
            change = PresenterMessage.model_validate_json(text)
        except ValidationError as exc:
            return 1008, f"bad message: {_first_error(exc)}"
        if room.ended is not None:
            return 4410, room.ended
        conn.acked = room.update(change.state, rooms.clock())
        conn.poke.set()


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


# --- pages -----------------------------------------------------------------------------------


@router.get("/room", response_class=HTMLResponse, include_in_schema=False)
async def join_page(request: Request, code: str | None = None) -> Response:
    """Show the join form; with ``?code=`` go to that room's page."""
    if code:
        normalized = normalize_code(code)
        if normalized is not None:
            return RedirectResponse(f"/room/{normalized}", status_code=303)
        return _join_page(request, code, f"{code[:20]!r} is not a room code", status=400)
    return _join_page(request, "", None)


@router.get("/room/{code}", response_class=HTMLResponse, include_in_schema=False)
async def room_page(
    code: str, request: Request, rooms: RoomsDep, registry: RegistryDep, settings: SettingsDep
) -> Response:
    """Render the app in room mode (presenter or viewer: the page decides by the key it holds)."""
    room = rooms.get(code)
    if room is None:
        return _join_page(request, code, _no_room(code), status=404)
    if room.code != code:
        return RedirectResponse(f"/room/{room.code}", status_code=307)
    bootstrap = {
        "api": "/api",
        "cuda": bool(registry.pool.cuda_available),
        "version": VERSION,
        "token_required": settings.token is not None,
        "room": {
            "code": room.code,
            "ws_url": f"/api/rooms/{room.code}/ws",
            "url": _public(room, request).url,
        },
    }
    return request.app.state.templates.TemplateResponse(
        request, "room.html", {"bootstrap": bootstrap, "room": room}
    )


def _join_page(request: Request, code: str, error: str | None, status: int = 200) -> Response:
    context = {"bootstrap": {"version": VERSION}, "code": code[:20], "error": error}
    return request.app.state.templates.TemplateResponse(
        request, "room_join.html", context, status_code=status
    )
