"""Rooms without the whole server: codes, state changes and frames, expiry, limits.

The last tests serve the rooms router alone on uvicorn (in a thread, on a free port) with
small limits, to see expiry and a full room close real sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from server.rooms import (
    CODE_ALPHABET,
    RoomLimits,
    RoomRegistry,
    RoomsFull,
    RoomState,
    RoomStatePatch,
    normalize_code,
)
from server.routes import rooms as rooms_routes
from server.security import RateLimiter
from server.settings import Settings
from server.storage import RoomRecord, SqliteRunStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("K7MQ2X", "K7MQ2X"),
        (" k7m-q2x ", "K7MQ2X"),
        ("k7m q2x", "K7MQ2X"),
        ("K7MQ2", None),
        ("K7MQ2XY", None),
        ("K7M0Q2", None),  # 0, O, 1, I and L are never in a code
        ("KOMQ2X", None),
        ("K1MQ2X", None),
        ("", None),
        ("<script>", None),
    ],
)
def test_codes_read_in_any_case_with_spaces_or_dashes(text: str, code: str | None) -> None:
    assert normalize_code(text) == code


def test_new_codes_are_short_unambiguous_and_distinct() -> None:
    rooms = RoomRegistry(RoomLimits(max_rooms=500))
    codes = {rooms.create().code for _ in range(500)}
    assert len(codes) == 500
    assert all(len(c) == 6 and set(c) <= set(CODE_ALPHABET) for c in codes)
    with pytest.raises(RoomsFull):
        rooms.create()


def test_a_patch_replaces_the_fields_it_gives() -> None:
    room = RoomRegistry().create(RoomState(source="a", run_id="r1", step=2))
    assert room.version == 1 and room.source_version == 1
    room.update(RoomStatePatch(step=3))
    assert (room.state.source, room.state.run_id, room.state.step, room.version) == ("a", "r1", 3, 2)
    room.update(RoomStatePatch.model_validate({"run_id": None}))
    assert room.state.run_id is None and room.state.step == 3
    room.update(RoomStatePatch(source="a"))  # the same source: viewers need not get it again
    assert room.version == 4 and room.source_version == 1
    room.update(RoomStatePatch(source="b"))
    assert room.source_version == 5


@pytest.mark.parametrize(
    "patch",
    [
        {"source": None},
        {"view": None},
        {"allow_viewer_runs": None},
        {"step": -1},
        {"view": "Tape!"},
        {"x": 1},
        {"op": False},  # lax validation took it for op 0 (found by the API fuzz)
        {"step": "3"},
        {"step": 2.5},
        {"allow_viewer_runs": 1},
        {"hide": None},
        {"hide": "grad,metric:a\nb"},
        {"hide": "x" * 129},
        {"hide": ",".join(f"metric:m{i}" for i in range(33))},
        {"call": 0},
        {"call": -1},
        {"call": "2"},
        {"call": 1.5},
        {"call": "every"},
        {"call": "ALL"},
    ],
)
def test_bad_patches_do_not_validate(patch: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        RoomStatePatch.model_validate(patch)


def test_the_charts_hidden_default_to_none_and_are_kept_as_given() -> None:
    assert RoomState().hide == "" and "hide" not in RoomStatePatch().model_fields_set
    room = RoomRegistry().create(RoomState())
    room.update(RoomStatePatch.model_validate({"hide": "grad,metric:val_acc"}))
    assert room.state.hide == "grad,metric:val_acc"
    assert json.loads(room.frame(0))["state"]["hide"] == "grad,metric:val_acc"
    room.update(RoomStatePatch.model_validate({"hide": "loss,metric:acc (%)"}))
    assert room.state.hide == "loss,metric:acc (%)"
    room.update(RoomStatePatch.model_validate({"hide": ""}))
    assert room.state.hide == ""


@pytest.mark.parametrize(
    "hide",
    ["grad,metric:a\tb", "x" * 129, ",".join(f"metric:m{i}" for i in range(33)), "grad,,lr", "grad\n", None],
)
def test_bad_hidden_charts_are_refused_as_hide(hide: Any) -> None:
    for model in (RoomState, RoomStatePatch):
        with pytest.raises(ValidationError) as refused:
            model.model_validate({"hide": hide})
        # refused for what it says, not as an unknown field
        assert [(e["loc"], e["type"]) for e in refused.value.errors()] in (
            [(("hide",), "string_pattern_mismatch")],
            [(("hide",), "string_type")],
        )


def test_a_whole_number_written_as_a_float_is_that_number() -> None:
    assert RoomStatePatch.model_validate({"op": 3.0}).op == 3  # an integer, to JSON Schema


def test_frames_leave_out_a_source_the_viewer_has() -> None:
    room = RoomRegistry().create(RoomState(source="x = 1\n"))
    room.update(RoomStatePatch(step=1))
    full, light = json.loads(room.frame(0)), json.loads(room.frame(room.source_version))
    assert full["state"]["source"] == "x = 1\n" and "source" not in light["state"]
    assert full["version"] == light["version"] == 2 and full["source_version"] == 1
    assert {k: v for k, v in full["state"].items() if k != "source"} == light["state"]


def test_rooms_expire_when_the_presenter_is_away_and_after_max_age() -> None:
    clock = Clock()
    rooms = RoomRegistry(RoomLimits(idle_s=60, max_age_s=3600), clock=clock)
    idle, presented = rooms.create(), rooms.create()
    presented.join(True, clock.now)
    clock.now += 61
    assert rooms.get(idle.code) is None and idle.ended is not None and "expired" in idle.ended
    assert rooms.get(presented.code) is presented  # a connected presenter keeps it alive
    presented.update(RoomStatePatch(step=1), clock.now)
    presented.leave(True, clock.now)
    clock.now += 59
    assert rooms.get(presented.code) is presented
    clock.now += 2
    assert rooms.sweep() == 1 and presented.ended is not None
    old = rooms.create()
    old.join(True, clock.now)
    clock.now += 3601
    assert not rooms.check(old) and "hours" in (old.ended or "")
    assert rooms.rooms == {}


def test_ending_a_room_wakes_everyone_waiting_on_it() -> None:
    async def scenario() -> None:
        room = RoomRegistry().create()
        waiter = asyncio.create_task(room.wait_beyond(room.version))
        watcher = asyncio.Event()
        room.watchers.add(watcher)
        await asyncio.sleep(0)
        room.end("the presenter ended the room")
        await asyncio.wait_for(waiter, 1)
        assert watcher.is_set()

    asyncio.run(scenario())


# --- the rooms router alone, with small limits ----------------------------------------------


@pytest.fixture()
def small_server() -> Iterator[str]:
    """The rooms router on uvicorn in a thread: 2 viewers a room, 1 s idle, checks every 0.5 s."""
    app = FastAPI()
    app.include_router(rooms_routes.router)
    app.state.rooms = RoomRegistry(RoomLimits(max_viewers=2, idle_s=1.0))
    app.state.settings = Settings(viewer_send_timeout_s=1.0)
    app.state.limiter = RateLimiter(100, 100)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def test_an_idle_room_expires_and_closes_its_viewers_4410(small_server: str) -> None:
    room = httpx.post(f"http://{small_server}/api/rooms").json()

    async def scenario() -> tuple[int | None, str, float]:
        started = time.perf_counter()
        async with connect(f"ws://{small_server}{room['ws_url']}") as viewer:
            with contextlib.suppress(ConnectionClosed):
                while True:  # the state, that no presenter is there, then the close
                    await asyncio.wait_for(viewer.recv(), 10)
            return viewer.close_code, viewer.close_reason or "", time.perf_counter() - started

    code, reason, elapsed = asyncio.run(scenario())
    assert code == 4410 and "expired" in reason and elapsed < 5
    assert httpx.get(f"http://{small_server}/api/rooms/{room['code']}").status_code == 404


def test_a_full_room_refuses_more_viewers_4429(small_server: str) -> None:
    room = httpx.post(f"http://{small_server}/api/rooms").json()
    url = f"ws://{small_server}{room['ws_url']}?role=viewer"

    async def scenario() -> tuple[int | None, str]:
        async with (
            connect(f"ws://{small_server}{room['ws_url']}?role=presenter&key={room['presenter_key']}"),
            connect(url) as a,
            connect(url) as b,
        ):
            await a.recv()
            await b.recv()
            async with connect(url) as third:
                with contextlib.suppress(ConnectionClosed):
                    await asyncio.wait_for(third.recv(), 10)
                return third.close_code, third.close_reason or ""

    code, reason = asyncio.run(scenario())
    assert code == 4429 and "full" in reason


# --- rooms kept in a store -------------------------------------------------------------------


class CountingStore(SqliteRunStore):
    """The real SQLite store, counting its room writes."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.saves = 0

    def save_room(self, room: RoomRecord) -> None:
        self.saves += 1
        super().save_room(room)


