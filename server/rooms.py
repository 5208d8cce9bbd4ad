"""Classroom rooms: one presenter's state (code, run, view, step) followed live by many viewers.

A room ends when the presenter ends it, when it has been inactive for ``RoomLimits.idle_s``
(no presenter connected and no change), or after ``RoomLimits.max_age_s`` whatever happens.
With a store attached (the server's SQLite file, :meth:`RoomRegistry.attach`), a room also
outlives a server restart: its code, the hash of its presenter key, its latest state and
its times are saved, and the next server brings it back; the connections, which a restart
drops, reconnect on their own (the browser's room socket retries) and get the latest state.

>>> rooms = RoomRegistry()
>>> room = rooms.create(RoomState(source="import torch\\n"))
>>> len(room.code), room.version
(6, 1)
>>> room.update(RoomStatePatch(step=3)), room.state.step
(2, 3)

# NOTE [Room fan-out]
The presenter's state is kept whole, with a version that grows by one per change. Each
version is serialized once, into two frames: one with the source and one without it (for
viewers that already have that source; most changes are steps, and a source can be
100,000 characters). Every viewer connection has its own sender, which waits until the
version passes the last one it sent and then sends the *latest* frame: a slow viewer
skips the states it was too slow for instead of queueing them, so its queue is at most
one frame long, it costs no memory per change, and it holds back nobody. A viewer whose
send stalls is dropped (close 1013); since the first frame any connection gets is the
latest state, a viewer that reconnects catches up at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .rooms_state import CODE_ALPHABET, CODE_LENGTH, RoomState, RoomStatePatch, normalize_code
from .storage import RoomRecord, RoomStore

__all__ = [
    "CODE_ALPHABET",
    "CODE_LENGTH",
    "Room",
    "RoomLimits",
    "RoomRegistry",
    "RoomState",
    "RoomStatePatch",
    "RoomsFull",
    "hash_key",
    "normalize_code",
]

log = logging.getLogger("gradwalk.server")


@dataclass(frozen=True)
class RoomLimits:
    """How many rooms and viewers a server holds, and how long an idle room lives."""

    max_rooms: int = 500
    max_viewers: int = 1_000
    idle_s: float = 2 * 3600.0
    max_age_s: float = 24 * 3600.0


class RoomsFull(Exception):
    """Raised by :meth:`RoomRegistry.create` when the server holds ``max_rooms`` rooms."""


@dataclass(eq=False)
class Room:
    """One room: its code, the presenter's key, the latest state and who is connected.

    ``key`` is the presenter's key, known only in the server that opened the room (it is
    handed out once); ``key_hash`` is what presented keys are checked against, and what a
    store keeps.
    """

    code: str
    key: str
    state: RoomState
    created: float
    last_active: float
    created_at: float = field(default_factory=time.time)
    version: int = 0
    source_version: int = 0
    viewers: int = 0
    presenters: int = 0
    ended: str | None = None
    _full: str = ""
    _light: str = ""
    watchers: set[asyncio.Event] = field(default_factory=set, repr=False)
    _changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    key_hash: str = ""
    # called after every change worth keeping (set by a registry with a store)
    on_change: Callable[[Room], None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.key_hash:
            self.key_hash = hash_key(self.key)
        self._publish(source_changed=True)

    def key_matches(self, key: str | None) -> bool:
        """Compare a presented key with the room's in constant time."""
        return key is not None and secrets.compare_digest(hash_key(key), self.key_hash)

    def update(self, patch: RoomStatePatch, now: float | None = None) -> int:
        """Apply the presenter's ``patch``, wake every viewer, and return the new version."""
        changes = {name: getattr(patch, name) for name in patch.model_fields_set}
        source_changed = "source" in changes and changes["source"] != self.state.source
        self.state = self.state.model_copy(update=changes)
        self.last_active = time.monotonic() if now is None else now
        self._publish(source_changed=source_changed)
        if self.on_change is not None:
            self.on_change(self)
        return self.version

    def frame(self, have_source_version: int) -> str:
        """Return the latest state frame, without the source when the client already has it."""
        return self._light if have_source_version == self.source_version else self._full

    async def wait_beyond(self, version: int, presenter_here: bool | None = None) -> None:
        """Wait until the state is newer than ``version`` or the room has ended; with
        ``presenter_here``, also until whether a presenter is connected is no longer that."""
        while self.version <= version and self.ended is None:
            if presenter_here is not None and (self.presenters > 0) != presenter_here:
                return
            await self._changed.wait()

    def join(self, presenter: bool, now: float | None = None) -> None:
        """Count a connection in (a presenter's counts as activity)."""
        if presenter:
            self.presenters += 1
            self.last_active = time.monotonic() if now is None else now
            self._wake()  # viewers hear that the presenter is here
        else:
            self.viewers += 1
            self._poke_watchers()

    def leave(self, presenter: bool, now: float | None = None) -> None:
        """Count a connection out."""
        if presenter:
            self.presenters -= 1
            self.last_active = time.monotonic() if now is None else now
            self._wake()  # viewers hear that the presenter left
            if self.on_change is not None:
                self.on_change(self)  # when the presenter left counts for the idle limit
        else:
            self.viewers -= 1
            self._poke_watchers()

    def end(self, reason: str) -> None:
        """End the room: every connection closes with 4410 and ``reason``."""
        if self.ended is None:
            self.ended = reason
            self._changed.set()
            self._poke_watchers()

    def expired(self, limits: RoomLimits, now: float) -> str | None:
        """Say why the room should end now, or None while it is alive."""
        if now - self.created > limits.max_age_s:
            return f"the room ended after {limits.max_age_s / 3600:g} hours"
        if self.presenters == 0 and now - self.last_active > limits.idle_s:
            return "the room expired: the presenter has been away too long"
        return None

    def public(self) -> dict[str, Any]:
        """Describe the room for the HTTP API (everything but the presenter's key)."""
        return {
            "code": self.code,
            "version": self.version,
            "state": self.state,
            "viewers": self.viewers,
            "presenters": self.presenters,
            "ws_url": f"/api/rooms/{self.code}/ws",
        }

    def _publish(self, *, source_changed: bool) -> None:
        self.version += 1
        if source_changed:
            self.source_version = self.version
        state = self.state.model_dump()
        head = {"type": "state", "version": self.version, "source_version": self.source_version}
        self._full = json.dumps({**head, "state": state}, ensure_ascii=False, separators=(",", ":"))
        del state["source"]
        self._light = json.dumps({**head, "state": state}, ensure_ascii=False, separators=(",", ":"))
        self._wake()

    def _wake(self) -> None:
        # Waiters of the old Event are released by set(); new ones wait on a fresh one.
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _poke_watchers(self) -> None:
        # Each presenter connection adds an Event to ``watchers`` to hear of joins and leaves.
        for event in self.watchers:
            event.set()


