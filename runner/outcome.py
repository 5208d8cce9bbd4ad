"""Say how a run ended when its child could not say it itself, in words a learner can act on."""

from __future__ import annotations

import math
import signal
from typing import Any

from engine.events import ErrorRaised, Limits, RunStatus

__all__ = ["cancelled", "exit_outcome", "memory_message", "progress_when_stopped", "timed_out", "worker_lost"]

_SIGNALS = {
    signal.SIGSEGV: "a segmentation fault: native code read or wrote memory it does not own "
    "(for example through ctypes)",
    signal.SIGBUS: "a bus error: native code touched memory that is not there",
    signal.SIGABRT: "an abort in native code (a failed internal check)",
    signal.SIGILL: "an illegal instruction in native code",
    signal.SIGFPE: "an arithmetic fault in native code",
    signal.SIGSYS: "a forbidden system call",
    signal.SIGXFSZ: "a file grew past the scratch folder's size limit",
    signal.SIGKILL: "it was killed, most often because the machine ran out of memory",
}
_MEMORY_WORDS = ("can't allocate memory", "cannot allocate memory", "not enough memory", "out of memory")


def timed_out(limits: Limits) -> tuple[RunStatus, str]:
    """The run passed its wall-clock limit."""
    return "timeout", f"The run took longer than its {limits.timeout_s:g} s time limit and was stopped."


def progress_when_stopped(steps: int, calls: int, line: int | None, code: str | None) -> str:
    """What a run stopped at its time limit had done, and where it was (``line``, whose
    ``code`` is quoted when short), for the end of its message; empty when it said nothing."""
    done = (
        f"{steps:,} optimizer step{'s' if steps != 1 else ''}"
        if steps
        else f"{calls:,} backward() call{'s' if calls != 1 else ''}"
        if calls
        else ""
    )
    where = ""
    if line is not None:
        quoted = f" (`{code.strip()}`)" if code and 0 < len(code.strip()) <= 60 else ""
        where = f"was at line {line}{quoted}"
    if not done and not where:
        return ""
    said = f"It had done {done}" + (f" and {where}" if where else "") if done else f"It {where}"
    return f" {said} when it was stopped: fewer iterations, or smaller tensors, finish within the limit."


def cancelled(reason: str = "") -> tuple[RunStatus, str]:
    """The run was cancelled (by its user, or because the runner is shutting down)."""
    return "cancelled", f"The run was cancelled{f' ({reason})' if reason else ''}."


def worker_lost() -> tuple[RunStatus, str]:
    """The worker process serving the run died under it."""
    return "crashed", (
        "The worker process running this snippet died, so the run was lost. "
        "A new worker has been started; run it again."
    )


def exit_outcome(exit_info: dict[str, Any], limits: Limits) -> tuple[RunStatus, str]:
    """Describe a child that exited without sending ``run_finished``.

    ``exit_info`` is the worker's ``exited`` message: ``code`` or ``signal``, and ``cpu_s``.
    """
    cpu_limit = math.ceil(limits.timeout_s) + 1
    sig = exit_info.get("signal")
    if sig in (signal.SIGXCPU, signal.SIGKILL) and float(exit_info.get("cpu_s") or 0) >= cpu_limit - 0.05:
        return "timeout", f"The run used more than {cpu_limit} s of CPU time and was stopped."
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        what = _SIGNALS.get(sig, f"it was killed by {name}")
        return "crashed", f"The run crashed: {what} ({name}). Events up to the crash were kept."
    code = exit_info.get("code")
    return "crashed", (
        f"The run's process exited (code {code}) before the run finished; "
        "a snippet that calls os._exit() or closes the event channel ends like this."
    )


def memory_message(error: ErrorRaised | None, limits: Limits) -> str | None:
    """Return a clear message when ``error`` means the run ran out of memory, else ``None``."""
    if error is None:
        return None
    text = error.message.lower()
    if error.exc_type not in ("MemoryError", "OutOfMemoryError") and not any(
        w in text for w in _MEMORY_WORDS
    ):
        return None
    detail = error.message.strip().splitlines()[-1][:300] if error.message.strip() else error.exc_type
    return (
        f"The run ran out of memory: a run may use at most {limits.memory_mb} MiB "
        f"({error.exc_type}: {detail})."
    )