def test_stored_rooms_come_back_with_their_state_times_and_key() -> None:
    store = CountingStore()
    clock, wall = Clock(), Clock()
    wall.now = 1_700_000_000.0
    first = RoomRegistry(RoomLimits(idle_s=600, max_age_s=3600), clock=clock, wall=wall)
    assert first.attach(store) == 0
    room = first.create(RoomState(source="x = 1\n"))
    room.update(RoomStatePatch(step=2, view="stepper"), clock.now)  # no event loop: saved at once
    ended = first.create()
    first.end(ended, "the presenter ended the room")
    assert [r.code for r in store.rooms()] == [room.code]
    assert room.key not in json.dumps([vars(r) for r in store.rooms()])  # only its hash is kept
    first.detach()

    # a new server, 5 minutes later (its monotonic clock starts elsewhere)
    clock.now, wall.now = 50.0, wall.now + 300
    second = RoomRegistry(RoomLimits(idle_s=600, max_age_s=3600), clock=clock, wall=wall)
    assert second.attach(store) == 1
    back = second.get(room.code)
    assert back is not None and back.state.step == 2 and back.state.source == "x = 1\n"
    assert back.version > room.version
    assert back.key_matches(room.key) and not back.key_matches("guess")
    assert clock.now - back.last_active == pytest.approx(300)
    # ... and it still expires on time: idle 600 s in all, 300 of them before the restart
    clock.now += 299
    assert second.get(room.code) is not None
    clock.now += 2
    assert second.get(room.code) is None
    assert store.rooms() == []  # an expired room is forgotten by the store too


