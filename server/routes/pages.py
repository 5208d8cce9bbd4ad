"""The HTML pages: the app (``/``) and a run embedded in another site (``/embed/{id}``).

Both render the web engineer's Jinja templates with a ``bootstrap`` dict the page embeds
as JSON: ``{"api": "/api", "cuda": bool, "version": str, "token_required": bool}`` (plus
``run_id`` for embeds). Before the frontend is built, ``/`` answers 503 saying so.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import TemplateNotFound

from ..deps import RegistryDep, SettingsDep
from ..errors import no_run
from ..version import VERSION

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

_NOT_BUILT = """<!doctype html><meta charset="utf-8"><title>gradwalk</title>
<h1>gradwalk: the web app is not built yet</h1>
<p>Run <code>make web</code> (or <code>make run</code>), then reload. The API is up: <a href="/api/health">/api/health</a>.</p>
"""


def _bootstrap(request: Request, registry: Any) -> dict[str, Any]:
    settings = request.app.state.settings
    return {
        "api": "/api",
        "cuda": bool(registry.pool.cuda_available),
        "version": VERSION,
        "token_required": settings.token is not None,
    }


def _templates(request: Request) -> Jinja2Templates:
    templates: Jinja2Templates = request.app.state.templates
    return templates


# HEAD too: uptime monitors and `curl -I` ask the page with it (GET alone answered 405)
@router.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse)
async def index(request: Request, registry: RegistryDep) -> Response:
    """Render the app."""
    try:
        return _templates(request).TemplateResponse(
            request, "index.html", {"bootstrap": _bootstrap(request, registry)}
        )
    except TemplateNotFound:
        return HTMLResponse(_NOT_BUILT, status_code=503)


@router.get("/embed/{run_id}", response_class=HTMLResponse)
async def embed(run_id: str, request: Request, registry: RegistryDep, settings: SettingsDep) -> Response:
    """Render one run for an iframe on another site (the only page that may be framed)."""
    if settings.token_for_viewing:
        raise HTTPException(404, "embeds are off on a server that needs a token to view")
    missing = len(run_id) > 64 or await registry.find(run_id) is None
    # an unknown run is still a page (status 404): an iframe shows the viewer saying so,
    # not a line of JSON
    bootstrap = {**_bootstrap(request, registry), "run_id": run_id[:64], "run_missing": missing}
    try:
        return _templates(request).TemplateResponse(
            request, "embed.html", {"bootstrap": bootstrap}, status_code=404 if missing else 200
        )
    except TemplateNotFound:
        if missing:
            raise HTTPException(404, no_run(run_id)) from None
        raise HTTPException(404, "embeds are not built into this server yet") from None
