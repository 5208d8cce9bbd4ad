"""``WS /api/runs/{id}/events``: a run's events, one JSON text frame each, live or stored.

# NOTE [Websocket protocol]
Query: ``after`` (default -1): the last ``seq`` the client has; the stream starts at
``after + 1``, so a client that reconnects loses and repeats nothing. ``token``: the
server's token, when viewing (or cancelling) needs one.

Server -> client: each event exactly as ``event.model_dump_json()`` wrote it, in ``seq``
order; after ``run_finished`` the server closes with 1000. ``batch=1``: each text frame is
instead a JSON array of one or more consecutive events (as many as are waiting, up to
:data:`BATCH_EVENTS` or about :data:`BATCH_BYTES`), so a 26,000-event graph, or a stored
run opened later, is a few hundred frames rather than one per event (each frame costs the
server ~15 us to send, compressed, and the browser a message to handle). The web app asks
for batches; a client that does not gets one event a frame. Client -> server: the JSON text
``{"command": "cancel"}``; anything else ends the stream with a close code and a reason,
so that every frame the client receives is an event:

* 1000 the run finished and every event was sent;
* 1003 a binary frame; 1008 a frame that is not a valid command, or cancel without the token;
* 1013 the viewer fell ``viewer_max_lag`` events behind a live run, or one send stalled for
  ``viewer_send_timeout_s``: reconnect with ``?after=`` the last seq received;
* 4400 a bad ``after`` or ``batch`` (an ``after`` past a run's last event among them, live
  or finished: see :func:`_past_the_end`); 4401/4403 missing/wrong token; 4404 no such run.
"""

from __future__ import annotations

import asyncio
import re
from typing import Literal

from fastapi import APIRouter, WebSocket
from pydantic import BaseModel, ConfigDict, ValidationError

from ..deps import RegistryDep, SettingsDep
from ..errors import no_run
from ..live import LiveRun
from ..registry import RunRegistry
from ..security import token_matches
from ..settings import Settings
from ..ws_close import close as _close

__all__ = ["BATCH_BYTES", "BATCH_EVENTS", "ClientCommand", "router"]

router = APIRouter(tags=["runs"])

BATCH_EVENTS = 512  # at most this many events in one frame of a batched stream
BATCH_BYTES = 1 << 20  # and a frame stops growing past about this many bytes of events

_Close = tuple[int, str]


class ClientCommand(BaseModel):
    """The one message a client may send: ``{"command": "cancel"}``."""

    model_config = ConfigDict(extra="forbid")
    command: Literal["cancel"]


_SEQ = re.compile(r"-?[0-9]{1,18}")


@router.websocket("/api/runs/{run_id}/events")
async def run_events(ws: WebSocket, run_id: str, registry: RegistryDep, settings: SettingsDep) -> None:
    """Stream a run's events from ``after + 1`` (see NOTE [Websocket protocol])."""
    # Accept first: a close before accepting reaches the client as a bare HTTP 403, no reason.
    await ws.accept()
    after_text = ws.query_params.get("after", "-1")
    # Plain ASCII digits only: int() would also take " 7", "1_0" and other scripts' digits.
    after = int(after_text) if _SEQ.fullmatch(after_text) else -2
    if after < -1:
        await _close(
            ws, 4400, f"after must be a seq: an integer from -1 to {10**18 - 1}, not {after_text[:40]!r}"
        )
        return
    batch_text = ws.query_params.get("batch", "0")
    if batch_text not in ("0", "1"):
        await _close(ws, 4400, f"batch must be 0 or 1, not {batch_text[:40]!r}")
        return
    token = ws.query_params.get("token")
    authorized = settings.token is None or token_matches(token, settings.token)
    if settings.token_for_viewing and not authorized:
        await _close(ws, 4401 if token is None else 4403, "this server needs ?token= to view runs")
        return
    run = await _open(registry, run_id)
    if run is None:
        await _close(ws, 4404, no_run(run_id))
        return
    past = _past_the_end(run, after)
    if past is not None:
        await _close(ws, 4400, past)
        return
    run.viewers += 1
    try:
        code, reason = await _serve(ws, run, registry, settings, after + 1, authorized, batch_text == "1")
    finally:
        run.viewers -= 1
    if code:
        await _close(ws, code, reason)


async def _open(registry: RunRegistry, run_id: str) -> LiveRun | None:
    live = registry.live.get(run_id)
    if live is not None:
        return live
    stored = await registry.stored_frames(run_id) if len(run_id) <= 64 else None
    if stored is None:
        return None
    rec, frames = stored
    return LiveRun(
        id=rec.id,
        source=rec.source,
        device=rec.device,
        title=rec.title,
        created_at=rec.created_at,
        status=rec.status,
        message=rec.message,
        counts=rec.counts,
        finished_at=rec.finished_at or rec.created_at,
        frames=frames,
    )


