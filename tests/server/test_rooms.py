"""Classroom rooms against a real server with real ``websockets`` clients: the protocol and its errors.

The shared server has a token, as one bound off loopback has: students (clients without
it) cannot create runs, except through a room whose presenter allows it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from server.rooms import CODE_ALPHABET
from tests.server.conftest import client_address
from tests.server.harness import LiveServer

CUBIC = "import torch\nx = torch.tensor(2.5, requires_grad=True)\ny = x**3 - 4*x\ny.backward()\n"


def open_room(server: LiveServer, state: dict[str, Any] | None = None) -> dict[str, Any]:
    with server.client(headers={"x-forwarded-for": client_address()}) as c:
        response = c.post("/api/rooms", json={"state": state} if state is not None else None)
    assert response.status_code == 201, response.text
    room: dict[str, Any] = response.json()
    return room


def student(server: LiveServer) -> httpx.Client:
    """A client without the server's token, as a student in the room has."""
    return server.client(token=False, headers={"x-forwarded-for": client_address()})


def socket_url(server: LiveServer, room: dict[str, Any], role: str = "viewer", key: str | None = None) -> str:
    url = f"{server.ws_url}{room['ws_url']}?role={role}"
    return url + (f"&key={key}" if key else "")


def presenter_url(server: LiveServer, room: dict[str, Any]) -> str:
    return socket_url(server, room, "presenter", room["presenter_key"])


async def next_frame(ws: ClientConnection, kind: str | None = None, timeout: float = 10) -> dict[str, Any]:
    """The next frame (of type ``kind``, skipping others)."""
    while True:
        frame: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if kind is None or frame["type"] == kind:
            return frame


async def closed_by(url: str, send: str | bytes | None = None) -> tuple[int | None, str]:
    """Connect, optionally send one frame, read until the server closes; return its close."""
    async with connect(url, open_timeout=10, close_timeout=2, max_size=None) as ws:
        if send is not None:
            await ws.send(send)
        try:
            while True:
                await asyncio.wait_for(ws.recv(), 10)
        except ConnectionClosed:
            pass
        return ws.close_code, ws.close_reason or ""


def run(coro: Any, timeout: float = 60) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


# --- opening rooms -------------------------------------------------------------------------


def test_opening_a_room_needs_the_token_and_gives_a_code_to_read_aloud(server: LiveServer) -> None:
    with student(server) as c:
        assert c.post("/api/rooms").status_code == 401
    room = open_room(server, {"source": CUBIC, "view": "stepper"})
    code = room["code"]
    assert len(code) == 6 and set(code) <= set(CODE_ALPHABET), code
    assert not set(code) & set("01OIL")
    assert room["url"] == f"{server.url}/room/{code}"
    assert room["ws_url"] == f"/api/rooms/{code}/ws"
    assert len(room["presenter_key"]) >= 24 and room["version"] == 1
    assert room["state"]["source"] == CUBIC and room["state"]["allow_viewer_runs"] is False
    with student(server) as c:
        public = c.get(f"/api/rooms/{code.lower()[:3]}-{code.lower()[3:]}").json()
    assert public["code"] == code and public["state"]["view"] == "stepper"
    assert "presenter_key" not in public


# --- the protocol --------------------------------------------------------------------------


