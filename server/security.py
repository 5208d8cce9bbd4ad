"""What keeps the server safe to expose: host and body guards, security headers, tokens, rate limits.

Two pure ASGI middlewares (no response buffering, so websockets pass untouched):
:class:`GuardMiddleware` refuses unknown Host headers (DNS rebinding against a loopback
server), cross-origin websockets and oversize bodies before they are read, and bodies that stall;
:class:`SecurityHeadersMiddleware` adds the CSP and friends to every response.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["GuardMiddleware", "RateLimiter", "SecurityHeadersMiddleware", "page_csp", "token_matches"]

_HOST_RE = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")
# Swagger UI (only with Settings.api_docs) is the one page that loads from a CDN.
_DOCS_CDN = "https://cdn.jsdelivr.net"


def token_matches(given: str | None, expected: str) -> bool:
    """Compare a presented token with the configured one in constant time."""
    return given is not None and secrets.compare_digest(given.encode(), expected.encode())


def page_csp(host: str | None, *, embed: bool = False, docs: bool = False) -> str:
    """Return the Content-Security-Policy for an HTML page served to ``host``.

    Everything comes from this origin; websockets may go back to the same host (``'self'``
    covers ``ws:`` in current browsers, the explicit sources cover older ones). Only
    ``/embed`` pages may be framed, by any page: they carry no ``frame-ancestors`` at all,
    since ``frame-ancestors *`` covers network schemes only, and a course page opened from
    disk (``file:``) or a sandboxed notebook output showed "refused to connect".
    """
    connect = "'self'"
    if host and _HOST_RE.match(host):
        connect += f" ws://{host} wss://{host}"
    script = style = "'self'"
    if docs:
        script = f"'self' 'unsafe-inline' {_DOCS_CDN}"
        style = f"'self' 'unsafe-inline' {_DOCS_CDN}"
    return "; ".join(
        [
            "default-src 'self'",
            f"script-src {script}",
            f"style-src {style}",
            "img-src 'self' data: blob:",
            "font-src 'self'",
            f"connect-src {connect}",
            "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            *([] if embed else ["frame-ancestors 'none'"]),
        ]
    )


class SecurityHeadersMiddleware:
    """Add CSP, nosniff, referrer and framing headers to every HTTP response."""

    def __init__(self, app: ASGIApp, *, docs: bool = False) -> None:
        self.app = app
        self.docs = docs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        embed = path.startswith("/embed/")
        docs = self.docs and path in ("/docs", "/docs/oauth2-redirect", "/redoc")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-security-policy"
                ]
                ctype = Headers(raw=headers).get("content-type", "")
                if ctype.startswith("text/html"):
                    csp = page_csp(Headers(scope=scope).get("host"), embed=embed, docs=docs)
                else:
                    csp = "default-src 'none'; frame-ancestors 'none'"
                headers += [
                    (b"content-security-policy", csp.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"cross-origin-resource-policy", b"same-origin"),
                ]
                if not embed:
                    headers.append((b"x-frame-options", b"DENY"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class GuardMiddleware:
    """Refuse unknown hosts, cross-origin websockets, bodies over ``max_body`` bytes and
    bodies that stop arriving.

    A body announced too large is refused before a byte of it is read; one that arrives
    in chunks is cut off as soon as it passes the limit. A body of which nothing more
    arrives for ``body_timeout_s`` (a client that announced 100 bytes and sent 10) is
    answered 408 rather than waited for forever. Refusals are JSON ``{"detail"}``.
    """

    def __init__(
        self, app: ASGIApp, *, allowed_hosts: Iterable[str], max_body: int, body_timeout_s: float = 60.0
    ) -> None:
        self.app = app
        self.allowed = {h.lower().strip("[]") for h in allowed_hosts}
        self.max_body = max_body
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self._host_allowed(host):
            await _refuse(scope, send, 400, f"host {host[:100]!r} is not served here")
            return
        if scope["type"] == "websocket":
            origin = headers.get("origin")
            if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
                await _refuse(scope, send, 403, "cross-origin websocket refused")
                return
            await self.app(scope, receive, send)
            return
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                await _refuse(scope, send, 400, "Content-Length must be a number of bytes")
                return
            if int(length) > self.max_body:
                await _refuse(
                    scope, send, 413, f"request body is {length} bytes; the limit is {self.max_body}"
                )
                return
        await self.app(scope, self._limited(receive), send)

    def _host_allowed(self, host: str) -> bool:
        if "*" in self.allowed:
            return True
        try:
            name = urlsplit("//" + host).hostname or ""
        except ValueError:
            return False
        return name in self.allowed

    def _limited(self, receive: Receive) -> Receive:
        seen = 0
        body_done = False

        async def receive_limited() -> Message:
            nonlocal seen, body_done
            if body_done:  # past the body only a disconnect comes, whenever it comes
                return await receive()
            message = await self._next_piece(receive)
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if seen > self.max_body:
                    # FastAPI re-raises HTTPException from body parsing, so this becomes a 413.
                    raise HTTPException(413, f"request body is over the limit of {self.max_body} bytes")
            return message

        return receive_limited

    async def _next_piece(self, receive: Receive) -> Message:
        """The next piece of a request body; 408 when none comes for ``body_timeout_s``."""
        try:
            return await asyncio.wait_for(receive(), self.body_timeout_s)
        except TimeoutError:
            raise HTTPException(
                408,
                f"the request body stopped arriving: nothing more came for {self.body_timeout_s:g} s",
                headers={"Connection": "close"},
            ) from None


async def _refuse(scope: Scope, send: Send, status: int, detail: str) -> None:
    if scope["type"] == "websocket":
        # Closing before accepting makes the server answer the handshake with HTTP 403.
        await send({"type": "websocket.close", "code": 4403, "reason": detail[:120]})
        return
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RateLimiter:
    """A token bucket per client: ``burst`` at once, refilled at ``per_s`` a second.

    Remembers at most ``max_clients`` clients; the least recently seen is forgotten first
    (it comes back with a full bucket, which only errs toward letting someone run).
    """

    def __init__(self, burst: float, per_s: float, max_clients: int = 10_000) -> None:
        self.burst = burst
        self.per_s = per_s
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, client: str, now: float | None = None) -> float:
        """Spend one token for ``client``; return 0.0 if allowed, else seconds until allowed."""
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.per_s)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.per_s
        self._buckets[client] = (tokens, now)
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        return wait
