"""The server's listening socket, bound before the app is built, with a plain answer when it cannot be.

uvicorn's own ``Config.bind_socket`` logs the bare ``OSError`` (``[Errno 98] Address already
in use``) and exits; :func:`bind` makes the same socket and, when the address is taken, not
this machine's, privileged or not a host name, raises :class:`BindError` whose text names
the flag to change and what to try instead.
"""

from __future__ import annotations

import errno
import socket

__all__ = ["BindError", "bind"]


class BindError(Exception):
    """The socket could not be bound; ``str()`` is one line starting with the flag at fault."""


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` as uvicorn binds one (``SO_REUSEADDR``, inheritable,
    IPv6 when ``host`` holds a colon); port 0 takes a free port (``getsockname()`` says which)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family=family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise BindError(_explain(exc, host, port)) from exc
    sock.set_inheritable(True)
    return sock


def _explain(exc: OSError, host: str, port: int) -> str:
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(exc, socket.gaierror):
        return f"--host {host}: no such host name here ({exc.strerror}); use 127.0.0.1 or 0.0.0.0"
    if exc.errno == errno.EADDRINUSE:
        other = port + 1 if port < 65535 else 8000
        return (
            f"--port {port}: {where} is already in use (another gradwalk, or another server, is "
            f"listening there); choose another, e.g. --port {other} (make run PORT={other})"
        )
    if exc.errno == errno.EACCES:
        return f"--port {port}: ports below 1024 need root here; choose one above, e.g. --port 8000"
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"--host {host}: this machine has no such address; use 127.0.0.1 (this machine only) "
            "or 0.0.0.0 (every network it is on)"
        )
    return f"--host {host} --port {port}: cannot listen on {where} ({exc.strerror or exc})"
