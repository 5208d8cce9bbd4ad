"""Accessibility: axe-core (web/node_modules, pinned in web/package-lock.json) audits every
page a learner, a teacher or a reader of a course page opens, in the states they see: after a
run in each view, with an error, in the dark theme, at a projector's and a phone's size, with
the lessons and classroom dialogs open, as an embed, as an exported file and in a room.

Every violation fails, whatever its impact (contrast, names, headings, landmarks, keyboard
access). axe cannot see into the graph's canvas; the graph's keyboard use has its own tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import NEXT, WEB, expect, open_app, run_example, settle, stored_run, wait_viewer

pytestmark = pytest.mark.browser

AXE = WEB / "node_modules" / "axe-core" / "axe.min.js"
EXAMPLES = WEB.parent / "server" / "examples"
# One known false report, left out: axe counts no focusable content in CodeMirror's scroller,
# whose content is a contenteditable textbox in the tab order (codemirror/dev#1344);
# test_the_editor_is_reached_by_tab checks that it is.
EDITOR_SCROLLER = ("scrollable-region-focusable", ".gw-editor", ".cm-scroller")


def violations(page: Any) -> list[str]:
    """Every axe-core violation on ``page`` as it is now, one line each."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text())
    found: list[dict[str, Any]] = page.evaluate(
        """async () => (await axe.run(document, { resultTypes: ["violations"] })).violations.map(
            (v) => ({ id: v.id, impact: v.impact, help: v.help,
                      targets: v.nodes.map((n) => n.target.flat().map(String)) }))"""
    )
    lines = []
    for v in found:
        targets = [t for t in v["targets"] if (v["id"], *t) != EDITOR_SCROLLER]
        if targets:
            where = "; ".join(" >> ".join(t) for t in targets[:5])
            lines.append(f"{v['id']} ({v['impact']}): {v['help']} at {where}")
    return lines


def audit(page: Any, state: str) -> None:
    """Fail naming ``state`` and each violation axe-core finds on ``page``."""
    settle(page)
    found = violations(page)
    assert not found, f"{state}:\n" + "\n".join(found)


def tab(page: Any, name: str) -> None:
    page.get_by_role("tab", name=re.compile(f"^{name}")).click()


def dark(page: Any) -> None:
    """Switch to the dark theme with the header's button, as a user does."""
    page.click("[data-gw=theme]")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")


def test_the_app_after_a_run_in_each_view_light_and_dark(page: Any) -> None:
    open_app(page)
    audit(page, "the app as it opens")

    run_example(page, "cubic")
    tab(page, "Backward")
    page.click(NEXT)
    audit(page, "cubic, backward step 2")
    run_example(page, "small_net")
    tab(page, "Inspect")
    audit(page, "small network, inspector")
    tab(page, "Tape")
    audit(page, "small network, tape")
    run_example(page, "rent_regression")
    tab(page, "Charts")
    expect(page.locator(".gw-chart").first).to_be_visible()
    audit(page, "rent regression, charts")
    run_example(page, "backward_twice_error", status="error")
    audit(page, "a run that failed, its error on its line")

    dark(page)
    audit(page, "a failed run, dark")
    run_example(page, "pitfall_forgot_zero_grad")
    audit(page, "a pitfall, dark")
    tab(page, "Charts")
    audit(page, "charts, dark")
    tab(page, "Backward")
    audit(page, "backward, dark")


