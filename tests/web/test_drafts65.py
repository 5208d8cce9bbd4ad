"""Unsaved code and a server that goes away, in real Chromium against the real server (hunt 65).

The learner's own edits survive a reload, Back/Forward and the logo (web/src/drafts.ts), with
a notice and Discard; ▶ Run pressed while the server is down says so in words and is cleared
by the next run; a server killed mid-run and started again on the same database shows the run
as crashed, in words (web/src/run-lost.ts)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.harness import LiveServer
from tests.server.lesson_traces import LESSONS

from .conftest import expect, open_app, run_id, run_source, shown
from .lessons_served import CARD

pytestmark = pytest.mark.browser

SNIPPET_A = "# Snippet A\nimport torch\n\nx = torch.tensor(1.0, requires_grad=True)\n(x * x).backward()\n"
SNIPPET_B = "# Snippet B\nimport torch\n\nx = torch.tensor(2.0, requires_grad=True)\n(x * x).backward()\n"
RESTORED = "Your unsaved edits were restored."
NOTICE = "[data-gw=output] .gw-notice[data-said]"
SOURCE = "() => window.gradwalk.editor.source"


def type_at_end(page: Any, text: str) -> None:
    """Type ``text`` at the end of the code, key by key, as a learner does."""
    page.locator("[data-gw=editor] .cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(text)


def source_is(page: Any, text: str) -> None:
    page.wait_for_function("(src) => window.gradwalk.editor.source === src", arg=text)


def test_edits_after_a_run_come_back_on_reload_with_a_notice_and_discard(page: Any) -> None:
    open_app(page)
    run_source(page, SNIPPET_A)
    a = run_id(page)
    type_at_end(page, "print('mine')")
    page.reload()
    shown(page, a, address=False)
    # the learner's text, not the run's: the reload had put the run's code back over it
    source_is(page, SNIPPET_A + "print('mine')")
    notice = page.locator(NOTICE)
    expect(notice).to_contain_text(RESTORED)
    expect(page.locator("[data-gw=examples]")).to_have_value("")  # the run's own code, edited
    notice.get_by_role("button", name="Discard").click()
    source_is(page, SNIPPET_A)
    expect(notice).to_have_count(0)
    # discarded for good: a reload shows the run's code, and says nothing
    page.reload()
    shown(page, a, address=False)
    source_is(page, SNIPPET_A)
    page.wait_for_timeout(300)
    expect(page.locator(NOTICE)).to_have_count(0)


def test_back_and_forward_bring_back_each_runs_draft_and_a_run_of_it_drops_it(page: Any) -> None:
    open_app(page)
    run_source(page, SNIPPET_A)
    a = run_id(page)
    type_at_end(page, "print('ran')")
    page.click("[data-gw=run]")  # the edits are run: the new run is their saved state
    page.wait_for_function("(id) => window.gradwalk.runId !== id", arg=a)
    b = run_id(page)
    shown(page, b, address=False)
    page.go_back()
    shown(page, a, address=False)
    source_is(page, SNIPPET_A)  # A's draft went with the run of it
    expect(page.locator(NOTICE)).to_have_count(0)
    type_at_end(page, "print('not run')")
    page.go_forward()
    shown(page, b, address=False)
    source_is(page, SNIPPET_A + "print('ran')")
    page.go_back()
    shown(page, a, address=False)
    source_is(page, SNIPPET_A + "print('not run')")
    expect(page.locator(NOTICE)).to_contain_text(RESTORED)


def test_the_page_with_no_run_keeps_its_draft_across_the_logo_and_an_example_drops_it(page: Any) -> None:
    open_app(page)
    starter = page.evaluate("() => window.gradwalk.examplesMenu.examples[0].source")
    source_is(page, starter)
    type_at_end(page, "# my note")
    page.click(".gw-brand")  # the logo: a fresh `/`, which had reset the editor to the starter
    page.wait_for_selector("[data-gw=examples] option[value=cubic]", state="attached")
    source_is(page, starter + "# my note")
    expect(page.locator(NOTICE)).to_contain_text(RESTORED)
    expect(page.locator("[data-gw=example-edited]")).to_have_text(
        page.evaluate("() => 'Edited: ' + window.gradwalk.examplesMenu.examples[0].title")
    )
    # an example chosen over the edits replaces them, here and after a reload
    page.select_option("[data-gw=examples]", "cubic")
    cubic = page.evaluate("() => window.gradwalk.examplesMenu.examples.find((e) => e.id === 'cubic').source")
    source_is(page, cubic)
    page.reload()
    page.wait_for_selector("[data-gw=examples] option[value=cubic]", state="attached")
    source_is(page, starter)
    expect(page.locator(NOTICE)).to_have_count(0)


def test_a_lesson_opened_again_starts_from_its_code(page: Any) -> None:
    lesson = LESSONS[0]
    open_app(page)

    def open_lesson() -> str:
        page.click("[data-gw=lessons]")
        page.click(f".gw-lesson-tile[data-lesson={lesson.id}]")
        expect(page.locator(CARD)).to_have_attribute("data-lesson", lesson.id)
        page.wait_for_function(
            "(src) => window.gradwalk.model.source === src && window.gradwalk.runId", arg=lesson.source
        )
        run = run_id(page)
        shown(page, run, address=False)
        return run

    run = open_lesson()
    type_at_end(page, "# tried something")
    assert page.evaluate(SOURCE) == lesson.source + "# tried something"
    assert open_lesson() == run
    source_is(page, lesson.source)
    expect(page.locator(NOTICE)).to_have_count(0)
    page.reload()  # and the edits do not come back later either
    shown(page, run, address=False)
    source_is(page, lesson.source)
    page.wait_for_timeout(300)
    expect(page.locator(NOTICE)).to_have_count(0)


# --- a server that goes away ------------------------------------------------------------------


@pytest.fixture
def own_server(bundle: Path, tmp_path: Path) -> Iterator[LiveServer]:
    """A server of this test's own, to stop and start again on its port and database."""
    live = LiveServer.start(tmp_path, "--burst", "10000", token=None, workers=1)
    try:
        yield live
    finally:
        live.stop()


