"""What a forked child does: enter the sandbox, run one snippet, stream its events, exit.

The child never returns into the worker's loop: every path ends in ``os._exit`` so that no
``atexit`` handler, finaliser or buffered stream of the snippet (or the worker) runs.
"""

from __future__ import annotations

import json
import os
from typing import Any, NoReturn

from engine.events import Limits, RunFinished, RunStarted

from . import sandbox
from .framing import encode_frame

__all__ = ["SANDBOX_EXIT", "probe", "run"]

SANDBOX_EXIT = 70


class _FrameSink:
    """Write each event to the event pipe as one length-prefixed JSON frame."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __call__(self, event: Any) -> None:
        _write_all(self.fd, encode_frame(event.model_dump_json().encode()))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def run(request: dict[str, Any], source: str, event_fd: int, config: dict[str, Any]) -> NoReturn:
    """Run ``source`` in the sandbox and exit: 0 after ``run_finished``, else non-zero."""
    code = 1
    try:
        limits = Limits.model_validate(request["limits"])
        config = {
            **config,
            "timeout_s": limits.timeout_s,
            "memory_mb": None if config.get("gpu") else limits.memory_mb,
        }
        sink = _FrameSink(sandbox.EVENT_FD)
        try:
            sandbox.enter(config, event_fd)
        except sandbox.SandboxError as exc:
            sink(RunStarted(source=source, device=request["device"], limits=limits))
            sink(
                RunFinished(
                    seq=1,
                    status="error",
                    message=f"the sandbox could not be set up, so the run did not start ({exc})",
                )
            )
            os._exit(SANDBOX_EXIT)
        import torch

        from engine.run import record_stream

        torch.set_num_threads(1)
        record_stream(source, sink, device=request["device"], limits=limits)
        code = 0
    finally:
        os._exit(code)


def probe(config: dict[str, Any], worker_ns: dict[str, str], event_fd: int) -> NoReturn:
    """Enter the sandbox, check every layer from inside, and send the report as one frame.

    The probe applies what it can whatever the mode, so the report names every gap.
    """
    code = 1
    try:
        config = {**config, "strict": False}
        failures = sandbox.enter(config, event_fd)
        report = sandbox.verify(config, worker_ns, failures)
        _write_all(
            sandbox.EVENT_FD, encode_frame(json.dumps({"layers": report, "failures": failures}).encode())
        )
        code = 0
    finally:
        os._exit(code)