def test_the_lessons_and_classroom_dialogs(page: Any, request: pytest.FixtureRequest) -> None:
    open_app(page)
    page.click("[data-gw=lessons]")
    expect(page.locator(".gw-lesson-tile").first).to_be_visible()
    audit(page, "the lessons gallery")
    page.click("[data-lesson=scalar]")
    expect(page.locator("[data-gw=lesson-card]")).to_be_visible()
    audit(page, "a lesson's card")
    page.click("[data-gw=classroom]")
    expect(page.locator("[data-gw=room-start]")).to_be_visible()
    audit(page, "the classroom dialog")
    page.keyboard.press("Escape")
    page.click("[data-gw=shortcuts]")
    expect(page.locator("[data-gw=shortcuts-dialog]")).to_be_visible()
    audit(page, "the keyboard shortcuts")
    page.keyboard.press("Escape")
    dark(page)
    for dialog in ("shortcuts", "lessons", "classroom"):
        page.click(f"[data-gw={dialog}]")
        expect(page.locator("dialog[open]")).to_be_visible()
        audit(page, f"the {dialog} dialog, dark")
        page.keyboard.press("Escape")
        expect(page.locator("dialog[open]")).to_have_count(0)
    request.node.allow_console_errors = True  # Chromium logs the join page's 404
    page.goto(f"{page.server.url}/room/ZZZZZZ")  # no such room: the join page says so
    expect(page.locator(".gw-join-error")).to_be_visible()
    audit(page, "the join page with its error")


@pytest.mark.parametrize(("width", "height", "presenter"), [(1024, 768, True), (390, 844, False)])
def test_a_projector_and_a_phone(page: Any, width: int, height: int, presenter: bool) -> None:
    page.set_viewport_size({"width": width, "height": height})
    open_app(page, presenter=presenter)  # (a "?presenter=1" in the address, as this test had, does nothing)
    run_example(page, "small_net")
    page.click("[data-gw=more]")  # the tools folded under "More" at these sizes
    tab(page, "Backward")
    page.click(NEXT)
    audit(page, f"{width} x {height}{' presenter' if presenter else ''}, tools open, backward")


def test_the_editor_is_reached_by_tab(page: Any) -> None:
    """What axe's scrollable-region rule stands for, for the one place it misreads."""
    open_app(page)
    page.locator("[data-gw=examples]").focus()
    for _ in range(20):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement?.classList.contains('gw-editor')"):
            break
    inner = "() => document.activeElement.shadowRoot.activeElement"
    assert page.evaluate(f"() => ({inner})()?.getAttribute('contenteditable')") == "true"
    assert page.evaluate(f"() => ({inner})()?.getAttribute('aria-label')") == "PyTorch code"
    # Tab indents in the code; the editor says how to leave it, and that way works
    told = page.evaluate(f"() => ({inner})()?.getAttribute('aria-description')")
    assert "Escape, then Tab" in told
    source = page.evaluate("() => window.gradwalk.editor.source")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement?.classList.contains('gw-editor')")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert not page.evaluate("() => document.activeElement?.classList.contains('gw-editor')")
    assert page.evaluate("() => window.gradwalk.editor.source") != source  # the first Tab indented


