"""The pool's side of one warm worker process: spawn it, hand it runs, read their events.

Each run gets a fresh pipe whose write end is passed to the worker (and so to the run's
child) over the control socket; the read end stays here, so events go straight from the
child to the pool without a copy through the worker. A run is over for the worker when
it reports ``exited``; it is over for the caller as soon as ``run_finished`` is queued,
which may be earlier (a timeout or a cancel ends the stream first and kills second).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import control, outcome
from .framing import FrameDecoder, FrameError
from .handle import RunHandle, StreamError

__all__ = ["WorkerProxy"]

MAX_FRAME = 8 << 20
MAX_TOTAL = 512 << 20
_HIGH_WATER = 4096
_READ_SIZE = 1 << 20
_FINISH_GRACE_S = 2.0
_PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)
_BOOT = f"import sys; sys.path.insert(0, {_PROJECT_ROOT!r}); from runner.worker import main; main()"
_PASSED_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "SSL_CERT_FILE",
)


def _kill_uid(uid: int) -> int:
    """Kill every live process whose real uid is ``uid`` (a sandbox uid: only runs use it);
    count them. A zombie is not counted: it is dead already, and stays listed until whoever
    inherited it reaps it (a second and more), which held a server's shutdown that long."""
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(ln.split(":", 1) for ln in fh if ln.startswith(("State:", "Uid:")))
            if (
                "Uid" in fields
                and int(fields["Uid"].split()[0]) == uid
                and not fields["State"].lstrip().startswith("Z")
            ):
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
        except (OSError, ValueError, KeyError):
            continue
    return killed


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class WorkerProxy:
    """One worker process and the run it is serving, if any.

    ``on_idle(proxy)`` is called when it can take a run; ``on_dead(proxy)`` once when the
    process is gone (the pool starts a replacement).
    """

    def __init__(
        self,
        *,
        index: int,
        settings: dict[str, Any],
        on_idle: Callable[[WorkerProxy], None],
        on_dead: Callable[[WorkerProxy], None],
    ) -> None:
        self.index = index
        self.settings = settings
        self.kind = "gpu" if settings.get("gpu") else "cpu"
        self.ready: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.ready.add_done_callback(_retrieve)  # a replacement's failure is handled by the pool, not awaited
        self.handle: RunHandle | None = None
        self.dead = False
        self._on_idle = on_idle
        self._on_dead = on_dead
        self._loop = asyncio.get_running_loop()
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._events_fd: int | None = None
        self._paused = False
        self._decoder: FrameDecoder | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._exited = True

    @property
    def pid(self) -> int | None:
        """The worker's process id (``None`` before it is spawned)."""
        return self._proc.pid if self._proc else None

    @property
    def idle(self) -> bool:
        """Whether it is ready and serving nothing."""
        return self.ready.done() and not self.dead and self.handle is None and self._exited

    def spawn(self) -> None:
        """Start the worker process; :attr:`ready` resolves with its ``ready`` message."""
        pool_end, worker_end = control.socket_pair()
        env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
        env.update(
            OMP_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            PYTORCH_NVML_BASED_CUDA_CHECK="1",
            PYTHONDONTWRITEBYTECODE="1",
        )
        if self.kind == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(worker_end.fileno()), json.dumps(self.settings)],
                pass_fds=[worker_end.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                cwd="/",
                start_new_session=True,
            )
        finally:
            worker_end.close()
        pool_end.setblocking(False)
        self._sock = pool_end
        self._loop.add_reader(pool_end.fileno(), self._on_control)

    # --- runs ---------------------------------------------------------------------------

    def start_run(self, handle: RunHandle) -> None:
        """Send ``handle``'s run to the worker; its events are read once the worker says ``started``."""
        assert self._sock is not None and self.idle
        source = handle.source.encode()
        source_fd = os.memfd_create("gradwalk-source", os.MFD_CLOEXEC)
        try:
            os.write(source_fd, source)
            control.send_message(
                self._sock,
                {
                    "type": "run",
                    "id": handle.id,
                    "device": handle.device,
                    "source_bytes": len(source),
                    "limits": handle.limits.model_dump(mode="json"),
                },
                [source_fd],
            )
        except OSError:
            handle.finish(*outcome.worker_lost())
            self._died()
            return
        finally:
            os.close(source_fd)
        self.handle = handle
        self._exited = False
        self._decoder = FrameDecoder(max_frame=MAX_FRAME, max_total=MAX_TOTAL)
        handle.on_drain = self._resume
        self._timer = self._loop.call_later(handle.limits.timeout_s, self._timeout)

    def _run_started(self, fds: list[int]) -> None:
        if self.handle is None or self.handle.finished or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            return
        self._events_fd = fds[0]
        os.set_blocking(self._events_fd, False)
        self._loop.add_reader(self._events_fd, self._on_events)

    def cancel_run(self, reason: str = "") -> None:
        """End the current run's stream as ``cancelled`` and kill its child."""
        if self.handle is not None:
            self._stop(*outcome.cancelled(reason))

    def _timeout(self) -> None:
        if self.handle is not None:
            self._stop(*outcome.timed_out(self.handle.limits))

    def _stop(self, status: Any, message: str) -> None:
        """Finish the stream now with ``status``; the child is killed and reaped behind it."""
        handle = self.handle
        if handle is None:
            return
        handle.finish(status, message)
        self._close_events()
        self._kill_child(handle.id)

    def _kill_child(self, run_id: str) -> None:
        if self._sock is not None and not self._exited:
            try:
                control.send_message(self._sock, {"type": "kill", "id": run_id})
            except OSError:
                self._died()

    def _on_events(self) -> None:
        fd, handle, decoder = self._events_fd, self.handle, self._decoder
        if fd is None or handle is None or decoder is None:
            return
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        if not data:
            self._close_events()
            return
        try:
            for frame in decoder.feed(data):
                if handle.accept(frame):
                    self._close_events()
                    self._timer_cancel()
                    self._timer = self._loop.call_later(_FINISH_GRACE_S, self._kill_child, handle.id)
                    return
        except FrameError as exc:
            self._stop("limit", f"The run was stopped: {exc}.")
            return
        except StreamError as exc:
            self._stop(exc.status, f"The run was stopped because its event stream was invalid: {exc}.")
            return
        if handle.backlog > _HIGH_WATER and not self._paused:
            self._paused = True
            self._loop.remove_reader(fd)

    def _resume(self) -> None:
        if self._paused and self._events_fd is not None:
            self._paused = False
            self._loop.add_reader(self._events_fd, self._on_events)

    def _close_events(self) -> None:
        if self._events_fd is not None:
            if not self._paused:
                self._loop.remove_reader(self._events_fd)
            self._paused = False
            os.close(self._events_fd)
            self._events_fd = None

    def _timer_cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _run_exited(self, info: dict[str, Any]) -> None:
        handle = self.handle
        self._exited = True
        if handle is not None:
            if not handle.finished:
                self._read_rest()
            if not handle.finished:
                handle.finish(*outcome.exit_outcome(info, handle.limits))
            handle.on_drain = None
        self._close_events()
        self._timer_cancel()
        self.handle = None
        self._on_idle(self)

    def _read_rest(self) -> None:
        """Read everything the dead child left in the pipe; its writers are all gone."""
        while self._events_fd is not None and self.handle is not None and not self.handle.finished:
            try:
                data = os.read(self._events_fd, _READ_SIZE)
            except BlockingIOError:
                return
            if not data:
                return
            try:
                for frame in self._decoder.feed(data) if self._decoder else []:
                    if self.handle.accept(frame):
                        return
            except FrameError as exc:
                self.handle.finish("limit", f"The run was stopped: {exc}.")
            except StreamError as exc:
                self.handle.finish(
                    exc.status, f"The run was stopped because its event stream was invalid: {exc}."
                )

    # --- control channel ----------------------------------------------------------------

    def _on_control(self) -> None:
        assert self._sock is not None
        while True:
            try:
                message, fds = control.recv_message(self._sock, maxfds=1)
            except (BlockingIOError, InterruptedError):
                return
            except (OSError, ValueError):
                message = None
            if message is None:
                self._died()
                return
            kind = message["type"]
            if kind == "started" and self.handle is not None and message.get("id") == self.handle.id:
                self._run_started(fds)
                continue
            for fd in fds:
                os.close(fd)
            if kind == "ready" and not self.ready.done():
                self.ready.set_result(message)
                self._on_idle(self)
            elif kind == "exited" and self.handle is not None and message.get("id") == self.handle.id:
                self._run_exited(message)

    def _died(self) -> None:
        if self.dead:
            return
        self.dead = True
        if self.handle is not None:
            self.handle.finish(*outcome.worker_lost())
            self.handle.on_drain = None
            self.handle = None
        self._close_events()
        self._timer_cancel()
        if not self.ready.done():
            self.ready.set_exception(RuntimeError("the worker process exited before it was ready"))
        self.kill()
        self._on_dead(self)

    def kill(self) -> None:
        """Kill the worker and everything it started; reap it in the background.

        Its children die with it (parent-death signal, and the pid namespace of each run);
        as root the pool also kills every process left with the slot's sandbox uid.
        """
        if self._sock is not None:
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            self._loop.call_later(0.01, self._reap)
        if os.geteuid() == 0:
            _kill_uid(self.settings["uid"])

    def _reap(self, delay: float = 0.01) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._loop.call_later(min(delay * 2, 1.0), self._reap, min(delay * 2, 1.0))

    async def wait_gone(self, timeout: float = 5.0) -> None:
        """Wait until the worker process has been reaped and, as root, its children are gone.

        A child forked just before the worker died may still be setting up its sandbox
        (as root, before its parent-death signal holds); it is swept once it has its uid.
        """
        proc = self._proc
        deadline = self._loop.time() + timeout
        while proc is not None and proc.poll() is None and self._loop.time() < deadline:
            await asyncio.sleep(0.01)
        quiet = 0
        while os.geteuid() == 0 and quiet < 3 and self._loop.time() < deadline:
            quiet = 0 if _kill_uid(self.settings["uid"]) else quiet + 1
            await asyncio.sleep(0.02)
