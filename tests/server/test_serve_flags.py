"""``gradwalk serve`` given a flag its settings refuse: one line per bad flag, naming the flag
and the value as typed, and exit status 2; no traceback, and no server started. And stopped
with Ctrl+C: exit status 0, no traceback."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, gradwalk_cli


def test_out_of_range_flags_are_named_with_their_values() -> None:
    result = gradwalk_cli("serve", "--port", "99999", "--rate", "-1", "--workers", "0", "--retention-mb", "0")
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        "gradwalk serve: --port 99999: Input should be less than or equal to 65535",
        "gradwalk serve: --workers 0: Input should be greater than or equal to 1",
        "gradwalk serve: --rate -1.0: Input should be greater than 0",
        "gradwalk serve: --retention-mb 0.0: Input should be greater than or equal to 1",
    ], result.stderr
    assert "gradwalk: open" not in result.stdout


def test_a_port_in_use_is_named_with_a_free_one_to_try() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = gradwalk_cli("serve", "--port", str(port), "--workers", "1")
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        f"gradwalk serve: --port {port}: 127.0.0.1:{port} is already in use (another gradwalk, or another "
        f"server, is listening there); choose another, e.g. --port {port + 1} (make run PORT={port + 1})"
    ], result.stderr
    assert "gradwalk: open" not in result.stdout


def test_a_host_that_is_not_this_machines_is_named() -> None:
    # TEST-NET-1 (RFC 5737): never an address of this machine; and a name that cannot resolve
    for host, expected in [
        ("192.0.2.1", "--host 192.0.2.1: this machine has no such address; use 127.0.0.1"),
        ("no-such-host.invalid", "--host no-such-host.invalid: no such host name here"),
    ]:
        result = gradwalk_cli("serve", "--host", host, "--port", "0", "--token", "t" * 24, "--workers", "1")
        assert result.returncode == 2, result
        assert result.stderr.startswith(f"gradwalk serve: {expected}"), result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr


def test_ctrl_c_stops_the_server_cleanly_without_a_traceback(tmp_path: Path) -> None:
    # Ctrl+C on `make run`: uvicorn shut down cleanly, then asyncio raised the interrupt again
    # and a KeyboardInterrupt traceback followed "Finished server process" (exit status 1)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gradwalk.cli",
            "serve",
            "--port",
            "0",
            "--workers",
            "1",
            "--db",
            str(tmp_path / "runs.db"),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        said: list[str] = []
        for line in server.stdout:  # until the server says where it listens
            said.append(line)
            if line.startswith("gradwalk: open http://"):
                break
        else:
            raise AssertionError("the server never opened:\n" + "".join(said))
        server.send_signal(signal.SIGINT)
        rest, _ = server.communicate(timeout=60)
    finally:
        server.kill()
    out = "".join(said) + rest
    assert server.returncode == 0, out
    assert "Application shutdown complete" in out, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
