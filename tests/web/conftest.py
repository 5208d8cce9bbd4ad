"""Browser-test fixtures: the built bundle, a real gradwalk server on a free port, Chromium.

The server is the real ``gradwalk serve`` in a subprocess with real workers
(``tests.server.harness.LiveServer``); its log is printed when it does not come up. Chromium
is Debian's (``/usr/bin/chromium``, or ``GRADWALK_CHROMIUM``), driven by Playwright. When
``CI=true``, a missing browser, bundle or server fails the tests instead of skipping them.
Screenshots of the main states go to ``test-artifacts/web/``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import IN_CI, need
from tests.server.harness import LiveServer

__all__ = ["IN_CI", "LEAF", "NEXT", "expect", "need"]

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
NEXT = "button[aria-label='Next step']"
LEAF = "() => window.gradwalkViewer.graph.core.$('node[kind = \"leaf\"]').data('label')"

expect: Any
try:
    from playwright.sync_api import expect

    # a CI machine shared with other jobs runs a frame or a run late: wait longer than
    # Playwright's 5 s before calling an assertion false (a true one returns at once)
    expect.set_options(timeout=15_000)
except ImportError:  # the fixtures skip (or fail in CI) before any test runs
    expect = None


def _newest(paths: list[Path]) -> float:
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


@pytest.fixture(scope="session")
def bundle() -> Path:
    """The built frontend; rebuilt here when web/src is newer than the bundle (by one
    pytest-xdist process at a time: the others wait on the lock, then find it current)."""
    app_js = DIST / "app.js"
    sources = [p for p in (WEB / "src").rglob("*") if p.is_file()]
    if app_js.exists() and _newest(sources) <= app_js.stat().st_mtime:
        return app_js
    need(
        shutil.which("npm") is not None and (WEB / "node_modules").is_dir(),
        "the web bundle is not built: run `make web`",
    )
    with (WEB / "node_modules" / ".gradwalk-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not app_js.exists() or _newest(sources) > app_js.stat().st_mtime:
            build = subprocess.run(
                ["npm", "run", "--silent", "build"], cwd=WEB, capture_output=True, text=True
            )
            assert build.returncode == 0, f"npm run build failed:\n{build.stdout}\n{build.stderr}"
    return app_js


@pytest.fixture(scope="session")
def server(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A real ``gradwalk serve`` (see tests/server/harness.py), no token, no rate limit to speak of."""
    try:
        import server.commands  # noqa: F401
    except ImportError as exc:
        need(False, f"the gradwalk server is not importable: {exc}")
    srv = LiveServer.start(tmp_path_factory.mktemp("web-server"), "--burst", "10000", token=None)
    try:
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
def page(browser: Any, server: LiveServer, request: pytest.FixtureRequest) -> Iterator[Any]:
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


