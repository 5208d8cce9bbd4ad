"""Back, Forward, reload and links in real Chromium (hunt 65): Back and Forward walk the runs
shown, one press an entry, and bring back the run, its lesson card and the tab's title; a
link to a run the server lacks opens the starter example."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.server.lesson_traces import LESSONS

from .conftest import expect, open_app, run_id, run_source, shown, wait_graph
from .lessons_served import CARD, numbered

pytestmark = pytest.mark.browser

SNIPPETS = [
    f"# Snippet {name}\nimport torch\n\nx = torch.tensor({value}, requires_grad=True)\n(x * x).backward()\n"
    for name, value in (("A", 1.0), ("B", 2.0), ("C", 3.0))
]


def three_runs(page: Any) -> list[str]:
    """Open the app and run snippets A, B and C one after the other; return their run ids."""
    open_app(page)
    runs = []
    for source in SNIPPETS:
        run_source(page, source)
        runs.append(run_id(page))
        shown(page, runs[-1])
    return runs


def test_back_and_forward_walk_the_runs_one_press_an_entry(page: Any) -> None:
    a, b, c = three_runs(page)
    page.go_back()
    shown(page, b)
    assert "# Snippet B" in page.evaluate("() => window.gradwalk.editor.source")
    # Back again is A: going back to B had pushed B anew, cutting C off, so Back showed B twice
    page.go_back()
    shown(page, a)
    page.go_forward()
    shown(page, b)
    page.go_forward()
    shown(page, c)
    assert "# Snippet C" in page.evaluate("() => window.gradwalk.editor.source")
    # and the page's history still holds A, B, C once each (none pushed again)
    page.go_back()
    shown(page, b)
    page.go_back()
    shown(page, a)


LONG_RUN = "import time\nfor i in range(300):\n    print(i, flush=True)\n    time.sleep(0.1)\n"


def server_status(page: Any, run: str) -> str:
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        return str(client.get(f"/api/runs/{run}").raise_for_status().json()["status"])


def test_back_during_a_long_run_stops_following_it_and_forward_brings_it_back_live(page: Any) -> None:
    sockets: list[Any] = []
    page.on("websocket", lambda ws: sockets.append(ws))
    open_app(page)
    run_source(page, SNIPPETS[0])
    a = run_id(page)
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", LONG_RUN)
    page.click("[data-gw=run]")
    expect(page.locator(".gw-stdout")).to_contain_text("3")
    long_run = run_id(page)
    page.wait_for_function("(id) => new URLSearchParams(location.search).get('run') === id", arg=long_run)

    page.go_back()
    shown(page, a)
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "ok")
    expect(page.locator("[data-gw=stop]")).to_be_disabled()
    # the run left goes on on the server, and this page no longer follows it: its socket had
    # stayed open, and ■ Stop (on while the next run loads) would have cancelled it
    page.wait_for_function("() => window.gradwalk.stream === null")
    for ws in sockets:
        if not ws.is_closed():
            ws.wait_for_event("close", timeout=5_000)
    assert server_status(page, long_run) == "running"

    page.go_forward()
    page.wait_for_function("(id) => window.gradwalk.runId === id", arg=long_run)
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "running")
    printed = len(page.locator(".gw-stdout").inner_text().split())
    # still streaming: more lines come, and ■ Stop cancels this run
    page.wait_for_function(
        "(n) => document.querySelector('.gw-stdout').innerText.trim().split(/\\s+/).length > n + 5",
        arg=printed,
    )
    page.click("[data-gw=stop]")
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "cancelled")
    assert server_status(page, long_run) == "cancelled"


def open_lesson(page: Any, lesson: str) -> str:
    """Open ``lesson`` from the gallery; return its run's id once it is shown with its card."""
    page.click("[data-gw=lessons]")
    page.click(f".gw-lesson-tile[data-lesson={lesson}]")
    expect(page.locator(CARD)).to_have_attribute("data-lesson", lesson)
    # the lesson's own run shown, remembered as its run: lesson 1's code is an example's too, so
    # the example's run shown before already had its source (a reload then lost the card)
    page.wait_for_function(
        """([src, lesson]) => window.gradwalk.model.source === src && window.gradwalk.runId !== null
            && JSON.parse(sessionStorage.getItem("gradwalk-lesson-runs") ?? "{}")[window.gradwalk.runId] === lesson""",
        arg=[next(item.source for item in LESSONS if item.id == lesson), lesson],
    )
    run = run_id(page)
    shown(page, run)
    return run