def test_viewers_get_the_latest_state_then_every_change(server: LiveServer) -> None:
    room = open_room(server, {"source": CUBIC})

    async def scenario() -> None:
        async with connect(presenter_url(server, room)) as presenter:
            first = await next_frame(presenter, "state")
            assert first["version"] == 1 and first["state"]["source"] == CUBIC
            async with connect(socket_url(server, room)) as v1, connect(socket_url(server, room)) as v2:
                for viewer in (v1, v2):
                    hello = await next_frame(viewer, "state")
                    assert hello == {**first, "type": "state"}
                await presenter.send(json.dumps({"type": "state", "state": {"view": "stepper", "step": 3}}))
                assert (await next_frame(presenter, "ack"))["version"] == 2
                for viewer in (v1, v2):
                    frame = await next_frame(viewer, "state")
                    assert frame["version"] == 2 and frame["source_version"] == 1
                    assert "source" not in frame["state"]  # the viewer has it already
                    assert frame["state"]["step"] == 3 and frame["state"]["view"] == "stepper"
                await presenter.send(
                    json.dumps({"type": "state", "state": {"source": "print(2)\n", "run_id": "abc123"}})
                )
                for viewer in (v1, v2):
                    frame = await next_frame(viewer, "state")
                    assert frame["version"] == 3 and frame["source_version"] == 3
                    assert frame["state"]["source"] == "print(2)\n" and frame["state"]["step"] == 3
                # the charts' y scale and norms go with the view
                assert frame["state"]["yscale"] == "auto" and frame["state"]["norms"] == "together"
                await presenter.send(
                    json.dumps({"type": "state", "state": {"yscale": "log", "norms": "per-parameter"}})
                )
                for viewer in (v1, v2):
                    frame = await next_frame(viewer, "state")
                    assert frame["version"] == 4
                    assert (frame["state"]["yscale"], frame["state"]["norms"]) == ("log", "per-parameter")
                    assert frame["state"]["step"] == 3
                # and the run compared on the charts (and back to none)
                for compare, version in (("b5019c0c2c5e", 5), (None, 6)):
                    await presenter.send(json.dumps({"type": "state", "state": {"compare": compare}}))
                    for viewer in (v1, v2):
                        frame = await next_frame(viewer, "state")
                        assert frame["version"] == version and frame["state"]["compare"] == compare
                # and the charts hidden (and back to none)
                assert frame["state"]["hide"] == ""
                for hide, version in (("grad,metric:val_acc", 7), ("", 8)):
                    await presenter.send(json.dumps({"type": "state", "state": {"hide": hide}}))
                    for viewer in (v1, v2):
                        frame = await next_frame(viewer, "state")
                        assert frame["version"] == version and frame["state"]["hide"] == hide

    run(scenario())


def test_the_presenter_hears_how_many_follow(server: LiveServer) -> None:
    room = open_room(server)

    async def scenario() -> None:
        async with connect(presenter_url(server, room)) as presenter:
            assert (await next_frame(presenter, "presence"))["viewers"] == 0
            viewers = [await connect(socket_url(server, room)) for _ in range(3)]
            count = 0
            while count != 3:
                count = (await next_frame(presenter, "presence"))["viewers"]
            await viewers[0].close()
            while count != 2:
                count = (await next_frame(presenter, "presence"))["viewers"]
            for ws in viewers[1:]:
                await ws.close()

    run(scenario())


def test_a_viewer_that_reconnects_catches_up_at_once(server: LiveServer) -> None:
    room = open_room(server, {"source": CUBIC})

    async def scenario() -> None:
        async with connect(presenter_url(server, room)) as presenter:
            await next_frame(presenter, "state")
            async with connect(socket_url(server, room)) as viewer:
                await next_frame(viewer, "state")
            for step in range(5):  # while the viewer is away
                await presenter.send(json.dumps({"type": "state", "state": {"step": step}}))
                await next_frame(presenter, "ack")
            async with connect(socket_url(server, room)) as viewer:
                frame = await next_frame(viewer, "state")  # its first frame is the latest state, not a replay
            assert frame["version"] == 6 and frame["state"]["step"] == 4
            assert frame["state"]["source"] == CUBIC  # a new connection always gets the source

    run(scenario())  # how fast: bench/bench_rooms.py


