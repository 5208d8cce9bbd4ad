"""Capture the snippet's stdout and stderr as ``output`` events, bounded in size."""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["CapturedOutput"]


class _Stream(io.TextIOBase):
    def __init__(self, owner: CapturedOutput, name: Literal["stdout", "stderr"]) -> None:
        self._owner = owner
        self._name = name
        self._buf: list[str] = []

    def writable(self) -> bool:
        return True

    def write(self, s: Any) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self._buf.append(s)
        if "\n" in s:
            self.flush()
        return len(s)

    def flush(self) -> None:
        if self._buf:
            text = "".join(self._buf)
            self._buf.clear()
            self._owner.send(self._name, text)


class CapturedOutput:
    """Swap ``sys.stdout``/``sys.stderr`` for streams that emit events, while active."""

    def __init__(self, rec: Recorder, max_bytes: int) -> None:
        self._rec = rec
        self._left = max_bytes
        self._cap = max_bytes
        self._dropped = 0
        self._saved: tuple[Any, Any] | None = None
        self.stdout = _Stream(self, "stdout")
        self.stderr = _Stream(self, "stderr")

    def send(self, stream: Literal["stdout", "stderr"], text: str) -> None:
        if self._left <= 0:
            self._dropped += len(text)
            return
        if len(text) > self._left:
            text = text[: self._left]
            self._rec.emit(
                dict(
                    type="limit",
                    what="output",
                    cap=self._cap,
                    message=f"output past {self._cap} characters was dropped",
                )
            )
        self._left -= len(text)
        self._rec.emit(dict(type="output", stream=stream, text=text))

    def __enter__(self) -> CapturedOutput:
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self.stdout, self.stderr
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stdout.flush()
            self.stderr.flush()
        finally:
            if self._saved is not None:
                sys.stdout, sys.stderr = self._saved
