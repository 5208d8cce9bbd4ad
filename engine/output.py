"""Capture the snippet's stdout and stderr as ``output`` events, bounded in size."""

from __future__ import annotations

import codecs
import contextlib
import io
import linecache
import sys
import warnings
from typing import TYPE_CHECKING, Any, Literal

from .source import SNIPPET_FILENAME, snippet_frame
from .warning_place import ENGINE_DIR, Shown, caller_of_op

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["CapturedOutput"]


def _forward_trace_of_snippet(text: str, filename: str) -> str:
    """Anomaly mode's "Traceback of forward call" with the frames above the snippet's first
    (the worker's, gradwalk's) and gradwalk's own (its tape mode) left out, as the traceback
    reads without gradwalk, and the snippet's file name as the user knows it."""
    head, sep, rest = text.partition("Traceback of forward call that caused the error:\n")
    kept: list[str] = []
    keep = seen_snippet = False
    for line in rest.splitlines(keepends=True):
        if line.startswith('  File "'):
            in_snippet = line.startswith(f'  File "{SNIPPET_FILENAME}"')
            seen_snippet = seen_snippet or in_snippet
            keep = seen_snippet and not line.startswith(f'  File "{ENGINE_DIR}')
            if in_snippet:
                line = line.replace(SNIPPET_FILENAME, filename, 1)
        elif not line.startswith("    "):
            keep = True  # the text after the frames
        if keep:
            kept.append(line)
    return head + sep + "".join(kept) if seen_snippet else text


def _stream(owner: CapturedOutput, name: Literal["stdout", "stderr"]) -> io.TextIOWrapper:
    """A text stream as ``sys.stdout``/``sys.stderr`` are for a script whose output goes to a
    pipe: UTF-8, with the error handler this process's own stream has (``strict``, or
    ``surrogateescape`` in the C locale, on stdout; ``backslashreplace`` on stderr),
    ``.buffer`` and ``.reconfigure()``; what is written reaches ``owner`` a line at a time."""
    real = sys.__stdout__ if name == "stdout" else sys.__stderr__
    errors = getattr(real, "errors", None) or ("strict" if name == "stdout" else "backslashreplace")
    return io.TextIOWrapper(_LineSink(owner, name), encoding="utf-8", errors=errors, write_through=True)


class _LineSink(io.RawIOBase):
    """The bytes under a captured stream, decoded and handed on a line (or a flush) at a time."""

    def __init__(self, owner: CapturedOutput, name: Literal["stdout", "stderr"]) -> None:
        self._owner = owner
        self._name = name
        self.name = f"<{name}>"  # as sys.stdout.buffer.name reads
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buf: list[str] = []

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        """stderr's: the process's own (``faulthandler.enable()`` asks for it, and failed with
        "fileno"); what is written to it there bypasses the trace, as a crash's dump must.
        stdout has none (``io.UnsupportedOperation``, as in a notebook): a worker's fd 1 carries
        its events."""
        real = sys.__stderr__ if self._name == "stderr" else None
        if real is None:
            raise io.UnsupportedOperation("fileno")
        return real.fileno()

    def write(self, b: Any) -> int:
        data = bytes(b)
        text = self._decoder.decode(data)
        if text:
            self._buf.append(text)
            if "\n" in text:
                self.flush()
        return len(data)

    def flush(self) -> None:
        if self._buf:
            text = "".join(self._buf)
            self._buf.clear()
            self._owner.send(self._name, text)