def relaunch(server: LiveServer, sig: int) -> None:
    """Stop ``server`` with ``sig`` (SIGKILL: a crash) and start it again on the same port and database."""
    port = server.url.rsplit(":", 1)[1]
    server.stop(sig)
    server.args[server.args.index("--port") + 1] = port
    server.launch()


@pytest.fixture
def own_page(browser: Any, own_server: LiveServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A page on ``own_server`` (Chromium logs the requests that fail while it is down)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.server = own_server
    try:
        yield page
    finally:
        context.close()


UNREACHABLE = "Could not reach the gradwalk server — is it still running? Your code is kept; press ▶ Run again once it is back."


def test_run_pressed_while_the_server_is_down_says_so_in_words(own_page: Any, own_server: LiveServer) -> None:
    page = own_page
    open_app(page)
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", SNIPPET_A)
    own_server.stop()
    page.click("[data-gw=run]")
    notice = page.locator(NOTICE)
    expect(notice).to_have_text(UNREACHABLE)  # it read the browser's "Failed to fetch"
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "idle")
    assert page.evaluate(SOURCE) == SNIPPET_A  # the code is kept
    relaunch(own_server, signal.SIGTERM)
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(notice).to_have_count(0)


TRAINING = """import time
import torch

w = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.01)
for step in range(100000):
    loss = ((w - 1) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.02)
"""


def test_a_server_restarted_mid_run_shows_the_run_crashed_in_words(
    own_page: Any, own_server: LiveServer
) -> None:
    page = own_page
    open_app(page)
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", TRAINING)
    page.click("[data-gw=run]")
    page.wait_for_function("() => window.gradwalk.model.optimizerSteps.length >= 10", timeout=60_000)
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "running")
    relaunch(own_server, signal.SIGKILL)
    status = page.locator("[data-gw=status]")
    # it had read "ready" over "running on cpu…"
    expect(status).to_have_attribute("data-state", "crashed", timeout=30_000)
    expect(status).to_have_text("crashed")
    steps = page.evaluate("() => window.gradwalk.model.optimizerSteps.length")
    output = page.locator("[data-gw=output]")
    expect(output.locator(".gw-run-status")).to_have_text("crashed · the server restarted while it ran")
    expect(page.locator(NOTICE)).to_have_text(
        f"The server restarted while this run was going; it was lost after {steps} optimizer steps. "
        "Press ▶ Run to run it again."
    )
    assert "the run ended" not in output.inner_text()
    # and ▶ Run runs it again
    page.click("[data-gw=run]")
    page.wait_for_function("() => window.gradwalk.model.optimizerSteps.length >= 3", timeout=60_000)
    page.click("[data-gw=stop]")
    expect(status).to_have_attribute("data-state", "cancelled")
