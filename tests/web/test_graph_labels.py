"""Edge labels in real Chromium: every gradient the stepper writes on an edge can be read."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import (
    LABEL_OVERLAPS,
    expect,
    labels_placed,
    open_app,
    run_example,
    run_source,
    settle,
    shot,
    wait_graph,
)

pytestmark = pytest.mark.browser


def step_to(page: Any, step: int) -> None:
    page.click("#gw-tab-stepper")
    page.keyboard.press("Home")
    for _ in range(step):
        page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => window.gradwalk.store.state.step === {step}")
    labels_placed(page)


def test_a_small_networks_gradients_cover_no_node_and_no_other_label(page: Any) -> None:
    # Two nn.Linear layers: each AddmmBackward0 sends its gradient to the weight's
    # TBackward0 and to the bias side by side (the two labels were drawn over each other);
    # the long edge into ReluBackward0 had its label under the bias node it passes; the
    # bias's .grad, a 2-vector, ran out of its hexagon; the edge into net.fc2 had its label
    # on the group's name.
    open_app(page)
    run_example(page, "small_net")
    for step in (4, 11):  # fc2's fan-out has flowed; the end of the walk, every edge labelled
        step_to(page, step)
        # placed a frame after the labels change; on a loaded machine a frame can run late
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(f"() => ({LABEL_OVERLAPS})().length === 0", timeout=3_000)
        over = page.evaluate(LABEL_OVERLAPS)
        assert over == [], (step, over)
    widths = page.evaluate(
        """() => window.gradwalk.graph.core.nodes("[kind = 'param']").map((n) => {
            const body = n.boundingBox({ includeLabels: false }), text = n.boundingBox({ includeLabels: true });
            return [n.data('label'), body.w, text.w];
        })"""
    )
    assert all(text <= body + 1 for _, body, text in widths), widths  # each .grad inside its node
    settle(page)
    shot(page, "labels-01-small-net-end-of-backward")


CONV_NET = """import torch, torch.nn as nn, torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 1)
        return self.fc(h.flatten(1))

