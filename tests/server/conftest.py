"""Fixtures for the server tests: one shared real server, and HTTP clients for it.

The shared server runs with a token (so every client here sends it) and a rate limit of
25 runs per client; each test's client is a different client to that limit (its own
``X-Forwarded-For``, which uvicorn trusts from loopback), so tests never drain each
other's allowance.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import httpx
import pytest

from tests.server.harness import LiveServer

BURST = 25
_clients = itertools.count(1)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The shared server most tests talk to (two workers, a token, burst of 25 runs)."""
    live = LiveServer.start(tmp_path_factory.mktemp("server"), "--burst", str(BURST), "--rate", "1")
    try:
        yield live
    finally:
        live.stop()
        if os.environ.get("GRADWALK_SHOW_SERVER_LOG"):
            print(live.log())


def client_address() -> str:
    """A fresh client address, so that a test starts with a full rate-limit bucket."""
    n = next(_clients)
    return f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"


@pytest.fixture()
def api(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(headers={"x-forwarded-for": client_address()}) as client:
        yield client
