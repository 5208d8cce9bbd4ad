"""Run a snippet under the recorder and turn everything it does into events.

This is the engine's entry point: :func:`record` returns a whole :class:`Trace`;
:func:`record_stream` hands each event to a sink as it happens (the worker uses it to
stream a run live). Both run the snippet in this process: isolation is the runner's job.
"""

from __future__ import annotations

import builtins
import contextlib
import linecache
import os
import platform
import random
import re
import signal
import sys
import time
import traceback
import types
from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import api
from .events import Limits, RunStatus, Trace, event_adapter, trace_adapter
from .explain_syntax import syntax_hint
from .loop_ends import compile_with_loop_ends
from .output import CapturedOutput
from .recorder import Recorder
from .source import SNIPPET_FILENAME, source_lines
from .stack_room import stack_room
from .text import exception_text, without_terminal_codes, writable

__all__ = ["record", "record_stream"]


def record(
    source: str,
    *,
    device: str = "cpu",
    limits: Limits | None = None,
    filename: str = "snippet.py",
    argv: Sequence[str] = (),
    path: str | None = None,
) -> Trace:
    """Run ``source`` with real PyTorch and return its trace.

    The snippet runs as a script (``__name__ == "__main__"``, ``sys.argv`` as
    ``python FILENAME ARGV…`` gives it; see :func:`record_stream` for ``path``) with the
    variable ``device`` set, ``torch`` and Python's ``random`` seeded with 0, and its output
    captured.

    >>> trace = record("import torch\\nx = torch.tensor(2.5, requires_grad=True)\\n"
    ...                "y = x**3 - 4*x\\ny.backward()\\n")
    >>> [e.value.flat for e in trace.events if e.type == "tensor_final"]
    [[2.5]]
    >>> [e.grad.flat for e in trace.events if e.type == "tensor_final"]
    [[14.75]]
    """
    events: list[dict[str, Any]] = []
    record_stream(
        source,
        events.append,
        device=device,
        limits=limits,
        filename=filename,
        validate=False,
        argv=argv,
        path=path,
    )
    return trace_adapter.validate_python({"source": source, "events": events})


def record_stream(
    source: str,
    sink: Callable[[Any], None],
    *,
    device: str = "cpu",
    limits: Limits | None = None,
    filename: str = "snippet.py",
    validate: bool = True,
    pitfalls: bool = True,
    argv: Sequence[str] = (),
    path: str | None = None,
) -> RunStatus:
    """Run ``source``, handing each event to ``sink`` as it happens; return the run's status.

    While it runs, ``sys.argv`` is ``[filename, *argv]``, as ``python FILENAME ARGV…`` sets it
    (a script's ``argparse`` reads it: it read the host's own, gradwalk's or the worker's,
    and stopped the run with "unrecognized arguments"); the host's comes back afterwards.
    ``path``: the file the snippet was read from (``gradwalk record path/train.py``), which
    is then its ``__file__`` and ``sys.argv[0]``, its folder first on ``sys.path`` while it
    runs (so ``import helper`` finds ``path/helper.py``), as ``python PATH`` sets them;
    ``filename`` still names it in warnings and errors.

    With ``validate=True`` the sink receives :data:`engine.events.Event` models; with
    ``validate=False`` it receives the JSON-ready dicts the recorder builds (faster; the
    caller must validate them where they cross a trust boundary, as the runner does).
    ``pitfalls=False`` turns the pitfall detectors off (for measuring what they cost).
    Always ends with exactly one ``run_finished`` event. An exception in the snippet becomes
    an ``error`` event (status ``error``); an exception raised by ``sink`` propagates.
    """
    with stack_room():  # NOTE [Room on the stack for freeing deep graphs]: the run and its namespace freed
        return _run(source, sink, device, limits or Limits(), filename, validate, pitfalls, argv, path)