class CapturedOutput:
    """Swap ``sys.stdout``/``sys.stderr`` for streams that emit events, while active."""

    def __init__(self, rec: Recorder, max_bytes: int, filename: str = "snippet.py") -> None:
        self._rec = rec
        self._filename = filename
        self._showwarning: Any = None
        self._showwarnmsg: Any = None
        self._shown = Shown()
        self._left = max_bytes
        self._cap = max_bytes
        self._dropped = 0
        self._dropped_said = False
        self._saved: tuple[Any, Any] | None = None
        self.stdout = _stream(self, "stdout")
        self.stderr = _stream(self, "stderr")

    def send(self, stream: Literal["stdout", "stderr"], text: str) -> None:
        if stream == "stderr" and "Traceback of forward call" in text:
            # anomaly mode's, printed by PyTorch itself where a filter makes the warning an
            # error: the snippet's frames only, as _show_warning leaves them
            text = _forward_trace_of_snippet(text, self._filename)
        if self._left <= 0:
            # said once, with the first text dropped: output that had filled the cap exactly
            # dropped the rest without a word (a print loop "ended" at its 8,457th line)
            self._say_dropped()
            self._dropped += len(text)
            return
        cut = len(text) > self._left
        if cut:
            text = text[: self._left]
        self._left -= len(text)
        if cut:
            self._say_dropped()
        self._rec.emit(dict(type="output", stream=stream, text=text))

    def _say_dropped(self) -> None:
        """Say, once, that output past the cap is dropped (a ``limit`` event)."""
        if self._dropped_said:
            return
        self._dropped_said = True
        self._rec.emit(
            dict(
                type="limit",
                what="output",
                cap=self._cap,
                # shown after "limit: output" (it read "limit: output output past 256000 ...")
                message=f"the first {self._cap:,} characters were kept; what the run printed after them was dropped",
            )
        )

    def _show_message(self, msg: warnings.WarningMessage) -> None:
        """Hand on a warning Python is about to show or record, placed where it belongs.

        PyTorch's C++ warnings name the Python frame that called into it: while recording
        that is gradwalk's tape mode (``engine/tape.py``). Python calls this hook
        (``warnings._showwarnmsg``) for every warning it shows, and for every one a
        ``catch_warnings(record=True)`` keeps, so the place is put right here, once for both
        (NOTE [Warnings raised through the tape mode]): the frame that called the op, the
        snippet's line or a library's (an optimizer's step, ``torch/optim/adagrad.py:361``).
        """
        if msg.filename.startswith(ENGINE_DIR):
            caller = caller_of_op()
            module = "__main__"
            if caller is not None:
                msg.filename, msg.lineno, msg.line = caller.f_code.co_filename, caller.f_lineno, None
                module = caller.f_globals.get("__name__", module)
            else:
                _, at = snippet_frame()
                if at is not None:
                    msg.filename, msg.lineno, msg.line = SNIPPET_FILENAME, at, None
            if not self._shown.first(msg.message, msg.category, msg.filename, msg.lineno, module):
                return
        self._showwarnmsg(msg)

    def _show_warning(
        self,
        message: Any,
        category: Any,
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        """Show a warning as it shows without gradwalk, on the snippet's stderr (so in the
        trace) even where the caller records warnings; the snippet's frames carry an internal
        file name, shown as ``snippet.py:LINE``."""
        text = str(message)
        if "Traceback of forward call" in text:  # anomaly mode's: the snippet's frames only
            message = category(_forward_trace_of_snippet(text, self._filename))
        if filename == SNIPPET_FILENAME:
            if line is None:
                line = linecache.getline(SNIPPET_FILENAME, lineno)
            filename = self._filename
        if file is None:
            # written as Python's own showwarning writes it, to the snippet's stderr: the one
            # gradwalk replaced may be a recorder's (pytest's, a caller's
            # catch_warnings(record=True)), which kept the warning out of the trace
            with contextlib.suppress(OSError, ValueError):  # a closed stderr: dropped, as Python does
                sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
            return
        self._showwarning(message, category, filename, lineno, file, line)

    def __enter__(self) -> CapturedOutput:
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self.stdout, self.stderr
        self._showwarning = warnings.showwarning
        warnings.showwarning = self._show_warning
        self._showwarnmsg = warnings._showwarnmsg  # type: ignore[attr-defined]
        warnings._showwarnmsg = self._show_message  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            # a stream the snippet closed flushed itself then; flushing it again would raise
            # a ValueError that replaced the snippet's own error (and its line)
            for stream in (self.stdout, self.stderr):
                if not stream.closed:
                    stream.flush()
        finally:
            if self._showwarning is not None:
                warnings.showwarning = self._showwarning
                self._showwarning = None
            if self._showwarnmsg is not None:
                warnings._showwarnmsg = self._showwarnmsg  # type: ignore[attr-defined]
                self._showwarnmsg = None
            if self._saved is not None:
                sys.stdout, sys.stderr = self._saved
