"""Embeds: a course page on another origin frames /embed/ID, and the run steps inside it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import LEAF, NEXT, ROOT, expect, open_app, run_example, settle, shot, stored_run, wait_viewer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def cubic_run(server: Any) -> str:
    return stored_run(server, (ROOT / "server" / "examples" / "cubic.py").read_text())


class CoursePages(ThreadingHTTPServer):
    """A static site on another origin (``http://localhost:PORT``) that serves lesson pages.

    A real server rather than a routed URL: Chromium refuses frames of a loopback server
    inside a page it takes for a public site (local network access checks).
    """

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path.split("?")[0], "").encode()
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://localhost:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def course() -> Iterator[CoursePages]:
    site = CoursePages()
    try:
        yield site
    finally:
        site.shutdown()
        site.server_close()


def course_page(page: Any, course: CoursePages, body: str) -> None:
    """Publish `body` as a lesson page on the course site and open it."""
    path = f"/lesson-{len(course.pages)}.html"
    course.pages[path] = (
        "<!doctype html><meta charset='utf-8'><title>Lesson 3</title><link rel='icon' href='data:,'>"
        f"<body><h1>Lesson 3: backward()</h1>{body}</body>"
    )
    page.goto(f"{course.url}{path}")


def embed_frame(page: Any) -> Any:
    """The embed's frame, once its graph is laid out."""
    page.wait_for_selector("iframe")
    frame = page.frames[1]
    wait_viewer(frame)
    return frame


def iframe(src: str, width: int = 960, height: int = 560) -> str:
    return f'<iframe src="{src}" width="{width}" height="{height}" title="gradwalk"></iframe>'


def test_a_course_page_opened_from_disk_embeds_a_run(page: Any, cubic_run: str, tmp_path: Path) -> None:
    # an author previews a lesson page from disk: frame-ancestors * covers network schemes
    # only, so the frame said "127.0.0.1 refused to connect"
    lesson = tmp_path / "lesson.html"
    lesson.write_text(
        "<!doctype html><meta charset='utf-8'><title>Lesson 3</title>"
        f"<body><h1>Lesson 3</h1>{iframe(f'{page.server.url}/embed/{cubic_run}?view=stepper')}</body>"
    )
    page.goto(lesson.as_uri())
    frame = embed_frame(page)
    expect(frame.locator(".gw-stepper .gw-position")).to_have_text("step 1 of 5")
    shot(page, "embed-00-course-page-from-disk")


def test_a_course_page_embeds_a_run_and_steps_it(page: Any, course: CoursePages, cubic_run: str) -> None:
    course_page(page, course, iframe(f"{page.server.url}/embed/{cubic_run}?view=stepper"))
    frame = embed_frame(page)
    position = frame.locator(".gw-stepper .gw-position")
    expect(position).to_have_text("step 1 of 5")
    expect(frame.locator(".gw-step-card")).to_contain_text("SubBackward0")
    for _ in range(3):
        frame.click(NEXT)
    expect(position).to_have_text("step 4 of 5")
    expect(frame.locator(".gw-step-card")).to_contain_text("x.grad: None → 14.75")
    assert ".grad 14.75" in frame.evaluate(LEAF)
    expect(frame.locator(".gw-viewer-open")).to_have_attribute(
        "href", f"{page.server.url}/?run={cubic_run}&view=stepper&step=3"
    )
    settle(page)
    shot(page, "embed-01-course-page-stepped-to-leaf")


def test_an_embed_of_a_missing_run_says_so_in_the_frame(page: Any, course: CoursePages, request: Any) -> None:
    # a deleted run or a mistyped link: a sentence in the frame, not a line of JSON
    request.node.allow_console_errors = True  # Chromium logs the frame page's own 404
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.location.get("url", "")) if m.type == "error" else None)
    course_page(page, course, iframe(f"{page.server.url}/embed/nosuchrun000?view=stepper", 720, 560))
    page.wait_for_selector("iframe")
    frame = page.frames[1]
    failed = frame.locator(".gw-viewer-failed")
    expect(failed).to_contain_text("there is no run nosuchrun000 on this server")
    # the page's own 404 is the only failed request: the viewer asks the API nothing more
    assert errors and not [url for url in errors if "/api/" in url]


def test_a_phone_wide_embed_shows_all_six_tabs(page: Any, course: CoursePages, cubic_run: str) -> None:
    # one line of brand, tabs and theme button hid four tabs off to the side
    course_page(page, course, iframe(f"{page.server.url}/embed/{cubic_run}?view=stepper", 360, 560))
    frame = embed_frame(page)
    tabs = frame.locator(".gw-viewer-tabs [role=tab]")
    expect(tabs).to_have_count(6)
    row = frame.locator(".gw-viewer-tabs").bounding_box()
    for i in range(6):
        box = tabs.nth(i).bounding_box()
        assert box["x"] >= row["x"] - 1 and box["x"] + box["width"] <= row["x"] + row["width"] + 1, i
    settle(page)
    shot(page, "embed-04-phone")


