"""Where finished runs (and open classroom rooms) live: the :class:`RunStore` and
:class:`RoomStore` interfaces and their SQLite implementation.

The server talks to storage only through :class:`RunStore`, so a server database can
replace SQLite by implementing its few methods. Methods are synchronous; the server calls
them from a worker thread (``asyncio.to_thread``), so an implementation must be
thread-safe.
"""

from __future__ import annotations

from .base import RoomRecord, RoomStore, RunRecord, RunStore, StoreUnavailable
from .sqlite import SqliteRunStore

__all__ = ["RoomRecord", "RoomStore", "RunRecord", "RunStore", "SqliteRunStore", "StoreUnavailable"]
