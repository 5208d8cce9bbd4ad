"""Keyboard and screen-reader hunt 63 (helper h63a): a learner who uses only the keyboard.

- A tool picked from **More ▾** (Dark, Presenter, the keys' help) hid with the menu and took
  the focus with it: the next Tab landed in the code editor, where Tab indents.
- Each backward step read the whole step card aloud (up to 1,500 characters of rules and
  matrices): a short line now says where the walk is and which node ran.
- PageDown, Home and End on a scrolling region reached with Tab (the output) stepped the
  walk instead of scrolling it.
- 1–4 pressed on a control of the view they hid, Enter on a chart's step and the lesson's ✕
  lost the focus to the page; Next ▶ never said which lesson it opened.
- The step sliders were read as "0" at "step 1 of 5"; a tape row's name ran its op into its
  inputs ("powout, 2"); a checkbox counted as typing, so 1–4 and → did nothing there; a graph
  node reached with the arrow keys did not say whether it had run.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import WEB, expect, open_app, open_stepper, stored_run, wait_graph

pytestmark = pytest.mark.browser

EXAMPLES_DIR = WEB.parent / "server" / "examples"
CUBIC = (EXAMPLES_DIR / "cubic.py").read_text()
ACTIVE = "() => { const a = document.activeElement; return a ? a.outerHTML.slice(0, 120) : '' }"


def active_is(page: Any, selector: str) -> None:
    """Wait until the focused element matches ``selector``."""
    page.wait_for_function("(sel) => document.activeElement?.matches(sel)", arg=selector)


def position(page: Any) -> str:
    text: str = page.locator(".gw-stepper .gw-position").inner_text()
    return text


def test_a_tool_from_the_more_menu_hands_the_focus_back_to_more(page: Any) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page)
    more = page.locator("[data-gw=more]")
    expect(more).to_be_visible()
    more.focus()
    page.keyboard.press("Enter")
    expect(more).to_have_attribute("aria-expanded", "true")
    page.locator("[data-gw=theme]").focus()
    page.keyboard.press("Enter")
    expect(page.locator("[data-gw=theme]")).to_have_attribute("aria-pressed", "true")
    expect(more).to_have_attribute("aria-expanded", "false")
    expect(more).to_be_focused()
    # a tool that opens a dialog: closing it hands the focus back to More, not to the page
    page.keyboard.press("Enter")
    page.locator("[data-gw=shortcuts]").focus()
    page.keyboard.press("Enter")
    expect(page.locator("dialog[open]")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("dialog[open]")).to_have_count(0)
    expect(more).to_be_focused()


def test_each_step_is_said_in_one_short_line_and_the_slider_says_the_step(page: Any) -> None:
    open_stepper(page, CUBIC)
    card = page.locator(".gw-step-card")
    expect(card).not_to_have_attribute("aria-live", re.compile(".*"))
    spoken = page.locator("[data-gw=step-announcer]")
    slider = page.locator(".gw-stepper .gw-slider")
    expect(spoken).to_have_attribute("aria-live", "polite")
    page.locator(".gw-stepper [aria-label='Next step']").click()
    expect(spoken).to_have_text(re.compile(r"^step 2 of (\d+): \w+Backward0, line \d+$"))
    total = re.search(r"of (\d+)", spoken.inner_text())
    assert total is not None
    expect(slider).to_have_attribute("aria-valuetext", f"step 2 of {total.group(1)}")
    page.locator(".gw-stepper [aria-label='Last step']").click()
    expect(spoken).to_have_text(f"step {total.group(1)} of {total.group(1)}: end of backward")
    assert len(card.inner_text()) > 2 * len(spoken.inner_text())  # the card is not what is said


def test_page_keys_scroll_an_output_reached_with_tab_and_step_after_a_click(page: Any) -> None:
    source = CUBIC + "".join(f"print('line {i}')\n" for i in range(200))
    open_stepper(page, source)
    scroller = page.evaluate_handle(
        "() => [...document.querySelectorAll('.gw-output, .gw-output *')].find((el) => el.scrollHeight > el.clientHeight + 1"
        " && /auto|scroll/.test(getComputedStyle(el).overflowY))"
    )
    assert scroller.as_element() is not None, "the output does not scroll"
    before = position(page)
    # reached with Tab, as a keyboard user reaches it
    for _ in range(60):
        if page.evaluate("() => !!document.activeElement?.closest('[data-gw=editor]')"):
            page.keyboard.press("Escape")  # the editor's own way out: Esc, then Tab
        page.keyboard.press("Tab")
        if page.evaluate("(el) => document.activeElement === el", scroller):
            break
    else:
        raise AssertionError(f"Tab never reached the output; focus on {page.evaluate(ACTIVE)}")
    page.keyboard.press("PageDown")
    page.wait_for_function("(el) => el.scrollTop > 0", arg=scroller)
    page.keyboard.press("End")
    assert position(page) == before, "the walk moved instead of the output"
    # a click in the output, then a presentation clicker's PageDown: the walk steps
    scroller.as_element().click()
    page.keyboard.press("PageDown")
    expect(page.locator(".gw-stepper .gw-position")).not_to_have_text(before)


def test_a_view_key_or_a_chart_step_moves_the_focus_to_the_tab_it_opened(page: Any) -> None:
    open_stepper(page, CUBIC)
    page.locator(".gw-stepper [aria-label='Prev step']").focus()
    page.keyboard.press("1")
    active_is(page, "[role=tab][data-view=tape][aria-selected=true]")
    run = stored_run(page.server, (EXAMPLES_DIR / "clean_training.py").read_text())
    page.goto(f"{page.server.url}/?run={run}&view=charts")
    chart = page.locator("[role=slider]").first
    expect(chart).to_be_visible()
    chart.focus()
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    expect(page.locator("[role=tab][data-view=stepper]")).to_have_attribute("aria-selected", "true")
    active_is(page, "[role=tab][data-view=stepper]")
    # the focus handed to the tab leaves the arrow keys to the walk, as a click does
    before = position(page)
    page.keyboard.press("ArrowRight")
    expect(page.locator(".gw-stepper .gw-position")).not_to_have_text(before)
    expect(page.locator("[role=tab][data-view=stepper]")).to_have_attribute("aria-selected", "true")


def test_a_checkbox_is_not_typing_and_space_still_ticks_it(page: Any) -> None:
    open_stepper(page, CUBIC)
    saved = page.locator(".gw-graph-toolbar input[type=checkbox]").first
    saved.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")  # reached with the keyboard
    expect(saved).to_be_focused()
    before = position(page)
    page.keyboard.press("ArrowRight")
    expect(page.locator(".gw-stepper .gw-position")).not_to_have_text(before)
    stepped = position(page)
    was = saved.is_checked()
    page.keyboard.press(" ")
    expect(saved).to_be_checked(checked=not was)
    assert position(page) == stepped
    page.keyboard.press("4")
    expect(page.locator("[role=tab][data-view=charts]")).to_have_attribute("aria-selected", "true")


def test_the_lesson_card_says_which_lesson_opened_and_its_close_keeps_the_focus(page: Any) -> None:
    open_app(page, "?lesson=scalar")
    card = page.locator("[data-gw=lesson-card]")
    expect(card).to_be_visible()
    card.locator("[data-nav=next]").focus()
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-lesson", "chain-rule")
    title = card.locator(".gw-lesson-title").inner_text()
    expect(page.locator("[data-gw=lesson-announcer]")).to_have_text(
        re.compile(rf"^Lesson 2 of \d+: {re.escape(title)}$")
    )
    card.locator(".gw-lesson-close").focus()
    page.keyboard.press("Enter")
    expect(card).to_be_hidden()
    expect(page.locator("[data-gw=lessons]")).to_be_focused()


def test_tape_rows_read_op_then_inputs_and_its_slider_the_op(page: Any) -> None:
    run = stored_run(page.server, CUBIC)
    page.goto(f"{page.server.url}/?run={run}&view=tape")
    expect(page.locator(".gw-op").first).to_be_visible()
    names = page.locator(".gw-op").evaluate_all(
        "(els) => els.map((el) => el.innerText.replace(/\\s+/g, ' '))"
    )
    assert any(re.search(r"\bpow x, 3\b", n) for n in names), names
    expect(page.get_by_role("button", name=re.compile(r"\bpow x, 3 → x\*\*3\b"))).to_have_count(1)
    slider = page.locator(".gw-tape .gw-slider")
    expect(slider).to_have_attribute("aria-valuetext", re.compile(r"^all \d+ ops$"))
    page.locator(".gw-op").first.click()
    expect(slider).to_have_attribute("aria-valuetext", re.compile(r"^op 1 of \d+$"))


def test_a_graph_node_reached_by_keyboard_says_whether_it_ran(page: Any) -> None:
    open_stepper(page, CUBIC)
    wait_graph(page)
    page.locator(".gw-graph-canvas").focus()
    page.keyboard.press("ArrowDown")
    announcer = page.locator("[data-gw=graph-announcer]")
    # step 1 runs the loss's node, the first one the arrow reaches
    expect(announcer).to_contain_text("backward node; running now")
    page.keyboard.press("ArrowDown")
    expect(announcer).to_contain_text("; still to run")
