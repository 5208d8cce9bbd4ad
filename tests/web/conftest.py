"""Browser-test fixtures: the built bundle, a real gradwalk server on a free port, Chromium.

The server is ``server.commands.serve`` (the app from ``server.app.create_app`` on uvicorn)
in a subprocess with real workers; its log is printed when it does not come up. Chromium
is Debian's (``/usr/bin/chromium``, or ``GRADWALK_CHROMIUM``), driven by Playwright. When
``CI=true``, a missing browser, bundle or server fails the tests instead of skipping them.
Screenshots of the main states go to ``test-artifacts/web/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
DIST = ROOT / "server" / "static" / "dist"
ARTIFACTS = ROOT / "test-artifacts" / "web"
CHROMIUM = Path(os.environ.get("GRADWALK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IN_CI = os.environ.get("CI", "").lower() == "true"

_SERVE = """
import sys
from server.commands import serve
from server.settings import Settings
settings = Settings.model_validate_json(sys.argv[1])
sys.exit(serve(settings, log_level="warning", on_ready=lambda url: print("READY", url, flush=True)))
"""


def need(ok: bool, why: str) -> None:
    """Skip when something the test needs is missing; in CI, fail instead."""
    if not ok:
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)


def _newest(paths: list[Path]) -> float:
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


@pytest.fixture(scope="session")
def bundle() -> Path:
    """The built frontend; rebuilt here when web/src is newer than the bundle."""
    app_js = DIST / "app.js"
    sources = [p for p in (WEB / "src").rglob("*") if p.is_file()]
    if not app_js.exists() or _newest(sources) > app_js.stat().st_mtime:
        need(
            shutil.which("npm") is not None and (WEB / "node_modules").is_dir(),
            "the web bundle is not built: run `make web`",
        )
        build = subprocess.run(["npm", "run", "--silent", "build"], cwd=WEB, capture_output=True, text=True)
        assert build.returncode == 0, f"npm run build failed:\n{build.stdout}\n{build.stderr}"
    return app_js


class Server:
    """A gradwalk server in a subprocess, at ``url`` (no trailing slash)."""

    def __init__(self, tmp: Path) -> None:
        from server.settings import Settings

        settings = Settings(
            host="127.0.0.1", port=0, db=tmp / "gradwalk.sqlite3", workers=2, rate_burst=10_000
        )
        self.log_path = tmp / "server.log"
        self.log_file = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVE, settings.model_dump_json()],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.log_file,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.url = ""

    def wait_ready(self, timeout: float = 90.0) -> None:
        import httpx

        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith(b"READY ") or not line:
                break
        if not line.startswith(b"READY "):
            self.stop()
            pytest.fail(f"the gradwalk server did not come up; its log:\n{self.log()}")
        self.url = line.split()[1].decode().rstrip("/")
        stdout = self.proc.stdout
        threading.Thread(
            target=lambda: [self.log_file.write(chunk) for chunk in iter(stdout.readline, b"")], daemon=True
        ).start()
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while client.get("/api/health").status_code != 200:
                if time.monotonic() > deadline:
                    pytest.fail(f"the gradwalk server never became healthy; its log:\n{self.log()}")
                time.sleep(0.2)

    def log(self) -> str:
        self.log_file.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def server(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    try:
        import server.commands  # noqa: F401
    except ImportError as exc:
        need(False, f"the gradwalk server is not importable: {exc}")
    srv = Server(tmp_path_factory.mktemp("web-server"))
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    need(CHROMIUM.exists(), f"no Chromium at {CHROMIUM} (set GRADWALK_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        need(False, "playwright is not installed")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Problems(list):
    """Console errors and page errors seen by a page (CSP violations show up here)."""


@pytest.fixture
def page(browser: Any, server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page on the app; the test fails if the page logged errors."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(30_000)
    problems = Problems()
    page.on(
        "console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.problems = problems
    page.server = server
    try:
        yield page
    finally:
        context.close()
    if not getattr(request.node, "allow_console_errors", False):
        assert not problems, "the page logged errors:\n" + "\n".join(problems)


def shot(page: Any, name: str) -> Path:
    """Save a screenshot of the page under test-artifacts/web/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def open_app(page: Any, query: str = "") -> None:
    """Open the app and wait until the examples are loaded."""
    page.goto(f"{page.server.url}/{query}")
    page.wait_for_selector("[data-gw=examples] option[value=cubic]", state="attached")


def run_example(page: Any, example: str, status: str = "ok") -> None:
    """Pick an example, run it, and wait until it finished and its graph is laid out."""
    page.select_option("[data-gw=examples]", example)
    page.click("[data-gw=run]")
    page.wait_for_selector(f"[data-gw=status][data-state={status}]", timeout=60_000)
    wait_graph(page)


def wait_graph(page: Any) -> dict[str, Any]:
    """Wait until the graph shows every node of the model and has been laid out."""
    page.wait_for_function(
        """() => {
            const app = window.gradwalk;
            const cy = app && app.graph.core;
            return cy && app.model.nodes.size > 0 && cy.nodes('.unplaced').length === 0
                && app.graph.lastLayout !== null && !app.graph.busy;
        }"""
    )
    info: dict[str, Any] = page.evaluate("() => window.gradwalk.graph.lastLayout")
    return info


def load_trace(page: Any, trace: dict[str, Any]) -> None:
    """Show a trace (as `gradwalk record` writes them) without a server run."""
    page.evaluate("(text) => { window.gradwalk.loadTrace(JSON.parse(text)); }", json.dumps(trace))
