"""Typed dependencies the routes ask for: settings, the run registry, the token checks."""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from .registry import RunRegistry
from .security import RateLimiter, token_matches
from .settings import Settings

__all__ = [
    "CreatorAuth",
    "LimiterDep",
    "RegistryDep",
    "SettingsDep",
    "ViewerAuth",
    "client_key",
    "get_registry",
    "get_settings",
    "spend_allowance",
]

_bearer = HTTPBearer(
    auto_error=False, description="the server's token (`gradwalk serve --token`), when it has one"
)


def get_settings(conn: HTTPConnection) -> Settings:
    """Return the settings the app was created with."""
    settings: Settings = conn.app.state.settings
    return settings


def get_registry(conn: HTTPConnection) -> RunRegistry:
    """Return the run registry; 503 while the server is starting or stopping."""
    registry: RunRegistry | None = getattr(conn.app.state, "registry", None)
    if registry is None:
        raise HTTPException(
            503, "the server is starting or stopping; try again", headers={"Retry-After": "1"}
        )
    return registry


def get_limiter(conn: HTTPConnection) -> RateLimiter:
    """Return the per-client rate limiter for run creation."""
    limiter: RateLimiter = conn.app.state.limiter
    return limiter


def client_key(conn: HTTPConnection) -> str:
    """Name the client a rate limit applies to: its address (uvicorn resolves trusted proxies)."""
    return conn.client.host if conn.client else "unknown"


def spend_allowance(limiter: RateLimiter, conn: HTTPConnection, what: str = "runs") -> None:
    """Spend one of the client's allowance of ``what``; 429 with ``Retry-After`` when none is left."""
    wait = limiter.take(client_key(conn))
    if wait > 0:
        retry = math.ceil(wait)
        raise HTTPException(
            429,
            f"too many {what} from this client; try again in {retry} s",
            headers={"Retry-After": str(retry)},
        )


SettingsDep = Annotated[Settings, Depends(get_settings)]
RegistryDep = Annotated[RunRegistry, Depends(get_registry)]
LimiterDep = Annotated[RateLimiter, Depends(get_limiter)]
_Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _check(settings: Settings, creds: HTTPAuthorizationCredentials | None) -> None:
    if settings.token is None:
        return
    if creds is None:
        raise HTTPException(
            401,
            "this server needs a token: send 'Authorization: Bearer TOKEN'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not token_matches(creds.credentials, settings.token):
        raise HTTPException(403, "wrong token")


def require_creator(settings: SettingsDep, creds: _Credentials) -> None:
    """Refuse to create or cancel runs without the token, when the server has one."""
    _check(settings, creds)


def require_viewer(settings: SettingsDep, conn: HTTPConnection) -> None:
    """Refuse to show runs without the token, when the server asks for it to view too.

    Reads the header itself rather than through the bearer scheme, so that the OpenAPI
    schema does not mark viewing as needing auth (by default it does not).
    """
    if not settings.token_for_viewing:
        return
    scheme, _, token = conn.headers.get("authorization", "").partition(" ")
    creds = (
        HTTPAuthorizationCredentials(scheme=scheme, credentials=token) if scheme.lower() == "bearer" else None
    )
    _check(settings, creds)


CreatorAuth = Annotated[None, Depends(require_creator)]
ViewerAuth = Annotated[None, Depends(require_viewer)]
