"""The control channel between the pool and one worker: JSON messages on a seqpacket socket.

Each message is one datagram holding a JSON object with a ``type``; file descriptors ride
along as ``SCM_RIGHTS``. The messages are small: a snippet's source travels in a memfd.

Pool -> worker: ``run`` (fds: event pipe write end, source memfd), ``kill``.
Worker -> pool: ``ready``, ``started``, ``exited``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from typing import Any

__all__ = ["MAX_MESSAGE", "recv_message", "send_message", "socket_pair"]

MAX_MESSAGE = 64 * 1024


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """Return a connected (pool end, worker end) pair; only the worker end is inheritable."""
    pool_end, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    worker_end.set_inheritable(True)
    return pool_end, worker_end


def send_message(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """Send one message (and ``fds``); raise ``OSError`` when the peer is gone."""
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > MAX_MESSAGE:
        raise ValueError(f"control message of {len(data)} bytes is too large")
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


def recv_message(sock: socket.socket, maxfds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """Receive one message; ``(None, [])`` means the peer closed the channel.

    Raises ``BlockingIOError`` on a non-blocking socket with nothing to read, and
    ``ValueError`` for a datagram that is not a JSON object (its fds are closed first).
    """
    if maxfds:
        data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, maxfds)
    else:
        data, fds = sock.recv(MAX_MESSAGE), []
    if not data:
        for fd in fds:
            _close(fd)
        return None, []
    try:
        message = json.loads(data)
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ValueError("not a message")
    except ValueError:
        for fd in fds:
            _close(fd)
        raise ValueError("malformed control message") from None
    return message, list(fds)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
