"""Review 56, follow-ups (helper hW2): presenter type on a projector, read from the back of a room.

- At 1024 x 768 the graph's "3 more ▾" cue covered rent_regression's "TBackward0 /
  model.weightᵀ": every spot along the bottom edge covered some node, and a node's label cost
  no more than its rim. A cue now counts a node's label as text, and where every spot hides
  text it shrinks to its arrow and count ("3 ▾") (graph-offscreen.ts).
- At a backward call's end the freed nodes were drawn at 55% opacity: their words 3.0:1
  against their body in light type. Their body fades, their words do not (graph-style.ts).
- At 1280 x 720 the code pane was 360 px of 19 px code, 26 characters a line: fit_by_hand's
  35 lines took 61 rows. Its code is 17 px (layout.css); its column keeps its share (taking
  420 px from the graph squeezed the graph toolbar's list: test_graph_tabs55.py).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import expect, open_app, run_example, shot

pytestmark = pytest.mark.browser

# Each shown off-screen cue over text in the graph: a node's label, an edge's label (an idle
# call's are not drawn) or a group's name; [cue, text, px across, px down], pane px.
CUES_OVER_TEXT = """() => {
    const cy = window.gradwalk.graph.core;
    const pane = cy.container().getBoundingClientRect();
    const only = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false };
    const texts = cy.elements(':visible').filter((e) => !e.hasClass('idle') && !!e.data('label'))
        .map((e) => [e.data('label').split('\\n')[0], e.renderedBoundingBox(only)]);
    const cues = [...document.querySelectorAll('.gw-offscreen-cue:not([hidden])')];
    const out = [];
    for (const cue of cues) {
        const r = cue.getBoundingClientRect();
        for (const [text, b] of texts) {
            const w = Math.min(r.right, pane.left + b.x2) - Math.max(r.left, pane.left + b.x1);
            const h = Math.min(r.bottom, pane.top + b.y2) - Math.max(r.top, pane.top + b.y1);
            if (w > 1 && h > 1) out.push([cue.textContent, text, Math.round(w), Math.round(h)]);
        }
    }
    return { cues: cues.map((c) => [c.textContent, c.getAttribute('aria-label')]), out };
}"""

# Each freed node's words against its body as drawn (the body over the group frames it sits
# in, over the pane): WCAG's contrast ratio; and a node that ran but was not freed, to compare.
FREED_CONTRAST = """() => {
    const cy = window.gradwalk.graph.core;
    const rgb = (s) => { const m = s.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
    const over = (top, a, under) => top.slice(0, 3).map((c, i) => c * a + under[i] * (1 - a));
    const lum = (c) => {
        const l = c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
    };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    let el = cy.container();
    let pane = [255, 255, 255];
    while (el) { const c = rgb(getComputedStyle(el).backgroundColor); if (c[3] > 0) { pane = c.slice(0, 3); break; } el = el.parentElement; }
    const drawn = (n, under) => over(rgb(n.style('background-color')), n.effectiveOpacity() * Number(n.style('background-opacity')), under);
    const look = (n) => {
        let under = pane;
        for (const p of n.ancestors().toArray().reverse()) under = drawn(p, under);
        const body = drawn(n, under);
        const text = over(rgb(n.style('color')), n.effectiveOpacity() * Number(n.style('text-opacity')), body);
        return { label: n.data('label').split('\\n')[0], ratio: Math.round(ratio(text, body) * 100) / 100, px: parseFloat(n.style('font-size')) * cy.zoom(),
                 border: n.style('border-style'), body: body.map(Math.round), bodyOpacity: n.effectiveOpacity() * Number(n.style('background-opacity')) };
    };
    return { freed: cy.nodes('.freed').map(look), ran: cy.nodes('.done').filter((n) => !n.hasClass('freed')).map(look) };
}"""

# The three panes' widths, and the code's: its font, and how many characters a row holds.
CODE_PANE = """() => {
    const box = (s) => document.querySelector(s).getBoundingClientRect();
    const root = document.querySelector('[data-gw=editor]').shadowRoot;
    const content = root.querySelector('.cm-content');
    const cs = getComputedStyle(content);
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
    const inner = content.getBoundingClientRect().width - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const line = root.querySelector('.cm-line');
    const ls = getComputedStyle(line);
    const chars = Math.floor((inner - parseFloat(ls.paddingLeft) - parseFloat(ls.paddingRight)) / ctx.measureText('0').width);
    const [code, graph, side] = ['.gw-pane-code', '.gw-pane-graph', '.gw-pane-side'].map(box);
    return { font: parseFloat(cs.fontSize), chars, code: [code.left, code.right], graph: [graph.left, graph.right], side: [side.left, side.right], page: innerWidth };
}"""


def test_at_1024_a_graph_cue_keeps_off_the_nodes_words(page: Any) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, presenter=True)
    run_example(page, "rent_regression")  # 11 nodes, the bottom row cut off by the pane's edge
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    cues = page.evaluate(CUES_OVER_TEXT)
    shot(page, "review56b-presenter-1024-rent-cues")
    below = [c for c in cues["cues"] if c[0].endswith("▾")]
    assert below, cues  # something to check: the nodes below the pane's edge
    # "3 more ▾" covered "TBackward0 / model.weightᵀ · [1×1]" (53 x 27 px)
    assert cues["out"] == [], cues
    # shrunk or not, the cue says what it counts, and its button says the rest
    assert re.fullmatch(r"\d+( more)? ▾", below[0][0]), cues
    assert re.fullmatch(r"\d+ more nodes? below: pan there", below[0][1]), cues


def test_freed_nodes_words_meet_wcag_aa_in_presenter_type_light_and_dark(page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=True)
    run_example(page, "cubic")
    page.get_by_role("tab", name=re.compile("^Backward")).click()
    page.keyboard.press("End")
    expect(page.locator(".gw-step-card h3")).to_have_text("y.backward() finished")
    for theme in ("light", "dark"):
        if theme == "dark":
            if page.locator("[data-gw=more]").is_visible():
                page.click("[data-gw=more]")
            page.click("[data-gw=theme]")
            expect(page.locator(":root")).to_have_attribute("data-theme", "dark")
        page.wait_for_timeout(400)  # the nodes' colour transitions (180 ms)
        look = page.evaluate(FREED_CONTRAST)
        shot(page, f"review56b-presenter-1280-freed-{theme}")
        assert len(look["freed"]) == 4 and look["ran"], look  # the four ops freed; x's leaf ran
        for node in look["freed"]:
            assert node["px"] >= 14, node  # presenter type
            # AccumulateGrad's words were 3.0:1, the ops' 3.6:1 (light)
            assert node["ratio"] >= 4.5, (theme, node)
            # and freed still looks freed: a dashed rim, a body fainter than a node that ran
            assert node["border"] == "dashed", node
            assert node["bodyOpacity"] < min(n["bodyOpacity"] for n in look["ran"]), look["ran"]


def test_at_1280_the_code_pane_holds_more_of_a_line_in_presenter_type(page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=True)
    run_example(page, "fit_by_hand")
    panes = page.evaluate(CODE_PANE)
    shot(page, "review56b-presenter-1280-code")
    # 360 px of 19 px code held 26 characters a row ("x = torch.linspace(-math.pi," wrapped)
    assert 16 <= panes["font"] < 19, panes
    assert panes["chars"] >= 29, panes
    # the graph and the side pane keep their widths, side by side
    assert panes["graph"][1] - panes["graph"][0] >= 500, panes
    assert panes["side"][1] - panes["side"][0] >= 350, panes
    assert panes["code"][1] <= panes["graph"][0] and panes["graph"][1] <= panes["side"][0] <= panes["page"], (
        panes
    )
    # on a wide screen the columns keep their usual shares (the code had room already)
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.wait_for_function(
        "() => document.querySelector('.gw-pane-code').getBoundingClientRect().width > 500"
    )
    wide = page.evaluate(CODE_PANE)
    code, graph = wide["code"][1] - wide["code"][0], wide["graph"][1] - wide["graph"][0]
    assert abs(code / graph - 29 / 42) < 0.02, wide