def _past_the_end(run: LiveRun, after: int) -> str | None:
    """Say why a run cannot be resumed after ``after``, or None when it can.

    A client that claims events past a run's last one holds a history this run's trace does
    not: a server that was killed mid-run comes back with only ``run_started`` and a made-up
    ``run_finished`` (crashed, "server restarted") for it. Sending nothing and closing 1000
    left such a client without any ``run_finished``, reconnecting in vain; the close says how
    the run ended instead. A live run has sent no event it has not got yet either: waiting for
    it to end and closing 1000 sent such a client nothing at all, not even ``run_finished``.
    (``after`` = the last seq itself sends nothing more of a finished run and closes 1000: that
    client has every event.)
    """
    last = len(run.frames) - 1
    if after <= last:
        return None
    if not run.finished:
        return f"the run is still going and has sent events up to seq {last} (asked for after={after})"
    # what the client asked and how the run ended first, its message after: the close cuts
    # the reason to 123 bytes, which cut a long message mid-sentence and then the `after`
    head = f"the run ended {run.status}; no event after seq {last} (asked for after={after})"
    return f"{head}. {run.message}" if run.message else head


async def _serve(
    ws: WebSocket,
    run: LiveRun,
    registry: RunRegistry,
    settings: Settings,
    start: int,
    may_cancel: bool,
    batch: bool,
) -> _Close:
    """Send and listen until one side is done; return the close to send (code 0: none)."""
    progress = _Progress()
    sender = asyncio.create_task(_send(ws, run, start, settings.viewer_max_lag, progress, batch))
    reader = asyncio.create_task(_read(ws, run, registry, may_cancel))
    loop = asyncio.get_running_loop()
    check_every = settings.viewer_send_timeout_s / 2
    try:
        while True:
            done, _ = await asyncio.wait(
                {sender, reader}, timeout=check_every, return_when=asyncio.FIRST_COMPLETED
            )
            if sender in done:
                return sender.result() if not sender.exception() else (0, "")
            if reader in done:
                return reader.result() if not reader.exception() else (0, "")
            since = progress.sending_since
            if since is not None and loop.time() - since > settings.viewer_send_timeout_s:
                return 1013, f"viewer stalled; reconnect with ?after={progress.cursor - 1}"
    finally:
        for task in (sender, reader):
            task.cancel()
        await asyncio.gather(sender, reader, return_exceptions=True)


class _Progress:
    """Where a viewer's sender is: the next seq to send, and since when a send is pending."""

    __slots__ = ("cursor", "sending_since")

    def __init__(self) -> None:
        self.cursor = 0
        self.sending_since: float | None = None


async def _send(
    ws: WebSocket, run: LiveRun, cursor: int, max_lag: int, progress: _Progress, batch: bool
) -> _Close:
    loop = asyncio.get_running_loop()
    while True:
        frames = run.frames
        while cursor < len(frames):
            lag = len(frames) - cursor
            if lag > max_lag and not run.finished:
                return 1013, f"fell {lag} events behind the live run; reconnect with ?after={cursor - 1}"
            progress.cursor, progress.sending_since = cursor, loop.time()
            if batch:
                end = _batch_end(frames, cursor)
                await ws.send_text("[" + ",".join(frames[cursor:end]) + "]")
                cursor = end
            else:
                await ws.send_text(frames[cursor])
                cursor += 1
        progress.sending_since = None
        if run.finished and cursor >= len(run.frames):
            return 1000, "run finished"
        await run.wait_beyond(cursor)


def _batch_end(frames: list[str], start: int) -> int:
    """Where a batch of ``frames`` from ``start`` ends: as many as wait, within the caps
    (always at least one, however large)."""
    end, size, last = start + 1, len(frames[start]), min(len(frames), start + BATCH_EVENTS)
    while end < last and size + len(frames[end]) <= BATCH_BYTES:
        size += len(frames[end])
        end += 1
    return end


async def _read(ws: WebSocket, run: LiveRun, registry: RunRegistry, may_cancel: bool) -> _Close:
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return 0, ""
        text = message.get("text")
        if text is None:
            return 1003, 'binary frames are not accepted; send JSON text {"command": "cancel"}'
        try:
            ClientCommand.model_validate_json(text)
        except ValidationError:
            return 1008, f'bad message {text[:30]!r}: the only command is {{"command": "cancel"}}'
        if not may_cancel:
            return 1008, "cancelling needs the server's token: connect with ?token="
        registry.cancel(run)
