"""A review of the app as its users see it (the second pass): a course author whose embed link
points past the run's end, a teacher on a 1280 x 720 projector in presenter type, a reader of
an embed's code beside the graph.

Each test is one problem found in screenshots, checked the way a user meets it: an embed's
`step=99` opened the last step and said nothing (the author never learns the link is wrong);
presenter type drew a lesson-sized graph's labels at 10 to 11 px; the step card cut at its
bottom right above the walk's list cut at its top ran two half lines of text together; an
embed's code listing cut a long line off at the pane's edge; a regression's [64x1] gradient
stood a number a line in the numbers table.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import (
    ROOT,
    expect,
    open_app,
    run_example,
    settle,
    shot,
    stored_run,
    wait_graph,
    wait_viewer,
)

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"
NOTICE = ".gw-viewer-notice"
POSITION = ".gw-stepper .gw-position"


@pytest.fixture(scope="module")
def cubic_run(server: Any) -> str:
    return stored_run(server, (EXAMPLES / "cubic.py").read_text())


@pytest.fixture(scope="module")
def no_backward_run(server: Any) -> str:
    return stored_run(server, "import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\n")


@pytest.mark.parametrize(
    "query", ["view=stepper&step=99", "view=graph&step=99", "view=tape&step=99&controls=hide"]
)
def test_an_embed_past_the_runs_last_step_says_so(page: Any, cubic_run: str, query: str) -> None:
    # A course author's link to step 100 of a 5-step run: the embed opened step 5 and said
    # nothing, so the author never learned the link was wrong. It still shows the last step,
    # and a small notice above the graph says what the link asked for; a reader can close it.
    page.set_viewport_size({"width": 760, "height": 560})
    page.goto(f"{page.server.url}/embed/{cubic_run}?{query}")
    wait_viewer(page)
    notice = page.locator(NOTICE)
    expect(notice).to_be_visible()
    expect(notice).to_have_attribute("role", "status")
    expect(notice).to_contain_text(
        "This link opens step 100, but this run has 5 steps: showing the last one."
    )
    assert page.evaluate("() => window.gradwalkViewer.store.state.step") == 4
    if "view=stepper" in query:
        expect(page.locator(POSITION)).to_have_text("step 5 of 5")
    # it takes room above the graph, never covers it
    boxes = page.evaluate(
        """() => {
            const n = document.querySelector('.gw-viewer-notice').getBoundingClientRect();
            const c = document.querySelector('.gw-viewer-graph .gw-graph-canvas').getBoundingClientRect();
            return { noticeBottom: n.bottom, canvasTop: c.top, height: n.height };
        }"""
    )
    assert boxes["noticeBottom"] <= boxes["canvasTop"] + 0.5 and boxes["height"] < 60, boxes
    settle(page)
    shot(page, f"review49-01-embed-past-the-end-{query.split('&')[0].split('=')[1]}")
    page.get_by_role("button", name="Dismiss this notice").click()
    expect(notice).to_be_hidden()


def test_an_embed_within_the_run_shows_no_notice(page: Any, cubic_run: str) -> None:
    page.goto(f"{page.server.url}/embed/{cubic_run}?view=stepper&step=4")
    wait_viewer(page)
    expect(page.locator(POSITION)).to_have_text("step 5 of 5")
    expect(page.locator(NOTICE)).to_be_hidden()


def test_an_embed_at_a_step_of_a_run_without_backward_says_it_has_none(
    page: Any, no_backward_run: str
) -> None:
    page.goto(f"{page.server.url}/embed/{no_backward_run}?step=3")
    wait_viewer(page)
    expect(page.locator(NOTICE)).to_contain_text(
        "This link opens step 4, but this run never called backward(): it has no steps to show."
    )


def test_an_embed_of_a_backward_call_the_run_never_made_says_so(page: Any, cubic_run: str) -> None:
    # call=5 of a run with one backward() call drew call 1's graph without a word
    page.goto(f"{page.server.url}/embed/{cubic_run}?view=graph&call=5")
    wait_viewer(page)
    expect(page.locator(NOTICE)).to_contain_text(
        "This link draws backward call 5, but this run made 1 backward call: showing its graph."
    )
    page.goto(f"{page.server.url}/embed/{cubic_run}?view=graph&call=1")
    wait_viewer(page)
    expect(page.locator(NOTICE)).to_be_hidden()


def test_an_app_link_past_the_runs_last_step_says_so(page: Any, cubic_run: str) -> None:
    # the same link into the app (?run=…&step=99) opened the last step silently too
    page.goto(f"{page.server.url}/?run={cubic_run}&view=stepper&step=99")
    expect(page.locator(POSITION)).to_have_text("step 5 of 5")
    expect(page.locator(".gw-output .gw-notice")).to_have_text(
        "This link opens step 100, but this run has 5 steps: showing the last one."
    )


# The smallest node label as drawn (font size times zoom), in screen px, and the zoom.
LABEL_PX = """() => {
    const cy = window.gradwalk.graph.core;
    const sizes = cy.nodes(':visible').filter((n) => n.isChildless() && !!n.data('label'))
        .map((n) => n.numericStyle('font-size') * cy.zoom());
    return { min: Math.min(...sizes), zoom: cy.zoom(), nodes: sizes.length };
}"""


@pytest.mark.parametrize("example", ["accumulate_loop", "cubic_twice", "control_flow"])
def test_presenter_type_draws_a_lesson_graphs_labels_big_enough_for_a_projector(
    page: Any, example: str
) -> None:
    # 1280 x 720 in presenter type: fitted to its 519 px pane, accumulate_loop's graph drew
    # its labels at 10.5 px (AccumulateGrad's) to 11 px, cubic_twice's at 9.7 px. No node's
    # label is under 13.5 px now (the rest of the graph a pan away, Fit still shows it all).
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=True)
    run_example(page, example)
    page.wait_for_function("() => !window.gradwalk.graph.busy && !window.gradwalk.graph.core.animated()")
    got = page.evaluate(LABEL_PX)
    assert got["min"] >= 13.5, got
    settle(page)
    shot(page, f"review49-02-presenter-labels-{example}")
    page.click("[title='Fit the graph to the view']")
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    assert page.evaluate(LABEL_PX)["zoom"] < got["zoom"], "Fit no longer shows the whole graph"


def test_presenter_type_leaves_a_graph_that_fits_and_normal_type_as_they_were(page: Any) -> None:
    # the floor is presenter type's only: a graph that fits big stays whole, and out of
    # presenter type accumulate_loop is still fitted whole, AccumulateGrad's label at 11 px
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=True)
    run_example(page, "cubic")
    page.wait_for_function("() => !window.gradwalk.graph.busy && !window.gradwalk.graph.core.animated()")
    whole = page.evaluate(
        """() => { const cy = window.gradwalk.graph.core; const b = cy.nodes().renderedBoundingBox();
                   return b.x1 >= 0 && b.y1 >= 0 && b.x2 <= cy.width() && b.y2 <= cy.height(); }"""
    )
    assert whole and page.evaluate(LABEL_PX)["min"] >= 14
    open_app(page)  # presenter type is remembered: turn it off again
    if page.locator("[data-gw=more]").is_visible():
        page.click("[data-gw=more]")
    page.click("[data-gw=presenter]")
    expect(page.locator(":root")).to_have_attribute("data-presenter", "off")
    page.keyboard.press("Escape")
    run_example(page, "accumulate_loop")
    page.wait_for_function("() => !window.gradwalk.graph.busy && !window.gradwalk.graph.core.animated()")
    got = page.evaluate(
        """() => { const cy = window.gradwalk.graph.core; const b = cy.nodes().renderedBoundingBox();
                   return { whole: b.x1 >= 0 && b.y1 >= 0 && b.x2 <= cy.width() && b.y2 <= cy.height(),
                            acc: cy.nodes('[kind = "acc"]').numericStyle('font-size') }; }"""
    )
    assert got == {"whole": True, "acc": 11}, got


def test_presenter_type_keeps_the_leaf_an_accumulation_writes_in_view(page: Any) -> None:
    # The first lesson in presenter type at 1280 x 720 opens at AccumulateGrad's step: at the
    # projector's zoom the leaf with its new .grad (the step's point) was cut off below.
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=True)
    open_app(page, "?lesson=scalar")
    expect(page.locator(POSITION)).to_have_text("step 4 of 5")
    wait_graph(page)
    page.wait_for_function("() => !window.gradwalk.graph.busy && !window.gradwalk.graph.core.animated()")
    got = page.evaluate(
        """() => {
            const cy = window.gradwalk.graph.core;
            const leaf = cy.nodes('[kind = "leaf"]').renderedBoundingBox({ includeLabels: false });
            const cur = cy.nodes('.current').renderedBoundingBox({ includeLabels: false });
            return { leaf: [leaf.y1, leaf.y2], cur: [cur.y1, cur.y2], h: cy.height(), label: cy.nodes('[kind = "leaf"]').data('label') };
        }"""
    )
    assert got["leaf"][0] >= 0 and got["leaf"][1] <= got["h"], got
    assert got["cur"][0] >= 0 and got["cur"][1] <= got["h"], got
    assert ".grad 14.75" in got["label"], got
    assert page.evaluate(LABEL_PX)["min"] >= 13.5
    settle(page)
    shot(page, "review49-03-presenter-lesson-leaf")


CUT = """() => {
    const body = document.querySelector('.gw-stepper .gw-step-body');
    const walk = document.querySelector('.gw-stepper .gw-walk-scroll');
    const rule = document.querySelector('.gw-stepper .gw-walk-rule');
    const cur = document.querySelector('.gw-walk-item.current').getBoundingClientRect();
    const w = walk.getBoundingClientRect();
    return { body: body.dataset.cut, walk: walk.dataset.cut, bodyMask: getComputedStyle(body).maskImage,
             walkMask: getComputedStyle(walk).maskImage, rule: rule ? rule.getBoundingClientRect().height : 0,
             curTop: cur.top - w.top, curBottom: w.bottom - cur.bottom,
             bodyCut: body.scrollHeight > body.clientHeight + 1 };
}"""


def test_a_cut_step_card_and_walk_fade_where_they_are_cut(page: Any) -> None:
    # Presenter type at 1280 x 720, small_net at its sixth step: the card (scrolled in its
    # box) was cut mid-line at its bottom, right above the walk's list cut mid-line at its
    # top, and the two half lines ran together. A cut edge now fades, the rule between them
    # shows, and the walk's current item stays clear of its faded edges.
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=True)
    run_example(page, "small_net")
    page.click("#gw-tab-stepper")
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    expect(page.locator(POSITION)).to_contain_text("step 6 of 12")
    page.wait_for_timeout(200)
    got = page.evaluate(CUT)
    assert got["bodyCut"] and got["body"] == "below" and "gradient" in got["bodyMask"], got
    assert "above" in got["walk"] and "below" in got["walk"] and "gradient" in got["walkMask"], got
    assert got["rule"] >= 1, got
    assert got["curTop"] >= 19 and got["curBottom"] >= 19, got
    shot(page, "review49-04-cut-card-and-walk")
    # scrolled to its end, the card's edge no longer fades
    page.evaluate(
        "() => { const b = document.querySelector('.gw-stepper .gw-step-body'); b.scrollTop = b.scrollHeight; }"
    )
    expect(page.locator(".gw-stepper .gw-step-body")).to_have_attribute("data-cut", "above")


def test_an_uncut_step_card_does_not_fade(page: Any, cubic_run: str) -> None:
    page.goto(f"{page.server.url}/?run={cubic_run}&view=stepper&step=2")
    expect(page.locator(POSITION)).to_have_text("step 3 of 5")
    page.wait_for_timeout(200)
    got = page.evaluate(CUT)
    assert got["body"] == "" and got["walk"] == "" and got["bodyMask"] == "none", got


def test_an_embeds_code_wraps_a_long_line_instead_of_cutting_it(page: Any, cubic_run: str) -> None:
    # 760 x 560, the Code tab: `x = torch.tensor(2.5, requires_grad=True)` ran past the
    # listing's edge at `requires_grad=`, the rest a sideways scroll away. It wraps, as the
    # app's editor does.
    page.set_viewport_size({"width": 760, "height": 560})
    page.goto(f"{page.server.url}/embed/{cubic_run}?view=code&step=1")
    wait_viewer(page)
    got = page.evaluate(
        """() => {
            const scroller = document.querySelector('.gw-viewer .gw-code-scroll');
            const line = [...document.querySelectorAll('.gw-viewer .gw-code-line')].find((l) => l.textContent.includes('requires_grad'));
            const code = line.querySelector('code').getBoundingClientRect();
            return { overflow: scroller.scrollWidth - scroller.clientWidth, right: code.right,
                     edge: scroller.getBoundingClientRect().right, rows: Math.round(code.height / parseFloat(getComputedStyle(line).lineHeight)) };
        }"""
    )
    assert got["overflow"] <= 1 and got["right"] <= got["edge"] + 0.5, got
    assert got["rows"] == 2, got
    shot(page, "review49-05-embed-code-wraps")


COLUMN_SNIPPET = (
    "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\nX = torch.randn(64, 4)\n"
    "y = X.sum(1, keepdim=True)\nm = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))\n"
    "loss = nn.functional.mse_loss(m(X), y)\nloss.backward()\n"
)


def test_a_column_gradient_in_the_numbers_table_runs_on_under_its_name(page: Any) -> None:
    # A regression's MseLossBackward0 sends a [64x1] gradient: the numbers table wrote it a
    # number a line beside its name, in the table's narrow second column two to a line,
    # a card 955 px high. It runs on under its name now, across the card.
    run = stored_run(page.server, COLUMN_SNIPPET)
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card h3")).to_contain_text("MseLossBackward0")
    got = page.evaluate(
        """() => {
            const rows = [...document.querySelectorAll('.gw-step-card .gw-numbers tr')];
            const matrix = rows.find((r) => r.classList.contains('gw-matrix'));
            const cell = matrix.querySelector('td');
            const range = document.createRange();
            range.selectNodeContents(cell);
            return { name: matrix.previousElementSibling.textContent, newlines: cell.textContent.split('\\n').length - 1,
                     lines: new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size,
                     wide: cell.getBoundingClientRect().width / matrix.closest('table').getBoundingClientRect().width };
        }"""
    )
    assert got["name"] == "out 0 → AddmmBackward0", got
    assert got["newlines"] == 0 and got["lines"] <= 24 and got["wide"] >= 0.95, got
    shot(page, "review49-06-column-gradient")
