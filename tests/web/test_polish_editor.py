"""The code editor in a real Chromium: typing over a selection logs no CSP error."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ROOT, expect, open_app, stored_run

pytestmark = pytest.mark.browser

SOURCE = "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\n"


def source(page: Any) -> str:
    text: str = page.evaluate("() => window.gradwalk.editor.source")
    return text


def test_select_all_then_typing_replaces_the_code_without_a_csp_error(page: Any) -> None:
    open_app(page)
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", SOURCE)
    page.click(".cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.type("x")
    assert source(page) == "x"
    page.keyboard.type("yz")
    assert source(page) == "xyz"
    # Chrome put the deleted lines' look on the new text as a style attribute, which the
    # page's CSP blocked: "Applying inline style violates ... style-src 'self'"
    page.wait_for_timeout(200)
    assert not page.problems, page.problems
    # one undo brings the code back
    page.keyboard.press("Control+z")
    assert source(page) == SOURCE


def test_typing_over_a_selection_within_a_line_replaces_it(page: Any) -> None:
    open_app(page)
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", SOURCE)
    page.evaluate(
        """() => {
            const view = window.gradwalk.editor.view;
            const from = view.state.doc.toString().indexOf('3');
            view.focus();
            view.dispatch({ selection: { anchor: from, head: from + 1 } });
        }"""
    )
    page.keyboard.type("5")
    assert source(page) == SOURCE.replace("* 3", "* 5")
    page.keyboard.type("0")
    assert source(page) == SOURCE.replace("* 3", "* 50")
    assert not page.problems, page.problems


# Where the step's line is drawn, and the editor's visible band, in page pixels.
CURRENT_LINE = """() => {
    const root = document.querySelector('[data-gw=editor]').shadowRoot;
    const band = root.querySelector('.cm-scroller').getBoundingClientRect();
    const line = root.querySelector('.cm-line.cm-gw-current').getBoundingClientRect();
    return { line: [line.top, line.bottom], band: [band.top, band.bottom], n: line.height };
}"""


def test_the_steps_line_is_scrolled_into_view_below_wrapped_lines(page: Any) -> None:
    # custom_function's backward step is on line 21, under three lines that wrap: the editor
    # scrolled by CodeMirror's guess of their heights (one row each) and left line 21 just
    # below its bottom edge.
    page.set_viewport_size({"width": 1280, "height": 800})
    run = stored_run(page.server, (ROOT / "server" / "examples" / "custom_function.py").read_text())
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card .gw-node-name")).to_have_text("CubeBackward")
    page.wait_for_function(
        "() => !!document.querySelector('[data-gw=editor]').shadowRoot.querySelector('.cm-gw-current')"
    )
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    at = page.evaluate(CURRENT_LINE)
    assert at["band"][0] <= at["line"][0] and at["line"][1] <= at["band"][1] + 0.5, at
