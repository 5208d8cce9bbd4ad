"""A warm worker process: import torch once, then fork one sandboxed child per run.

Started by the pool as ``python -c ... <control fd> <settings json>``. It warms up with one
thread (a parent that ran multithreaded OpenMP work before ``fork()`` can hang its
child: PyTorch issue 41197), checks its sandbox once with a probe child, says ``ready``,
then serves ``run`` messages one at a time. Each run's child is the first process (pid 1)
of a fresh pid namespace, so killing it takes down everything the snippet started. The
worker never initialises CUDA: a CUDA run initialises it in its own child.
"""

from __future__ import annotations

import contextlib
import fcntl
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
from .sandbox import under

__all__ = ["main"]

_WARMUP = [
    "import torch\nx = torch.tensor(2.5, requires_grad=True)\ny = x**3 - 4*x\ny.backward()\nprint(x.grad)\n",
    "import torch\nimport torch.nn as nn\nm = nn.Linear(3, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "for _ in range(2):\n    opt.zero_grad()\n    loss = m(torch.randn(4, 3)).pow(2).mean()\n    loss.backward()\n"
    "    opt.step()\nraise ValueError('warm-up')\n",
]
# A GPU worker must not run backward before it forks: the autograd engine marks a child
# forked after its first backward as unable to start device threads ("Unable to handle
# autograd's threading in combination with fork-based multiprocessing"), and CUDA backward
# needs them. It imports and builds (optimizer included, which imports torch._dynamo) only.
_WARMUP_GPU = [
    "import torch\nimport torch.nn as nn\nm = nn.Linear(3, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "y = m(torch.randn(4, 3)).pow(2).mean()\nprint(y.requires_grad)\n",
]
_KILL_GRACE_S = 5.0
_PIPE_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031
_NAMESPACES = ("mnt", "net", "pid", "ipc", "uts", "user")


