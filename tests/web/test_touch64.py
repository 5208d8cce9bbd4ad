"""Phones and tablets, by touch (hunt 64): what a finger taps is big enough, "line 14" shows
its line, a classroom viewer who steps on their own keeps the way back on screen.

- The small controls (the step slider, the graph's "3 more ▸" cues, Fit / − / +, the step
  card's and the inspector's links, the backward calls' tabs, a chart's ×) measured 16 to
  30 px on a phone. On a coarse pointer their hit areas are now 32 px or more, measured here
  by what the page's hit testing finds around each one; with a mouse each is hit exactly
  where it is drawn, as before.
- "line 14" lit a line in the editor a screen above the card on a phone, and seemed to do
  nothing: the line is now scrolled into view.
- A viewer in a room who tapped Next ▶ on a phone left following with the room bar (and
  Follow presenter) 800 px above, out of sight: the bar now stays at the top of the screen.
- At 320 px "Last »" ran 2 px past the side pane's edge.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import NEXT, expect, phone_page, shot, stored_run

pytestmark = pytest.mark.browser

SOURCE = (Path(__file__).resolve().parents[2] / "server" / "examples" / "clean_training.py").read_text()

# The hit area around a control: from its centre, how far up and down (and left and right)
# the page's hit testing still finds the control (or something inside it), in CSS px.
HIT_AREA = """(el) => {
    el.scrollIntoView({ block: 'center', inline: 'nearest' });
    const r = el.getBoundingClientRect(), cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    const on = (x, y) => { const t = document.elementFromPoint(x, y); return !!t && (t === el || el.contains(t)); };
    const reach = (dx, dy) => { let d = 0; while (d < 40 && on(cx + dx * (d + 1), cy + dy * (d + 1))) d++; return d; };
    return { w: reach(-1, 0) + reach(1, 0) + 1, h: reach(0, -1) + reach(0, 1) + 1,
             boxW: Math.round(r.width), boxH: Math.round(r.height) };
}"""

# the controls the phone hunt measured under 32 px, on the stepper of a training loop
STEPPER_CONTROLS = {
    "step slider": ".gw-stepper .gw-slider",
    "graph cue": ".gw-offscreen-cue:not([hidden]) >> nth=0",
    "Fit": ".gw-graph-toolbar .gw-tool >> nth=0",
    "−": ".gw-graph-toolbar .gw-tool >> nth=1",
    "+": ".gw-graph-toolbar .gw-tool >> nth=2",
    "step card's line link": ".gw-step-card .gw-line-link",
    "backward call tab": ".gw-call >> nth=0",
}
INSPECTOR_CONTROLS = {
    "inspector's line link": "[data-panel=inspector] .gw-line-link",
    "inspector's link": "[data-panel=inspector] .gw-ref >> nth=0",
}
CHART_CONTROLS = {"chart ×": ".gw-chart-hide >> nth=0"}


@pytest.fixture(scope="module")
def run(server: Any) -> str:
    """A training loop: its stepper has call tabs and cues at the graph's edges, and charts."""
    return stored_run(server, SOURCE)


@pytest.fixture
def phone(browser: Any, server: Any) -> Iterator[Any]:
    """A phone (iPhone 13's size in portrait), touch only: a coarse pointer."""
    problems: list[str] = []
    with phone_page(browser, server, 390, 664) as page:
        page.set_default_timeout(30_000)
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        yield page
    assert not problems, problems


def _open(page: Any, run: str, query: str, ready: str) -> None:
    page.goto(f"{page.server.url}/?run={run}&{query}")
    page.wait_for_selector(ready)


def _hit_areas(page: Any, controls: dict[str, str]) -> dict[str, dict[str, int]]:
    out = {}
    for name, selector in controls.items():
        control = page.locator(selector)
        expect(control).to_be_visible()
        out[name] = control.evaluate(HIT_AREA)
    return out


def _all_hit_areas(page: Any, run: str) -> dict[str, dict[str, int]]:
    _open(page, run, "view=stepper&step=3", ".gw-step-card .gw-line-link")
    page.wait_for_selector(".gw-offscreen-cue:not([hidden])")
    areas = _hit_areas(page, STEPPER_CONTROLS)
    _open(page, run, "view=inspector&sel=n3", "[data-panel=inspector] .gw-line-link")
    areas |= _hit_areas(page, INSPECTOR_CONTROLS)
    _open(page, run, "view=charts", ".gw-chart-hide")
    return areas | _hit_areas(page, CHART_CONTROLS)


def test_a_finger_has_32_px_to_tap_each_small_control_and_a_mouse_hits_what_it_did(
    phone: Any, page: Any, run: str
) -> None:
    assert phone.evaluate("matchMedia('(pointer: coarse)').matches")
    touch = _all_hit_areas(phone, run)
    small = {name: a for name, a in touch.items() if a["w"] < 32 or a["h"] < 32}
    assert not small, f"hit areas under 32 px on a touch screen: {small}"
    # under 32 px as drawn (the cue, the links, the ×), the finger's area is larger than the box
    assert touch["graph cue"]["h"] > touch["graph cue"]["boxH"] + 10, touch["graph cue"]
    assert touch["chart ×"]["h"] > touch["chart ×"]["boxH"] + 10, touch["chart ×"]

    # with a mouse: every control is hit where it is drawn, no further, at its old size
    assert not page.evaluate("matchMedia('(pointer: coarse)').matches")
    mouse = _all_hit_areas(page, run)
    for name, a in mouse.items():
        # (the reach is counted up to 40 px each way: 81 at most)
        assert abs(a["h"] - min(a["boxH"], 81)) <= 2 and abs(a["w"] - min(a["boxW"], 81)) <= 2, (name, a)
    assert mouse["step slider"]["boxH"] == 16 and mouse["backward call tab"]["boxH"] < 30, mouse
    assert mouse["graph cue"]["boxH"] < 26 and mouse["chart ×"]["boxH"] < 26, mouse
    assert mouse["Fit"]["boxH"] == 30, mouse


