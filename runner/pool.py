"""A pool of warm, sandboxed worker processes that run snippets and stream their events.

This module (and all it imports) never imports torch: the server process stays
torch-free, and user code never runs in it. Use it from one asyncio event loop:

>>> async def demo():
...     pool = WorkerPool(workers=1, isolation="local")
...     await pool.start()
...     handle = pool.submit("import torch\\nx = torch.tensor(2.0, requires_grad=True)\\n(x * x).backward()\\n")
...     kinds = [event.type async for event in handle.events()]
...     await pool.close()
...     return kinds[0], kinds[-1], handle.status
>>> asyncio.run(demo())  # doctest: +SKIP
('run_started', 'run_finished', 'ok')
"""

from __future__ import annotations

import asyncio
import glob
import itertools
import os
from collections import deque
from pathlib import Path
from typing import Any, Literal

from engine.devices import DEVICE_NAME
from engine.events import Limits

from .errors import PoolBusy, SandboxUnavailable
from .handle import RunHandle
from .proxy import WorkerProxy

__all__ = ["MAX_SOURCE_BYTES", "WorkerPool"]

MAX_SOURCE_BYTES = 1_000_000
SCRATCH_MB = 32
UID_BASE = 1_000_000_000  # far above any real user; every uid used stays below 2**31
_UIDS_PER_POOL = 1024
_POOL_KEYS = 1 << 20
_pools_made = itertools.count()
_START_TIMEOUT_S = 180.0
_RESPAWN_DELAYS_S = (0.2, 1.0, 5.0, 15.0)
_PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)
_PARENT_LAYERS = {"wall_timeout": True, "output_caps": True, "frame_validation": True}


