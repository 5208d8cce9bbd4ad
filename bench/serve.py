"""Start a real ``gradwalk serve`` on a free port for a benchmark (shared by the bench scripts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["start_server"]


def start_server(db: Path, *extra: str, workers: int = 1) -> tuple[subprocess.Popen[bytes], str]:
    """Start the server on port 0 with the database ``db``; return the process and its base URL."""
    args = ["--host", "127.0.0.1", "--port", "0", "--db", str(db), "--workers", str(workers)]
    args += ["--log-level", "warning", *extra]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gradwalk.cli", "serve", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    for raw in iter(proc.stdout.readline, b""):
        line = raw.decode()
        if line.startswith("gradwalk: open "):
            return proc, line.split()[2].rstrip("/")
    proc.kill()
    raise RuntimeError("the gradwalk server did not start (try it by hand: gradwalk serve --port 0)")
