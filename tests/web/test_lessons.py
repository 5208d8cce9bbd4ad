"""The lessons gallery in real Chromium: find a lesson by its words, pick it, land on its step
with its text, move on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.lesson_traces import LESSONS

from .conftest import expect, open_app, shot, wait_graph
from .lessons_served import CARD, COUNT, opened_at

pytestmark = pytest.mark.browser

POSITION = ".gw-stepper .gw-position"


def test_the_gallery_opens_a_lesson_at_its_step_with_its_text(page: Any) -> None:
    open_app(page)
    page.click("[data-gw=lessons]")
    tiles = page.locator(".gw-lesson-tile")
    expect(tiles).to_have_count(COUNT)
    expect(tiles.first).to_contain_text("Autograd on a scalar")
    # the parts, each named over its own tiles, numbered on from the part before
    parts = page.locator(".gw-lesson-part")
    expect(parts.locator(".gw-lesson-part-name")).to_have_text(
        [
            "How backward() works",
            "Your own backward",
            "The graph in practice",
            "Training loops",
            "Model and loss pitfalls",
        ]
    )
    expect(parts.nth(1).locator(".gw-lesson-tile")).to_have_count(3)
    expect(parts.nth(1).locator(".gw-lesson-n")).to_have_text(["9", "10", "11"])
    expect(parts.nth(1).get_by_role("list")).to_have_attribute("start", "9")
    expect(
        page.get_by_role("region", name="Training loops").locator("[data-lesson=forgot-zero-grad]")
    ).to_be_visible()
    shot(page, "lessons-01-gallery")

    page.click("[data-lesson=scalar]")
    expect(page.locator(".gw-lessons-dialog")).to_be_hidden()
    card = page.locator(CARD)
    expect(card).to_be_visible()
    expect(card).to_contain_text(f"Lesson 1 of {COUNT} · How backward() works")
    expect(card.locator(".gw-lesson-kicker")).to_have_attribute(
        "title", f"Lesson 1 of {COUNT} · How backward() works"
    )
    expect(card).to_contain_text("AccumulateGrad writes the sum into x.grad: −4 + 18.75 = 14.75")
    expect(page.locator(POSITION)).to_have_text("step 4 of 5")
    expect(page.locator(".gw-step-card")).to_contain_text("x.grad: None → 14.75")
    assert "x**3 - 4*x" in page.evaluate("() => window.gradwalk.editor.source")
    wait_graph(page)
    shot(page, "lessons-02-scalar")

    page.locator(CARD).get_by_role("button", name="Next ▶").click()
    expect(card).to_have_attribute("data-lesson", "chain-rule")
    expect(card).to_contain_text("b.grad = 6 + 2 = 8")
    expect(page.locator(POSITION)).to_have_text("step 3 of 6")
    expect(page.locator(".gw-step-card")).to_contain_text("MulBackward0")

    page.get_by_role("button", name="Close the lesson").click()
    expect(card).to_be_hidden()


def test_a_link_opens_a_lesson_and_a_reload_keeps_its_card(page: Any) -> None:
    open_app(page, "?lesson=accumulate")
    card = page.locator(CARD)
    expect(card).to_have_attribute("data-lesson", "accumulate")
    expect(page.locator(POSITION)).to_contain_text("step 8 of 12")
    expect(page.locator(".gw-step-card")).to_contain_text("8 + 4 → 12")
    # the address bar follows the view a moment later (writes are coalesced): reload once it
    # holds the run and the step together
    page.wait_for_function(
        "() => { const q = new URLSearchParams(location.search); return q.get('run') !== null && q.get('step') !== null; }"
    )
    page.reload()
    expect(card).to_have_attribute("data-lesson", "accumulate")
    expect(page.locator(POSITION)).to_contain_text("step 8 of 12")


def test_a_lessons_link_names_its_step_while_its_run_is_still_arriving(page: Any) -> None:
    # A lesson's run opens mid-way (on a busy server its events are still coming): the
    # address bar must already hold the step the lesson opens at, so a reload or a copied
    # link then lands there, not on the run's first step. The real trace is cut to its first
    # event and the event stream held back, as when the run has only just started.
    def first_event_only(route: Any) -> None:
        trace = route.fetch().json()
        trace["events"] = trace["events"][:1]
        route.fulfill(json=trace)

    page.route("**/runs/*/trace", first_event_only)
    page.route_web_socket("**/events**", lambda ws: None)  # open, silent
    open_app(page, "?lesson=graph-freed")
    expect(page.locator(CARD)).to_have_attribute("data-lesson", "graph-freed")
    page.wait_for_function("() => new URLSearchParams(location.search).get('run') !== null")
    query = page.evaluate("() => location.search")
    assert "step=2" in query and "view=stepper" in query, query


def test_tape_lessons_show_their_pitfall(page: Any) -> None:
    open_app(page, "?lesson=broadcasting")
    expect(page.locator(CARD)).to_contain_text("Broadcasting gone wrong")
    expect(page.locator("#gw-tab-tape")).to_have_attribute("aria-selected", "true")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(page.locator(".gw-notice-pitfall")).to_have_count(1)
    sub = page.locator(".gw-op-row", has=page.locator(".gw-op-name", has_text="sub"))
    expect(sub).to_contain_text("32×32")  # (32, 1) − (32,): the shape the lesson is about
    wait_graph(page)
    shot(page, "lessons-03-broadcasting")


def test_a_lesson_on_a_1024_by_768_projector_keeps_its_tabs_and_the_graph_in_view(page: Any) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, "?lesson=chain-rule")
    expect(page.locator(POSITION)).to_have_text("step 3 of 6")
    wait_graph(page)
    # the card's text takes its whole width (beside the buttons it took half, and the card a
    # third of the screen)
    widths = page.evaluate(
        """() => [document.querySelector('.gw-lesson-text').getBoundingClientRect().width,
                  document.querySelector('[data-gw=lesson-card]').clientWidth]"""
    )
    assert widths[0] > 0.85 * widths[1], widths
    # under the card the graph takes more of the height than the code: the lesson's graph
    # shows whole (leaves and their .grad) at a zoom whose labels show
    page.wait_for_function(
        """() => {
            const cy = window.gradwalk.graph.core;
            const b = cy.nodes().renderedBoundingBox({ includeLabels: false });
            return !cy.animated() && cy.zoom() >= 0.62 && b.y1 >= 0 && b.y2 <= cy.height();
        }""",
        timeout=5_000,
    )
    side_scrolled = """() => {
        const pane = document.querySelector('.gw-pane-side');
        const tabs = pane.querySelector('.gw-tabs').getBoundingClientRect();
        return [pane.scrollTop, tabs.top - pane.getBoundingClientRect().top];
    }"""
    # the walk scrolls to the current step inside its own list: the pane around it (and
    # its tabs) never moves, whichever step is shown
    page.focus("[data-gw=run]")
    for height in (768, 600):  # 600: a window too short for the stepper's contents
        page.set_viewport_size({"width": 1024, "height": height})
        for key, step in (("End", 6), ("Home", 1), ("End", 6)):
            page.keyboard.press(key)
            expect(page.locator(POSITION)).to_have_text(f"step {step} of 6")
            page.wait_for_timeout(100)  # the walk scrolls to its step in the next frame
            scroll_top, tabs_offset = page.evaluate(side_scrolled)
            assert scroll_top == 0 and tabs_offset >= 0, (height, key, scroll_top, tabs_offset)
        expect(page.locator("#gw-tab-stepper")).to_be_in_viewport()
        if height == 768:
            # the end's "Graph freed" note takes one line over the graph, not three over
            # its leaves; and stepping to the loss, drawn whole at the top, left the view
            # where it was (it was centred, and the lower half of the graph went out of view)
            assert page.evaluate("() => document.querySelector('.gw-graph-banner').offsetHeight") < 32
            page.keyboard.press("Home")
            page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
            top = page.evaluate(
                "() => window.gradwalk.graph.core.$('node.current').renderedBoundingBox({includeLabels: false}).y1"
            )
            assert 0 <= top < 40, top
            page.keyboard.press("End")
            shot(page, "lessons-04-projector-1024x768")


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_a_charts_lesson_on_a_1024_by_768_projector_fills_the_window(page: Any, presenter: bool) -> None:
    # the card's rows (more height for the graph than for the code) applied to the charts'
    # one row too: the panes ended 140-165 px above the window's bottom, an empty band
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, presenter=presenter)
    page.goto(f"{page.server.url}/?lesson=training-loop")
    expect(page.locator("[data-gw=lesson-card]")).to_be_visible()
    expect(page.locator("#gw-tab-charts")).to_have_attribute("aria-selected", "true")
    gap = page.evaluate(
        "() => window.innerHeight - document.querySelector('.gw-pane-side').getBoundingClientRect().bottom"
    )
    assert 0 <= gap < 30, gap


def test_a_failing_lessons_error_shows_in_its_code_on_a_1024_by_768_projector(page: Any) -> None:
    """The in-place lesson's run fails at its line 6: under the lesson's card the code pane
    is a few lines tall, and it shows that line and the error's message under it (it showed
    lines 1 to 3), with more height than a lesson whose run succeeds gives it."""
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, "?lesson=inplace")
    page.wait_for_selector("[data-gw=status][data-state=error]", timeout=60_000)
    wait_graph(page)
    in_editor = """() => {
        const found = ['.cm-scroller', '.cm-line.cm-gw-error-line', '.cm-gw-error-widget']
            .map((sel) => document.querySelector('[data-gw=editor]').shadowRoot.querySelector(sel));
        if (found.includes(null)) return false;
        const [s, line, msg] = found.map((el) => el.getBoundingClientRect());
        return line.top >= s.top - 1 && line.bottom <= s.bottom + 1
            && msg.top >= s.top && msg.top + 40 <= s.bottom;
    }"""
    page.wait_for_function(in_editor, timeout=5_000)
    code_height = page.evaluate(
        "() => document.querySelector('.gw-pane-code').getBoundingClientRect().height"
    )
    assert code_height > 180, code_height
    shot(page, "lessons-05-error-at-1024x768")


def test_a_lesson_card_reads_on_a_phone(page: Any) -> None:
    page.set_viewport_size({"width": 420, "height": 900})
    open_app(page, "?lesson=accumulate")
    expect(page.locator(POSITION)).to_contain_text("step 8 of 12")
    # one column: the text as wide as the card (the buttons' column squeezed it to a word
    # a line), the buttons under it
    box = page.evaluate(
        """() => Object.fromEntries(['.gw-lesson-text', '.gw-lesson-nav', '[data-gw=lesson-card]'].map((s) => {
            const r = document.querySelector(s).getBoundingClientRect();
            return [s, [r.left, r.top, r.width, r.bottom]];
        }))"""
    )
    text, nav, card = box[".gw-lesson-text"], box[".gw-lesson-nav"], box["[data-gw=lesson-card]"]
    assert text[2] > 0.8 * card[2], box
    assert nav[1] >= text[3], box


def test_a_lesson_in_presenter_type_on_a_projector_shows_what_fits_of_its_graph_readable(page: Any) -> None:
    # Under the card's large text the graph has ~230 px: fitted to the pane's width, the
    # chain-rule graph went to life size and showed two of its four rows.
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, "?lesson=chain-rule", presenter=True)
    expect(page.locator(POSITION)).to_have_text("step 3 of 6")
    wait_graph(page)
    page.wait_for_function("() => !window.gradwalk.graph.busy && !window.gradwalk.graph.core.animated()")
    view = page.evaluate(
        """() => {
            const cy = window.gradwalk.graph.core;
            const ops = cy.nodes().filter((n) => n.data('kind') === 'op');
            const rows = new Set(cy.nodes().filter((n) => n.isChildless()).map((n) => Math.round(n.position('y'))));
            const shown = new Set(cy.nodes().filter((n) => n.isChildless() && n.renderedBoundingBox().y1 < cy.height())
                .map((n) => Math.round(n.position('y'))));
            return { px: ops[0].numericStyle('font-size') * cy.zoom(), rows: rows.size, shown: shown.size };
        }"""
    )
    assert 13.5 <= view["px"] <= 14.5, view  # presenter-sized labels, not life size (16 px)
    # from the top (the loss first), two rows of ops whole; the rest is a pan away, and the
    # graph's edge cue says how much (at ~213 px the AccumulateGrad row starts at the pane's edge)
    assert view["shown"] >= 2, view
    expect(page.locator(".gw-pane-graph .gw-offscreen-down")).to_be_visible()


@pytest.mark.parametrize(("lesson", "leaf"), [("scalar", "x"), ("chain-rule", "b")])
def test_a_lessons_sum_over_paths_reads_as_the_step_card_adds_it(page: Any, lesson: str, leaf: str) -> None:
    # The lesson's text and the stepper's card sit side by side: where the text adds up two
    # paths it must add them in the order the card does (the engine's), or a student reads
    # "2 + 6" above and "6 + 2" beside it and wonders which one ran first.
    open_app(page, f"?lesson={lesson}")
    card = page.locator(CARD)
    expect(card).to_have_attribute("data-lesson", lesson)
    page.locator(".gw-walk-item", has_text=f"AccumulateGrad → {leaf}.grad").click()
    step_card = page.locator(".gw-step-card")
    expect(step_card).to_contain_text("the sum of 2 paths:")
    summed = step_card.inner_text().split("the sum of 2 paths:")[1].split("\n")[0].strip()
    assert " + " in summed, summed
    expect(card).to_contain_text(f"{summed} = ")


def test_running_a_lessons_try_this_again_comes_back_to_the_stepper_at_its_step(page: Any) -> None:
    """The scalar lesson's "Try this" (2.5 to 1.0, run again) landed on the Tape: the learner
    had to find the Backward tab and step back to x's AccumulateGrad to read the −1."""
    open_app(page, "?lesson=scalar")
    expect(page.locator(POSITION)).to_have_text("step 4 of 5")
    page.evaluate("() => { const e = window.gradwalk.editor; e.source = e.source.replace('2.5', '1.0'); }")
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(page.locator(POSITION)).to_have_text("step 4 of 5")
    expect(page.locator(".gw-step-card")).to_contain_text("x.grad: None → −1")
    expect(page.locator("[role=tab][data-view=stepper]")).to_have_attribute("aria-selected", "true")

    # another snippet, whose walk is another: back at the stepper, at its first step
    page.evaluate(
        "() => { window.gradwalk.editor.source = 'import torch\\nx = torch.tensor(2.0, requires_grad=True)\\n(x * x).backward()\\n'; }"
    )
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(page.locator(POSITION)).to_have_text("step 1 of 3")
    expect(page.locator("[role=tab][data-view=stepper]")).to_have_attribute("aria-selected", "true")

    # a run without a backward walk stays on the tape; so does one started from the tape
    page.evaluate("() => { window.gradwalk.editor.source = 'import torch\\nx = torch.ones(2) * 3\\n'; }")
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(page.locator("[role=tab][data-view=tape]")).to_have_attribute("aria-selected", "true")
    run_again = "import torch\nx = torch.tensor(2.0, requires_grad=True)\n(x * x).backward()\n"
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", run_again)
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(page.locator(".gw-tape .gw-op-row")).to_have_count(2)
    expect(page.locator("[role=tab][data-view=tape]")).to_have_attribute("aria-selected", "true")