def test_viewers_hear_when_the_presenter_leaves_and_comes_back(server: LiveServer) -> None:
    """A presenter's page that closes or reloads leaves the viewers on a state that no longer
    moves: they are told, so their page can say why, and told again when it is back."""
    room = open_room(server, {"source": CUBIC})

    async def scenario() -> None:
        async with connect(socket_url(server, room)) as viewer:
            hello = await next_frame(viewer)
            assert hello["type"] == "state"
            # nobody presents yet: the viewer hears it right after the state
            assert await next_frame(viewer) == {"type": "presence", "version": 1, "presenter": False}
            async with connect(presenter_url(server, room)) as presenter:
                await next_frame(presenter, "state")
                assert await next_frame(viewer) == {"type": "presence", "version": 1, "presenter": True}
                await presenter.send(json.dumps({"type": "state", "state": {"step": 2}}))
                assert (await next_frame(viewer))["version"] == 2
            # the presenter's page closed
            assert await next_frame(viewer) == {"type": "presence", "version": 2, "presenter": False}
            async with connect(presenter_url(server, room)) as presenter:
                assert await next_frame(viewer) == {"type": "presence", "version": 2, "presenter": True}
                async with connect(socket_url(server, room)) as late:
                    # a viewer who joins while the presenter is there hears only the state
                    assert (await next_frame(late))["type"] == "state"
                    await presenter.send(json.dumps({"type": "state", "state": {"step": 3}}))
                    assert await next_frame(late) == await next_frame(viewer)

    run(scenario())


def test_a_stalled_viewer_holds_back_nobody(server: LiveServer) -> None:
    room = open_room(server)
    key = {"x-presenter-key": room["presenter_key"]}

    async def scenario() -> None:
        async with connect(socket_url(server, room), max_queue=1, max_size=None) as stalled:
            await asyncio.sleep(0.2)  # connected, and never reads while the presenter changes things
            async with (
                httpx.AsyncClient(base_url=server.url, headers=key, timeout=30) as c,
                connect(socket_url(server, room), max_size=None) as fast,
            ):
                await next_frame(fast, "state")
                for i in range(20):  # 20 sources of 50 kB that the stalled socket does not take
                    response = await c.patch(
                        f"/api/rooms/{room['code']}/state", json={"source": f"# {i}\n" + "x" * 50_000}
                    )
                    assert response.status_code == 200
                version = 0
                while version < 21:  # held back by the stalled socket, this would wait forever:
                    version = (await next_frame(fast, "state"))["version"]  # next_frame gives up after 10 s
            while True:  # once it reads, the stalled viewer ends at the latest state
                frame = await next_frame(stalled, "state")
                if frame["version"] == 21:
                    assert frame["state"]["source"].startswith("# 19\n")
                    return

    run(scenario())


def test_a_large_source_goes_over_http(server: LiveServer) -> None:
    room = open_room(server)
    source = "# a long snippet\n" + "y = 1\n" * 15_000  # 90 kB: more than a websocket frame may carry

    async def scenario() -> dict[str, Any]:
        async with connect(socket_url(server, room), max_size=None) as viewer:
            await next_frame(viewer, "state")
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
                response = await c.patch(
                    f"/api/rooms/{room['code']}/state",
                    json={"source": source},
                    headers={"x-presenter-key": room["presenter_key"]},
                )
                assert response.status_code == 200 and response.json()["version"] == 2
            return await next_frame(viewer, "state")

    assert run(scenario())["state"]["source"] == source


def test_ending_a_room_closes_every_socket_with_4410(server: LiveServer) -> None:
    room = open_room(server)

    async def scenario() -> list[tuple[int | None, str]]:
        async def watch() -> tuple[int | None, str]:
            return await closed_by(socket_url(server, room))

        watchers = [asyncio.create_task(watch()) for _ in range(3)]
        await asyncio.sleep(0.5)
        async with httpx.AsyncClient(base_url=server.url) as c:
            wrong = await c.delete(f"/api/rooms/{room['code']}", headers={"x-presenter-key": "nope"})
            assert wrong.status_code == 403
            ended = await c.delete(
                f"/api/rooms/{room['code']}", headers={"x-presenter-key": room["presenter_key"]}
            )
            assert ended.status_code == 204
        return await asyncio.gather(*watchers)

    for code, reason in run(scenario()):
        assert code == 4410 and "ended" in reason
    with student(server) as c:
        assert c.get(f"/api/rooms/{room['code']}").status_code == 404
    assert run(closed_by(socket_url(server, room)))[0] == 4404


