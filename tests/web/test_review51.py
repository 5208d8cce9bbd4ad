"""A review of the app as its users see it (the fourth pass): a teacher on a 1024 x 768
projector in presenter type, a learner stepping a small network, a course author trying a
link in the app and then in an embed, a keyboard user moving between backward() calls.

Each test is one problem found in screenshots: the stepper's card held 62% of a projector's
short pane whatever the walk under it needed, so the walk ran 30 px out past the pane's
bottom edge, the step's own row cut in half there; a leaf's `.grad [18, 36]`, its ellipse's
last line, was sized for a box and ran out of the ellipse's curve; a running parameter's new
`.grad` line was drawn in the box of its old one, stretched and cut at both ends; the
app and an embed said a link past the run's end in two wordings ("The link…", "This link…");
the output, cut to two lines by the same short pane, was cut through its letters unfaded.
"""

from __future__ import annotations

import base64
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
POSITION = ".gw-stepper .gw-position"

# The stepper's parts as laid out: each [top, bottom] in page px, and the stepper's overflow.
STEPPER_BOXES = """() => {
    const box = (s) => { const r = document.querySelector(s).getBoundingClientRect(); return [r.top, r.bottom]; };
    const stepper = document.querySelector('.gw-stepper');
    return { stepper: box('.gw-stepper'), body: box('.gw-step-body'), walk: box('.gw-walk-scroll'),
             current: box('.gw-walk-item.current'), overflow: stepper.scrollHeight - stepper.clientHeight };
}"""


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720)])
def test_the_stepper_fits_a_projectors_pane_in_presenter_type(page: Any, size: tuple[int, int]) -> None:
    # The chain-rule lesson on a projector: the card took 62% of the short pane and the walk
    # its 72 px under it, 30 px more than the pane has; the walk's rows, the step's own among
    # them, were cut by the pane's bottom edge. The card now gives way (it scrolls, faded).
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_app(page, presenter=True)
    page.goto(f"{page.server.url}/?lesson=chain-rule")
    expect(page.locator(".gw-step-card .gw-node-name")).to_have_text("MulBackward0")
    wait_graph(page)
    page.wait_for_timeout(300)  # the walk scrolls to its step once per frame
    boxes = page.evaluate(STEPPER_BOXES)
    bottom = boxes["stepper"][1]
    assert boxes["overflow"] <= 1, boxes
    assert boxes["walk"][1] <= bottom + 0.5, boxes
    # the step's row shows whole, inside the walk and the pane
    assert boxes["walk"][0] - 0.5 <= boxes["current"][0] and boxes["current"][1] <= boxes["walk"][1] + 0.5, (
        boxes
    )
    assert boxes["body"][1] - boxes["body"][0] > 150, boxes  # the card keeps most of its room
    expect(page.locator(".gw-step-body")).to_have_attribute("data-cut", "below")  # and says it scrolls
    settle(page)
    shot(page, f"review51-01-chain-rule-presenter-{size[0]}")


def test_the_output_cut_by_a_short_pane_fades_at_its_edge(page: Any) -> None:
    # The same lesson leaves the output two lines: "torch 2.13.0+cpu on cpu" was cut through
    # its letters at the pane's edge, with no sign that the pane scrolls; it now fades there,
    # as the step card's edge does, and the fade goes once scrolled to the end.
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, presenter=True)
    page.goto(f"{page.server.url}/?lesson=chain-rule")
    expect(page.locator(".gw-step-card .gw-node-name")).to_have_text("MulBackward0")
    output = page.locator(".gw-output")
    expect(output).to_have_attribute("data-cut", "below")
    assert "linear-gradient" in output.evaluate("(el) => getComputedStyle(el).maskImage")
    output.evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    expect(output).to_have_attribute("data-cut", "above")
    # a tall pane cuts nothing: no fade
    page.set_viewport_size({"width": 1440, "height": 900})
    page.get_by_role("button", name="Hide text").click()
    expect(output).to_have_attribute("data-cut", "")
    assert output.evaluate("(el) => getComputedStyle(el).maskImage") == "none"