def test_the_accumulate_lessons_four_graphs_read_left_to_right_in_run_order(page: Any) -> None:
    """NOTE [Repeats in run order]: the four `y = x ** 2` graphs read 3, 2, 1, 4 from the left,
    so "step back to the first AccumulateGrad" lit the third graph."""
    open_app(page, "?lesson=accumulate")
    wait_graph(page)
    xs = page.evaluate(
        """() => window.gradwalk.graph.core.nodes()
            .filter((n) => n.data('label') && n.data('label').startsWith('PowBackward0'))
            .map((n) => [Number(n.id().slice(1)), n.position('x')])"""
    )
    assert len(xs) == 4
    by_id = [x for _, x in sorted(xs)]
    assert by_id == sorted(by_id), xs


def test_the_second_derivative_lesson_walks_the_graph_the_first_grad_recorded(page: Any) -> None:
    # grad(y, x, create_graph=True) records 1 · 3 · x² as it computes it; the second grad()
    # walks that graph, and its PowBackward0 turns the 3 that reached it into 3 · 2 · x = 18.
    card = opened_at(page, "second-derivative")
    expect(card).to_contain_text("3 · 2 · x = 18 = 6x, the second derivative")
    expect(page.locator(POSITION)).to_contain_text("step 5 of 6")
    step = page.locator(".gw-step-card")
    expect(step.locator(".gw-node-name")).to_have_text("PowBackward0")
    expect(step).to_contain_text("= grad · 2 · x = 3 × 2 × 3 = 18")
    expect(page.locator(".gw-output")).to_contain_text("27.0 18.0")
    wait_graph(page)
    shot(page, "lessons-06-second-derivative")
    # and detach: three paths into w.grad, nothing into the detached tensor
    ids = [lesson.id for lesson in LESSONS]
    for lesson in ids[ids.index("second-derivative") + 1 : ids.index("detach") + 1]:
        card.get_by_role("button", name="Next ▶").click()
        expect(card).to_have_attribute("data-lesson", lesson)
    expect(page.locator(".gw-step-card")).to_contain_text("the sum of 3 paths: 9 + 3 + 3")
    expect(page.locator(".gw-step-card")).to_contain_text("w.grad: None → 15")