net = Net()
loss = F.cross_entropy(net(torch.randn(2, 1, 8, 8)), torch.tensor([0, 2]))
loss.backward()
"""

GROUP_NAME_OVERLAPS = """() => {
    const cy = window.gradwalk.graph.core;
    const only = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false };
    const body = { includeLabels: false, includeOverlays: false, includeUnderlays: false };
    const hit = (a, b) => Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1) > 1 && Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1) > 1;
    const over = [];
    for (const group of cy.nodes(':parent:visible')) {
        const name = group.boundingBox(only);
        for (const n of cy.nodes(':childless:visible')) {
            if (hit(name, n.boundingBox(body))) over.push([group.data('label'), n.data('label').split('\\n')[0]]);
        }
    }
    return over;
}"""


def test_module_names_and_module_outputs_read_clearly(page: Any) -> None:
    # A conv net's graph: the name of the net.bn group was drawn over ReluBackward0 just
    # above it (ELK spaced the groups as if their names took no room), and the nodes of
    # each layer's output read t4, t11, t17 instead of the layer they came out of.
    open_app(page)
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", CONV_NET)
    page.click("[data-gw=run]")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    wait_graph(page)
    assert page.evaluate(GROUP_NAME_OVERLAPS) == []
    labels = page.evaluate("() => window.gradwalk.graph.core.nodes(':childless').map((n) => n.data('label'))")
    firsts = {label.split("\n")[0]: label for label in labels}
    assert "net.conv(…)" in firsts["ConvolutionBackward0"], labels
    assert "relu(net.bn(…))" in firsts["ReluBackward0"], labels
    assert "net.fc(…)" in firsts["AddmmBackward0"], labels
    settle(page)
    shot(page, "labels-02-conv-net")


def test_a_step_opened_while_the_graph_is_laid_out_places_no_label_at_nan(page: Any) -> None:
    # A link to a step (?run=...&view=stepper&step=3) opens the step while the run's new
    # nodes wait at the origin for the layout: their edges had no line, and each label was
    # given a NaN margin (Cytoscape warned "text-margin-x: NaN is invalid" for every one).
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    open_app(page)
    run_example(page, "cubic")
    # the layout runs in a worker: a load whose layout ended between two polls (a loaded
    # machine delays the polls) is tried again, rather than polled for ever
    caught, margins = page.evaluate(
        """async () => {
            const app = window.gradwalk;
            const trace = await app.api.trace(app.runId);
            for (let attempt = 0; attempt < 5 && !app.graph.scheduler.running; attempt++) {
                app.loadTrace(trace);
                const start = performance.now();
                while (!app.graph.scheduler.running && performance.now() - start < 2000) {
                    await new Promise((r) => setTimeout(r, 0));
                }
            }
            const caught = app.graph.scheduler.running;
            if (!caught) return [false, []];
            // waited for from now, while the layout runs: whenLaidOut() waits for the next
            // layout to end, so asked after this one ended (the frames below take long on a
            // loaded machine) it waited for ever
            const laidOut = app.graph.whenLaidOut();
            app.store.set({ view: 'stepper', step: 3 });
            await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
            await laidOut;
            await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
            return [caught, app.graph.core.edges().map((e) => [e.numericStyle('text-margin-x'), e.numericStyle('text-margin-y')])];
        }"""
    )
    assert caught, "the step was never opened while the layout ran (5 loads)"
    assert [w for w in warnings if "NaN" in w] == []
    assert margins and all(x == x and y == y for x, y in margins), margins  # (NaN != NaN)


OP_LABELS_AND_LOSS = """() => {
    const cy = window.gradwalk.graph.core;
    const ops = cy.nodes().filter((n) => n.data('kind') === 'op');
    const b = ops.filter((n) => n.data('label').startsWith('MeanBackward0')).renderedBoundingBox({ includeLabels: false });
    const all = cy.nodes().renderedBoundingBox({ includeLabels: false });
    return { px: ops[0].numericStyle('font-size') * cy.zoom(), loss: [b.x1, b.y1, b.x2, b.y2], left: all.x1,
             w: cy.width(), h: cy.height(), zoom: cy.zoom() };
}"""


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_a_small_network_on_a_1280_by_720_laptop_opens_with_labels_one_can_read(
    page: Any, presenter: bool
) -> None:
    # Fitted to its pane's width, small_net (11 nodes, too tall to show whole) had 8 px op
    # labels at 1280 x 720; presenter type's bigger nodes only made that fit smaller, so its
    # labels were no bigger. A lesson-sized graph is now shown in part at a zoom whose op
    # labels are 10 px (14 in presenter type): its top and its left edge first.
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=presenter)
    run_example(page, "small_net")
    settle(page)
    view = page.evaluate(OP_LABELS_AND_LOSS)
    assert view["px"] >= (13.5 if presenter else 10), view
    x1, y1, x2, y2 = view["loss"]
    assert x1 >= 0 and y1 >= 0 and x2 <= view["w"] and y2 <= view["h"], view  # backward's start in view
    assert view["left"] >= 0, view  # not cut on both sides: the rest is to the right
    page.click("[title='Fit the graph to the view']")  # Fit still shows all of it
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    assert page.evaluate(OP_LABELS_AND_LOSS)["zoom"] < view["zoom"] * 0.9


TRANSPOSE_SNIPPET = (
    "import torch\ntorch.manual_seed(0)\n"
    "X = torch.randn(4, 3)\nw = torch.randn(2, 3, requires_grad=True)\n"
    "y = (X @ w.T).sum(dim=1)\ny.sum().backward()\n"
)


def test_a_transpose_and_a_keyword_read_as_the_snippet_wrote_them(page: Any) -> None:
    # `X @ w.T` showed w.T as an unnamed t2 (in the tape, on MmBackward0's saved mat2 and on
    # the PermuteBackward0 node, which the tape filed under matmul), and `.sum(dim=1)` read
    # `sum X @ t2`, its dim left out
    open_app(page)
    run_source(page, TRANSPOSE_SNIPPET)
    names = page.locator(".gw-op-row .gw-op-name").all_inner_texts()
    calls = [" ".join(r.split()) for r in page.locator(".gw-op-row .gw-op-io").all_inner_texts()]
    rows = list(zip(names, calls, strict=True))
    assert ("T", "w → w.T") in rows, rows
    assert ("matmul", "X, w.T → X @ w.T") in rows, rows
    assert ("sum", "X @ w.T, dim=1 → y") in rows, rows
    labels = page.evaluate("() => window.gradwalk.graph.core.nodes(':childless').map((n) => n.data('label'))")
    firsts = {label.split("\n")[0]: label for label in labels}
    assert "w.T" in firsts["PermuteBackward0"], labels
    assert not any("t2" in label for label in labels), labels
    settle(page)
    shot(page, "labels-05-transpose")
    # the stepper says what w.T did, by its name, not "a with dims permuted"
    page.click("[role=tab]:has-text('Backward')")
    page.locator(".gw-walk-item", has_text="PermuteBackward0").first.click()
    card = page.locator(".gw-step-card")
    expect(card).to_contain_text("out = w.T · its rows and columns swapped")
    expect(card).to_contain_text("∂(sum(y))/∂w = gradᵀ, rows and columns swapped back")


def test_a_complex_tensors_real_and_imag_read_as_written(page: Any) -> None:
    # z.real and z.imag are ops of their own (engine/tape.py): their nodes read as the
    # attribute, not as an unnamed tensor inside the sum that used them
    open_app(page)
    run_source(
        page,
        "import torch\nz = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)\n"
        "l = (z * z.conj()).real.sum() + z.imag.pow(2).sum()\nl.backward()\n",
    )
    labels = page.evaluate("() => window.gradwalk.graph.core.nodes(':childless').map((n) => n.data('label'))")
    assert "SelectBackward0\n(z * conj(z)).real · [2]" in labels, labels
    assert "SelectBackward0\nz.imag · [2]" in labels, labels
    assert "PowBackward0\nz.imag**2 · [2]" in labels, labels