# --- running code in a room ----------------------------------------------------------------


def test_viewers_run_code_only_when_the_presenter_allows(server: LiveServer) -> None:
    room = open_room(server)
    code, key = room["code"], room["presenter_key"]
    body = {"source": CUBIC}
    with student(server) as c:
        assert c.post("/api/runs", json=body).status_code == 401  # no token: no runs of one's own
        refused = c.post(f"/api/rooms/{code}/runs", json=body)
        assert refused.status_code == 403
        assert "has not allowed viewers to run code" in refused.json()["detail"]
        assert (
            c.post(f"/api/rooms/{code}/runs", json=body, headers={"x-presenter-key": "x"}).status_code == 403
        )
        # The presenter runs through the room with its key, token or not.
        assert (
            c.post(f"/api/rooms/{code}/runs", json=body, headers={"x-presenter-key": key}).status_code == 201
        )
        allowed = c.patch(
            f"/api/rooms/{code}/state", json={"allow_viewer_runs": True}, headers={"x-presenter-key": key}
        )
        assert allowed.status_code == 200 and allowed.json()["state"]["allow_viewer_runs"] is True
        created = c.post(f"/api/rooms/{code}/runs", json=body)
        assert created.status_code == 201, created.text
        run_info = created.json()
        c.patch(
            f"/api/rooms/{code}/state", json={"allow_viewer_runs": False}, headers={"x-presenter-key": key}
        )
        assert c.post(f"/api/rooms/{code}/runs", json=body).status_code == 403
        assert c.post(f"/api/rooms/{code}/runs", json={"source": 3}).status_code == 422
    frames, close, _ = run(_events(server.ws_url + run_info["ws_url"]))
    assert close == 1000 and json.loads(frames[-1])["status"] == "ok"


async def _events(url: str) -> tuple[list[str], int | None, str]:
    frames: list[str] = []
    async with connect(url, max_size=None) as ws:
        try:
            async for message in ws:
                frames.append(str(message))
        except ConnectionClosed:
            pass
        return frames, ws.close_code, ws.close_reason or ""


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        ("/api/rooms/Z3Z3Z3", 404, "no room Z3Z3Z3"),
        ("/api/rooms/abc", 404, "not a room code"),
        ("/api/rooms/" + "Q" * 300, 404, "not a room code"),
    ],
)
def test_unknown_rooms_are_404(server: LiveServer, path: str, status: int, words: str) -> None:
    with student(server) as c:
        response = c.get(path)
    assert response.status_code == status and words in response.json()["detail"]


