"""The built frontend as a class of browsers fetches it: versioned URLs, long caching, gzip.

A page names its bundle as ``/static/dist/app.js?v=VERSION``, where VERSION
(:func:`asset_version`) changes with every build. A request whose ``v`` is the current
version may be cached for good (``immutable``); any other (no ``v``, an old one) is
``no-cache``, so the browser revalidates by ETag and never runs a stale bundle.
:class:`CompressGets` gzips what the server answers to GET and HEAD (the 1 MB bundle and the
1.6 MB layout worker shrink to about a quarter; so do traces and exports).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import parse_qs

from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["CompressGets", "VersionedStatic", "asset_version"]

# what a page loads from dist/ (web/scripts/build.mjs writes them)
BUNDLE_FILES = ("app.js", "app.css", "viewer.js", "viewer.css", "elk-worker.js")
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


def asset_version(static_dir: Path) -> str:
    """A short id of the bundle in ``static_dir/dist`` as built now: it changes whenever a
    file of it is rebuilt (its size or modification time), so a rebuild under a running
    server gets new URLs at the next page load. ``"unbuilt"`` before the first build."""
    dist = static_dir / "dist"
    parts = []
    for name in BUNDLE_FILES:
        try:
            stat = (dist / name).stat()
        except OSError:
            continue
        parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    if not parts:
        return "unbuilt"
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


class VersionedStatic(StaticFiles):
    """``StaticFiles`` that says how long a file may be cached: for good when asked with the
    current :func:`asset_version` as ``v``, else only after revalidating (``no-cache``)."""

    def __init__(self, *, directory: Path) -> None:
        super().__init__(directory=directory)
        self.root = directory

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            asked = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v", [""])[0]
            current = asked and asked == asset_version(self.root)
            response.headers["Cache-Control"] = IMMUTABLE if current else REVALIDATE
        return response


class CompressGets:
    """gzip for responses to GET and HEAD of 1 KiB or more, when the browser accepts it.

    Other methods pass untouched: an answer to a POST (a room's presenter key) is never
    compressed together with text a request chose, which is what compression attacks on
    secrets need. Websockets pass untouched (they negotiate their own compression).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=1024, compresslevel=6)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            await self.gzip(scope, receive, send)
        else:
            await self.app(scope, receive, send)