def _run(
    source: str,
    sink: Callable[[Any], None],
    device: str,
    limits: Limits,
    filename: str,
    validate: bool,
    pitfalls: bool,
    argv: Sequence[str],
    path: str | None,
) -> RunStatus:
    """:func:`record_stream`'s run; the snippet's namespace is freed as it returns."""
    if validate:
        raw_sink = sink

        def sink(event: dict[str, Any]) -> None:
            raw_sink(event_adapter.validate_python(event))

    rec = Recorder(sink, limits, source, pitfalls=pitfalls)
    rec.emit(
        dict(
            type="run_started",
            source=source,
            filename=filename,
            device=device,
            torch_version=torch.__version__,
            python_version=platform.python_version(),
            cuda_available=torch.cuda.is_available(),
            limits=limits.model_dump(),
            schema_version=1,
        ),
        closing=True,
    )
    started = time.perf_counter()
    status: RunStatus = "ok"
    message = ""
    try:
        code, loops = compile_with_loop_ends(source, rec.loop_ends.number)  # NOTE [Code after the loop]
    except (SyntaxError, RecursionError, MemoryError, ValueError) as exc:
        # a RecursionError: an expression nested past what Python compiles (x = 1 + 1 + … ,
        # thousands of terms), which Python itself reports so, with no line
        msg = str(exc.msg) if isinstance(exc, SyntaxError) else str(exc) or type(exc).__name__
        line = exc.lineno if isinstance(exc, SyntaxError) else None
        rec.emit(
            dict(
                type="error",
                exc_type=type(exc).__name__,
                message=msg,
                line=line,
                traceback=_compile_error_text(exc, msg, line),
                hint=syntax_hint(exc, source_lines(source)) if isinstance(exc, SyntaxError) else None,
            ),
            closing=True,
        )
        _finish(rec, "error", f"{type(exc).__name__}: {msg}", started)
        return "error"
    # so that tracebacks (ours and any the snippet prints) show the snippet's lines
    linecache.cache[SNIPPET_FILENAME] = (
        len(source),
        None,
        source_lines(source, keepends=True),
        SNIPPET_FILENAME,
    )
    rec.loop_ends.take(loops)
    # the names a plain script's __main__ starts with, in their order, and `device`
    scope: dict[str, Any] = {
        "__name__": "__main__",
        "__doc__": None,
        "__package__": None,
        "__loader__": None,
        "__spec__": None,
        "__annotations__": {},
        "__builtins__": builtins,
        "__file__": path or filename,
        "__cached__": None,
        "device": device,
    }
    # the snippet's globals are a module's, installed as __main__ while it runs, so what it
    # defines can be found by name as in a script: pickle (torch.save of a model), dataclasses
    main = types.ModuleType("__main__")
    main.__dict__.update(scope)
    scope = main.__dict__
    torch.manual_seed(0)
    random.seed(0)
    out = CapturedOutput(rec, limits.max_output_bytes, filename)
    api.set_current(rec)
    host_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    host_argv = sys.argv
    sys.argv = [path or filename, *argv]
    folder = os.path.dirname(os.path.abspath(path)) if path else None
    if folder is not None:
        sys.path.insert(0, folder)
    try:
        with out, rec:
            exec(code, scope)
    except SystemExit as exc:
        rec.ended_early = True
        if exc.code not in (None, 0):
            status, message = "error", f"SystemExit: {exc.code}"
        _say_exit_message(out, exc)
    except BaseException as exc:
        rec.ended_early = True
        if isinstance(exc, KeyboardInterrupt) and _interrupt_is_the_users():
            status, message = "cancelled", "interrupted"
        else:
            status = "error"
            message = f"{type(exc).__name__}: {exception_text(exc)}"
        _emit_error(rec, exc)
    finally:
        api.set_current(None)
        sys.argv = host_argv
        if folder is not None:
            with contextlib.suppress(ValueError):  # the snippet took it off itself
                sys.path.remove(folder)
        if host_main is not None:
            sys.modules["__main__"] = host_main
        else:
            sys.modules.pop("__main__", None)
    rec.finish(scope)
    _finish(rec, status, message, started)
    return status


def _interrupt_is_the_users() -> bool:
    """Whether a ``KeyboardInterrupt`` may be a person's Ctrl+C (a cancel), as when
    recording from the command line or a notebook; where SIGINT is ignored (the app's
    workers, which a cancel stops otherwise) it can only be the snippet's own
    ``raise KeyboardInterrupt``, an error like any other."""
    try:
        return signal.getsignal(signal.SIGINT) is signal.default_int_handler
    except (ValueError, OSError):
        return True


def _say_exit_message(out: CapturedOutput, exc: SystemExit) -> None:
    """Write a ``SystemExit``'s message (``sys.exit("config file missing")``) to the snippet's
    stderr, as Python does when a script exits with one: any code but ``None`` or a whole
    number is a message (and exit status 1)."""
    code = exc.code
    if code is None or isinstance(code, int):
        return
    try:
        text = str(code)
    except Exception:  # a snippet's object whose str() raises: Python prints nothing either
        return
    out.send("stderr", writable(text) + "\n")