def test_the_leaf_and_custom_function_lessons_show_the_gradient_they_are_about(page: Any) -> None:
    # leaf-grad: ∂loss/∂h = 2h = [6, 12] arrives at h's node, yet h.grad prints None
    card = opened_at(page, "leaf-grad")
    step = page.locator(".gw-step-card")
    expect(step.locator(".gw-node-name")).to_have_text("MulBackward0")
    expect(step).to_contain_text("grad = ∂loss/∂h = [6, 12]")
    expect(step).to_contain_text("= [18, 36]")
    expect(page.locator(".gw-output")).to_contain_text("h.grad: None")
    wait_graph(page)
    shot(page, "lessons-04-leaf-grad")
    # custom-function: the node is the snippet's own, and so is its rule
    opened_at(page, "custom-function")
    expect(step.locator(".gw-node-name")).to_have_text("CubeBackward")
    expect(step).to_contain_text("Cube.backward(ctx, grad) ran: the rule is your own")
    expect(step).to_contain_text("12")
    expect(page.locator(".gw-output")).to_contain_text("tensor(12.)")
    # forgotten-grad-output: the * 3 arrives, the rule sends 2x regardless, and the pitfall says so
    card.get_by_role("button", name="Next ▶").click()
    expect(card).to_have_attribute("data-lesson", "forgotten-grad-output")
    expect(step.locator(".gw-node-name")).to_have_text("SquareBackward")
    expect(step).to_contain_text("[3, 3]")
    expect(step).to_contain_text("Square.backward ignores the gradient it receives")
    expect(page.locator(".gw-output")).to_contain_text("tensor([2., 4.])")


