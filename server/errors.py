"""Error answers: every refusal is JSON ``{"detail": ...}`` that says what was wrong."""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

__all__ = ["AsciiJSONResponse", "install_error_handlers", "no_run"]

log = logging.getLogger("gradwalk.server")
_MAX_ECHO = 200
_FASTAPI_BODY_ERROR = "There was an error parsing the body"
_METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")


def no_run(run_id: str) -> str:
    """The words of a 404 (or a 4404 close) for an unknown run id: the id, cut to 64 characters
    (no run's id is longer; a 5,000-character one came back whole)."""
    return f"no run with id {run_id[:64]!r}"


class AsciiJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped, so lone surrogates from a client still encode."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def install_error_handlers(app: FastAPI) -> None:
    """Answer validation errors safely and turn any unexpected error into a JSON 500."""
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(sqlite3.Error, _storage_error)
    app.add_exception_handler(Exception, _internal_error)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    sent_as = _not_json(request)
    if sent_as is not None and any(tuple(e.get("loc", ())) == ("body",) for e in exc.errors()):
        # FastAPI hands a body of another type on as its bytes, so the error read "Input should
        # be a valid dictionary" beside the JSON itself, echoed as a string
        return AsciiJSONResponse(
            {
                "detail": f"the request body must be JSON sent as Content-Type: application/json; it came {sent_as[:80]}"
            },
            status_code=415,
        )
    errors = [_describe(e) for e in exc.errors()]
    return AsciiJSONResponse({"detail": errors}, status_code=422)


def _not_json(request: Request) -> str | None:
    """How the request's body came where that is not as JSON (None where it was)."""
    ctype = request.headers.get("content-type")
    if ctype is None:
        return "with no Content-Type"
    media = ctype.split(";", 1)[0].strip().lower()
    return None if media == "application/json" or media.endswith("+json") else f"as {ctype}"


def _encoded(request: Request) -> str | None:
    """The request's content encoding where it names one (only POST /api/traces takes gzip)."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    return None if encoding in ("", "identity") else encoding


def _describe(error: Any) -> dict[str, Any]:
    out: dict[str, Any] = {k: error[k] for k in ("type", "loc", "msg") if k in error}
    if "ctx" in error:
        out["ctx"] = {k: str(v) for k, v in error["ctx"].items()}
    # Echo small inputs only: a rejected 100 kB source should not come back whole.
    value = error.get("input")
    if isinstance(value, bytes):
        # a body that is not JSON (a text/plain post) comes back as its bytes, which need
        # not be UTF-8: echoed as text, an undecodable byte as U+FFFD
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no NaN or Infinity: echoed bare, the refusal of `"timeout_s": NaN` was
        # itself not JSON (a browser's res.json() threw on it); as the words it was sent as
        out["input"] = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    elif isinstance(value, str | int | float | bool) or value is None:
        text = value if not isinstance(value, str) else value[:_MAX_ECHO]
        out["input"] = text
    else:
        try:
            echoed = json.dumps(jsonable_encoder(value), ensure_ascii=True, allow_nan=False)
        except ValueError:  # a NaN inside: not echoed
            return out
        if len(echoed) <= _MAX_ECHO:
            out["input"] = json.loads(echoed)
    return out


async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
    encoding = _encoded(request) if exc.status_code == 400 and exc.detail == _FASTAPI_BODY_ERROR else None
    if encoding is not None:
        # a compressed body read as JSON text: say it is the encoding
        exc = StarletteHTTPException(
            415,
            f"content encoding {encoding[:40]!r} is not taken here: send the JSON uncompressed "
            "(POST /api/traces alone takes gzip)",
        )
    elif exc.status_code == 400 and exc.detail == _FASTAPI_BODY_ERROR:
        # FastAPI's words for a body it could not decode; say what that means here.
        exc = StarletteHTTPException(400, _unreadable_body(exc))
    elif exc.status_code == 405:
        # Starlette names the methods of the first route that matched the path only; a path
        # served by several routes (GET and DELETE /api/rooms/{code}) allows all of theirs.
        exc = StarletteHTTPException(405, exc.detail, headers={"Allow": ", ".join(_allowed(request))})
    return await http_exception_handler(request, exc)


def _unreadable_body(exc: StarletteHTTPException) -> str:
    """Why FastAPI could not read a JSON body, in words: it says the same for bytes that are
    not UTF-8 and for JSON nested deeper than Python's parser goes (a RecursionError)."""
    if isinstance(exc.__cause__, RecursionError):
        return "the request body is JSON nested too deeply to read"
    return "the request body is not valid UTF-8 JSON text"


def _allowed(request: Request) -> list[str]:
    """Every method some route of the app serves at the request's path (asked of the routes
    themselves, as the router asks them), HEAD wherever GET is (server/head.py)."""
    routes = request.app.router.routes
    served = {
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    }
    return [method for method in _METHODS if method in served or (method == "HEAD" and "GET" in served)]


async def _storage_error(request: Request, exc: Exception) -> JSONResponse:
    # The database refused (a full disk, a file made read-only under the server): say so, and
    # that it is the server's trouble, not the request's (it was a bare 500)
    log.error("storage failed on %s %s: %s", request.method, request.url.path, exc)
    return JSONResponse(
        {"detail": f"the server could not use its database ({exc}); try again once it is fixed"},
        status_code=503,
    )


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    # A bug must still answer in JSON, and must not leak a traceback to the client.
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse({"detail": "internal server error"}, status_code=500)