def _finish(rec: Recorder, status: RunStatus, message: str, started: float) -> None:
    rec.emit_last(
        dict(
            type="run_finished",
            status=status,
            message=writable(message[:2000]),
            duration_s=time.perf_counter() - started,
            counts=rec.counts(),
        )
    )


_MAX_EXPLAINED = 2000
_MAX_READ = 100_000
_RUNS = re.compile(r"[\w.]+|\s+")
_LONG_RUN = 200


def _hints_can_read(message: str) -> bool:
    """Whether the error hints may read ``message``. Their patterns backtrack over a long run
    of word characters or spaces: seconds on a 12 kB word (``raise ValueError('ab12' * 3000)``),
    and a 100 kB one ran past the run's time limit (a false ``timeout``). A message up to
    :data:`_MAX_EXPLAINED` characters is read, and a longer one without such runs (PyTorch's
    own, with a tensor printed in it) up to :data:`_MAX_READ`."""
    if len(message) <= _MAX_EXPLAINED:
        return True
    return len(message) <= _MAX_READ and max(map(len, _RUNS.findall(message)), default=0) <= _LONG_RUN


# what an error event's traceback keeps: its last characters, each line up to a length
_MAX_TRACEBACK = 8000
_LONGEST_CODE_LINE = 300
_LONGEST_MESSAGE_LINE = 2000
_CARETS = frozenset("^~")


def _shortened_lines(text: str, longest: int = _LONGEST_CODE_LINE) -> str:
    """``text`` (a traceback's lines) with each line over ``longest`` characters cut there
    and ended with "…", and the caret line under it dropped (its carets no longer point at
    the code). The traceback keeps only its last :data:`_MAX_TRACEBACK` characters: one
    line of 3,000 list items left blank space and the last line, without the ``File
    "snippet.py", line 3`` header or the code."""
    lines = text.split("\n")
    kept: list[str] = []
    cut = False
    for line in lines:
        if cut and line.strip() and set(line.strip()) <= _CARETS:
            cut = False
            continue
        cut = len(line) > longest
        kept.append(line[:longest] + "…" if cut else line)
    return "\n".join(kept)


def _compile_error_text(exc: BaseException, msg: str, line: int | None) -> str:
    """What Python prints for a snippet that does not compile: for a ``SyntaxError``, its
    line with a caret under where it went wrong."""
    if isinstance(exc, SyntaxError) and exc.filename == SNIPPET_FILENAME and exc.text is not None:
        text = "".join(traceback.format_exception_only(type(exc), exc))
        return writable(_shortened_lines(text.replace(SNIPPET_FILENAME, "snippet.py"))[-_MAX_TRACEBACK:])
    return f"line {line}: {msg}" if line is not None else f"{type(exc).__name__}: {msg}"


def _emit_error(rec: Recorder, exc: BaseException) -> None:
    tb = exc.__traceback__
    line = None
    frames = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
            line = tb.tb_lineno
            frames.append(tb)
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename == SNIPPET_FILENAME:
        line = exc.lineno
    # Only the snippet's own frames: PyTorch's and gradwalk's are noise to a learner.
    summary = traceback.StackSummary.from_list(
        [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SNIPPET_FILENAME]
    )
    text = "Traceback (most recent call last):\n" + _shortened_lines("".join(summary.format()))
    text += _shortened_lines("".join(traceback.format_exception_only(type(exc), exc)), _LONGEST_MESSAGE_LINE)
    text = text.replace(SNIPPET_FILENAME, "snippet.py")
    from .explain import error_node, explain_error, metrics_only_after, metrics_only_calls

    try:
        message = str(exc)
        readable = _hints_can_read(message)
    except Exception:  # an exception that cannot say what it is has nothing for a hint to read
        message, readable = exception_text(exc), False
    with rec.mute():
        try:  # a hint that fails leaves the error without one; the error itself is told as it is
            hint = (
                explain_error(exc, rec, line, frames[-1].tb_frame if frames else None) if readable else None
            )
        except Exception:
            rec.observation_failed()
            hint = None
        node = error_node(exc, rec)
    rec.emit(
        dict(
            type="error",
            exc_type=type(exc).__name__,
            message=writable(without_terminal_codes(message)[:4000]),
            line=line,
            traceback=writable(without_terminal_codes(text)[-_MAX_TRACEBACK:]),
            hint=None if hint is None else writable(hint),
            node=node,
            metrics_only_after=metrics_only_after(rec),
            metrics_only_calls=metrics_only_calls(rec),
        ),
        closing=True,
    )
    del frames
    sys.last_value = None
