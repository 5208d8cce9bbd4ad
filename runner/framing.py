"""Length-prefixed frames: how a run's child sends events to the pool.

A frame is a 4-byte big-endian length followed by that many bytes of JSON (one event's
``model_dump_json()``). The reader treats every byte as untrusted: a frame longer than
``max_frame`` or a stream longer than ``max_total`` is an error, never a large allocation.
"""

from __future__ import annotations

import struct

__all__ = ["FrameDecoder", "FrameError", "encode_frame"]

_HEADER = struct.Struct(">I")


class FrameError(Exception):
    """The byte stream broke a framing rule; ``what`` is ``"frame"`` or ``"total"``."""

    def __init__(self, message: str, *, what: str) -> None:
        super().__init__(message)
        self.what = what


def encode_frame(payload: bytes) -> bytes:
    """Return ``payload`` with its length prefix."""
    return _HEADER.pack(len(payload)) + payload


class FrameDecoder:
    """Split a byte stream into frames, enforcing the size caps.

    >>> d = FrameDecoder(max_frame=16, max_total=64)
    >>> d.feed(encode_frame(b"{}") + encode_frame(b"[1]")[:3])
    [b'{}']
    >>> d.feed(encode_frame(b"[1]")[3:])
    [b'[1]']
    """

    def __init__(self, *, max_frame: int, max_total: int) -> None:
        self.max_frame = max_frame
        self.max_total = max_total
        self.total = 0
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a whole frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data`` and return the frames it completes; raise :class:`FrameError` past a cap."""
        self.total += len(data)
        if self.total > self.max_total:
            raise FrameError(f"the run sent more than {self.max_total} bytes of events", what="total")
        self._buf += data
        frames: list[bytes] = []
        start = 0
        while len(self._buf) - start >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buf, start)
            if size > self.max_frame:
                raise FrameError(
                    f"the run sent an event of {size} bytes (the cap is {self.max_frame})", what="frame"
                )
            end = start + _HEADER.size + size
            if end > len(self._buf):
                break
            frames.append(bytes(self._buf[start + _HEADER.size : end]))
            start = end
        if start:
            del self._buf[:start]
        return frames
