"""Check each sandbox layer from inside a sandboxed child, the way a snippet would meet it.

Each worker forks one probe child at start-up; its answers are what
:meth:`WorkerPool.isolation_report` shows, and what strict mode refuses to start without.
A layer counts only if it was applied without error *and* its check passes.
"""

from __future__ import annotations

import errno
import os
import resource
import socket
import sys
from collections.abc import Callable
from typing import Any

from . import sandbox

__all__ = ["verify"]

_ALWAYS_HIDDEN = ("/root/.ssh", "/etc/shadow", "/home", "/var", "/run")


def verify(config: dict[str, Any], worker_ns: dict[str, str], failures: dict[str, str]) -> dict[str, bool]:
    """Check each layer from inside the sandbox, as a snippet would meet it."""
    checks: dict[str, Callable[[], bool]] = {
        "namespaces": lambda: (
            os.getpid() == 1
            and all(
                os.readlink(f"/proc/self/ns/{ns}") != ident for ns, ident in worker_ns.items() if ns != "user"
            )
        ),
        "user_namespace": lambda: (
            not config.get("userns") or os.readlink("/proc/self/ns/user") != worker_ns["user"]
        ),
        "readonly_fs": lambda: all(_denied_write(p) for p in ["/", "/usr", "/dev/shm", "/proc", sys.prefix]),
        "scratch_tmpfs": _scratch_ok(config),
        "hidden_files": lambda: all(_hidden(p, config["keep"]) for p in [*config["hide"], *_ALWAYS_HIDDEN]),
        "non_root_uid": lambda: os.getuid() != 0 and os.geteuid() != 0 and _cap_eff() == 0,
        "env_scrubbed": lambda: set(os.environ) <= set(sandbox.ENV),
        "fds_closed": lambda: (
            {int(f) for f in os.listdir("/proc/self/fd")} <= {0, 1, 2, sandbox.EVENT_FD, _last_fd()}
        ),
        "rlimits": lambda: (
            resource.getrlimit(resource.RLIMIT_NPROC)[1] == sandbox.NPROC
            and resource.getrlimit(resource.RLIMIT_CORE)[1] == 0
            and (
                not config.get("memory_mb")
                or resource.getrlimit(resource.RLIMIT_AS)[1] == config["memory_mb"] << 20
            )
        ),
        "seccomp": _seccomp_ok,
    }
    report = {}
    for layer, check in checks.items():
        try:
            report[layer] = layer not in failures and bool(check())
        except Exception:
            report[layer] = False
    return report


def _hidden(path: str, keep: list[str]) -> bool:
    """Whether ``path`` is absent, or shows nothing but the way down to kept paths."""
    if not os.path.isdir(path):
        return not os.path.lexists(path)
    lead = {k[len(path) :].lstrip("/").split("/")[0] for k in keep if sandbox.under(k, path) and k != path}
    return set(os.listdir(path)) <= lead


def _denied_write(path: str) -> bool:
    try:
        fd = os.open(os.path.join(path, ".gradwalk-probe"), os.O_CREAT | os.O_WRONLY, 0o600)
    except OSError as exc:
        return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT)
    os.close(fd)
    return False


def _scratch_ok(config: dict[str, Any]) -> Callable[[], bool]:
    def check() -> bool:
        st = os.statvfs(sandbox.SCRATCH)
        with open(os.path.join(sandbox.SCRATCH, "probe"), "w") as fh:
            fh.write("ok")
        os.unlink(os.path.join(sandbox.SCRATCH, "probe"))
        return os.getcwd() == sandbox.SCRATCH and st.f_blocks * st.f_frsize <= int(config["scratch_mb"]) << 20

    return check


def _cap_eff() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return -1


def _last_fd() -> int:
    fd = os.open("/dev/null", os.O_RDONLY)
    os.close(fd)
    return fd


def _seccomp_ok() -> bool:
    with open("/proc/self/status") as fh:
        if "Seccomp:\t2" not in fh.read():
            return False
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except PermissionError:
        pass
    else:
        return False
    try:
        pid = os.fork()
    except PermissionError:
        return True
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return False