# Each line of every leaf's label wider than its ellipse at that line's row, as [line, needed
# px, room px] (the line's ink taken as the font size high, not its leading).
LABEL_OUTSIDE_ELLIPSE = """() => {
    const cy = window.gradwalk.graph.core;
    const ctx = document.createElement('canvas').getContext('2d');
    const out = [];
    cy.nodes('[kind = "leaf"]').filter((n) => n.visible()).forEach((n) => {
        const fs = n.numericStyle('font-size');
        const lh = fs * n.numericStyle('line-height');
        ctx.font = `${n.style('font-style')} ${n.style('font-weight')} ${fs}px ${n.style('font-family')}`;
        const lines = String(n.data('label')).split('\\n');
        const w = n.width(), h = n.height();
        lines.forEach((line, i) => {
            const d = Math.abs(i - (lines.length - 1) / 2) * lh + fs / 2;
            const room = w * Math.sqrt(Math.max(0, 1 - (2 * d / h) ** 2));
            const need = ctx.measureText(line).width;
            if (need > room) out.push([line, Math.round(need), Math.round(room)]);
        });
    });
    return out;
}"""


def test_a_leafs_grad_fits_inside_its_ellipse_at_every_step(page: Any) -> None:
    # leaf_retain_grad's x reads `.grad [18, 36]` under `x` and `[2]` once its AccumulateGrad
    # ran: 110 px of text on the ellipse's last line, where its curve leaves 103
    run = stored_run(page.server, (EXAMPLES / "leaf_retain_grad.py").read_text())
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card h3")).to_be_visible()
    wait_graph(page)
    steps = page.evaluate("() => window.gradwalk.model.timeline.length")
    outside = {}
    for step in range(steps):
        page.evaluate("(s) => window.gradwalk.store.set({ step: s })", step)
        expect(page.locator(POSITION)).to_contain_text(f"step {step + 1} of {steps}")
        for line, need, room in page.evaluate(LABEL_OUTSIDE_ELLIPSE):
            outside[line] = (step + 1, need, room)
    assert not outside, outside
    settle(page)
    shot(page, "review51-02-leaf-grad-in-its-ellipse")


def _notice_in_app(page: Any, run: str, step: int) -> str:
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step={step}")
    notice = page.locator(".gw-output .gw-notice")
    expect(notice).to_be_visible()
    return str(notice.text_content())


def _notice_in_embed(page: Any, run: str, step: int) -> str:
    page.goto(f"{page.server.url}/embed/{run}?view=stepper&step={step}")
    wait_viewer(page)
    notice = page.locator(".gw-viewer-notice")
    expect(notice).to_be_visible()
    return str(page.locator(".gw-viewer-notice").inner_text()).strip()


def test_the_app_and_an_embed_say_a_link_past_the_end_in_the_same_words(page: Any) -> None:
    # A course author tries `step=99` in the app ("The link opens step 100, …"), then embeds
    # it ("This link opens step 100, …"): one message, written once (link-notices.ts)
    cubic = stored_run(page.server, (EXAMPLES / "cubic.py").read_text())
    said = "This link opens step 100, but this run has 5 steps: showing the last one."
    assert _notice_in_app(page, cubic, 99) == said
    expect(page.locator(POSITION)).to_have_text("step 5 of 5")
    assert said in _notice_in_embed(page, cubic, 99)
    no_backward = stored_run(
        page.server, "import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\n"
    )
    said = "This link opens step 4, but this run never called backward(): it has no steps to show."
    assert _notice_in_app(page, no_backward, 3) == said
    assert said in _notice_in_embed(page, no_backward, 3)