def test_the_pitfall_lessons_of_data_changes_double_sigmoids_and_empty_weights_show_what_they_say(
    page: Any,
) -> None:
    # data-edit: the stepper at model.2's AddmmBackward0, whose gradient for the hidden layer
    # came from the weight line 16 clamped after the forward, with the pitfall on that node
    card = opened_at(page, "data-edit")
    expect(card).to_contain_text("comes out at ‖·‖ 0.01943 from the clamped weight")
    expect(page.locator(POSITION)).to_contain_text("step 3 of 36")
    step = page.locator(".gw-step-card")
    expect(step.locator(".gw-node-name")).to_have_text("AddmmBackward0")
    expect(step).to_contain_text("grad @ model.2.weight = [128×8] ‖·‖ 0.01943")
    expect(step).to_contain_text("changed through .data")
    expect(page.locator(".gw-output")).to_contain_text("loss 0.103, accuracy 0.99")
    wait_graph(page)
    shot(page, "lessons-07-data-edit")
    # activation-twice: the charts, the loss ending on its floor
    opened_at(page, "activation-twice")
    expect(card).to_contain_text("ends at 0.504 after 100 steps")
    expect(page.locator("[role=tab][data-view=charts]")).to_have_attribute("aria-selected", "true")
    loss_chart = page.locator(".gw-chart[data-chart=loss]")
    expect(loss_chart).to_contain_text("last: step 100 · 0.5042")
    expect(page.locator(".gw-output")).to_contain_text("applied twice")
    shot(page, "lessons-08-activation-twice")
    # uninitialised: the tape, where zeros fills the bias and the weight's first op reads it
    opened_at(page, "uninitialised")
    expect(page.locator("[role=tab][data-view=tape]")).to_have_attribute("aria-selected", "true")
    ops = page.locator(".gw-tape .gw-op")
    expect(ops.nth(4)).to_contain_text("L11")
    expect(ops.nth(4).locator(".gw-op-name")).to_have_text("zeros")
    expect(ops.nth(5)).to_contain_text("L14")
    expect(ops.nth(5)).to_contain_text("layer.weight →")
    expect(page.locator(".gw-output")).to_contain_text("before it is initialised")
    shot(page, "lessons-09-uninitialised")