def test_the_charts_hidden_are_part_of_the_state(server: LiveServer) -> None:
    room = open_room(server, {"hide": "grad,metric:val_acc"})
    assert room["state"]["hide"] == "grad,metric:val_acc"
    most = ",".join(f"metric:m{i}" for i in range(32))
    headers = {"x-presenter-key": room["presenter_key"]}
    with student(server) as c:
        response = c.patch(f"/api/rooms/{room['code']}/state", json={"hide": most}, headers=headers)
        assert response.status_code == 200, response.text
        assert c.get(f"/api/rooms/{room['code']}").json()["state"]["hide"] == most


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({}, {"step": 1}, 401),
        ({"x-presenter-key": "wrong"}, {"step": 1}, 403),
        ("key", {"step": -1}, 422),
        ("key", {"view": None}, 422),
        ("key", {"colour": "red"}, 422),
        ("key", {"source": "a\x00b"}, 422),
        ("key", {"run_id": "../../etc"}, 422),
        ("key", {"yscale": "cubic"}, 422),
        ("key", {"norms": None}, 422),
        ("key", {"compare": "../runs/x"}, 422),
        ("key", {"compare": "x" * 65}, 422),
        ("key", {"hide": ",".join(f"metric:m{i}" for i in range(33))}, 422),
        ("key", {"hide": "grad,metric:a\tb"}, 422),
        ("key", {"hide": "x" * 129}, 422),
        ("key", {"hide": "grad,,lr"}, 422),
        ("key", {"hide": None}, 422),
    ],
)
def test_bad_state_changes_are_refused(
    server: LiveServer, headers: dict[str, str] | str, body: dict[str, Any], status: int
) -> None:
    room = open_room(server)
    if headers == "key":
        headers = {"x-presenter-key": room["presenter_key"]}
    with student(server) as c:
        response = c.patch(f"/api/rooms/{room['code']}/state", json=body, headers=headers)
        assert response.status_code == status, response.text
        assert c.get(f"/api/rooms/{room['code']}").json()["version"] == 1


@pytest.mark.parametrize(
    ("query", "code", "words"),
    [
        ("role=viewer", 4404, "no room"),
        ("role=spy", 4400, "role must be"),
        ("role=presenter", 4401, "key"),
        ("role=presenter&key=wrong", 4403, "wrong presenter key"),
    ],
)
def test_bad_connections_close_with_a_code_and_a_reason(
    server: LiveServer, query: str, code: int, words: str
) -> None:
    room = open_room(server)
    name = "Z3Z3Z3" if code == 4404 else room["code"]
    close, reason = run(closed_by(f"{server.ws_url}/api/rooms/{name}/ws?{query}"))
    assert close == code and words in reason, reason


@pytest.mark.parametrize(
    ("role", "frame", "code", "words"),
    [
        ("presenter", "not json", 1008, "bad message"),
        ("presenter", json.dumps({"type": "state", "state": {"step": -1}}), 1008, "state.step"),
        ("presenter", json.dumps({"type": "state", "state": {"colour": "red"}}), 1008, "colour"),
        ("presenter", json.dumps({"type": "hello"}), 1008, "type"),
        ("presenter", b"\x00\x01", 1003, "binary"),
        ("presenter", json.dumps({"type": "state", "state": {"source": "x" * 70_000}}), 1009, ""),
        ("viewer", "hello", 1008, "viewers send nothing"),
        ("viewer", b"\x00", 1003, "binary"),
    ],
)
def test_bad_frames_close_with_a_code_and_a_reason(
    server: LiveServer, role: str, frame: str | bytes, code: int, words: str
) -> None:
    room = open_room(server)
    url = presenter_url(server, room) if role == "presenter" else socket_url(server, room)
    close, reason = run(closed_by(url, frame))
    assert close == code and words in reason, (close, reason)
    with student(server) as c:
        assert c.get(f"/api/rooms/{room['code']}").json()["version"] == 1  # nothing applied


# --- pages ---------------------------------------------------------------------------------


def test_room_and_join_pages(server: LiveServer) -> None:
    room = open_room(server)
    code = room["code"]
    with student(server) as c:
        page = c.get(f"/room/{code}")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert f'"code": "{code}"' in page.text and 'data-gw="room-bar"' in page.text
        assert c.get(f"/room/{code.lower()}").headers.get("location") == f"/room/{code}"
        missing = c.get("/room/Z3Z3Z3")
        assert missing.status_code == 404 and "No room Z3Z3Z3" in missing.text
        assert "<form" in missing.text  # a place to type the right code
        assert c.get(f"/room?code={code[:3].lower()}-{code[3:]}").headers.get("location") == f"/room/{code}"
        assert c.get("/room?code=%3Cscript%3E").status_code == 400
        join = c.get("/room")
        assert join.status_code == 200 and 'name="code"' in join.text
