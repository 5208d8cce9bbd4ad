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


@pytest.mark.parametrize(
    ("example", "node", "width", "height"),
    [
        # the step is on line 21, under three lines that wrap: the editor scrolled by
        # CodeMirror's guess of their heights (one row each), line 21 just below its edge
        ("custom_function", "CubeBackward", 1280, 800),
        # the step is on line 22, under line 10's pitfall note, whose margin CodeMirror did
        # not count: the line came out 6 px short of the editor's bottom edge
        ("pitfall_unregistered_layers", "MeanBackward0", 1440, 900),
    ],
)
def test_the_steps_line_is_scrolled_into_view_below_wrapped_lines_and_notes(
    page: Any, example: str, node: str, width: int, height: int
) -> None:
    page.set_viewport_size({"width": width, "height": height})
    run = stored_run(page.server, (ROOT / "server" / "examples" / f"{example}.py").read_text())
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card .gw-node-name")).to_have_text(node)
    page.wait_for_function(
        "() => !!document.querySelector('[data-gw=editor]').shadowRoot.querySelector('.cm-gw-current')"
    )
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    at = page.evaluate(CURRENT_LINE)
    assert at["band"][0] <= at["line"][0] and at["line"][1] <= at["band"][1] + 0.5, at