class WorkerPool:
    """Run snippets in warm worker processes, each run in its own sandboxed child.

    ``workers`` defaults to the number of CPU cores; ``max_queue`` bounds the runs waiting
    for a worker (past it :meth:`submit` raises :class:`PoolBusy`). ``isolation="strict"``
    refuses to start (:class:`SandboxUnavailable`) unless every sandbox layer works here;
    ``"local"`` runs with what is available and :meth:`isolation_report` says what that is.
    """

    def __init__(
        self,
        *,
        workers: int | None = None,
        max_queue: int = 32,
        isolation: Literal["strict", "local"] = "strict",
        default_limits: Limits | None = None,
    ) -> None:
        if isolation not in ("strict", "local"):
            raise ValueError(f"isolation must be 'strict' or 'local', not {isolation!r}")
        self.workers = max(
            1, min(_UIDS_PER_POOL - 1, workers if workers is not None else (os.cpu_count() or 1))
        )
        self.max_queue = max(0, max_queue)
        self.isolation = isolation
        self.default_limits = default_limits or Limits()
        self._proxies: list[WorkerProxy] = []
        self._pending: dict[str, deque[RunHandle]] = {"cpu": deque(), "gpu": deque()}
        self._report: dict[str, bool] = {}
        self._failures: dict[str, str] = {}
        self._cuda = False
        self._started = False
        self._closed = False
        self._respawns: dict[int, int] = {}
        self._mean_run_s = 1.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gpu_checked: set[WorkerProxy] = set()
        self._cuda_problem = ""
        self._force_userns = False  # tests set it to exercise the non-root path as root
        # Worker slot i of this pool runs its children as its own uid, so that RLIMIT_NPROC (counted
        # per uid) is never shared between concurrent runs, nor with another pool on this machine.
        key = (os.getpid() * 16 + next(_pools_made)) % _POOL_KEYS
        self._uid_base = UID_BASE + key * _UIDS_PER_POOL

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start the warm workers and wait until each has checked its sandbox.

        Raises :class:`SandboxUnavailable` in strict mode when a layer is missing (the
        workers are stopped first).
        """
        if self._started:
            return
        self._loop = asyncio.get_running_loop()
        self._started = True
        proxies = [self._spawn(i, gpu=False) for i in range(self.workers)]
        try:
            readies = await asyncio.wait_for(asyncio.gather(*(p.ready for p in proxies)), _START_TIMEOUT_S)
        except BaseException:
            await self.close()
            raise
        first = readies[0]
        self._report = {**{k: bool(v) for k, v in first["layers"].items()}, **_PARENT_LAYERS}
        for ready in readies[1:]:
            for layer, ok in ready["layers"].items():
                self._report[layer] = self._report.get(layer, False) and bool(ok)
        self._failures = dict(first.get("failures") or {})
        # CPU workers see no GPU (CUDA_VISIBLE_DEVICES is empty for them), so a GPU's device
        # files decide whether to start the GPU worker; that worker then checks with NVML.
        self._cuda = bool(first.get("cuda")) or _gpu_device_present()
        missing = [layer for layer, ok in self._report.items() if not ok]
        if self.isolation == "strict" and missing:
            await self.close()
            why = "; ".join(f"{layer}: {self._failures.get(layer, 'check failed')}" for layer in missing)
            raise SandboxUnavailable(
                f"strict isolation is not available here; missing layers: {', '.join(missing)} ({why}). "
                "Run with isolation='local' only for single-user use on loopback.",
                missing=missing,
            )
        if self._cuda:
            self._spawn(self.workers, gpu=True)

    async def close(self) -> None:
        """Cancel every run, kill every worker and wait until they are gone. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for queue in self._pending.values():
            while queue:
                queue.popleft().finish("cancelled", "The run was cancelled (the runner is shutting down).")
        proxies = list(self._proxies)
        for proxy in proxies:
            proxy.cancel_run("the runner is shutting down")
            proxy.dead = True
            proxy.kill()
        for proxy in proxies:
            await proxy.wait_gone()
        self._proxies.clear()

    # --- runs ---------------------------------------------------------------------------

    def submit(self, source: str, *, device: str = "cpu", limits: Limits | None = None) -> RunHandle:
        """Queue ``source`` to run on ``device`` and return its handle at once.

        Call it from the event loop that started the pool. Never blocks. Raises :class:`PoolBusy` when ``max_queue`` runs are already waiting.
        A run that cannot start (source too long, unknown device, no GPU for ``cuda``)
        still gets a handle whose stream says why, with status ``error``.
        """
        if not self._started or self._closed:
            raise RuntimeError("the pool is not running: call `await pool.start()` first")
        handle = RunHandle(source, device, limits or self.default_limits, self._cancel)
        problem = self._refusal(source, device)
        if problem is not None:
            handle.finish("error", problem)
            return handle
        kind = "gpu" if device.startswith("cuda") else "cpu"
        queue = self._pending[kind]
        queue.append(handle)
        self._dispatch(kind)
        if handle in queue and len(queue) > self.max_queue:
            queue.remove(handle)
            retry = round(max(0.5, self._mean_run_s * (len(queue) + 1) / max(1, self._capacity(kind))), 1)
            raise PoolBusy(
                f"all {self._capacity(kind)} workers are busy and {len(queue)} runs are waiting; "
                f"try again in {retry:g} s",
                retry_after=retry,
            )
        return handle

    def isolation_report(self) -> dict[str, bool]:
        """Tell which isolation layers are active, as each worker's probe child found them."""
        return dict(self._report)

    @property
    def cuda_available(self) -> bool:
        """Whether CUDA runs can be served, as a worker found without initialising CUDA."""
        return self._cuda

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for health checks and tests)."""
        return [p.pid for p in self._proxies if p.pid is not None and not p.dead]

    @property
    def ready_workers(self) -> int:
        """CPU workers (of :attr:`workers`) that have warmed up and are alive, busy or not;
        the GPU worker, on a machine with one, is not counted."""
        return sum(
            1
            for p in self._proxies
            if p.kind == "cpu" and p.ready.done() and not p.ready.exception() and not p.dead
        )

    @property
    def idle_workers(self) -> int:
        """CPU workers ready to take a run now (the GPU worker is not counted)."""
        return sum(1 for p in self._proxies if p.kind == "cpu" and p.idle)

    @property
    def sandbox_uids(self) -> range:
        """The uids this pool's sandboxed children run as (one per worker slot)."""
        return range(self._uid_base, self._uid_base + _UIDS_PER_POOL)

    @property
    def queued(self) -> int:
        """Runs waiting for a worker."""
        return sum(len(q) for q in self._pending.values())

    def _refusal(self, source: str, device: str) -> str | None:
        if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
            return (
                f"The snippet is too long ({len(source)} characters; the limit is {MAX_SOURCE_BYTES} bytes)."
            )
        if not DEVICE_NAME.match(device):
            return f"Unknown device {device!r}: use 'cpu' or 'cuda'."
        if device.startswith("cuda") and self._cuda_problem:
            return f"CUDA runs are unavailable on this server: {self._cuda_problem}."
        if device.startswith("cuda") and not self._cuda:
            return (
                "CUDA is not available on this server (no GPU was found), so this run cannot use "
                "device 'cuda'. Run it on device 'cpu'."
            )
        return None

    def _capacity(self, kind: str) -> int:
        return sum(1 for p in self._proxies if p.kind == kind and not p.dead)

    def _cancel(self, handle: RunHandle, reason: str) -> None:
        for queue in self._pending.values():
            if handle in queue:
                queue.remove(handle)
                handle.finish(
                    "cancelled", f"The run was cancelled{f' ({reason})' if reason else ''} before it started."
                )
                return
        for proxy in self._proxies:
            if proxy.handle is handle:
                proxy.cancel_run(reason)
                return

    def _dispatch(self, kind: str) -> None:
        queue = self._pending[kind]
        for proxy in self._proxies:
            if not queue:
                return
            if proxy.kind == kind and proxy.idle:
                proxy.start_run(queue.popleft())

    # --- workers ------------------------------------------------------------------------

    def _spawn(self, index: int, *, gpu: bool) -> WorkerProxy:
        settings: dict[str, Any] = {
            "strict": self.isolation == "strict",
            "uid": self._uid_base + index,
            "gpu": gpu,
            "scratch_mb": SCRATCH_MB,
            "hide": _hidden_paths(),
            "force_userns": self._force_userns,
        }
        proxy = WorkerProxy(index=index, settings=settings, on_idle=self._on_idle, on_dead=self._on_dead)
        proxy.spawn()
        self._proxies.append(proxy)
        return proxy

    def _on_idle(self, proxy: WorkerProxy) -> None:
        if self._closed:
            return
        if proxy.kind == "gpu" and proxy not in self._gpu_checked:
            self._gpu_checked.add(proxy)
            if not proxy.ready.result().get("cuda"):
                self._refuse_cuda(proxy, "the GPU worker found no usable CUDA device")
                return
            missing = [layer for layer, ok in proxy.ready.result()["layers"].items() if not ok]
            if missing and self.isolation == "strict":
                self._refuse_cuda(proxy, f"the GPU sandbox lacks these layers: {', '.join(missing)}")
                return
        self._respawns.pop(proxy.index, None)
        self._dispatch(proxy.kind)

    def _refuse_cuda(self, proxy: WorkerProxy, why: str) -> None:
        """Stop serving CUDA runs (strict mode, GPU sandbox incomplete): end the queued ones."""
        self._cuda = False
        self._cuda_problem = why
        proxy.dead = True
        proxy.kill()
        if proxy in self._proxies:
            self._proxies.remove(proxy)
        queue = self._pending["gpu"]
        while queue:
            queue.popleft().finish("error", f"CUDA runs are unavailable on this server: {why}.")

    def _on_dead(self, proxy: WorkerProxy) -> None:
        if self._closed or self._loop is None:
            return
        if proxy in self._proxies:
            self._proxies.remove(proxy)
        tries = self._respawns.get(proxy.index, 0)
        self._respawns[proxy.index] = tries + 1
        delay = _RESPAWN_DELAYS_S[min(tries, len(_RESPAWN_DELAYS_S) - 1)]
        self._loop.call_later(delay, self._respawn, proxy.index, proxy.kind == "gpu")

    def _respawn(self, index: int, gpu: bool) -> None:
        if not self._closed:
            self._spawn(index, gpu=gpu)


def _hidden_paths() -> list[str]:
    """The app's own folder and the server's working folder: never visible to a snippet."""
    paths = {_PROJECT_ROOT}
    cwd = os.getcwd()
    if cwd != "/":
        paths.add(os.path.realpath(cwd))
    return sorted(paths)


def _gpu_device_present() -> bool:
    """Tell whether an NVIDIA GPU's device files exist (no torch, no CUDA initialisation)."""
    return os.path.exists("/dev/nvidiactl") and bool(glob.glob("/dev/nvidia[0-9]*"))
