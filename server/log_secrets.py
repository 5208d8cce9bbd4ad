"""Keep secrets out of the server's log: a room's presenter key and the server's token travel
in websocket URLs (``?key=``, ``?token=``), and uvicorn logs every request's path and query.

>>> redact('"WebSocket /api/rooms/53U9D6/ws?role=presenter&key=YSC51a" [accepted]')
'"WebSocket /api/rooms/53U9D6/ws?role=presenter&key=…" [accepted]'
"""

from __future__ import annotations

import logging
import re

__all__ = ["SecretsFilter", "install", "redact"]

# the value of a key= or token= query parameter, up to the next parameter, space or quote
_SECRET = re.compile(r"([?&](?:key|token)=)[^&\s\"']+", re.IGNORECASE)
# the loggers that write request lines: HTTP requests, and websockets accepted or refused
_LOGGERS = ("uvicorn.access", "uvicorn.error")


def redact(text: str) -> str:
    """``text`` with each ``key=`` and ``token=`` query value replaced by "…"."""
    return _SECRET.sub(r"\1…", text)


class SecretsFilter(logging.Filter):
    """Redact query secrets in a record's message and its string arguments (it drops nothing)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def install() -> None:
    """Put the filter on uvicorn's request loggers (after uvicorn configured its logging)."""
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, SecretsFilter) for f in logger.filters):
            logger.addFilter(SecretsFilter())
