"""The sweep that kills a sandbox uid's processes when a worker goes (``runner.proxy._kill_uid``):
a zombie is dead already and is not counted, so a worker's end is not waited on until
whoever inherited the zombie reaps it (a server's Ctrl+C took 1.2-2 s, all of it here)."""

from __future__ import annotations

import os
import time

from runner.pool import UID_BASE
from runner.proxy import _kill_uid
from tests.conftest import need

# a uid no pool here uses (pools take UID_BASE + key * a few hundred, key < 2**16)
_UID = UID_BASE - 7


def _status(pid: int, field: str) -> str:
    """The first word of ``field`` in ``/proc/PID/status`` (State: "Z" for a zombie; Uid: the real uid)."""
    with open(f"/proc/{pid}/status") as fh:
        return next(line.split()[1] for line in fh if line.startswith(f"{field}:"))


def test_a_zombie_of_the_uid_is_not_counted_a_live_process_is() -> None:
    need(os.geteuid() == 0, "the sweep runs as root only (a sandbox uid is set by root): run it as root")
    live = os.fork()
    if live == 0:
        os.setuid(_UID)
        time.sleep(60)
        os._exit(0)
    zombie = os.fork()
    if zombie == 0:
        os.setuid(_UID)
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while _status(zombie, "State") != "Z" and time.monotonic() < deadline:
            time.sleep(0.01)
        while _status(live, "Uid") != str(_UID) and time.monotonic() < deadline:
            time.sleep(0.01)  # the live child has taken the uid
        assert _status(zombie, "State") == "Z"
        assert _kill_uid(_UID) == 1  # the live one: killed and counted
        os.waitpid(live, 0)
        assert _kill_uid(_UID) == 0  # the zombie alone: nothing left to kill
    finally:
        for pid in (live, zombie):
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except (ChildProcessError, ProcessLookupError):
                pass