def test_embed_options_graph_at_a_step_dark_without_controls(
    page: Any, course: CoursePages, cubic_run: str
) -> None:
    src = f"{page.server.url}/embed/{cubic_run}?view=graph&step=3&controls=hide&theme=dark"
    course_page(page, course, iframe(src, 720, 460))
    frame = embed_frame(page)
    assert frame.evaluate("() => document.documentElement.dataset.theme") == "dark"
    expect(frame.locator(".gw-viewer-bar")).to_have_count(0)
    expect(frame.locator(".gw-graph-toolbar")).to_be_hidden()
    assert ".grad 14.75" in frame.evaluate(LEAF)
    # No buttons, but a click on the graph and the arrow keys step.
    frame.locator(".gw-graph-canvas").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")
    frame.wait_for_function("() => window.gradwalkViewer.store.state.step === 4")
    expect(frame.locator(".gw-graph-banner")).to_contain_text("Graph freed")
    settle(page)
    shot(page, "embed-02-graph-dark-no-controls")


def test_embed_fills_a_narrow_frame(page: Any, course: CoursePages, cubic_run: str) -> None:
    course_page(page, course, iframe(f"{page.server.url}/embed/{cubic_run}?view=code&step=4", 420, 640))
    frame = embed_frame(page)
    assert frame.evaluate("() => document.getElementById('gradwalk-viewer').dataset.layout") == "narrow"
    size = frame.evaluate(
        "() => { const r = document.getElementById('gradwalk-viewer').getBoundingClientRect(); return [r.width, r.height]; }"
    )
    assert size == [pytest.approx(420, abs=4), pytest.approx(640, abs=4)]
    expect(frame.locator(".gw-code-line.current")).to_contain_text("y.backward()")
    expect(frame.locator(".gw-viewer-output")).to_contain_text("tensor(14.7500)")
    # the graph over the code is short: at the end of backward the leaves are brought into
    # view by the least pan (centred, they left the graph's top cut off above and the lower
    # half of the frame empty)
    frame.wait_for_function(
        """() => {
            const cy = window.gradwalkViewer.graph.core;
            if (cy.animated() || window.gradwalkViewer.graph.busy) return false;
            const all = cy.nodes().renderedBoundingBox({ includeLabels: false });
            const leaves = cy.nodes("[kind = 'leaf']").renderedBoundingBox({ includeLabels: false });
            return leaves.y1 >= 0 && leaves.y2 <= cy.height() && (all.y1 >= 0 || all.y2 >= cy.height() - 40);
        }""",
        timeout=5_000,
    )
    settle(page)
    shot(page, "embed-03-narrow-code")


def test_only_embeds_may_be_framed(
    page: Any, course: CoursePages, request: pytest.FixtureRequest, cubic_run: str
) -> None:
    request.node.allow_console_errors = True  # Chromium logs the refused frame
    url = page.server.url
    with httpx.Client(base_url=url) as client:
        embed = client.get(f"/embed/{cubic_run}")
        app = client.get("/")
        assert client.get("/embed/0123456789ab").status_code == 404
    assert embed.status_code == 200
    assert "frame-ancestors" not in embed.headers["content-security-policy"]  # any page, file: too
    assert "x-frame-options" not in embed.headers
    assert "frame-ancestors 'none'" in app.headers["content-security-policy"]
    assert app.headers["x-frame-options"] == "DENY"
    course_page(page, course, iframe(f"{url}/embed/{cubic_run}") + iframe(f"{url}/"))
    embed_frame(page)
    app_frame = page.frames[2]
    page.wait_for_timeout(500)
    assert app_frame.evaluate("() => document.getElementById('gradwalk')") is None


def test_a_live_run_embedded_fills_in_as_it_runs(page: Any, course: CoursePages) -> None:
    source = (
        "import time\nimport torch\n\ntime.sleep(1.5)\n"
        + (ROOT / "server" / "examples" / "cubic.py").read_text().split("\n", 1)[1]
    )
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        run = client.post("/api/runs", json={"source": source}).raise_for_status().json()
    course_page(page, course, iframe(f"{page.server.url}/embed/{run['id']}?view=stepper&step=3"))
    page.wait_for_selector("iframe")
    frame = page.frames[1]
    frame.wait_for_function(
        "() => window.gradwalkViewer && window.gradwalkViewer.model.isFinished", timeout=60_000
    )
    expect(frame.locator(".gw-stepper .gw-position")).to_have_text("step 4 of 5")
    expect(frame.locator(".gw-step-card")).to_contain_text("14.75")


