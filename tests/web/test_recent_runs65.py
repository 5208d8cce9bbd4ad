"""**Open…** (recent runs, and a trace file) in real Chromium (hunt 65): a returning user could reach yesterday's run only
through the browser's history (`GET /api/runs` existed, and nothing in the app called it). The
header's tools ("More" where the header is crowded) list this server's latest runs, newest
first, each with its title or first line of code, its status, when it was made and its counts;
the keyboard opens one, the run open now is marked, Back returns to the run before."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from .conftest import expect, open_app, phone_page, run_id, run_source, shot, shown

pytestmark = pytest.mark.browser

FIRST = "# Recent runs A: a square\nimport torch\n\nx = torch.tensor(3.0, requires_grad=True)\n(x * x).backward()\n"
SECOND = (
    "# Recent runs B: a cube\nimport torch\n\nx = torch.tensor(2.0, requires_grad=True)\n(x**3).backward()\n"
)
BROKEN = "import torch\n\nw = torch.ones(2, requires_grad=True)\ny = w * 2\nloss = (y * missing_name).sum()\n"

DIALOG = "[data-gw=recent-dialog]"
ROWS = f"{DIALOG} a.gw-recent-run"


def open_list_by_keyboard(page: Any) -> None:
    """Open "Open…" with the keys alone: Tab to "More", Enter, Tab on to the item, Enter."""
    more = page.locator("[data-gw=more]")
    expect(more).to_be_visible()  # 1280 px: the tools are under "More"
    more.focus()
    page.keyboard.press("Enter")
    expect(more).to_have_attribute("aria-expanded", "true")
    for _ in range(4):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.dataset.gw") == "recent-runs":
            break
    expect(page.locator("[data-gw=recent-runs]")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(DIALOG)).to_be_visible()
    expect(page.locator(ROWS).first).to_be_visible()


def test_the_keyboard_opens_a_run_from_the_list_and_back_returns(page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_app(page)
    run_source(page, FIRST)
    first = run_id(page)
    run_source(page, BROKEN, status="error")
    run_source(page, SECOND)
    second = run_id(page)
    shown(page, second)
    page.click("#gw-tab-stepper")  # a step of this run: not carried over to the one opened
    page.wait_for_function("() => new URLSearchParams(location.search).get('step') !== null")

    open_list_by_keyboard(page)
    rows = page.locator(ROWS)
    # newest first: the run made last is at the top, with its title and the app's status word
    top = rows.nth(0)
    expect(top).to_have_attribute("data-run", second)
    expect(top.locator(".gw-recent-title")).to_have_text("Recent runs B: a cube")
    expect(top.locator(".gw-recent-status")).to_have_text("finished")
    expect(top.locator(".gw-recent-meta")).to_have_text(
        re.compile(r"^(just now|1 min ago) · 2 ops · 2 nodes$")
    )
    # the run open now is marked, and the focus starts on it
    expect(top).to_have_attribute("aria-current", "true")
    expect(top.locator(".gw-recent-current")).to_have_text("open now")
    expect(top).to_be_focused()
    expect(page.locator(f"{ROWS}[aria-current]")).to_have_count(1)
    # the untitled run that failed is named by its first line of code past the imports
    broken = rows.nth(1)
    expect(broken.locator(".gw-recent-title")).to_have_text("w = torch.ones(2, requires_grad=True)")
    expect(broken.locator(".gw-recent-status")).to_have_text("error")
    expect(rows.nth(2)).to_have_attribute("data-run", first)
    shot(page, "recent-runs65")

    # ↓ ↓ to the first run, Enter opens it as its ?run= link would
    page.keyboard.press("ArrowDown")
    expect(broken).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(rows.nth(2)).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(DIALOG)).to_be_hidden()
    shown(page, first)
    assert "Recent runs A" in page.evaluate("() => window.gradwalk.editor.source")
    page.wait_for_function("() => new URLSearchParams(location.search).get('view') === 'tape'")
    page.wait_for_function("() => new URLSearchParams(location.search).get('step') === null")
    # opened again, the list marks the run open now
    open_list_by_keyboard(page)
    expect(page.locator(f"{ROWS}[aria-current=true]")).to_have_attribute("data-run", first)
    page.keyboard.press("Escape")
    expect(page.locator(DIALOG)).to_be_hidden()
    # Back returns to the run before, at the step it was on
    page.go_back()
    shown(page, second)
    assert "Recent runs B" in page.evaluate("() => window.gradwalk.editor.source")
    assert page.evaluate("() => new URLSearchParams(location.search).get('view')") == "stepper"


def test_from_the_starter_page_a_run_opens_as_its_link_and_back_returns_to_the_page(page: Any) -> None:
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        made = client.post("/api/runs", json={"source": FIRST}).raise_for_status().json()
    page.set_viewport_size({"width": 1280, "height": 800})
    open_app(page)
    starter = page.evaluate("() => window.gradwalk.editor.source")
    page.click("[data-gw=more]")
    page.click("[data-gw=recent-runs]")
    row = page.locator(f"{ROWS}[data-run='{made['id']}']")
    expect(row).to_have_attribute("href", f"/?run={made['id']}")
    expect(page.locator(f"{ROWS}[aria-current]")).to_have_count(0)  # no run is open
    row.click()
    shown(page, made["id"])
    page.go_back()
    page.wait_for_function("() => !new URLSearchParams(location.search).get('run')")
    page.wait_for_function("(src) => window.gradwalk && window.gradwalk.editor.source === src", arg=starter)


def test_an_empty_list_and_an_unreachable_server_are_said_in_words(page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_app(page)
    page.route("**/api/runs?limit=*", lambda route: route.fulfill(json={"runs": []}))
    page.click("[data-gw=more]")
    page.click("[data-gw=recent-runs]")
    note = page.locator("[data-gw=recent-note]")
    expect(note).to_have_text(re.compile(r"^No runs yet on this server"))
    expect(page.locator(ROWS)).to_have_count(0)
    page.keyboard.press("Escape")

    page.unroute("**/api/runs?limit=*")
    page.route("**/api/runs?limit=*", lambda route: route.abort("connectionrefused"))
    page.click("[data-gw=more]")
    page.click("[data-gw=recent-runs]")
    expect(note).to_have_text(re.compile(r"^Could not reach the server to list its runs"))
    again = page.get_by_role("button", name="Try again")
    expect(again).to_be_focused()
    # the server is back: Try again lists its runs
    page.unroute("**/api/runs?limit=*")
    page.keyboard.press("Enter")
    expect(page.locator(ROWS).first).to_be_visible()
    expect(note).to_be_hidden()
    # Chromium logs the fetch refused on purpose; any other error still fails the test
    page.problems[:] = [p for p in page.problems if "ERR_CONNECTION_REFUSED" not in p]


def test_a_phone_opens_the_list_from_more(browser: Any, server: Any) -> None:
    with phone_page(browser, server) as page:
        open_app(page)
        run_source(page, SECOND)
        page.click("[data-gw=more]")
        page.click("[data-gw=recent-runs]")
        dialog = page.locator(DIALOG)
        expect(page.locator(f"{ROWS}[aria-current=true]")).to_be_visible()
        box = dialog.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        shot(page, "recent-runs65-phone")


def test_open_sits_in_the_header_row_where_the_tools_fit_and_holds_the_trace_file_too(
    page: Any, tmp_path: Any
) -> None:
    # "Recent runs…" beside "Open trace…" did not fit the row at 1440 px, and from ~1,400 to
    # ~1,550 px it was in neither the row nor "More": one "Open…" holds both
    for width in (1700, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        open_app(page)
        item = page.locator("[data-gw=recent-runs]")
        expect(page.locator("[data-gw=more]")).to_be_hidden()
        expect(page.locator("[data-gw=copy-link]")).to_be_visible()
        expect(item).to_be_visible()  # in the row, beside the other tools
        expect(item).to_have_text("Open…")
        item.click()
        dialog = page.locator(DIALOG)
        expect(dialog).to_be_visible()
        expect(dialog.locator("h2")).to_have_text("Open a run")
        expect(dialog.locator(".gw-file")).to_contain_text("Open a trace file…")
        page.keyboard.press("Escape")
    # narrower, the tools fold under "More", and it with them
    page.set_viewport_size({"width": 1280, "height": 800})
    page.click("[data-gw=more]")
    expect(item).to_be_visible()
    # a trace file picked in the dialog opens, and the dialog closes
    run_source(page, FIRST)
    trace = page.evaluate("() => fetch(`/api/runs/${window.gradwalk.runId}/trace`).then((r) => r.text())")
    path = tmp_path / "square.json"
    path.write_text(trace)
    page.click("[data-gw=recent-runs]")
    expect(page.locator(DIALOG)).to_be_visible()
    page.set_input_files("[data-gw=open-trace]", str(path))
    expect(page.locator(DIALOG)).to_be_hidden()
    page.wait_for_function("() => window.gradwalk.runId === null && window.gradwalk.model.nodes.size > 0")


def test_a_room_page_has_no_recent_runs(page: Any) -> None:
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        code = client.post("/api/rooms", json={}).raise_for_status().json()["code"]
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{page.server.url}/room/{code}")
    page.wait_for_selector("[data-gw=room-bar][data-conn=live]")
    item = page.locator("[data-gw=recent-runs]")
    expect(item).to_have_count(1)
    page.click("[data-gw=more]")
    expect(page.locator("[data-gw=copy-link]")).to_be_visible()  # the viewer's tools are open
    expect(item).to_be_hidden()
