"""Real servers for the server tests: uvicorn in a subprocess on a free port, real workers.

``LiveServer.start(settings)`` launches ``server.commands.serve`` in a fresh interpreter
(which never imports torch), waits for it to announce its URL and answer
``/api/health``, and prints its log if it does not come up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
_CHILD = """
import sys
from server.commands import serve
from server.settings import Settings
settings = Settings.model_validate_json(sys.argv[1])
sys.exit(serve(settings, log_level="warning", on_ready=lambda url: print("READY", url, flush=True)))
"""


class LiveServer:
    """A gradwalk server in a subprocess; ``url`` ends without a slash (``http://127.0.0.1:PORT``)."""

    def __init__(self, settings: Settings, log_path: Path) -> None:
        self.settings = settings
        self.log_path = log_path
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, settings: Settings, log_path: Path, timeout: float = 60.0) -> LiveServer:
        server = cls(settings, log_path)
        server._launch(timeout)
        return server

    @property
    def ws_url(self) -> str:
        return "ws" + self.url[len("http") :]

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kwargs)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def _launch(self, timeout: float) -> None:
        settings = self.settings.model_copy(update={"host": "127.0.0.1", "port": 0})
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, settings.model_dump_json()],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith(b"READY ") or not line:
                break
        if not line.startswith(b"READY "):
            self.stop()
            pytest.fail(f"the server did not come up; its log:\n{self.log()}")
        self.url = line.split()[1].decode().rstrip("/")
        # Keep draining stdout into the log so the child never blocks on a full pipe.
        _drain(self.proc.stdout, log)
        with httpx.Client(base_url=self.url, timeout=10) as c:
            while c.get("/api/health").status_code != 200:
                if time.monotonic() > deadline:
                    pytest.fail(f"the server never became healthy; its log:\n{self.log()}")
                time.sleep(0.1)


def _drain(stream: Any, sink: Any) -> None:
    import threading

    def pump() -> None:
        for chunk in iter(lambda: stream.readline(), b""):
            sink.write(chunk)
            sink.flush()

    threading.Thread(target=pump, daemon=True).start()


def server_settings(tmp: Path, **overrides: Any) -> Settings:
    """Settings for a test server: small pool, generous rate limit, a DB in ``tmp``."""
    base: dict[str, Any] = {
        "db": tmp / "gradwalk.sqlite3",
        "workers": 2,
        "max_queue": 32,
        "rate_burst": 10_000,
    }
    return Settings(**{**base, **overrides})


def run_json(response: httpx.Response) -> dict[str, Any]:
    """Return a response's JSON, failing with the body when it is not JSON."""
    try:
        data: dict[str, Any] = json.loads(response.content)
    except ValueError:
        pytest.fail(f"{response.status_code} with a non-JSON body: {response.text[:300]!r}")
    return data
