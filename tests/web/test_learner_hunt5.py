"""A learner's first hour and a teacher's lesson preparation, in real Chromium against a real
server: the keys the ? dialog lists, and the messages the commonest beginner mistakes get."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import expect, open_app, run_source, shot

pytestmark = pytest.mark.browser

POSITION = ".gw-stepper .gw-position"
PLAY = ".gw-stepper .gw-play"


def test_the_play_key_works_as_the_shortcuts_dialog_writes_it(page: Any) -> None:
    # The ? dialog and the Play button's title say "P": a teacher with Caps Lock on, or who
    # types the capital the dialog shows, must start and pause the walk with it.
    open_app(page, "?lesson=accumulate")
    expect(page.locator(POSITION)).to_contain_text("step 8 of 12")
    page.keyboard.press("?")
    dialog = page.locator("[data-gw=shortcuts-dialog]")
    expect(dialog.locator("tr", has=page.locator("kbd", has_text=re.compile(r"^P$")))).to_contain_text(
        "play or pause the walk"
    )
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.locator(PLAY)).to_have_attribute("title", "Play the backward walk (P)")

    page.keyboard.press("Home")
    expect(page.locator(POSITION)).to_contain_text("step 1 of 12")
    page.keyboard.press("Shift+P")
    expect(page.locator(PLAY)).to_have_text("❚❚ Pause")
    expect(page.locator(POSITION)).not_to_contain_text("step 1 of 12")
    page.keyboard.press("Shift+P")
    expect(page.locator(PLAY)).to_have_text("▶ Play")
    page.keyboard.press("p")  # the small letter still plays, and pauses
    expect(page.locator(PLAY)).to_have_text("❚❚ Pause")
    page.keyboard.press("p")
    expect(page.locator(PLAY)).to_have_text("▶ Play")


def test_reading_the_grad_of_a_non_leaf_says_it_is_none_and_what_to_read(page: Any) -> None:
    # PyTorch only warns (a long UserWarning ending in a path inside its build) and prints
    # None: the output must say, at the line, which .grad is None, why, and what to do.
    open_app(page)
    run_source(
        page,
        "import torch\nx = torch.tensor(2.0, requires_grad=True)\ny = x * 3\nz = y ** 2\n"
        "z.backward()\nprint(y.grad)\nprint(x.grad)\n",
    )
    note = page.locator(".gw-notice-warning[data-warning=non-leaf-grad]")
    expect(note).to_have_count(1)
    expect(note).to_have_attribute("data-line", "6")
    expect(note.locator("strong")).to_have_text("y.grad is None")
    expect(note).to_contain_text("line 6")
    expect(note.locator(".gw-hint")).to_contain_text("its grad_fn is MulBackward0")
    expect(note.locator(".gw-hint")).to_contain_text("Read x.grad instead")
    expect(note.locator(".gw-hint")).to_contain_text("call y.retain_grad() before backward()")
    expect(page.locator(".gw-stdout")).to_contain_text("tensor(36.)")
    shot(page, "learner-non-leaf-grad")


def test_a_step_by_hand_that_rebinds_the_leaf_gets_one_note_saying_why_its_grad_is_none(page: Any) -> None:
    # `x = x - 0.1 * x.grad` makes x a computed tensor: the second pass reads its .grad, None,
    # and fails. The error's hint says so and how to step in place; the note made of
    # PyTorch's warning at that line ("call x.retain_grad()") would only contradict it.
    open_app(page)
    run_source(
        page,
        "import torch\nx = torch.randn(3, requires_grad=True)\nfor i in range(3):\n"
        "    y = (x ** 2).sum()\n    y.backward()\n    x = x - 0.1 * x.grad\n",
        status="error",
    )
    error = page.locator(".gw-notice-error")
    expect(error).to_have_attribute("data-line", "6")
    expect(error.locator(".gw-hint")).to_contain_text("x.grad is None because x is not a leaf")
    expect(error.locator(".gw-hint")).to_contain_text("with torch.no_grad(): x -= 0.1 * x.grad")
    expect(page.locator(".gw-notice-warning[data-warning=non-leaf-grad]")).to_have_count(0)
    expect(page.locator(".gw-stderr")).to_contain_text("UserWarning")  # PyTorch's own text stays
    shot(page, "learner-step-by-hand-rebinds")


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (1024, 768)])
def test_no_lesson_puts_the_graph_on_a_side_it_is_not_on(page: Any, width: int, height: int) -> None:
    # At 1024x768 the graph sits above the code, at the left: a lesson that sends the
    # student to "the graph on the right" sends them to the stepper.
    page.set_viewport_size({"width": width, "height": height})
    open_app(page, "?lesson=scalar")
    expect(page.locator("[data-gw=lesson-card]")).to_have_attribute("data-lesson", "scalar")
    graph = page.locator(".gw-pane-graph").bounding_box()
    code = page.locator(".gw-pane-code").bounding_box()
    side = page.locator(".gw-pane-side").bounding_box()
    graph_is_right = graph["x"] >= code["x"] + code["width"] and graph["x"] >= side["x"] + side["width"]
    graph_is_left = graph["x"] + graph["width"] <= min(code["x"], side["x"]) + 1
    lessons = page.evaluate("() => fetch('/api/lessons').then((r) => r.json())")
    for lesson in lessons["lessons"]:
        words = f"{lesson.get('text', '')} {lesson.get('try', '')}"
        if "graph on the right" in words:
            assert graph_is_right, (lesson["id"], width, graph, code, side)
        if "graph on the left" in words:
            assert graph_is_left, (lesson["id"], width, graph, code, side)
    shot(page, f"learner-lesson-scalar-{width}")


def test_a_new_speed_takes_effect_at_once_while_playing(page: Any) -> None:
    # A teacher starts Play at 0.5× and switches to 4×: the next step must come a 4× step
    # later (225 ms), not after the 1.8 s the 0.5× step had scheduled. The page's clock is
    # Playwright's, paused and moved by hand, so no step depends on how busy the machine is.
    page.clock.install()
    open_app(page, "?lesson=accumulate")
    expect(page.locator(POSITION)).to_contain_text("step 8 of 12")
    page.keyboard.press("Home")
    expect(page.locator(POSITION)).to_contain_text("step 1 of 12")
    page.clock.pause_at(page.evaluate("() => Date.now()") + 1000)
    page.select_option(".gw-stepper select[aria-label='Playback speed']", "0.5")
    page.locator(PLAY).click()
    expect(page.locator(PLAY)).to_have_text("❚❚ Pause")
    page.clock.run_for(100)
    page.select_option(".gw-stepper select[aria-label='Playback speed']", "4")
    page.clock.run_for(300)  # one 4× step (225 ms); the 0.5× one would be 1800 ms
    expect(page.locator(POSITION)).to_contain_text("step 2 of 12")
    page.clock.run_for(225 * 20)
    expect(page.locator(POSITION)).to_contain_text("step 12 of 12")
    expect(page.locator(PLAY)).to_have_text("▶ Play")


def test_a_lesson_whose_run_arrives_late_does_not_take_the_next_lessons_step(page: Any) -> None:
    # Next ▶ pressed twice, quickly, on a busy server: the second lesson's step went to the
    # first lesson's run, which arrived in between (accumulate opened at "step 6 of 6", then
    # "step 6 of 12" once its own run came; CI saw it). The traces are held here and let go
    # in the order that did it.
    open_app(page, "?lesson=scalar")
    card = page.locator("[data-gw=lesson-card]")
    expect(page.locator(POSITION)).to_contain_text("of")
    held: list[Any] = []

    def hold(route: Any) -> None:
        held.append(route)

    def wait_held(count: int) -> None:
        for _ in range(200):
            if len(held) >= count:
                return
            page.wait_for_timeout(50)
        raise AssertionError(f"the page asked for {len(held)} traces, not {count}")

    page.route("**/runs/*/trace", hold)
    next_button = card.get_by_role("button", name="Next ▶")
    next_button.click()
    expect(card).to_have_attribute("data-lesson", "chain-rule")
    wait_held(1)
    next_button.click()
    expect(card).to_have_attribute("data-lesson", "accumulate")
    wait_held(2)
    held[0].continue_()  # chain-rule's run arrives while accumulate's is still on its way
    page.wait_for_timeout(500)
    held[1].continue_()
    expect(page.locator(POSITION)).to_contain_text("step 8 of 12")
    page.wait_for_timeout(300)
    expect(page.locator(POSITION)).to_contain_text("step 8 of 12")
    # and the code is accumulate's, not the late run's
    want = page.evaluate(
        "async () => (await (await fetch('/api/lessons')).json()).lessons.find((l) => l.id === 'accumulate').source"
    )
    assert page.evaluate("() => window.gradwalk.editor.source") == want


def test_the_lesson_buttons_keep_the_keyboard_when_the_card_changes(page: Any) -> None:
    # A student walking the lessons with the keyboard presses Enter on Next ▶: the card is
    # drawn anew for the next lesson, and the focus fell to the page's top, so the next
    # Enter did nothing and Tab started again at the header.
    open_app(page, "?lesson=scalar")
    card = page.locator("[data-gw=lesson-card]")
    expect(card).to_have_attribute("data-lesson", "scalar")
    next_button = card.get_by_role("button", name="Next ▶")
    next_button.focus()
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-lesson", "chain-rule")
    expect(next_button).to_be_focused()
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-lesson", "accumulate")
    expect(page.locator(POSITION)).to_contain_text("step 8 of 12")
    expect(next_button).to_be_focused()

    toggle = card.locator("[data-gw=lesson-toggle]")
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_text("Show text")
    expect(toggle).to_be_focused()
    page.keyboard.press("Enter")
    expect(toggle).to_have_text("Hide text")
    expect(card.locator(".gw-lesson-text")).to_be_visible()