@contextlib.contextmanager
def phone_page(browser: Any, server: LiveServer, width: int = 390, height: int = 844) -> Iterator[Any]:
    """A page on a phone: a touch screen ``width`` x ``height`` CSS px (an iPhone's 390 x 844
    by default) at twice the pixels; its context closes after the ``with``."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    try:
        page = context.new_page()
        page.server = server
        yield page
    finally:
        context.close()


def stored_run(server: LiveServer, source: str) -> str:
    """Create a run on the server and wait until it is stored; return its id."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        run = client.post("/api/runs", json={"source": source}).raise_for_status().json()
        deadline = time.monotonic() + 90
        while client.get(f"/api/runs/{run['id']}").json()["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, "the run never finished"
            time.sleep(0.1)
    return str(run["id"])


def settle(page: Any) -> None:
    """Let the graph's colour transitions (180 ms) finish before a screenshot."""
    page.wait_for_timeout(300)


# Every overlap of a shown edge label (a shape or a gradient; an idle call's are transparent)
# with a node, a module group's name or another shown edge label, as [what, its label, the
# edge label]; boxes in graph coordinates, with their 2 px text background: overlapping by
# 3 px or less is touching (an 18 px edge from AccumulateGrad to its leaf holds a 19 px
# ".grad" box).
LABEL_OVERLAPS = """() => {
    const cy = window.gradwalk.graph.core;
    const only = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false };
    const body = { includeLabels: true, includeOverlays: false, includeUnderlays: false };
    const hit = (a, b) => Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1) > 3 && Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1) > 3;
    const labels = cy.edges(':visible').filter((e) => !!e.data('label') && !e.hasClass('idle'))
        .map((e) => [e.data('label'), e.boundingBox(only)]);
    const others = cy.nodes(':visible').map((n) => n.isParent()
        ? ['group', n.data('label'), n.boundingBox(only)]
        : ['node', n.data('label').split('\\n')[0], n.boundingBox(body)]);
    const over = [];
    labels.forEach(([text, box], i) => {
        for (const [kind, name, b] of others) if (hit(box, b)) over.push([kind, name, text]);
        labels.slice(i + 1).forEach(([t2, b2]) => { if (hit(box, b2)) over.push(['label', t2, text]); });
    });
    return over;
}"""


def labels_placed(page: Any) -> None:
    """Wait two frames: edge labels are placed in the frame after the labels change."""
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def shot(page: Any, name: str) -> Path:
    """Save a screenshot of the page under test-artifacts/web/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def open_app(page: Any, query: str = "", *, presenter: bool = False) -> None:
    """Open the app and wait until the examples are loaded; ``presenter``: then turn
    presenter type on (:func:`presenter_on`)."""
    page.goto(f"{page.server.url}/{query}")
    page.wait_for_selector("[data-gw=examples] option[value=cubic]", state="attached")
    if presenter:
        presenter_on(page)


def presenter_on(page: Any) -> None:
    """Turn presenter type on with its button (folded under "More" where the header is crowded)."""
    if page.locator("[data-gw=more]").is_visible():
        page.click("[data-gw=more]")
    page.click("[data-gw=presenter]")
    expect(page.locator(":root")).to_have_attribute("data-presenter", "on")
    if page.locator("[data-gw=more][aria-expanded=true]").is_visible():
        page.click("[data-gw=more]")  # close the menu again: the page is what is looked at


def run_example(page: Any, example: str, status: str = "ok") -> None:
    """Pick an example, run it, and wait until it finished and its graph is laid out."""
    page.select_option("[data-gw=examples]", example)
    page.click("[data-gw=run]")
    page.wait_for_selector(f"[data-gw=status][data-state={status}]", timeout=60_000)
    wait_graph(page)


def run_source(page: Any, source: str, status: str = "ok") -> None:
    """Put ``source`` in the editor, run it, and wait until it finished and its graph is laid out."""
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", source)
    page.click("[data-gw=run]")
    page.wait_for_selector(f"[data-gw=status][data-state={status}]", timeout=60_000)
    wait_graph(page)


def record_in_full(page: Any, card: Any, status: str = "ok") -> None:
    """Click ``card``'s **Record this iteration in full** (an error's or a pitfall's, found in
    an iteration recorded metrics-only) and wait until the new run finished and its graph is
    laid out."""
    first_run = page.evaluate("() => window.gradwalk.runId")
    card.get_by_role("button", name="Record this iteration in full").click()
    page.wait_for_function(
        "(first) => window.gradwalk.runId && window.gradwalk.runId !== first", arg=first_run
    )
    page.wait_for_selector(f"[data-gw=status][data-state={status}]", timeout=60_000)
    wait_graph(page)


def run_id(page: Any) -> str:
    """The id of the run the app shows ("None" where none)."""
    return str(page.evaluate("() => window.gradwalk.runId"))


def shown(page: Any, run: str, address: bool = True) -> None:
    """Wait until run ``run`` is on screen, its graph laid out, and (``address``) the address
    bar names it."""
    page.wait_for_function("(id) => window.gradwalk.runId === id", arg=run)
    if address:
        page.wait_for_function("(id) => new URLSearchParams(location.search).get('run') === id", arg=run)
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


def open_stepper(page: Any, source: str) -> None:
    """Run ``source`` on the server and open its backward walk at the first step, its graph laid out."""
    run = stored_run(page.server, source)
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card h3")).to_be_visible()
    wait_graph(page)


def card_of(page: Any, walk_item: str, nth: int = 0) -> Any:
    """Click the ``nth`` node of the walk whose label contains ``walk_item``; return its card."""
    page.locator(".gw-walk-item", has_text=walk_item).nth(nth).click()
    card = page.locator(".gw-step-card")
    expect(card.locator(".gw-node-name")).to_contain_text(walk_item)
    return card


def wait_viewer(target: Any) -> None:
    """Wait until the viewer (an embed, an export) in ``target`` (a page or a frame) has laid
    out its graph."""
    target.wait_for_function(
        "() => { const v = window.gradwalkViewer; return v && v.graph.lastLayout !== null && !v.graph.busy; }"
    )


def load_trace(page: Any, trace: dict[str, Any]) -> None:
    """Show a trace (as `gradwalk record` writes them) without a server run."""
    page.evaluate("(text) => { window.gradwalk.loadTrace(JSON.parse(text)); }", json.dumps(trace))
