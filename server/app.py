"""The app factory: :func:`create_app` assembles settings, storage, workers and the routers.

>>> from server.app import create_app
>>> from server.settings import Settings
>>> app = create_app(Settings(db=":memory:", workers=1))  # the pool starts in the lifespan
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.templating import Jinja2Templates

from runner import SandboxUnavailable

from .assets import CompressGets, VersionedStatic, asset_version
from .errors import install_error_handlers
from .head import HeadAsGet
from .lessons import LESSONS_DIR, LessonLibrary, load_lessons, snippets_named
from .library import load_examples
from .registry import RunRegistry
from .rooms import RoomRegistry
from .routes import events, examples, exports, health, lessons, pages, rooms, runs, traces
from .security import GuardMiddleware, RateLimiter, SecurityHeadersMiddleware
from .settings import Settings
from .storage import SqliteRunStore, StoreUnavailable
from .version import VERSION
from .workers import start_pool

__all__ = ["create_app"]

log = logging.getLogger("gradwalk.server")

_DESCRIPTION = """Run PyTorch snippets in sandboxed workers and stream their autograd events.

Create a run with `POST /api/runs`, then open the websocket `ws_url` it returns: each text
frame is one event of `engine.events` (see the `Trace` schema), from `seq` 0 (or `?after=N`
to resume) to `run_finished`. Send `{"command": "cancel"}` on the socket to stop a run.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the ASGI app; the worker pool and the store open in its lifespan.

    Building the app is cheap and imports no torch; the workers (which do) start when the
    server starts serving.
    """
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            store = SqliteRunStore(
                settings.db, max_runs=settings.retention_runs, max_bytes=settings.retention_bytes
            )
        except StoreUnavailable as exc:
            app.state.startup_error = str(exc)  # one line from `gradwalk serve`, not a traceback
            raise
        rooms: RoomRegistry = app.state.rooms
        try:
            back = rooms.attach(store)
            if back:
                log.info("%d classroom rooms came back from the last server", back)
            try:
                pool = await start_pool(settings)
            except SandboxUnavailable as exc:
                app.state.startup_error = (
                    f"{exc}. Bind to 127.0.0.1, or pass --allow-unsandboxed to run "
                    "snippets without the sandbox."
                )
                raise
            registry = RunRegistry(store, pool, snippets_named(app.state.examples, app.state.lessons.lessons))
            ended = await registry.recover()
            if ended:
                log.warning("marked %d runs left unfinished by the last server as crashed", ended)
            app.state.registry = registry
            try:
                yield
            finally:
                app.state.registry = None
                await registry.close()
                await registry.pool.close()
        finally:
            rooms.detach()
            store.close()

    app = FastAPI(
        title="gradwalk",
        version=VERSION,
        description=_DESCRIPTION,
        lifespan=lifespan,
        docs_url="/docs" if settings.api_docs else None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.examples = load_examples(settings.examples_dir)
    app.state.limiter = RateLimiter(settings.rate_burst, settings.rate_per_s)
    app.state.templates = Jinja2Templates(directory=str(settings.templates_dir))
    # the bundle's URLs carry its build (?v=...), read at each page so a rebuild shows at once
    app.state.templates.env.globals["assets"] = lambda: asset_version(settings.static_dir)
    app.state.registry = None
    app.state.lessons = LessonLibrary(load_lessons(LESSONS_DIR, settings.examples_dir))
    app.state.rooms = RoomRegistry()
    for module in (runs, exports, traces, events, examples, lessons, rooms, health, pages):
        app.include_router(module.router)
    if settings.static_dir.is_dir():
        app.mount("/static", VersionedStatic(directory=settings.static_dir), name="static")
    install_error_handlers(app)
    app.add_middleware(CompressGets)
    app.add_middleware(HeadAsGet)  # outside the compression: a HEAD's length is a GET's
    app.add_middleware(
        GuardMiddleware,
        allowed_hosts=settings.effective_allowed_hosts,
        max_body=settings.max_body_bytes,
        body_timeout_s=settings.body_timeout_s,
    )
    app.add_middleware(SecurityHeadersMiddleware, docs=settings.api_docs)
    return app
