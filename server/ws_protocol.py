"""The websocket protocol the server runs on: uvicorn's sans-I/O one (about a quarter less CPU
per frame than the legacy one when fanning a run out to 200 viewers, bench/bench_server.py),
mended where a handshake is refused before it is parsed.

# NOTE [A websocket URL too long got no answer]
# ``websockets`` refuses an upgrade request whose request line is over 8 KiB (414) or whose
# headers are too large (431) by queueing the response in its output; uvicorn writes that
# output only when a request was parsed, which a refused one never is, so the client waited
# with the connection open forever (a 9,000-digit ``?after=``, a key of 8,200 characters).
# :class:`WebSocketProtocol` sends what is queued and closes.
"""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["SHUTDOWN_REASON", "WebSocketProtocol"]

# What a viewer is told when the server stops under it (uvicorn closed 1012 with no reason).
SHUTDOWN_REASON = (
    "the server is shutting down; reconnect with ?after= the last seq you saw to resume once it is back"
)


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O websocket protocol, answering a handshake refused unparsed (414, 431),
    and closing an open socket at shutdown with a reason (:data:`SHUTDOWN_REASON`)."""

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self.handshake_initiated and self.conn.handshake_exc is not None:
            # (an unreadable request queues only the end of the stream: the close says it)
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.transport.close()

    def shutdown(self) -> None:
        """As uvicorn's, but the 1012 close of an open socket says why and how to resume."""
        if self.close_sent or not self.handshake_complete:
            super().shutdown()
            return
        self.stop_keepalive()
        self.queue.put_nowait({"type": "websocket.disconnect", "code": 1012})
        self.conn.send_close(1012, SHUTDOWN_REASON)
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.transport.close()