class RoomRegistry:
    """Own the rooms: create them with fresh codes, find them by code, end the expired ones.

    ``clock`` measures activity (monotonic seconds); ``wall`` (seconds since the epoch)
    dates what a store keeps, since a monotonic clock starts again with each process.
    """

    # a room's changes are saved at most this often (a presenter stepping or playing sends
    # several a second, and the state carries the source)
    SAVE_EVERY_S = 1.0

    def __init__(
        self,
        limits: RoomLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.limits = limits or RoomLimits()
        self.clock = clock
        self.wall = wall
        self.rooms: dict[str, Room] = {}
        self._store: RoomStore | None = None
        self._unsaved: set[str] = set()
        self._save_timer: asyncio.TimerHandle | None = None
        self._writer: ThreadPoolExecutor | None = None

    # --- persistence ------------------------------------------------------------------------

    def attach(self, store: RoomStore) -> int:
        """Keep rooms in ``store`` from now on, and bring back the rooms it holds that have
        not expired (the previous server's); return how many came back."""
        self._store = store
        back = 0
        now, wall = self.clock(), self.wall()
        for record in self._stored(store):
            created = now - (wall - record.created_at)
            last_active = now - (wall - record.last_active_at)
            try:
                state = RoomState.model_validate(record.state)
            except ValueError:
                state = None
            if (
                state is None
                or record.code in self.rooms
                or len(self.rooms) >= self.limits.max_rooms
                or now - created > self.limits.max_age_s
                or now - last_active > self.limits.idle_s
            ):
                self._forget(record.code)
                continue
            room = Room(
                code=record.code,
                key="",
                key_hash=record.key_hash,
                state=state,
                created=created,
                last_active=last_active,
                version=record.version,
            )
            room.on_change = self._changed
            self.rooms[room.code] = room
            back += 1
        return back

    def detach(self) -> None:
        """Save what is still unsaved and stop using the store (the server is stopping)."""
        if self._save_timer is not None:
            self._save_timer.cancel()
            self._save_timer = None
        if self._writer is not None:
            self._writer.shutdown(wait=True)  # the writes already handed over land first
            self._writer = None
        self._write(self._take_unsaved())  # now, whatever the caller: the store goes next
        self._store = None

    def _changed(self, room: Room) -> None:
        # save soon, once for a burst of changes; without an event loop (a script), now
        self._unsaved.add(room.code)
        if self._save_timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._save_unsaved()
            return
        self._save_timer = loop.call_later(self.SAVE_EVERY_S, self._save_unsaved)

    def _save_unsaved(self) -> None:
        # the records are taken now (on the event loop, if any); the writes happen in order
        self._save_timer = None
        records = self._take_unsaved()
        if records:
            self._in_order(self._write, records)

    def _in_order(self, write: Callable[[Any], None], arg: Any) -> None:
        """Hand a store write to one thread of its own, so storage stays off the event loop
        and saves and deletes land in the order they were asked; with no event loop (a
        script, a test) and nothing queued, write now."""
        if self._writer is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                write(arg)
                return
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradwalk-rooms")
        self._writer.submit(write, arg)

    def _take_unsaved(self) -> list[RoomRecord]:
        codes, self._unsaved = self._unsaved, set()
        return [self._record(room) for code in codes if (room := self.rooms.get(code)) and room.ended is None]

    def _record(self, room: Room) -> RoomRecord:
        now, wall = self.clock(), self.wall()
        return RoomRecord(
            code=room.code,
            key_hash=room.key_hash,
            state=room.state.model_dump(),
            version=room.version,
            created_at=wall - (now - room.created),
            last_active_at=wall - (now - room.last_active),
        )

    def _write(self, records: list[RoomRecord]) -> None:
        store = self._store
        if store is None:
            return
        for record in records:
            try:
                store.save_room(record)
            except sqlite3.Error as exc:  # the room goes on in memory; only a restart would lose it
                log.warning("could not save room %s: %s", record.code, exc)

    def _forget(self, code: str) -> None:
        self._unsaved.discard(code)
        self._in_order(self._delete, code)  # after any save of it already handed over

    def _delete(self, code: str) -> None:
        store = self._store
        if store is None:
            return
        try:
            store.delete_room(code)
        except sqlite3.Error as exc:
            log.warning("could not delete room %s: %s", code, exc)

    @staticmethod
    def _stored(store: RoomStore) -> list[RoomRecord]:
        try:
            return store.rooms()
        except sqlite3.Error as exc:
            log.warning("could not read the stored rooms: %s", exc)
            return []

    # --- rooms ------------------------------------------------------------------------------

    def create(self, state: RoomState | None = None) -> Room:
        """Open a room with ``state``; raises :class:`RoomsFull` at ``max_rooms``."""
        self.sweep()
        if len(self.rooms) >= self.limits.max_rooms:
            raise RoomsFull(f"this server already holds {len(self.rooms)} rooms")
        code = _new_code()
        while code in self.rooms:
            code = _new_code()
        now = self.clock()
        room = Room(
            code=code,
            key=secrets.token_urlsafe(24),
            state=state or RoomState(),
            created=now,
            last_active=now,
        )
        self.rooms[code] = room
        if self._store is not None:
            room.on_change = self._changed
            self._changed(room)  # saved like any change: soon, off the event loop
        return room

    def get(self, text: str) -> Room | None:
        """Return the live room ``text`` names (see :func:`normalize_code`), or None."""
        code = normalize_code(text)
        room = self.rooms.get(code) if code else None
        if room is None:
            return None
        why = room.expired(self.limits, self.clock())
        if why is not None:
            self.end(room, why)
            return None
        return room

    def end(self, room: Room, reason: str) -> None:
        """End ``room`` and forget it."""
        room.end(reason)
        if self.rooms.get(room.code) is room:
            del self.rooms[room.code]
            self._forget(room.code)

    def check(self, room: Room) -> bool:
        """Say whether ``room`` is still open, ending it first if it has expired."""
        if room.ended is None:
            why = room.expired(self.limits, self.clock())
            if why is not None:
                self.end(room, why)
        return room.ended is None

    def sweep(self) -> int:
        """End every expired room; return how many ended."""
        now = self.clock()
        stale = [(room, why) for room in self.rooms.values() if (why := room.expired(self.limits, now))]
        for room, why in stale:
            self.end(room, why)
        return len(stale)


def hash_key(key: str) -> str:
    """The SHA-256 of a presenter key, as hex: what is compared and stored instead of the key."""
    return hashlib.sha256(key.encode()).hexdigest()


def _new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
