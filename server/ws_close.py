"""Closing a websocket with a reason, for the run stream and the room sockets alike."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import WebSocket

__all__ = ["close", "close_reason"]


async def close(ws: WebSocket, code: int, reason: str) -> None:
    """Close ``ws`` with ``code`` and ``reason`` (:func:`close_reason`); a client that already
    left cannot be told, and is not waited for past 5 s."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(ws.close(code, close_reason(reason)), timeout=5)


def close_reason(text: str, most: int = 123) -> str:
    """``text`` as a websocket close reason: at most ``most`` bytes of UTF-8 (the protocol's
    limit), cut at a character with "…" where it is longer."""
    if len(text.encode()) <= most:
        return text
    return text.encode()[: most - 3].decode(errors="ignore").rstrip() + "…"
