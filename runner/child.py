"""What a forked child does: enter the sandbox, wait for one run, stream its events, exit.

A worker forks its next child ahead of time (a standby child): the child enters the
sandbox at once and then blocks reading its request pipe, so a submitted run skips the
fork and the sandbox set-up. The request is two frames, a JSON header (``device``,
``limits``) and the source. The child never returns into the worker's loop: every path
ends in ``os._exit`` so that no ``atexit`` handler, finaliser or buffered stream of the
snippet (or of the worker) runs.
"""

from __future__ import annotations

import json
import os
from typing import Any, NoReturn

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

from engine.events import Limits, RunFinished, RunStarted, event_adapter
from engine.text import writable

from . import linux, sandbox
from .framing import FrameDecoder, encode_frame
from .probe import verify as probe_layers

__all__ = ["SANDBOX_EXIT", "encode_request", "probe", "standby"]

SANDBOX_EXIT = 70
_MAX_REQUEST = 4 << 20


class _FrameSink:
    """Write each event to the event pipe as one length-prefixed JSON frame.

    # NOTE [Events validated once, by the pool]
    The recorder's events arrive as the dicts it builds (``record_stream(validate=False)``)
    and are written as they are: the pool validates every frame against the event schema
    where it leaves the sandbox (``RunHandle.accept``), and the server stores and streams
    the validated model. Validating in the child as well cost ~30 us an event, a third of
    the time a 2,000-step chain (26,000 events) took from submit to its last event. A
    model (the sandbox's own messages) is written through its schema, and so is a dict
    that ``pydantic_core.to_json`` cannot write (a type it does not know).
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __call__(self, event: Any) -> None:
        _write_all(self.fd, encode_frame(_encode(event)))


def _encode(event: Any) -> bytes:
    """One event as JSON (see NOTE [Events validated once, by the pool])."""
    if isinstance(event, BaseModel):
        return event.model_dump_json().encode()
    try:
        # NaN and infinities as strings, as the event models write them
        return to_json(event, inf_nan_mode="strings")
    except (PydanticSerializationError, ValueError, TypeError):
        return event_adapter.validate_python(_writable(event)).model_dump_json().encode()


def _encode_only(event: Any) -> None:
    _encode(event)


def _writable(value: Any) -> Any:
    """``value`` with every string made writable as UTF-8 (no lone surrogates)."""
    if isinstance(value, str):
        return writable(value)
    if isinstance(value, dict):
        return {k: _writable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_writable(v) for v in value]
    return value


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def encode_request(device: str, limits: dict[str, Any], source: str) -> bytes:
    """Return the bytes a worker writes to a standby child's request pipe."""
    header = json.dumps({"device": device, "limits": limits}).encode()
    return encode_frame(header) + encode_frame(source.encode())


def _read_request(fd: int) -> tuple[dict[str, Any], str] | None:
    decoder = FrameDecoder(max_frame=_MAX_REQUEST, max_total=2 * _MAX_REQUEST)
    frames: list[bytes] = []
    while len(frames) < 2:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        frames += decoder.feed(chunk)
    os.close(fd)
    return json.loads(frames[0]), frames[1].decode()


def _warm(source: str) -> None:
    """Run ``source`` unrecorded-to-anyone, so the pages a run touches are this child's own already."""
    from engine.run import record_stream

    record_stream(source, _encode_only, validate=False)


def _open_cuda() -> None:
    """Open the GPU (a CUDA context and cuBLAS) while the child still sees the whole machine.

    # NOTE [CUDA opened before the walls]
    # On a GPU machine (an H200, driver 580, torch 2.11) CUDA could not start inside the
    # sandbox: cudaGetDeviceCount failed with error 304 ("OS call failed") under the seccomp
    # filter, in the new root, and in a fresh pid namespace while /proc was the worker's,
    # each on its own. Once started, CUDA runs on inside all three. So a GPU child starts
    # CUDA here: after its descriptors are the sandbox's (the driver's stay open, above fd 4)
    # and before the walls go up, with a fresh /proc for its pid namespace in a mount
    # namespace of its own. A failure is left for the snippet's first CUDA call to report.
    # tests/runner/test_lifecycle.py::test_cuda_run_on_a_gpu runs a CUDA snippet this way.
    """
    try:
        linux.unshare(linux.CLONE_NEWNS)
        linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
        linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    except OSError:
        pass
    import torch

    try:
        a = torch.ones(2, 2, device="cuda")
        (a @ a).sum().item()
    except Exception:  # the snippet meets the same failure, with its own line, if it uses CUDA
        pass


def standby(config: dict[str, Any], event_fd: int, request_fd: int, warmup: str = "") -> NoReturn:
    """Enter the sandbox, wait for a request, run it and exit (0 after ``run_finished``).

    ``warmup`` (a snippet) is run first, while waiting costs nobody anything: the child
    faults in its copy of the pages a run touches before the run's clock starts.
    """
    code = 1
    try:
        problem = None
        try:
            sandbox.enter(config, event_fd, request_fd, _open_cuda if config.get("gpu") else None)
        except sandbox.SandboxError as exc:
            problem = exc
        if problem is None and warmup:
            _warm(warmup)
        request = _read_request(sandbox.REQUEST_FD)
        if request is None:  # the worker let this child go unused
            os._exit(0)
        header, source = request
        limits = Limits.model_validate(header["limits"])
        device = header["device"]
        sink = _FrameSink(sandbox.EVENT_FD)
        if problem is None:
            try:
                sandbox.limit_run(config, limits.timeout_s, None if config.get("gpu") else limits.memory_mb)
            except sandbox.SandboxError as exc:
                problem = exc
        if problem is not None:
            message = f"The sandbox could not be set up, so the run did not start ({problem})."
            sink(RunStarted(source=source, device=device, limits=limits))
            sink(RunFinished(seq=1, status="error", message=message))
            os._exit(SANDBOX_EXIT)
        import torch

        from engine.run import record_stream

        torch.set_num_threads(1)
        record_stream(source, sink, device=device, limits=limits, validate=False)
        code = 0
    finally:
        os._exit(code)


def probe(config: dict[str, Any], worker_ns: dict[str, str], event_fd: int) -> NoReturn:
    """Enter the sandbox, check every layer from inside, and send the report as one frame.

    The probe applies what it can whatever the mode, so the report names every gap.
    """
    code = 1
    try:
        config = {**config, "strict": False, "memory_mb": None if config.get("gpu") else Limits().memory_mb}
        failures = sandbox.enter(config, event_fd)
        sandbox.limit_run(config, 5.0, config["memory_mb"])
        report = probe_layers(config, worker_ns, failures)
        _write_all(
            sandbox.EVENT_FD, encode_frame(json.dumps({"layers": report, "failures": failures}).encode())
        )
        code = 0
    finally:
        os._exit(code)
