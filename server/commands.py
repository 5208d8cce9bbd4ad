"""``gradwalk serve`` and ``gradwalk export``: the server's subcommands, loaded by ``gradwalk.cli`` from :data:`COMMANDS`."""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import log_secrets
from .export_command import add_export_parser, run_export
from .listen import BindError, bind
from .settings import Settings, is_loopback

__all__ = ["COMMANDS", "add_serve_parser", "run_serve", "serve"]

# A client frame is a tiny command; anything bigger is refused by uvicorn with close 1009.
_WS_MAX_BYTES = 64 * 1024


def add_serve_parser(sub: Any) -> None:
    """Add ``serve`` and its flags (defaults from ``GRADWALK_*`` variables) to ``sub``."""
    env = Settings.env_defaults()
    d = Settings()
    p = sub.add_parser(
        "serve",
        help="serve the web app and its API (uvicorn)",
        description="Serve gradwalk. On loopback no token is needed; bound to any other "
        "address, creating runs needs a token (one is made up if none is given).",
    )
    p.add_argument(
        "--host", default=os.environ.get("GRADWALK_HOST", d.host), help="address to bind (%(default)s)"
    )
    p.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("GRADWALK_PORT", d.port)),
        help="port (%(default)s; 0 picks a free one)",
    )
    p.add_argument(
        "--db", type=Path, default=env.get("db", d.db), help="SQLite file for stored runs (GRADWALK_DB)"
    )
    p.add_argument(
        "--workers", type=int, default=env.get("workers"), help="worker processes (GRADWALK_WORKERS)"
    )
    p.add_argument("--max-queue", type=int, default=d.max_queue, help="runs waiting for a worker before 429")
    p.add_argument("--token", default=env.get("token"), help="bearer token to create runs (GRADWALK_TOKEN)")
    p.add_argument("--token-for-viewing", action="store_true", help="also require the token to view runs")
    p.add_argument(
        "--isolation",
        choices=["auto", "strict", "local"],
        default=d.isolation,
        help="worker sandbox: auto = local on loopback, strict elsewhere",
    )
    p.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="run snippets without the strict sandbox where the platform lacks it (dangerous)",
    )
    p.add_argument(
        "--rate", type=float, default=d.rate_per_s, help="runs per second a client's allowance refills"
    )
    p.add_argument("--burst", type=float, default=d.rate_burst, help="runs a client may create at once")
    p.add_argument("--retention-runs", type=int, default=d.retention_runs, help="finished runs kept")
    p.add_argument(
        "--retention-mb",
        type=float,
        default=d.retention_bytes / 2**20,
        help="compressed trace megabytes kept",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=d.body_timeout_s,
        help="seconds a request body may stall before the answer is 408 (%(default)s)",
    )
    p.add_argument("--api-docs", action="store_true", help="serve Swagger UI at /docs (loads from a CDN)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])


def run_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted; return the exit status."""
    token = args.token
    made_token = False
    if token is None and not is_loopback(args.host):
        token, made_token = secrets.token_urlsafe(18), True
    try:
        settings = _settings(args, token)
    except ValidationError as exc:
        for problem in exc.errors():
            field = str(problem["loc"][0]) if problem["loc"] else ""
            flag, name = _FLAGS.get(field, (f"--{field.replace('_', '-')}", field))
            print(f"gradwalk serve: {flag} {getattr(args, name, '')}: {problem['msg']}", file=sys.stderr)
        return 2

    def announce(url: str) -> None:
        print(f"gradwalk: open {url}", flush=True)
        if made_token:
            print(
                f"gradwalk: creating runs needs the token {token} (made up for this server; set --token "
                "or GRADWALK_TOKEN to choose one)",
                flush=True,
            )

    return serve(settings, log_level=args.log_level, on_ready=announce)


def _settings(args: argparse.Namespace, token: str | None) -> Settings:
    """The server's settings from the command line (raises pydantic's ValidationError)."""
    return Settings(
        host=args.host,
        port=args.port,
        db=args.db,
        workers=args.workers,
        max_queue=args.max_queue,
        token=token,
        token_for_viewing=args.token_for_viewing,
        isolation=args.isolation,
        allow_unsandboxed=args.allow_unsandboxed,
        rate_per_s=args.rate,
        rate_burst=args.burst,
        retention_runs=args.retention_runs,
        retention_bytes=int(args.retention_mb * 2**20),
        body_timeout_s=args.body_timeout,
        api_docs=args.api_docs,
    )


# a setting's flag and argparse name, where they differ from the field's
_FLAGS = {
    "rate_per_s": ("--rate", "rate"),
    "rate_burst": ("--burst", "burst"),
    "retention_bytes": ("--retention-mb", "retention_mb"),
    "body_timeout_s": ("--body-timeout", "body_timeout"),
}


def serve(
    settings: Settings, *, log_level: str = "info", on_ready: Callable[[str], None] | None = None
) -> int:
    """Run the app on uvicorn with ``settings``; call ``on_ready(url)`` once it accepts
    connections. Returns the exit status: 0 after a shutdown (Ctrl+C included), 2 when the address cannot be
    bound (one line on stderr names the flag), 3 when the app failed to start."""
    import uvicorn

    from .app import create_app
    from .storage import SqliteRunStore, StoreUnavailable
    from .ws_protocol import WebSocketProtocol

    try:  # the database first: one line that names the file, not uvicorn's traceback of its lifespan
        SqliteRunStore(settings.db).close()
    except StoreUnavailable as exc:
        print(f"gradwalk: the server did not start: {exc}", file=sys.stderr)
        return 3
    try:
        sock = bind(settings.host, settings.port)  # before the app: nothing starts when it fails
    except BindError as exc:
        print(f"gradwalk serve: {exc}", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]  # the real one, when --port 0 asked for any
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        ws_max_size=_WS_MAX_BYTES,
        timeout_graceful_shutdown=10,
        ws=WebSocketProtocol,
    )
    log_secrets.install()  # uvicorn.Config set its loggers up: a presenter key stays out of them
    server = uvicorn.Server(config)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    url = f"http://{host}:{port}/"
    original_startup = server.startup

    async def startup(sockets: Any = None) -> None:
        await original_startup(sockets=sockets)
        if server.started and on_ready is not None:
            on_ready(url)

    server.startup = startup  # type: ignore[method-assign]
    server.handle_exit = _patient_exit(server)  # type: ignore[method-assign,assignment]
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        # Ctrl+C: uvicorn has shut down cleanly and asyncio raises the interrupt again after,
        # which printed a traceback under "Finished server process" on every stop
        return 0
    except SystemExit:
        # uvicorn exits (3) itself when the app's lifespan fails to start: the line below was
        # never printed, only a traceback that named neither the flag nor the file
        pass
    if not server.started:
        error = getattr(app.state, "startup_error", None)
        print(f"gradwalk: the server did not start: {error or 'see the log above'}", file=sys.stderr)
        return 3
    return 0


def _patient_exit(server: Any) -> Callable[[int, Any], None]:
    """uvicorn's signal handler, but a second Ctrl+C while the server shuts down waits for it
    (its live runs are being stored, a few seconds at most) rather than quit at once and lose
    them; a third quits at once."""
    original = server.handle_exit
    waited = False

    def handle_exit(sig: int, frame: Any) -> None:
        nonlocal waited
        if sig == signal.SIGINT and server.should_exit and not waited:
            waited = True
            print(
                "gradwalk: stopping: the live runs are being stored (Ctrl+C again to quit at once and lose them)",
                file=sys.stderr,
                flush=True,
            )
            return
        original(sig, frame)

    return handle_exit


COMMANDS: dict[str, tuple[Callable[[Any], None], Callable[[argparse.Namespace], int]]] = {
    "serve": (add_serve_parser, run_serve),
    "export": (add_export_parser, run_export),
}