def test_the_question_mark_lists_the_keys_and_the_keys_do_what_it_says(page: Any) -> None:
    open_app(page)
    run_example(page, "cubic")
    dialog = page.locator("[data-gw=shortcuts-dialog]")
    page.locator("body").press("?")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="Keyboard shortcuts")).to_be_visible()
    for row in ["1 2 3 4", "Esc, then Tab", "Home End", "Arrow keys", "F"]:
        expect(dialog.locator("th kbd", has_text=row).first).to_be_visible()
    page.keyboard.press("2")  # keys pressed in the dialog do not act behind it
    expect(page.get_by_role("tab", name="Tape")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # a few of the keys it lists, pressed as it says
    backward = page.get_by_role("tab", name=re.compile("^Backward"))
    page.keyboard.press("2")
    expect(backward).to_have_attribute("aria-selected", "true")
    position = page.locator(".gw-stepper .gw-position")
    page.keyboard.press("Home")
    expect(position).to_have_text("step 1 of 5")
    page.keyboard.press("ArrowRight")
    expect(position).to_have_text("step 2 of 5")
    page.keyboard.press("End")
    expect(position).to_have_text("step 5 of 5")
    page.keyboard.press("1")
    expect(page.get_by_role("tab", name="Tape")).to_have_attribute("aria-selected", "true")

    # typed in the code, ? is a character; the header's button opens the list and gets focus back
    page.click(".gw-editor")
    page.keyboard.press("End")
    page.keyboard.type("?")
    expect(dialog).to_be_hidden()
    assert page.evaluate("() => window.gradwalk.editor.source").rstrip().endswith("?")
    button = page.locator("[data-gw=shortcuts]")
    button.click()
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()
    assert page.evaluate("() => document.activeElement?.dataset.gw") == "shortcuts"


@pytest.fixture(scope="module")
def runs(server: Any) -> dict[str, str]:
    return {
        name: stored_run(server, (EXAMPLES / f"{name}.py").read_text())
        for name in ("small_net", "rent_regression")
    }


@pytest.mark.parametrize(
    ("run", "query", "width"),
    [
        ("small_net", "?step=5", 800),
        ("small_net", "?view=stepper&step=3&theme=dark", 800),
        ("small_net", "?view=tape", 800),
        ("small_net", "?view=inspector", 800),
        ("small_net", "?view=code", 800),
        ("small_net", "?controls=hide&step=2", 800),
        ("small_net", "?view=stepper", 360),
        ("rent_regression", "?view=charts", 800),
    ],
)
def test_an_embed(page: Any, runs: dict[str, str], run: str, query: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 500})
    page.goto(f"{page.server.url}/embed/{runs[run]}{query}")
    wait_viewer(page)
    audit(page, f"the embed of {run}{query} at {width} px")


def test_an_exported_page(page: Any, runs: dict[str, str], tmp_path: Path) -> None:
    from .test_export import open_offline

    out = tmp_path / "small_net.html"
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        out.write_bytes(client.get(f"/api/runs/{runs['small_net']}/export?step=4").raise_for_status().content)
    open_offline(page, out)
    audit(page, "an exported page, opened from disk")


def test_a_classroom_room_for_the_presenter_and_a_viewer(page: Any, browser: Any) -> None:
    open_app(page)
    page.click("[data-gw=classroom]")
    page.click("[data-gw=room-start]")
    page.wait_for_url(re.compile(r"/room/[A-Z0-9]{6}$"))
    page.wait_for_selector("[data-gw=room-bar][data-conn=live]")
    run_example(page, "cubic")
    audit(page, "the presenter's room")

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        viewer = context.new_page()
        viewer.goto(page.url)
        viewer.wait_for_selector("[data-gw=room-bar][data-conn=live]")
        viewer.wait_for_function("() => window.gradwalk?.model.nodes.size > 0")
        audit(viewer, "a viewer following the room")
    finally:
        context.close()


# The graph's text on what it is drawn over (graph-style.ts), which axe cannot read in the
# canvas: node labels on each kind of node, in each state of the walk; edge labels on the
# page. Nodes a step has not reached yet are dimmed on purpose and not counted.
GRAPH_TEXT = [("fg", bg) for bg in ("g-op-bg", "g-leaf-bg", "g-param-bg", "g-done-bg", "g-current-bg")]
GRAPH_TEXT += [("g-acc-fg", bg) for bg in ("g-acc-bg", "g-done-bg", "g-current-bg")]
GRAPH_TEXT += [("muted", bg) for bg in ("g-input-bg", "g-saved-bg", "g-done-bg", "g-current-bg", "bg")]
GRAPH_TEXT += [
    ("g-group-fg", "g-group-bg"),
    ("g-group-fg", "panel"),
    ("g-grad-fg", "bg"),
    ("accent-fg-strong", "bg"),
]


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two #rrggbb colours."""

    def luminance(colour: str) -> float:
        rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_graphs_text_is_readable_in_both_themes(page: Any) -> None:
    open_app(page)
    names = sorted({name for pair in GRAPH_TEXT for name in pair})
    low = []
    for theme in ("light", "dark"):
        page.evaluate("(theme) => { document.documentElement.dataset.theme = theme; }", theme)
        colours = page.evaluate(
            "(names) => Object.fromEntries(names.map((n) => [n, getComputedStyle(document.documentElement).getPropertyValue(`--${n}`).trim()]))",
            names,
        )
        for text, ground in GRAPH_TEXT:
            ratio = contrast(colours[text], colours[ground])
            if ratio < 4.5:
                low.append(f"{theme}: --{text} on --{ground} is {ratio:.2f}:1")
    assert not low, "graph text under 4.5:1:\n" + "\n".join(low)