def test_the_call_tabs_are_one_stop_in_the_tab_order_and_follow_the_step(page: Any) -> None:
    # The call tabs mark their selected tab with tabs.selectTab, as every other tab row does:
    # one stop in the Tab order (the call shown), the arrow keys for the others; stepping
    # into the next call moves that stop with it.
    run = stored_run(page.server, (EXAMPLES / "accumulate_loop.py").read_text())
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card h3")).to_be_visible()
    tabs = page.locator(".gw-call-tabs [role=tab]")
    expect(tabs).to_have_count(4)
    stops = "() => [...document.querySelectorAll('.gw-call-tabs [role=tab]')].map((t) => [t.getAttribute('aria-selected'), t.tabIndex])"
    assert page.evaluate(stops) == [["true", 0], ["false", -1], ["false", -1], ["false", -1]]
    page.get_by_role("tab", name="#1 y.backward() · line 6").focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator(POSITION)).to_contain_text("backward 2: 1 of 3")
    assert page.evaluate(stops) == [["false", -1], ["true", 0], ["false", -1], ["false", -1]]
    assert page.evaluate("() => document.activeElement.getAttribute('aria-selected')") == "true"
    # Tab leaves the row at once (one stop), to the step buttons; → there steps the walk
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="First step")).to_be_focused()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(page.locator(POSITION)).to_contain_text("backward 3: 1 of 3")
    assert page.evaluate(stops) == [["false", -1], ["false", -1], ["true", 0], ["false", -1]]


# The share of pixels of two same-sized PNGs (base64) that differ by more than a quarter of
# the range in some colour channel.
PIXELS_DIFFERING = """async ([a, b]) => {
    const load = (src) => new Promise((done) => { const i = new Image(); i.onload = () => done(i); i.src = 'data:image/png;base64,' + src; });
    const pixels = (img) => { const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
        const x = c.getContext('2d'); x.drawImage(img, 0, 0); return x.getImageData(0, 0, img.width, img.height).data; };
    const [pa, pb] = (await Promise.all([load(a), load(b)])).map(pixels);
    let n = 0;
    for (let i = 0; i < pa.length; i += 4) {
        if (Math.max(Math.abs(pa[i] - pb[i]), Math.abs(pa[i + 1] - pb[i + 1]), Math.abs(pa[i + 2] - pb[i + 2])) > 64) n++;
    }
    return n / (pa.length / 4);
}"""

RUNNING_PARAM_BOX = """() => {
    const cy = window.gradwalk.graph.core;
    const n = cy.nodes('.current').filter((x) => x.data('kind') === 'param');
    const bb = n.renderedBoundingBox({ includeLabels: false, includeUnderlays: false });
    const c = cy.container().getBoundingClientRect();
    return { x: c.left + bb.x1, y: c.top + bb.y1, width: bb.w, height: bb.h };
}"""


def test_a_running_parameters_new_grad_line_is_drawn_whole(page: Any) -> None:
    # Stepping small_net with → to net.fc1.bias's AccumulateGrad: the parameter's label gains
    # `.grad ‖·‖ 0.0163` (it read `.grad None`) as it becomes the running node. Cytoscape kept
    # the label's box measured for the old label and drew the new text squeezed into it and
    # stretched back out: `rad ‖·‖ 0.01`, cut at both ends, until the view moved. Drawn again
    # from scratch (a font size a hair different: nothing cached), it must look the same.
    page.set_viewport_size({"width": 1366, "height": 768})
    open_app(page)
    run_example(page, "small_net")
    page.get_by_role("tab", name="Backward").click()
    for _ in range(8):
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(600)  # a learner reading each step
    expect(page.locator(".gw-step-card .gw-node-name")).to_have_text("AccumulateGrad → net.fc1.bias.grad")
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    settle(page)
    box = page.evaluate(RUNNING_PARAM_BOX)
    as_stepped = page.screenshot(clip=box)
    # (braces: an arrow returning the collection has Playwright serialize Cytoscape's whole graph, 15 s)
    page.evaluate("() => { window.gradwalk.graph.core.nodes('.current').style('font-size', 12.0001); }")
    settle(page)
    drawn_fresh = page.screenshot(clip=box)
    differing = page.evaluate(
        PIXELS_DIFFERING, [base64.b64encode(as_stepped).decode(), base64.b64encode(drawn_fresh).decode()]
    )
    assert differing < 0.01, f"{differing:.1%} of the running parameter's pixels differ from a fresh drawing"
    shot(page, "review51-03-small-net-running-bias")