def _mentions(lesson: Any, query: str) -> bool:
    said = " ".join((lesson.title, lesson.summary, lesson.text, lesson.try_next, lesson.part, lesson.source))
    return all(word in said.lower() for word in query.lower().split())


def test_the_gallery_finds_lessons_by_the_words_they_say(page: Any) -> None:
    open_app(page)
    page.click("[data-gw=lessons]")
    find = page.get_by_role("searchbox", name="Find a lesson")
    found = page.locator(".gw-lessons-found")
    tiles = page.locator(".gw-lesson-tile:visible")
    expect(tiles).to_have_count(COUNT)
    expect(found).to_have_text("")
    # the box stays at the dialog's top while the tiles scroll under it
    dialog = page.locator(".gw-lessons-dialog")
    dialog.evaluate("(d) => { d.scrollTop = d.scrollHeight; }")
    page.wait_for_function("() => document.querySelector('.gw-lessons-dialog').scrollTop > 500")
    box, frame = find.bounding_box(), dialog.bounding_box()
    assert box is not None and frame is not None and 0 <= box["y"] - frame["y"] < 30, (box, frame)
    # every word must appear, in any case and order, in the title, summary, text, try, part or code
    find.fill("ZERO_GRAD loss")
    expected = [lesson.id for lesson in LESSONS if _mentions(lesson, "zero_grad loss")]
    assert 1 < len(expected) < COUNT, expected
    expect(found).to_contain_text(
        f"{len(expected)} of {COUNT} lessons mention “ZERO_GRAD loss”. Enter opens “"
    )
    assert [tile.get_attribute("data-lesson") for tile in tiles.all()] == expected
    # a part with no lesson found hides its name too; own-metrics is found by its code alone
    find.fill("momentum")
    hits = [lesson for lesson in LESSONS if _mentions(lesson, "momentum")]
    parts = list(dict.fromkeys(lesson.part for lesson in hits))
    assert hits and len(parts) < 5, parts
    own = next(lesson for lesson in hits if lesson.id == "own-metrics")
    assert "momentum" not in (own.title + own.summary + own.text + own.try_next).lower()
    expect(page.locator("li:not([hidden]) [data-lesson=own-metrics]")).to_be_visible()
    expect(tiles).to_have_count(len(hits))
    expect(page.locator(".gw-lesson-part:visible .gw-lesson-part-name")).to_have_text(parts)
    find.fill("xyzzy")
    expect(found).to_have_text("No lesson mentions “xyzzy”.")
    expect(page.locator(".gw-lesson-part:visible")).to_have_count(0)
    shot(page, "lessons-find-nothing")
    # Escape takes the words away and keeps the gallery open; a second one closes it
    find.press("Escape")
    expect(find).to_have_value("")
    expect(tiles).to_have_count(COUNT)
    expect(page.locator(".gw-lessons-dialog")).to_be_visible()
    find.press("Escape")
    expect(page.locator(".gw-lessons-dialog")).to_be_hidden()
    # opened again it is whole; Enter opens the first lesson found
    page.click("[data-gw=lessons]")
    expect(find).to_have_value("")
    find.fill("register_hook")
    first = tiles.first.get_attribute("data-lesson")
    assert not any("register_hook" in lesson.title.lower() for lesson in LESSONS)
    find.press("Enter")
    expect(page.locator(".gw-lessons-dialog")).to_be_hidden()
    expect(page.locator(CARD)).to_have_attribute("data-lesson", first or "")
    # a lesson whose title holds the words comes before one that only mentions them: "clip"
    # opened hooks (its code clips a gradient), "momentum" own-metrics (its code has one)
    page.click("[data-gw=lessons]")
    find.fill("clip")
    assert tiles.first.get_attribute("data-lesson") == "hooks"
    expect(found).to_contain_text("Enter opens “Clipping the gradient's norm”.")
    find.press("Enter")
    expect(page.locator(CARD)).to_have_attribute("data-lesson", "clip-grad-norm")
    page.click("[data-gw=lessons]")
    find.fill("momentum")
    assert tiles.first.get_attribute("data-lesson") != "momentum"
    expect(found).to_contain_text("Enter opens “Momentum")
    find.press("Enter")
    expect(page.locator(CARD)).to_have_attribute("data-lesson", "momentum")
