"""The built frontend as a class of browsers fetches it: versioned URLs, long caching, gzip.

A page names its bundle as ``/static/dist/app.js?v=VERSION``, where VERSION
(:func:`asset_version`) changes with every build. A request whose ``v`` is the current
version may be cached for good (``immutable``); any other (no ``v``, an old one) is
``no-cache``, so the browser revalidates by ETag and never runs a stale bundle.
The bundle's files are gzipped once per build and kept (the 1 MB bundle and the 1.6 MB
layout worker shrink to about a third, and compressing them costs ~120 ms, which a class
joining at once must not pay on the event loop thirty times); :class:`CompressGets` gzips
the rest of what the server answers to GET and HEAD (pages, traces, exports).
"""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path
from urllib.parse import parse_qs

import anyio
from starlette.datastructures import Headers
from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["CompressGets", "VersionedStatic", "asset_version"]

# what a page loads from dist/ (web/scripts/build.mjs writes them)
BUNDLE_FILES = ("app.js", "app.css", "viewer.js", "viewer.css", "elk-worker.js")
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# static files worth compressing (text), and the smallest worth it
_TEXT_SUFFIXES = (".js", ".css", ".map", ".svg", ".json", ".txt", ".html")
_MIN_GZIP = 1024


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
    """``StaticFiles`` that says how long a file may be cached (for good when asked with the
    current :func:`asset_version` as ``v``, else only after revalidating: ``no-cache``) and
    sends text files gzipped to a browser that accepts it, compressed once per version of
    the file (its size and modification time) and kept."""

    def __init__(self, *, directory: Path) -> None:
        super().__init__(directory=directory)
        self.root = directory
        # path -> ((size, mtime_ns), gzipped bytes): one entry per file, replaced on rebuild
        self._gzipped: dict[str, tuple[tuple[int, int], bytes]] = {}

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            asked = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v", [""])[0]
            current = asked and asked == asset_version(self.root)
            response.headers["Cache-Control"] = IMMUTABLE if current else REVALIDATE
        if (
            isinstance(response, FileResponse)
            and response.status_code == 200
            and scope["method"] == "GET"
            and _wants_gzip(Headers(scope=scope))
            and str(response.path).endswith(_TEXT_SUFFIXES)
            and response.stat_result is not None
            and response.stat_result.st_size >= _MIN_GZIP
        ):
            body = await self._gzip(str(response.path), response.stat_result)
            # the file's length and byte ranges do not describe the gzipped body
            headers = {
                k: v for k, v in response.headers.items() if k not in ("content-length", "accept-ranges")
            }
            headers.update({"content-encoding": "gzip", "vary": "Accept-Encoding"})
            return Response(body, headers=headers)
        return response

    async def _gzip(self, path: str, stat: os.stat_result) -> bytes:
        key = (stat.st_size, stat.st_mtime_ns)
        kept = self._gzipped.get(path)
        if kept is not None and kept[0] == key:
            return kept[1]
        body = await anyio.to_thread.run_sync(lambda: gzip.compress(Path(path).read_bytes(), 6))
        self._gzipped[path] = (key, body)
        return body


def _wants_gzip(headers: Headers) -> bool:
    """Whether a request takes a gzipped body: it accepts gzip and asks no byte range (a
    range is of the file as stored, which FileResponse answers itself)."""
    return "gzip" in headers.get("accept-encoding", "") and "range" not in headers


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