def test_line_link_on_a_phone_scrolls_its_line_into_view(phone: Any, run: str) -> None:
    _open(phone, run, "view=stepper&step=3", ".gw-step-card .gw-line-link")
    link = phone.locator(".gw-step-card .gw-line-link")
    link.scroll_into_view_if_needed()
    assert phone.evaluate("scrollY") > 600  # the editor is a screen or more above the card
    link.tap()
    # lit up, and (smoothly) brought onto the screen
    phone.wait_for_function(
        """() => {
            const host = document.querySelector('[data-gw=editor]');
            const lit = host.shadowRoot.querySelector('.cm-gw-linked');
            if (!lit) return false;
            const r = lit.getBoundingClientRect();
            return r.top >= 0 && r.bottom <= innerHeight;
        }""",
        timeout=5_000,
    )
    phone.wait_for_timeout(800)  # the smooth scroll's end, for the screenshot
    shot(phone, "touch64-line-link-phone")

    # the inspector's link, with reduced motion: the page jumps there at once
    phone.emulate_media(reduced_motion="reduce")
    _open(phone, run, "view=inspector&sel=n3", "[data-panel=inspector] .gw-line-link")
    inspector_link = phone.locator("[data-panel=inspector] .gw-line-link")
    inspector_link.scroll_into_view_if_needed()
    at = phone.evaluate(
        """(link) => new Promise((done) => {
            link.click();
            // the reveal runs after the click's handlers and CodeMirror's next measure
            setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(() => {
                const lit = document.querySelector('[data-gw=editor]').shadowRoot.querySelector('.cm-gw-linked');
                const r = lit.getBoundingClientRect();
                done({ top: r.top, bottom: r.bottom, height: innerHeight });
            })));
        })""",
        inspector_link.element_handle(),
    )
    assert at["top"] >= 0 and at["bottom"] <= at["height"], at


def test_last_fits_the_side_pane_at_320_px(phone: Any, run: str) -> None:
    phone.set_viewport_size({"width": 320, "height": 568})
    _open(phone, run, "view=stepper&step=3", ".gw-step-card h3")
    pane = phone.locator(".gw-pane-side").bounding_box()
    last = phone.locator("button[aria-label='Last step']").bounding_box()
    assert last["x"] + last["width"] <= pane["x"] + pane["width"] - 1, (last, pane)


def test_a_viewer_who_steps_on_a_phone_keeps_follow_presenter_on_screen(
    browser: Any, server: Any, run: str, phone: Any
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        state = {"source": SOURCE, "run_id": run, "view": "stepper", "step": 2}
        room = client.post("/api/rooms", json={"state": state}).raise_for_status().json()
    code, key = room["code"], room["presenter_key"]
    presenter_context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        # the presenter's tab: the key in its session, as the Classroom dialog leaves it
        presenter_context.add_init_script(f"sessionStorage.setItem('gradwalk-room-key:{code}', '{key}')")
        presenter = presenter_context.new_page()
        presenter.goto(f"{server.url}/room/{code}")
        presenter.wait_for_selector("[data-gw=room-bar][data-conn=live][data-role=presenter]")

        phone.goto(f"{server.url}/room/{code}")
        phone.wait_for_selector("[data-gw=room-bar][data-conn=live][data-role=viewer]")
        expect(phone.locator(".gw-stepper .gw-position")).to_contain_text("step 3 of")
        bar = phone.locator("[data-gw=room-bar]")
        expect(bar).to_have_attribute("data-following", "true")

        # the viewer scrolls down to the stepper (the bar scrolls away: they follow) and steps
        phone.locator(NEXT).scroll_into_view_if_needed()
        assert bar.evaluate("(b) => b.getBoundingClientRect().bottom") < 0
        phone.locator(NEXT).tap()
        expect(bar).to_have_attribute("data-following", "false")
        expect(phone.locator("[data-gw=room-where]")).to_contain_text("Exploring on your own")
        box = bar.evaluate(
            "(b) => { const r = b.getBoundingClientRect(); return [r.top, r.bottom, innerHeight]; }"
        )
        assert box[0] >= 0 and box[1] <= box[2], f"the room bar is off the screen: {box}"
        follow = phone.locator("[data-gw=room-follow]")
        expect(follow).to_be_in_viewport()
        assert phone.evaluate("scrollY") > 600  # still where the viewer was, at the stepper
        shot(phone, "touch64-viewer-exploring-phone")

        follow.tap()
        expect(bar).to_have_attribute("data-following", "true")
        expect(phone.locator(".gw-stepper .gw-position")).to_contain_text("step 3 of")
    finally:
        presenter_context.close()