def test_rooms_that_expired_while_the_server_was_down_stay_gone() -> None:
    store = CountingStore()
    clock, wall = Clock(), Clock()
    first = RoomRegistry(RoomLimits(idle_s=60, max_age_s=3600), clock=clock, wall=wall)
    first.attach(store)
    first.create()
    first.detach()
    wall.now += 61
    second = RoomRegistry(RoomLimits(idle_s=60, max_age_s=3600), clock=clock, wall=wall)
    assert second.attach(store) == 0 and second.rooms == {} and store.rooms() == []


def test_a_burst_of_changes_is_saved_once() -> None:
    """A presenter playing the stepper sends several changes a second: each room is saved
    at most once a second, and whatever is unsaved when the server stops is saved then."""
    store = CountingStore()
    rooms = RoomRegistry()
    rooms.SAVE_EVERY_S = 0.05
    rooms.attach(store)
    room = rooms.create(RoomState(source="x = 1\n"))
    assert store.saves == 1

    async def play() -> None:
        for step in range(20):
            room.update(RoomStatePatch(step=step))
        await asyncio.sleep(0.2)
        room.update(RoomStatePatch(step=99))  # the last change, just before the server stops

    asyncio.run(play())
    assert store.saves == 2
    rooms.detach()
    assert store.saves == 3 and store.rooms()[0].state["step"] == 99


def test_a_failing_store_never_breaks_a_room() -> None:
    class Broken(CountingStore):
        def save_room(self, room: RoomRecord) -> None:
            raise sqlite3.OperationalError("disk I/O error")

    rooms = RoomRegistry()
    rooms.attach(Broken())
    room = rooms.create()
    assert room.update(RoomStatePatch(step=1)) == 2 and rooms.get(room.code) is room


def test_a_room_ended_while_its_save_is_on_the_way_stays_ended() -> None:
    """Saves are written on a thread of their own; ending a room right after a change must
    not let the change's write bring the room back."""

    class Slow(CountingStore):
        def save_room(self, room: RoomRecord) -> None:
            time.sleep(0.2)  # a slow disk: the room ends while this write is under way
            super().save_room(room)

    store = Slow()
    rooms = RoomRegistry()
    rooms.SAVE_EVERY_S = 0.01
    rooms.attach(store)
    room = rooms.create(RoomState(source="x = 1\n"))

    async def change_then_end() -> None:
        room.update(RoomStatePatch(step=1))
        await asyncio.sleep(0.05)  # the save is handed to the writer and under way
        rooms.end(room, "the presenter ended the room")

    asyncio.run(change_then_end())
    rooms.detach()
    assert store.rooms() == []


def test_the_graphs_call_defaults_to_the_runs_own_and_travels_to_the_viewers() -> None:
    assert RoomState().call is None and "call" not in RoomStatePatch().model_fields_set
    room = RoomRegistry().create(RoomState())
    room.update(RoomStatePatch.model_validate({"call": 3}))
    assert room.state.call == 3
    assert json.loads(room.frame(0))["state"]["call"] == 3
    room.update(RoomStatePatch.model_validate({"step": 2}))  # left out: kept
    assert room.state.call == 3
    room.update(RoomStatePatch.model_validate({"call": "all"}))  # every call's graph together
    assert room.state.call == "all"
    assert json.loads(room.frame(0))["state"]["call"] == "all"
    room.update(RoomStatePatch.model_validate({"call": None}))  # the run's default again
    assert room.state.call is None
