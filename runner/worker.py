"""A warm worker process: import torch once, then fork one sandboxed child per run.

Started by the pool as ``python -c ... <control fd> <settings json>``. It warms up with one
thread (a parent that ran multithreaded OpenMP work before ``fork()`` can hang its
child: PyTorch issue 41197), checks its sandbox once with a probe child, says ``ready``,
then serves ``run`` messages one at a time. Each run's child is the first process (pid 1)
of a fresh pid namespace, so killing it takes down everything the snippet started. The
worker never initialises CUDA: a CUDA run initialises it in its own child.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import sys
import time
from typing import Any

from . import control, linux

__all__ = ["main"]

_WARMUP = [
    "import torch\nx = torch.tensor(2.5, requires_grad=True)\ny = x**3 - 4*x\ny.backward()\nprint(x.grad)\n",
    "import torch\nimport torch.nn as nn\nm = nn.Linear(3, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "for _ in range(2):\n    opt.zero_grad()\n    loss = m(torch.randn(4, 3)).pow(2).mean()\n    loss.backward()\n"
    "    opt.step()\nraise ValueError('warm-up')\n",
]
_KILL_GRACE_S = 5.0
_NAMESPACES = ("mnt", "net", "pid", "ipc", "uts", "user")


def main() -> None:
    """Serve runs on the control socket given in ``sys.argv[1]`` until it closes."""
    sock = socket.socket(fileno=int(sys.argv[1]))
    settings: dict[str, Any] = json.loads(sys.argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    userns = os.geteuid() != 0 and _enter_user_namespace()
    started = time.perf_counter()
    cuda = _warm_up()
    gc.collect()
    gc.freeze()  # keeps the warm heap shared with every child (no copy-on-write from the collector)
    config = {
        "strict": settings["strict"],
        "uid": settings["uid"],
        "gpu": settings.get("gpu", False),
        "scratch_mb": settings["scratch_mb"],
        "hide": settings["hide"],
        "userns": userns,
        "keep": _keep_paths(settings["hide"]),
    }
    worker_ns = {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in _NAMESPACES}
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    report, failures = _probe(config, worker_ns, own_pid_ns)
    import torch

    control.send_message(
        sock,
        {
            "type": "ready",
            "pid": os.getpid(),
            "layers": report,
            "failures": failures,
            "cuda": cuda,
            "torch_version": torch.__version__,
            "warmup_s": round(time.perf_counter() - started, 3),
        },
    )
    while True:
        message, fds = control.recv_message(sock, maxfds=2)
        if message is None:
            return
        if message["type"] == "run" and len(fds) == 2:
            _serve(sock, message, fds[0], fds[1], config, worker_ns, own_pid_ns)
        else:
            for fd in fds:
                os.close(fd)


def _enter_user_namespace() -> bool:
    """Become root inside a new user namespace, so that the other namespaces can be made."""
    uid, gid = os.getuid(), os.getgid()
    try:
        linux.unshare(linux.CLONE_NEWUSER)
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
    except OSError:
        return False
    return True


def _warm_up() -> bool:
    """Import torch and the engine with one thread, run the warm-up snippets; tell if CUDA exists."""
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    import engine.explain  # noqa: F401  (imported lazily on errors; the sandbox hides the app's files)
    from engine.run import record_stream

    for source in _WARMUP:
        record_stream(source, lambda event: event.model_dump_json())
    # NVML answers without initialising CUDA here (PYTORCH_NVML_BASED_CUDA_CHECK is set by the pool).
    return bool(torch.cuda.is_available())


def _keep_paths(hide: list[str]) -> list[str]:
    """The paths a child needs to run Python and torch: system libraries and the Python install."""
    paths = {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"}
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        paths.add(os.path.realpath(prefix))
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            real = os.path.realpath(entry)
            if _in_prefix(real) or not any(_under(real, h) for h in hide):
                paths.add(real)
    return sorted(p for p in paths if p != "/" and os.path.lexists(p))


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _in_prefix(path: str) -> bool:
    return _under(path, os.path.realpath(sys.prefix))


def _fork(config: dict[str, Any], own_pid_ns: int) -> int:
    """Fork a child that is pid 1 of a fresh pid namespace (or a plain child when that fails)."""
    try:
        linux.setns(own_pid_ns, linux.CLONE_NEWPID)
        linux.unshare(linux.CLONE_NEWPID)
    except OSError:
        if config["strict"]:
            raise
    return os.fork()


def _probe(
    config: dict[str, Any], worker_ns: dict[str, str], own_pid_ns: int
) -> tuple[dict[str, bool], dict]:
    from . import child
    from .framing import FrameDecoder

    read_fd, write_fd = os.pipe()
    pid = _fork({**config, "strict": False}, own_pid_ns)
    if pid == 0:
        os.close(read_fd)
        child.probe(
            {**config, "timeout_s": 5, "memory_mb": None if config["gpu"] else 1536}, worker_ns, write_fd
        )
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    frames = FrameDecoder(max_frame=65536, max_total=65536).feed(data)
    if not frames:
        return {}, {"probe": "the probe child sent no report"}
    result = json.loads(frames[0])
    return result["layers"], result["failures"]


def _serve(
    sock: socket.socket,
    message: dict[str, Any],
    event_fd: int,
    source_fd: int,
    config: dict[str, Any],
    worker_ns: dict[str, str],
    own_pid_ns: int,
) -> None:
    """Run one snippet in a child; answer ``started`` then ``exited``, killing it on ``kill``."""
    from . import child

    run_id = message["id"]
    try:
        source = os.pread(source_fd, message["source_bytes"], 0).decode()
    finally:
        os.close(source_fd)
    pid = _fork(config, own_pid_ns)
    if pid == 0:
        sock.close()
        child.run(message, source, event_fd, {**config, "gpu": message.get("gpu", config["gpu"])})
    os.close(event_fd)
    started = time.monotonic()
    pidfd = os.pidfd_open(pid)
    control.send_message(sock, {"type": "started", "id": run_id, "pid": pid})
    deadline = started + float(message["limits"]["timeout_s"]) + _KILL_GRACE_S
    with selectors.DefaultSelector() as sel:
        sel.register(sock, selectors.EVENT_READ, "control")
        sel.register(pidfd, selectors.EVENT_READ, "child")
        done = False
        while not done:
            for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                if key.data == "child":
                    done = True
                else:
                    request, fds = control.recv_message(sock, maxfds=2)
                    for fd in fds:
                        os.close(fd)
                    if request is None:
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                        os.waitpid(pid, 0)
                        sys.exit(0)
                    if request["type"] == "kill":
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            if time.monotonic() >= deadline:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                deadline = float("inf")
    os.close(pidfd)
    _, status, usage = os.wait4(pid, 0)
    control.send_message(
        sock,
        {
            "type": "exited",
            "id": run_id,
            "code": os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "maxrss_kb": usage.ru_maxrss,
            "wall_s": round(time.monotonic() - started, 3),
        },
    )
