"""The app's errors in a real Chromium against a real server: where an error shows, what its
card says and opens, and why an empty graph is empty."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.engine.test_hand_loops import FAILS_AT_500
from tests.engine.test_training import _FAILS_AT_STEP_8

from .conftest import expect, open_app, record_in_full, run_example, run_source, shot

pytestmark = pytest.mark.browser


def test_a_failing_snippet_shows_its_error_and_hint_at_line_6(page: Any) -> None:
    open_app(page)
    run_example(page, "backward_twice_error", status="error")
    widget = page.locator(".cm-gw-error-widget")
    expect(widget).to_have_attribute("data-line", "6")
    expect(widget).to_contain_text("RuntimeError: Trying to backward through the graph a second time")
    hint = widget.locator(".cm-gw-error-hint")
    expect(hint).to_contain_text(
        "The first backward() freed the graph's saved tensors (the first one ran at line 5)"
    )
    expect(hint).to_contain_text("retain_graph=True")
    expect(page.locator(".gw-notice-error .gw-hint")).to_contain_text("retain_graph=True")
    expect(page.locator(".cm-line.cm-gw-error-line")).to_contain_text("y.backward()")
    notice = page.locator(".gw-notice-error")
    expect(notice).to_have_attribute("data-line", "6")
    expect(notice).to_contain_text("line 6")
    page.click("#gw-tab-stepper")
    page.keyboard.press("End")
    expect(page.locator(".gw-step-card")).to_contain_text("failed")
    shot(page, "04-error-at-line-6")


def test_a_saved_tensor_changed_in_place_opens_the_node_that_saved_it(page: Any) -> None:
    open_app(page)
    run_source(
        page,
        "import torch\n\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\ny = torch.sigmoid(x)\n"
        "y[0] = 0\ny.sum().backward()\n",
        status="error",
    )
    notice = page.locator(".gw-notice-error")
    expect(notice.locator(".gw-hint")).to_contain_text("SigmoidBackward0 saved y for backward (line 4)")
    expect(notice.locator(".gw-hint")).to_contain_text("then line 5 (y[0] = 0) changed it in place")
    expect(page.locator(".gw-op-row", has_text="setitem")).to_contain_text("y[0] = 0")
    notice.get_by_role("button", name="Show SigmoidBackward0 in the graph").click()
    expect(page.locator("#gw-tab-inspector")).to_have_attribute("aria-selected", "true")
    selected = "() => window.gradwalk.graph.core.$(':selected').map((e) => e.data('label'))"
    page.wait_for_function(f"() => ({selected})().length === 1")
    assert page.evaluate(selected)[0].startswith("SigmoidBackward0"), page.evaluate(selected)
    shot(page, "04b-error-node")


def test_an_error_in_a_metrics_only_step_is_recorded_in_full_on_request(page: Any) -> None:
    """Past the first optimizer steps only metrics are recorded: the error card says so and
    its button runs the code again with the failing iteration recorded in full."""
    open_app(page)
    run_source(page, _FAILS_AT_STEP_8, status="error")
    notice = page.locator(".gw-notice-error")
    expect(notice.locator(".gw-metrics-only")).to_contain_text("after optimizer step 7")
    expect(notice.locator(".gw-hint")).to_contain_text("recorded metrics-only")
    expect(page.locator(".gw-op-row", has_text="mul")).to_have_count(0)
    record_in_full(page, notice, status="error")
    notice = page.locator(".gw-notice-error")
    expect(notice.locator(".gw-hint")).to_contain_text("SigmoidBackward0 saved h for backward (line 8)")
    expect(notice.locator(".gw-metrics-only")).to_have_count(0)
    expect(page.locator(".gw-op-row", has_text="mul")).to_contain_text("in-place")
    expect(notice.get_by_role("button", name="Show SigmoidBackward0 in the graph")).to_be_visible()


def test_an_error_in_a_counted_call_of_a_loop_by_hand_is_recorded_in_full_on_request(page: Any) -> None:
    """Past a hand loop's first backward() calls only each call's loss is recorded: the error
    card says after which call, and its button records the failing iteration in full."""
    open_app(page)
    run_source(page, FAILS_AT_500, status="error")
    notice = page.locator(".gw-notice-error")
    expect(notice.locator(".gw-metrics-only")).to_contain_text("after backward() call 500")
    at_line_4 = "() => window.gradwalk.model.ops.filter((op) => op.line === 4).length"
    assert page.evaluate(at_line_4) == 3 * 10  # the loss of the first 10 iterations only
    record_in_full(page, notice, status="error")
    notice = page.locator(".gw-notice-error")
    expect(notice.locator(".gw-metrics-only")).to_have_count(0)
    # the failing iteration's loss is on the tape now (sub, pow, sum), before the op that raised
    assert page.evaluate(at_line_4) == 3 * 11


def test_an_empty_graph_says_why_it_is_empty(page: Any) -> None:
    # A run that built no graph kept the opening "Run the code to see the graph" line, as
    # if it had not run; a learner who forgot requires_grad=True got no hint.
    open_app(page)
    empty = page.locator(".gw-graph-empty")
    expect(empty).to_contain_text("Run")
    for source, why in (
        ("import torch\nx = torch.ones(3)\ny = (x * 2).sum()\n", "requires_grad=True"),
        (
            "import torch\nw = torch.ones(3, requires_grad=True)\nwith torch.no_grad():\n    y = (w * 2).sum()\n",
            "torch.no_grad()",
        ),
        # w requires grad, but only its values reached the op: the text said no op had an
        # input that requires grad and to make one with requires_grad=True, as w already was
        (
            "import torch\nw = torch.ones(3, requires_grad=True)\ny = (w.data * 2).sum()\n",
            "w requires grad, but no operation took it as an input (only its values, through .data or .detach()",
        ),
    ):
        page.evaluate("(src) => { window.gradwalk.editor.source = src; }", source)
        page.click("[data-gw=run]")
        page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
        expect(empty).to_be_visible()
        expect(empty).to_contain_text(why)
        expect(empty).not_to_contain_text("Press")
    # A run that stopped on an error before its model ran (a DataLoader with worker
    # processes, which the sandbox refuses): the text told to add requires_grad=True, which
    # the model's parameters had; it names the error and its line. An error about grad
    # itself keeps the diagnosis above.
    for source, state, why in (
        (
            "import torch\nnet = torch.nn.Linear(2, 1)\nbatch = [1, 2][5]\nnet(torch.ones(2)).sum().backward()\n",
            "error",
            "the run stopped on IndexError at line 3 before any operation built one",
        ),
        ("import torch\nx = torch.ones(3)\n(x * 2).sum().backward()\n", "error", "requires_grad=True"),
    ):
        page.evaluate("(src) => { window.gradwalk.editor.source = src; }", source)
        page.click("[data-gw=run]")
        page.wait_for_selector(f"[data-gw=status][data-state={state}]", timeout=60_000)
        expect(empty).to_be_visible()
        expect(empty).to_contain_text(why)
    run_example(page, "cubic")
    expect(empty).to_be_hidden()


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_an_error_card_fits_the_code_pane(page: Any, presenter: bool) -> None:
    # the traceback's one-line width set the code pane's column: the error card, the editor's
    # error text and the run summary ran off the pane's right edge, cut off (1180-1440 px)
    open_app(page)
    run_example(page, "inplace_error", status="error")
    if presenter:
        if page.locator("[data-gw=more]").is_visible():
            page.click("[data-gw=more]")
        page.click("[data-gw=presenter]")
    for tab, width in itertools.product(("tape", "charts"), (1180, 1280, 1440, 800, 390)):
        page.click(f"#gw-tab-{tab}")
        page.set_viewport_size({"width": width, "height": 720})
        pane = page.locator(".gw-pane-code").bounding_box()
        # the editor's error text lives in its shadow root, which locators reach
        parts = (".gw-notice-error", ".gw-run-status", ".cm-gw-error-widget", ".gw-output")
        rights = [page.locator(s).bounding_box() for s in parts]
        overflow = [round(b["x"] + b["width"] - pane["x"] - pane["width"]) for b in rights if b]
        assert len(overflow) == len(parts) and max(overflow) <= 0, (tab, width, overflow)
    shot(page, f"04-error-card-fits-{'presenter' if presenter else 'normal'}")


def test_an_error_whose_code_was_replaced_before_it_was_shown_is_dropped_quietly(page: Any) -> None:
    # Next ▶ from inference-mode (its error at line 19) to a 9-line lesson: the editor scrolled
    # to the error a frame after the next lesson's code replaced it, and CodeMirror's measure
    # threw "RangeError: Invalid line number 19 in 9-line document" (the page fixture fails a
    # test on any console error)
    open_app(page)
    page.evaluate(
        """() => { const e = window.gradwalk.editor;
            e.source = 'x = 1\\n'.repeat(30);
            e.setErrors([{ line: 25, message: 'RuntimeError: boom' }]);
            e.source = 'y = 2\\n'; }"""
    )
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.wait_for_timeout(200)
    expect(page.locator(".cm-gw-error-widget")).to_have_count(0)


def _run_graphless(page: Any, source: str) -> None:
    """Run ``source``, which fails before any op, and wait until its error is shown."""
    before = page.evaluate("() => window.gradwalk.runId")
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", source)
    page.click("[data-gw=run]")
    page.wait_for_function("(first) => window.gradwalk.runId && window.gradwalk.runId !== first", arg=before)
    page.wait_for_selector("[data-gw=status][data-state=error]", timeout=60_000)


def test_a_snippet_that_does_not_compile_shows_its_line_with_a_caret_and_a_misspelt_name_its_match(
    page: Any,
) -> None:
    open_app(page)
    _run_graphless(page, "import torch\nx = torch.ones(3)\nif x.sum() > 2\n    print(x)\n")
    notice = page.locator(".gw-notice-error")
    # Python's own report, open: the line, and a caret under where the ':' is missing
    expect(notice.locator("details pre")).to_be_visible()
    expect(notice.locator("details pre")).to_have_text(
        "  File \"snippet.py\", line 3\n    if x.sum() > 2\n                  ^\nSyntaxError: expected ':'\n"
    )
    _run_graphless(page, "import torch\nlenght = 3\nx = torch.ones(length)\n")
    expect(notice.locator(".gw-hint")).to_have_text(
        "Did you mean 'lenght' (line 2)? 'length' is not defined anywhere the code at this line can see."
    )
    expect(notice.locator("details pre")).not_to_be_visible()  # a run-time traceback stays folded
