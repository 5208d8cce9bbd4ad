"""Fixtures for the server tests: one shared real server, and an HTTP client for it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest

from tests.server.harness import LiveServer, server_settings


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The shared server most tests talk to (two workers, no token)."""
    tmp = tmp_path_factory.mktemp("server")
    live = LiveServer.start(server_settings(tmp), tmp / "server.log")
    try:
        yield live
    finally:
        live.stop()
        if os.environ.get("GRADWALK_SHOW_SERVER_LOG"):
            print(live.log())


@pytest.fixture()
def api(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client