def test_copy_embed_code_gives_an_iframe_at_the_view_and_step(page: Any, course: CoursePages) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.server.url)
    open_app(page)
    run_example(page, "cubic")
    page.click("#gw-tab-stepper")
    for _ in range(3):
        page.click(NEXT)
    page.click("[data-gw=copy-embed]")
    expect(page.locator("[data-gw=copy-embed]")).to_have_attribute("data-done", "copied")
    code = page.evaluate("() => navigator.clipboard.readText()")
    run_id = page.evaluate("() => window.gradwalk.runId")
    assert code.startswith(f'<iframe src="{page.server.url}/embed/{run_id}?view=stepper&amp;step=3"'), code
    settle(page)
    shot(page, "embed-04-app-copy-embed")
    lesson = page.context.new_page()
    try:
        course_page(lesson, course, code)
        frame = embed_frame(lesson)
        expect(frame.locator(".gw-stepper .gw-position")).to_have_text("step 4 of 5")
        expect(frame.locator(".gw-step-card")).to_contain_text("x.grad: None → 14.75")
    finally:
        lesson.close()


def _small_net_embed_at_step_4(page: Any, server: Any, width: int, height: int) -> dict[str, Any]:
    """Open small_net's run embedded at step 4 in a ``width`` x ``height`` frame; return the
    boxes of the graph, the step buttons, the slider and the step card."""
    run_id = stored_run(server, (ROOT / "server" / "examples" / "small_net.py").read_text())
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{server.url}/embed/{run_id}?view=stepper&step=3")
    expect(page.locator(".gw-viewer .gw-stepper .gw-position")).to_have_text("step 4 of 12")
    boxes: dict[str, Any] = page.evaluate(
        """() => Object.fromEntries(['.gw-viewer-graph', '.gw-step-controls', '.gw-stepper .gw-scrubber', '.gw-step-card']
             .map((s) => [s, document.querySelector('.gw-viewer ' + s).getBoundingClientRect().toJSON()]))"""
    )
    return boxes


def test_a_course_column_embed_gives_the_graph_most_of_its_height(page: Any, server: Any) -> None:
    # The README's embed code (width 100%, height 560) in a ~720 px column: the graph pane had
    # 271 px of the 560, the step buttons and the slider two rows, and the step card was cut.
    box = _small_net_embed_at_step_4(page, server, 720, 560)
    assert box[".gw-viewer-graph"]["height"] >= 0.55 * 560, box  # 271 px before, with its toolbar
    assert abs(box[".gw-step-controls"]["top"] - box[".gw-stepper .gw-scrubber"]["top"]) < 12, box  # one row
    assert box[".gw-step-card"]["bottom"] <= 560, box  # the card is whole
    shot(page, "embed-06-course-column")


def test_a_short_wide_embed_shows_the_step_card_whole(page: Any, server: Any) -> None:
    # 800 × 480, wide enough for the graph and the stepper side by side: the walk's list
    # under the step card cut the card's sum (net.fc2.bias.grad: None → …) off
    run_id = stored_run(server, (ROOT / "server" / "examples" / "small_net.py").read_text())
    page.set_viewport_size({"width": 800, "height": 480})
    page.goto(f"{server.url}/embed/{run_id}?view=stepper&step=3")
    expect(page.locator(".gw-viewer .gw-stepper .gw-position")).to_have_text("step 4 of 12")
    assert page.evaluate("() => document.querySelector('.gw-viewer').dataset.layout") == "wide"
    card = page.locator(".gw-viewer .gw-step-card")
    expect(card).to_contain_text("net.fc2.bias.grad: None → [")
    body = page.evaluate(
        """() => { const b = document.querySelector('.gw-viewer .gw-step-body');
                   const c = document.querySelector('.gw-viewer .gw-step-card').getBoundingClientRect();
                   return [b.scrollHeight, b.clientHeight, c.bottom]; }"""
    )
    assert body[0] <= body[1] + 1 and body[2] <= 480, body  # no scrolling needed, the card is whole
    shot(page, "embed-07-short-wide")


def test_a_400_by_300_embed_keeps_the_step_buttons_slider_and_card(page: Any, server: Any) -> None:
    # the graph kept 200 px and its toolbar: the page's content was 371 px in a 300 px frame
    # that does not scroll, the step buttons cut at the bottom and the card 12 px tall
    boxes = _small_net_embed_at_step_4(page, server, 400, 300)
    assert boxes[".gw-viewer-graph"]["height"] >= 90, boxes  # still a graph to look at
    for part in (".gw-step-controls", ".gw-stepper .gw-scrubber"):
        assert boxes[part]["bottom"] <= 300, (part, boxes)
    assert boxes[".gw-step-card"]["top"] < 300 - 24, boxes  # the card shows ...
    # ... and scrolls to the rest of it
    bottom = page.evaluate(
        """() => { const body = document.querySelector('.gw-viewer .gw-step-body'); body.scrollTop = body.scrollHeight;
                   return document.querySelector('.gw-viewer .gw-step-card').getBoundingClientRect().bottom; }"""
    )
    assert bottom <= 300 + 1, bottom
    page.click(".gw-viewer " + NEXT)
    expect(page.locator(".gw-viewer .gw-stepper .gw-position")).to_have_text("step 5 of 12")
    shot(page, "embed-08-400x300")