def main() -> None:
    """Serve runs on the control socket given in ``sys.argv[1]`` until it closes."""
    sock = socket.socket(fileno=int(sys.argv[1]))
    settings: dict[str, Any] = json.loads(sys.argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    userns = (os.geteuid() != 0 or settings.get("force_userns", False)) and _enter_user_namespace()
    # Children of a middle process that exits are re-parented here, so the worker can reap them.
    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    started = time.perf_counter()
    cuda = _warm_up(gpu=bool(settings.get("gpu", False)))
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
    spare = _Spare(config, own_pid_ns, sock)
    while True:
        message, fds = control.recv_message(sock, maxfds=1)
        if message is None:
            spare.discard()
            return
        if message["type"] == "run" and len(fds) == 1:
            _serve(sock, message, fds[0], spare, config, own_pid_ns)
            spare = _Spare(config, own_pid_ns, sock)  # forked now, off the next run's latency path
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


def _warm_up(*, gpu: bool) -> bool:
    """Import torch and the engine with one thread, run the warm-up snippets; tell if CUDA exists."""
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    import engine.explain  # noqa: F401  (imported lazily on errors; the sandbox hides the app's files)
    import gradwalk  # noqa: F401  (snippets may `import gradwalk` to log metrics; its files are hidden too)
    from engine.run import record_stream

    for source in _WARMUP_GPU if gpu else _WARMUP:
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
            if _in_prefix(real) or not any(under(real, h) for h in hide):
                paths.add(real)
    return sorted(p for p in paths if p != "/" and os.path.lexists(p))


def _in_prefix(path: str) -> bool:
    return under(path, os.path.realpath(sys.prefix))


def _fork(config: dict[str, Any], own_pid_ns: int) -> int:
    """Fork a child that is pid 1 of a fresh pid namespace (or a plain child when that fails).

    As root the worker points its next child into a new pid namespace and forks once. In
    a user namespace it cannot return to its own pid namespace afterwards, so a middle
    process makes the namespace and forks the child, then exits; the child, re-parented
    to this (subreaper) worker, waits for that exit before it goes on.
    """
    if config.get("userns"):
        return _fork_via_middle()
    try:
        linux.setns(own_pid_ns, linux.CLONE_NEWPID)
        linux.unshare(linux.CLONE_NEWPID)
    except OSError:
        if config["strict"]:
            raise
    return os.fork()


def _fork_via_middle() -> int:
    pid_r, pid_w = os.pipe()
    go_r, go_w = os.pipe()
    middle = os.fork()
    if middle == 0:
        return _middle(pid_r, pid_w, go_r, go_w)
    os.close(pid_w)
    os.close(go_r)
    data = os.read(pid_r, 32)
    os.close(pid_r)
    os.waitpid(middle, 0)
    # Only now is the middle wholly gone and the child re-parented here; a parent-death
    # signal set any earlier would fire at the middle's exit.
    os.write(go_w, b"1")
    os.close(go_w)
    if not data:
        raise OSError("the middle process could not fork the run's child")
    return int(data)


def _middle(pid_r: int, pid_w: int, go_r: int, go_w: int) -> int:
    """Make a pid namespace, fork the run's child into it, report its pid and exit; 0 in the child."""
    try:
        os.close(pid_r)
        os.close(go_w)
        with contextlib.suppress(OSError):  # without it the probe reports no pid namespace
            linux.unshare(linux.CLONE_NEWPID)
        pid = os.fork()
        if pid == 0:
            os.close(pid_w)
            if os.read(go_r, 1) != b"1":  # the worker died meanwhile
                os._exit(0)
            os.close(go_r)
            return 0
        os.write(pid_w, str(pid).encode())
    except BaseException:
        os._exit(1)
    os._exit(0)


class _Spare:
    """A standby child: sandboxed already, waiting for its request."""

    def __init__(self, config: dict[str, Any], own_pid_ns: int, sock: socket.socket) -> None:
        from . import child

        event_r, event_w = os.pipe2(os.O_CLOEXEC)
        request_r, request_w = os.pipe2(os.O_CLOEXEC)
        for fd in (event_w, request_w):
            with contextlib.suppress(OSError):  # a smaller pipe only costs throughput
                fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)
        pid = _fork(config, own_pid_ns)
        if pid == 0:
            sock.close()
            os.close(event_r)
            os.close(request_w)
            child.standby(config, event_w, request_r, _WARMUP[0])
        os.close(event_w)
        os.close(request_r)
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.event_r: int | None = event_r
        self.request_w: int | None = request_w

    def send(self, data: bytes) -> bool:
        """Hand the child its request; ``False`` if it is already gone."""
        assert self.request_w is not None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.request_w, view) :]
        except BrokenPipeError:
            return False
        finally:
            os.close(self.request_w)
            self.request_w = None
        return True

    def discard(self) -> None:
        """Kill and reap the child, closing what is left of its pipes."""
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.close()

    def close(self) -> None:
        for fd in (self.event_r, self.request_w, self.pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.event_r = self.request_w = None


def _probe(
    config: dict[str, Any], worker_ns: dict[str, str], own_pid_ns: int
) -> tuple[dict[str, bool], dict[str, str]]:
    from . import child
    from .framing import FrameDecoder

    read_fd, write_fd = os.pipe()
    pid = _fork({**config, "strict": False}, own_pid_ns)
    if pid == 0:
        os.close(read_fd)
        child.probe(config, worker_ns, write_fd)
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
    source_fd: int,
    spare: _Spare,
    config: dict[str, Any],
    own_pid_ns: int,
) -> None:
    """Run one snippet in the standby child; answer ``started`` (with the event pipe), then ``exited``."""
    from . import child

    run_id = message["id"]
    try:
        source = os.pread(source_fd, message["source_bytes"], 0).decode()
    finally:
        os.close(source_fd)
    request = child.encode_request(message["device"], message["limits"], source)
    if not spare.send(request):  # the standby child died while waiting: make another
        spare.discard()
        spare = _Spare(config, own_pid_ns, sock)
        spare.send(request)
    assert spare.event_r is not None
    control.send_message(sock, {"type": "started", "id": run_id, "pid": spare.pid}, [spare.event_r])
    os.close(spare.event_r)
    spare.event_r = None
    started = time.monotonic()
    deadline = started + float(message["limits"]["timeout_s"]) + _KILL_GRACE_S
    with selectors.DefaultSelector() as sel:
        sel.register(sock, selectors.EVENT_READ, "control")
        sel.register(spare.pidfd, selectors.EVENT_READ, "child")
        done = False
        while not done:
            for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                if key.data == "child":
                    done = True
                    continue
                request_msg, fds = control.recv_message(sock, maxfds=2)
                for fd in fds:
                    os.close(fd)
                if request_msg is None:
                    spare.discard()
                    sys.exit(0)
                if request_msg["type"] == "kill" and request_msg.get("id") == run_id:
                    signal.pidfd_send_signal(spare.pidfd, signal.SIGKILL)
            if time.monotonic() >= deadline:
                signal.pidfd_send_signal(spare.pidfd, signal.SIGKILL)
                deadline = float("inf")
    _, status, usage = os.wait4(spare.pid, 0)
    spare.close()
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
