"""Real servers for the server tests: ``gradwalk serve`` in a subprocess on a free port, real workers.

:meth:`LiveServer.start` runs the real command line (``python -m gradwalk.cli serve
--port 0 ...``), waits for the ``gradwalk: open URL`` line and for ``/api/health`` to
answer, and fails with the server's log if it does not come up. :meth:`LiveServer.restart`
stops it and starts it again on the same database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "server" / "templates"
STATIC = ROOT / "server" / "static"
TOKEN = "test-token-0123456789"


class LiveServer:
    """A gradwalk server in a subprocess; ``url`` is ``http://127.0.0.1:PORT`` (no slash)."""

    def __init__(self, args: list[str], db: Path, log_path: Path, token: str | None) -> None:
        self.args = args
        self.db = db
        self.log_path = log_path
        self.token = token
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, tmp: Path, *extra: str, token: str | None = TOKEN, workers: int = 2) -> LiveServer:
        """Serve with a DB in ``tmp``, ``workers`` workers and ``extra`` flags for ``gradwalk serve``."""
        db = tmp / "gradwalk.sqlite3"
        args = ["--host", "127.0.0.1", "--port", "0", "--db", str(db), "--workers", str(workers)]
        args += ["--log-level", "warning", *(["--token", token] if token else []), *extra]
        server = cls(args, db, tmp / "server.log", token)
        server.launch()
        return server

    @property
    def ws_url(self) -> str:
        return "ws" + self.url[len("http") :]

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def client(self, *, token: bool = True, **kwargs: Any) -> httpx.Client:
        """An HTTP client; it sends the server's token unless ``token=False``."""
        headers = dict(kwargs.pop("headers", {}))
        if token and self.token:
            headers["authorization"] = f"Bearer {self.token}"
        # verify=False: plain HTTP only, and it skips loading CA certificates (0.1 s a client).
        return httpx.Client(base_url=self.url, timeout=30, headers=headers, verify=False, **kwargs)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the server (SIGTERM: a graceful shutdown; SIGKILL: a crash)."""
        if self.proc is None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self, *, same_port: bool = False) -> None:
        """Stop gracefully and start again with the same flags and database: on a new port,
        or (``same_port``) on this one, so open pages can reconnect as after a real restart."""
        port = self.url.rsplit(":", 1)[1]
        self.stop()
        if same_port:
            i = self.args.index("--port")
            self.args[i + 1] = port
        self.launch()

    def launch(self, timeout: float = 120.0) -> None:
        """Start the server process with this object's flags; wait until it is healthy."""
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gradwalk.cli", "serve", *self.args],
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
            if line.startswith(b"gradwalk: open ") or not line:
                break
        if not line.startswith(b"gradwalk: open "):
            self.stop()
            pytest.fail(f"the server did not come up; its log:\n{self.log()}")
        self.url = line.split()[2].decode().rstrip("/")
        _drain(self.proc.stdout, log)  # so the child never blocks on a full pipe
        with httpx.Client(base_url=self.url, timeout=10) as c:
            while c.get("/api/health").status_code != 200:
                if time.monotonic() > deadline:
                    pytest.fail(f"the server never became healthy; its log:\n{self.log()}")
                time.sleep(0.1)


def _drain(stream: IO[bytes], sink: IO[bytes]) -> None:
    def pump() -> None:
        for chunk in iter(stream.readline, b""):
            sink.write(chunk)
            sink.flush()

    threading.Thread(target=pump, daemon=True).start()


def run_json(response: httpx.Response) -> dict[str, Any]:
    """Return a response's JSON, failing with the body when it is not JSON."""
    try:
        data: dict[str, Any] = json.loads(response.content)
    except ValueError:
        pytest.fail(f"{response.status_code} with a non-JSON body: {response.text[:300]!r}")
    return data