COUNT_ANIMATIONS = """() => {
    // every animation the graph starts, on the graph (pan, fit) or on its elements (glides)
    const cy = window.gradwalk.graph.core;
    window.animations = 0;
    for (const proto of [Object.getPrototypeOf(cy), Object.getPrototypeOf(cy.nodes())]) {
        const animate = proto.animate;
        proto.animate = function (...args) { window.animations += 1; return animate.apply(this, args); };
    }
}"""


@pytest.mark.parametrize("motion", ["reduce", "no-preference"])
def test_the_graph_jumps_instead_of_gliding_when_less_motion_is_asked_for(
    browser: Any, server: Any, motion: str
) -> None:
    context = browser.new_context(viewport={"width": 1024, "height": 768}, reduced_motion=motion)
    try:
        page = context.new_page()
        page.server = server
        open_app(page)
        run_example(page, "small_net")
        page.evaluate(COUNT_ANIMATIONS)
        before = page.evaluate("() => window.gradwalk.graph.core.nodes().map((n) => n.position())")
        # the nodes move to their new places
        page.get_by_role("button", name=re.compile("^Fold modules")).click()
        page.get_by_role("button", name=re.compile("^Unfold")).click()
        page.click(".gw-graph-toolbar button:text-is('Fit')")
        tab(page, "Backward")
        for _ in range(8):  # the walk goes down the tall graph: the view follows it
            page.click(NEXT)
        page.wait_for_function("() => !window.gradwalk.graph.busy && !window.gradwalk.graph.core.animated()")
        after = page.evaluate("() => window.gradwalk.graph.core.nodes().map((n) => n.position())")
        # jumping or gliding, the view ends on the node the walk is at: waited for, since a
        # glide (or the stepper's refit) can start a frame after nothing was animating
        in_view = """() => { const app = window.gradwalk, cy = app.graph.core;
                const ran = app.model.timeline[app.store.state.step].exec.node;
                const b = cy.getElementById(`n${ran}`).renderedBoundingBox({ includeLabels: false });
                return !cy.animated() && b.x1 >= 0 && b.y1 >= 0 && b.x2 <= cy.width() && b.y2 <= cy.height(); }"""
        try:
            page.wait_for_function(in_view, timeout=5_000)
            current = True
        except PlaywrightTimeout:
            current = False
        assert current, "the node at the walk's step is out of view"
        animations = page.evaluate("() => window.animations")
        grip = page.evaluate(
            "() => getComputedStyle(document.querySelector('.gw-divider'), '::after').transitionDuration"
        )
        if motion == "reduce":
            assert animations == 0 and grip == "0s"
        else:
            assert animations > 0 and grip != "0s"
        assert after != before  # folded and unfolded: laid out again (the moves were real)
    finally:
        context.close()


def test_a_lesson_whose_text_scrolls_in_presenter_type(page: Any) -> None:
    # the lesson's words scroll in their own box where they are long (presenter type at
    # 1280 x 720): a keyboard must reach the box to scroll it (axe's scrollable-region-focusable)
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=True)
    page.click("[data-gw=lessons]")
    page.click("[data-lesson=data-edit]")
    words = page.locator("[data-gw=lesson-words]")
    expect(words).to_be_visible()
    assert words.evaluate("(el) => el.scrollHeight > el.clientHeight"), "the text should scroll here"
    audit(page, "the data-edit lesson, presenter type, 1280 x 720")