def test_back_and_forward_bring_back_each_runs_lesson_card(page: Any) -> None:
    first, fourth = LESSONS[0].id, LESSONS[3].id
    open_app(page)
    run_source(page, SNIPPETS[0])
    plain = run_id(page)
    one = open_lesson(page, first)
    four = open_lesson(page, fourth)
    card = page.locator(CARD)

    page.go_back()
    shown(page, one)
    # the card is lesson 1's, as the code and graph are: it had still read "Lesson 4 of …"
    expect(card).to_have_attribute("data-lesson", first)
    expect(card).to_contain_text(numbered(first))
    page.go_back()
    shown(page, plain)
    expect(card).to_be_hidden()
    page.go_forward()
    shown(page, one)
    expect(card).to_contain_text(numbered(first))
    page.go_forward()
    shown(page, four)
    expect(card).to_contain_text(numbered(fourth))
    # Next ▶ on the card shown still walks on from the lesson it reads
    card.get_by_role("button", name="Next ▶").click()
    expect(card).to_contain_text(numbered(LESSONS[4].id))


def test_a_run_of_a_lessons_code_keeps_its_card_on_back_and_forward(page: Any) -> None:
    first, second = LESSONS[0].id, LESSONS[1].id
    open_app(page)
    open_lesson(page, first)
    # the learner changes the lesson's code and runs it, the card still above it
    page.evaluate("() => { window.gradwalk.editor.source += '\\nprint(1)\\n'; }")
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    own = run_id(page)
    shown(page, own)
    open_lesson(page, second)
    page.go_back()
    shown(page, own)
    expect(page.locator(CARD)).to_contain_text(numbered(first))


@pytest.mark.parametrize("run", ["deadbeef0000", "not a run!"])
def test_a_link_to_a_run_this_server_lacks_opens_the_starter_example(
    page: Any, request: pytest.FixtureRequest, run: str
) -> None:
    request.node.allow_console_errors = True  # Chromium logs the trace's 404
    open_app(page, f"?run={run}")
    expect(page.locator(".gw-output")).to_contain_text(run)
    if run == "deadbeef0000":
        expect(page.locator(".gw-output")).to_contain_text("No run deadbeef0000 on this server.")
    # the editor holds the starter example, as a fresh page's does (it was empty), ready to run
    starter = page.evaluate("() => window.gradwalk.examplesMenu.examples[0].source")
    page.wait_for_function("(src) => window.gradwalk.editor.source === src", arg=starter)
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "idle")
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    wait_graph(page)


DEFAULT_TITLE = "gradwalk · watch autograd work"


def test_the_tabs_title_names_the_run_open(page: Any, request: pytest.FixtureRequest) -> None:
    request.node.allow_console_errors = True  # Chromium logs the missing run's 404
    open_app(page)
    expect(page).to_have_title(DEFAULT_TITLE)  # no run open yet
    page.select_option("[data-gw=examples]", "cubic")
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    example = run_id(page)
    expect(page).to_have_title("Your first backward() · gradwalk")
    run_source(page, SNIPPETS[1])  # a snippet is named by its first comment line
    expect(page).to_have_title("Snippet B · gradwalk")
    page.go_back()
    shown(page, example)
    expect(page).to_have_title("Your first backward() · gradwalk")
    # a lesson's run by its lesson's title (lesson 1's code is an example's too), on a reload
    # too (the lessons come after the run)
    open_lesson(page, LESSONS[0].id)
    lesson_title = page.locator(f"{CARD} .gw-lesson-title").inner_text()
    expect(page).to_have_title(f"{lesson_title} · gradwalk")
    page.reload()
    expect(page).to_have_title(f"{lesson_title} · gradwalk")
    # a link to no run: the page's own title
    open_app(page, "?run=deadbeef0000")
    expect(page.locator(".gw-output")).to_contain_text("No run deadbeef0000")
    expect(page).to_have_title(DEFAULT_TITLE)
