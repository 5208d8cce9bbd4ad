"""The app in a real Chromium against a real server: run, see the graph, step backward."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import (
    LABEL_OVERLAPS,
    NEXT,
    expect,
    labels_placed,
    open_app,
    run_example,
    run_source,
    settle,
    shot,
    stored_run,
    wait_graph,
)

pytestmark = pytest.mark.browser


def node_kinds(page: Any) -> list[str]:
    kinds: list[str] = page.evaluate("() => window.gradwalk.graph.core.nodes().map((n) => n.data('kind'))")
    return kinds


def hover_graph_node(page: Any, selector: str) -> None:
    """Move the mouse onto a graph node (Cytoscape draws on a canvas)."""
    x, y = page.evaluate(
        """(sel) => {
            const cy = window.gradwalk.graph.core;
            const p = cy.$(sel).renderedPosition();
            const box = cy.container().getBoundingClientRect();
            return [box.left + p.x, box.top + p.y];
        }""",
        selector,
    )
    page.mouse.move(x, y)


def test_cubic_graph_then_step_to_the_leaf(page: Any) -> None:
    open_app(page)
    run_example(page, "cubic")
    kinds = node_kinds(page)
    assert kinds.count("op") == 3 and kinds.count("acc") == 1 and kinds.count("leaf") == 1, kinds
    expect(page.locator(".gw-graph-info")).to_have_text("4 nodes")
    shot(page, "01-cubic-graph")

    page.click("#gw-tab-stepper")
    card = page.locator(".gw-step-card")
    expect(card).to_contain_text("SubBackward0")
    for _ in range(3):
        page.click(NEXT)
    expect(card).to_contain_text("x.grad: None → 14.75")
    expect(card).to_contain_text("the sum of 2 paths: −4 + 18.75")
    leaf = page.evaluate("() => window.gradwalk.graph.core.$('node[kind = \"leaf\"]').data('label')")
    assert ".grad 14.75" in leaf
    shot(page, "02-cubic-stepped-to-leaf")


TRAINING_LOOP = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(32, 6), torch.randn(32, 1)
for step in range(20):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
"""


# (group name, edge label) of each edge label drawn over a module group's name


def test_the_stepper_keeps_a_training_loops_graph_readable(page: Any) -> None:
    # The first 3 steps are recorded in full: 3 backward calls, 3 graphs, 60+ nodes, too tall
    # for the pane at a zoom where labels show (they hide below 0.62). The run opens on its
    # first call (graph-calls.ts); with every call chosen, the graph view shows the
    # overview, and the stepper shows its node readable and tells the three calls apart.
    open_app(page)
    run_source(page, TRAINING_LOOP)
    page.click("#gw-tab-tape")
    expect(page.locator(".gw-graph-calls select")).to_have_value("0")
    page.select_option(".gw-graph-calls select", "all")
    page.wait_for_function("() => window.gradwalk.graph.core.zoom() < 0.62")
    # an edge into a module group is labelled below the group's name, not over it (its
    # midpoint lies on the group's top border: the label hid model.5's name but for "mo")
    labels_placed(page)
    assert [o for o in page.evaluate(LABEL_OVERLAPS) if o[0] == "group"] == []
    overview = page.evaluate("() => window.gradwalk.graph.core.zoom()")
    page.click("#gw-tab-stepper")
    calls = page.locator(".gw-call")
    expect(calls).to_have_count(3)
    # three calls that read the same: their text once, then #1 #2 #3, on one row
    expect(page.locator(".gw-calls-caption")).to_have_text("loss.backward() · line 9")
    expect(calls.nth(1)).to_have_text("#2")
    expect(calls.nth(1)).to_have_attribute("aria-label", "#2 loss.backward() · line 9")
    page.wait_for_function("() => window.gradwalk.graph.core.zoom() >= 0.62")

    def current_in_view() -> bool:
        inside: bool = page.evaluate(
            """() => {
                const cy = window.gradwalk.graph.core;
                const b = cy.$('node.current').renderedBoundingBox();
                return b.x1 >= 0 && b.y1 >= 0 && b.x2 <= cy.width() && b.y2 <= cy.height();
            }"""
        )
        return inside

    assert current_in_view()
    calls.nth(2).click()
    expect(page.locator(".gw-stepper .gw-position")).to_contain_text("backward 3: 1 of")
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    assert current_in_view()
    # the nodes of the other two calls are faded, not hidden; their edges fade too, and draw
    # no label over the stepped call's (a shape label covered a module's name)
    assert page.evaluate("() => window.gradwalk.graph.core.nodes('.idle').length") > 0
    idle_edges = page.evaluate(
        """() => window.gradwalk.graph.core.edges('.idle').map((e) => [e.style('text-opacity'), e.style('opacity')])"""
    )
    assert idle_edges and all(float(text) == 0 and float(opacity) < 1 for text, opacity in idle_edges)
    assert (
        page.evaluate("() => window.gradwalk.graph.core.$('node.current').connectedEdges('.idle').length")
        == 0
    )
    settle(page)
    shot(page, "14-stepper-training-loop-readable")
    page.click("#gw-tab-tape")
    expect(page.locator("#gw-tab-tape")).to_have_attribute("aria-selected", "true")
    page.wait_for_function("() => window.gradwalk.graph.core.edges('.idle').length === 0")
    # back to the overview (within what the stepped edges' new labels change of the bounds)
    page.wait_for_function(f"() => Math.abs(window.gradwalk.graph.core.zoom() - {overview}) < 0.02")


def test_stepping_with_the_keyboard(page: Any) -> None:
    open_app(page)
    run_example(page, "cubic")
    page.focus("[data-gw=run]")
    page.keyboard.press("2")
    expect(page.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")
    position = page.locator(".gw-stepper .gw-position")
    expect(position).to_have_text("step 1 of 5")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(position).to_have_text("step 4 of 5")
    expect(page.locator(".gw-step-card")).to_contain_text("14.75")
    page.keyboard.press("ArrowLeft")
    expect(position).to_have_text("step 3 of 5")
    page.keyboard.press("End")
    expect(position).to_have_text("step 5 of 5")
    expect(page.locator(".gw-step-card")).to_contain_text("graph was freed")
    expect(page.locator(".gw-graph-banner")).to_contain_text("Graph freed")
    page.keyboard.press("Home")
    expect(position).to_have_text("step 1 of 5")
    # Arrow keys typed into the editor move the cursor, not the stepper.
    page.click(".cm-content")
    page.keyboard.press("ArrowRight")
    expect(position).to_have_text("step 1 of 5")
    expect(page).to_have_url(re.compile(r"view=stepper&step=0"))


def test_the_backward_call_tabs_carry_the_runs_own_call_numbers(page: Any) -> None:
    # A long run records calls 1-3 and a marked one in full; its tabs read #1 #2 #3 #4,
    # where #4 was backward call 8 (its tooltip and the position line said so).
    open_app(page)
    run_source(
        page,
        "import torch\nimport gradwalk\nw = torch.ones(2, requires_grad=True)\n"
        "opt = torch.optim.SGD([w], lr=0.1)\nfor i in range(10):\n    if i == 7:\n"
        "        gradwalk.detail_next_step()\n    loss = (w * 2).sum()\n    opt.zero_grad()\n"
        "    loss.backward()\n    opt.step()\n",
    )
    page.click("#gw-tab-stepper")
    tabs = page.locator(".gw-call-tabs [role=tab]")
    expect(tabs).to_have_text(["#1", "#2", "#3", "#8"])
    assert tabs.nth(3).get_attribute("title") == "backward call 8"


def test_the_stepper_says_autograd_grad_returns_its_gradients_and_leaves_grad_alone(page: Any) -> None:
    # torch.autograd.grad returns the gradient; x.grad stays None. The numbers table said
    # "out 0 → x.grad" and the end card ".grad will accumulate".
    open_app(page)
    run_source(
        page,
        "import torch\nx = torch.tensor(1.5, requires_grad=True)\ny = x**4\n"
        "(g,) = torch.autograd.grad(y, x, create_graph=True)\nprint(x.grad)\n",
    )
    page.click("#gw-tab-stepper")
    page.keyboard.press("Home")
    card = page.locator(".gw-step-card")
    expect(card.locator(".gw-numbers")).to_contain_text("out 0 → ∂/∂x (returned)")
    expect(card.locator(".gw-numbers")).not_to_contain_text("x.grad")
    page.keyboard.press("End")
    expect(card).to_contain_text("The graph was kept (create_graph=True)")
    expect(card).to_contain_text("autograd.grad leaves every .grad as it was")
    expect(page.locator(".gw-stdout")).to_have_text("None")


_LEAF_AND_NOTE = """() => {
  const cy = window.gradwalk.graph.core;
  const canvas = document.querySelector('.gw-graph-canvas').getBoundingClientRect();
  const note = document.querySelector('.gw-graph-banner').getBoundingClientRect();
  const leaf = cy.nodes('[kind = "leaf"]').renderedBoundingBox({ includeLabels: true });
  return { canvasTop: canvas.top, leafTop: canvas.top + leaf.y1, leafBottom: canvas.top + leaf.y2, noteTop: note.top, noteHeight: note.height };
}"""


_MSE_LOOP = """import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
x, y = torch.randn(16, 4), torch.randn(16, 1)
loss_fn = nn.MSELoss()
loss = loss_fn(model(x), y)
loss.backward()
"""


def test_a_graph_too_tall_to_fit_opens_with_its_top_groups_name_in_view(page: Any) -> None:
    # the graph opens at a readable zoom from its top: the top node was 16 px below the pane's
    # edge, but the name of its module group (`loss_fn`), drawn above the group's box, was cut
    page.set_viewport_size({"width": 1400, "height": 900})
    open_app(page)
    run_source(page, _MSE_LOOP)
    wait_graph(page)
    settle(page)
    top = page.evaluate(
        """() => {
            const cy = window.gradwalk.graph.core;
            const group = cy.nodes().filter((n) => n.isParent()).min((n) => n.renderedBoundingBox({ includeLabels: true }).y1);
            const all = cy.nodes().renderedBoundingBox({ includeLabels: true });
            return { group: group.value, label: group.ele.data('label'), bottom: all.y2, height: cy.height() };
        }"""
    )
    assert top["bottom"] > top["height"], top  # too tall to fit whole at a readable zoom
    assert top["group"] >= 0, top


_CNN = """import torch
import torch.nn as nn
net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3))
loss = nn.functional.cross_entropy(net(torch.randn(2, 1, 8, 8)), torch.tensor([0, 2]))
loss.backward()
"""

_RUNNING_UNDER_A_CUE = """() => {
  const cy = window.gradwalk.graph.core;
  if (cy.animated()) return null;
  const node = cy.$('node.current').first();
  if (!node.nonempty()) return [];
  const b = node.renderedBoundingBox({ includeLabels: false });
  const pane = document.querySelector('.gw-offscreen').getBoundingClientRect();
  return [...document.querySelectorAll('.gw-offscreen-cue:not([hidden])')]
    .map((c) => c.getBoundingClientRect())
    .filter((r) => !(b.x2 <= r.left - pane.left || b.x1 >= r.right - pane.left || b.y2 <= r.top - pane.top || b.y1 >= r.bottom - pane.top))
    .map((r) => [node.data('label'), r.left - pane.left, r.top - pane.top]);
}"""


def test_a_stored_runs_graph_pane_never_asks_to_press_run(page: Any, server: Any) -> None:
    # a link to a run on a busy laptop showed "Press ▶ Run ... the graph appears here" until
    # the layout landed, though the run was loaded and the inspector showed its nodes
    run_id = stored_run(server, _MSE_LOOP)
    page.goto(f"{server.url}/?run={run_id}&view=inspector&sel=n1")
    page.wait_for_function("() => window.gradwalk?.model?.nodes.size > 0")
    text = page.locator(".gw-graph-empty").first.text_content() or ""
    assert "Press ▶ Run" not in text, text
    wait_graph(page)


def test_the_running_node_is_never_under_a_more_cue(page: Any) -> None:
    # the stepper moves the graph the least that shows the running node, which left it at the
    # pane's edge under "7 more ▸" (a CNN's batch norm node, at 1280 x 720)
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page)
    run_source(page, _CNN)
    wait_graph(page)
    page.click("#gw-tab-stepper")
    steps = int(page.evaluate("() => window.gradwalk.model.timeline.length"))
    covered = []
    for _ in range(steps):
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(60)
        page.wait_for_function(f"() => ({_RUNNING_UNDER_A_CUE})() !== null")
        page.wait_for_timeout(50)  # the cues follow the view once a frame
        covered += page.evaluate(_RUNNING_UNDER_A_CUE) or []
    assert not covered, covered


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_the_graph_freed_note_leaves_the_leaf_and_its_grad_in_view(page: Any, presenter: bool) -> None:
    # the note was laid over the bottom of the graph: at the walk's last step, on a laptop
    # (and in presenter type) it hid the leaf with its final .grad, the point of the demo
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, presenter=presenter)
    run_example(page, "cubic")
    page.click("#gw-tab-stepper")
    page.keyboard.press("End")
    expect(page.locator(".gw-graph-banner")).to_contain_text("Graph freed")
    page.wait_for_function(
        f"() => {{ const b = ({_LEAF_AND_NOTE})(); return b.leafBottom <= b.noteTop && b.leafTop >= b.canvasTop; }}",
        timeout=10_000,
    )
    box = page.evaluate(_LEAF_AND_NOTE)
    assert 0 < box["noteHeight"] < 32, box  # one line on a short screen, presenter type too
    expect(page.locator(".gw-step-card")).to_contain_text("14.75")
    shot(page, f"05-graph-freed-note-{'presenter' if presenter else 'normal'}")


def test_walking_the_graph_with_the_keyboard(page: Any) -> None:
    open_app(page)
    run_example(page, "cubic")
    wait_graph(page)
    canvas = page.locator(".gw-graph-canvas")
    canvas.focus()
    expect(canvas).to_be_focused()
    announcer = page.locator("[data-gw=graph-announcer]")

    def focused() -> str:
        label: str = page.evaluate("() => window.gradwalk.graph.core.$('.keyfocus').data('label') ?? ''")
        return label

    # the first arrow lands on the loss's node, at the top; down walks toward the leaf
    page.keyboard.press("ArrowDown")
    assert focused().startswith("SubBackward0"), focused()
    expect(announcer).to_contain_text("SubBackward0")
    expect(announcer).to_contain_text("backward node")
    seen = [focused().split("\n")[0]]
    for _ in range(5):
        page.keyboard.press("ArrowDown")
        seen.append(focused().split("\n")[0])
    assert seen[1] in ("PowBackward0", "MulBackward0"), seen
    assert "AccumulateGrad" in seen and seen[-1].startswith("x"), seen
    # the other branch is beside the first one
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    branch = focused().split("\n")[0]
    page.keyboard.press("ArrowRight" if branch == "PowBackward0" else "ArrowLeft")
    other = focused().split("\n")[0]
    assert {branch, other} == {"PowBackward0", "MulBackward0"}, (branch, other)
    shot(page, "13-graph-keyboard-focus")

    # Enter does what a click does: the inspector opens on the node
    page.keyboard.press("Enter")
    expect(page.locator("#gw-tab-inspector")).to_have_attribute("aria-selected", "true")
    expect(page.locator(".gw-inspector-body")).to_contain_text(other)

    # in the stepper, the graph's arrow keys move on the graph, not the step; Enter jumps
    # to the step where the node ran
    page.click("#gw-tab-stepper")
    position = page.locator(".gw-stepper .gw-position")
    expect(position).to_have_text("step 1 of 5")
    canvas.focus()
    page.keyboard.press("ArrowUp")
    assert focused().startswith("SubBackward0")
    expect(position).to_have_text("step 1 of 5")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(position).not_to_have_text("step 1 of 5")
    expect(page.locator(".gw-step-card")).to_contain_text(focused().split("\n")[0])

    # zoom keys, and Escape clears the selection
    zoom = page.evaluate("() => window.gradwalk.graph.core.zoom()")
    page.keyboard.press("+")
    assert page.evaluate("() => window.gradwalk.graph.core.zoom()") > zoom
    page.keyboard.press("Escape")
    assert page.evaluate("() => window.gradwalk.graph.core.$(':selected').length") == 0


def test_product_reads_3_and_8(page: Any) -> None:
    open_app(page)
    run_example(page, "product")
    page.click("#gw-tab-stepper")
    card = page.locator(".gw-step-card")
    page.click(".gw-walk-item:has-text('MulBackward0')")
    expect(card).to_contain_text("∂c/∂a = grad · b = 1 × 3 = 3")
    expect(card).to_contain_text("∂c/∂b = grad · a = 1 × 2 = 2")
    # each leaf now reads two lines (its value, then its .grad): Cytoscape measured them
    # again (a size kept from before draws the text clipped, half-height and unreadable)
    settle(page)
    measured = page.evaluate(
        """() => window.gradwalk.graph.core.$('node[kind = "leaf"]').map((n) => {
            const box = n.boundingBox({ includeNodes: false, includeEdges: false, includeLabels: true });
            return [n.data('label'), box.h, parseFloat(n.style('font-size'))];
        })"""
    )
    for label, height, font in measured:
        assert label.count("\n") == 1 and height >= 2 * font, measured
    shot(page, "03-product-mul")
    page.click(NEXT)
    expect(card).to_contain_text("a.grad: None → 3")
    page.click(NEXT)
    expect(card).to_contain_text("b.grad: None → 8")
    expect(card).to_contain_text("6 + 2")


def test_reloading_a_url_lands_on_its_step(page: Any, browser: Any) -> None:
    open_app(page)
    run_example(page, "cubic")
    page.click("#gw-tab-stepper")
    for _ in range(3):
        page.click(NEXT)
    expect(page).to_have_url(re.compile(r"[?&]step=3"))
    url = page.url
    assert re.search(r"[?&]run=\w+", url) and "view=stepper" in url

    page.reload()
    card = page.locator(".gw-step-card")
    expect(card).to_contain_text("x.grad: None → 14.75")
    expect(page.locator(".gw-stepper .gw-position")).to_have_text("step 4 of 5")
    expect(page.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")

    # The same link in a fresh browser opens the same step, source and graph.
    other = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    try:
        other.goto(url)
        expect(other.locator(".gw-step-card")).to_contain_text("x.grad: None → 14.75")
        expect(other.locator(".cm-content")).to_contain_text("y = x**3 - 4*x")
    finally:
        other.context.close()


def test_tape_links_code_and_graph_both_ways(page: Any) -> None:
    open_app(page)
    run_example(page, "product")
    mul_op = page.evaluate("() => window.gradwalk.model.ops.find((o) => o.name === 'mul').index")
    mul_node = page.evaluate(
        "() => [...window.gradwalk.model.nodes.values()].find((n) => n.name === 'MulBackward0').id"
    )
    page.hover(f".gw-op-row[data-op='{mul_op}'] .gw-op")
    expect(page.locator(".cm-line.cm-gw-linked")).to_contain_text("c = a * b")
    linked = page.evaluate("() => window.gradwalk.graph.core.$('.linked').map((n) => n.id())")
    assert f"n{mul_node}" in linked
    shot(page, "05-tape-hover-links")

    hover_graph_node(page, f"#n{mul_node}")
    expect(page.locator(f".gw-op-row[data-op='{mul_op}']")).to_have_class(re.compile(r"\blinked\b"))

    # The scrubber replays the forward pass: before the mul, its node is not built yet.
    page.click(f".gw-op-row[data-op='{mul_op - 1}'] .gw-op")
    hidden = page.evaluate(f"() => window.gradwalk.graph.core.$('#n{mul_node}').hasClass('future')")
    assert hidden
    # and on the tape, the ops not run yet are greyed: their text is lighter than a past op's
    future_row = page.locator(f".gw-op-row[data-op='{mul_op}']")
    expect(future_row).to_have_class(re.compile(r"\bfuture\b"))
    color = "(el) => getComputedStyle(el.querySelector('.gw-op-name')).color"
    assert future_row.evaluate(color) != page.locator(".gw-op-row[data-op='0']").evaluate(color)
    expect(page.locator(".gw-tape .gw-position")).to_contain_text("of 5")


def test_inspector_shows_a_parameter_as_a_heatmap(page: Any) -> None:
    open_app(page)
    run_example(page, "small_net")
    weight = page.evaluate(
        "() => window.gradwalk.graph.core.nodes('[kind = \"param\"]').filter((n) => n.data('label').startsWith('net.fc1.weight')).id()"
    )
    page.evaluate(f"() => {{ window.gradwalk.graph.core.$('#{weight}').emit('tap'); }}")
    expect(page.locator("#gw-tab-inspector")).to_have_attribute("aria-selected", "true")
    body = page.locator(".gw-inspector-body")
    expect(body).to_contain_text("net.fc1.weight")
    expect(body).to_contain_text("16×4")
    assert page.locator(".gw-inspector-body table.gw-heatmap").first.locator("td").count() == 64
    shot(page, "06-inspector-heatmap")
    # a vector's cells keep each number on one line (`−9.482e-4` broke after the `e-`)
    bias = page.evaluate(
        "() => window.gradwalk.graph.core.nodes('[kind = \"param\"]').filter((n) => n.data('label').startsWith('net.fc1.bias')).id()"
    )
    page.evaluate(f"() => {{ window.gradwalk.graph.core.$('#{bias}').emit('tap'); }}")
    expect(body).to_contain_text("net.fc1.bias")
    heights = page.evaluate(
        "() => [...document.querySelectorAll('.gw-inspector-body .gw-values td')].map((td) => td.offsetHeight)"
    )
    assert len(heights) == 32 and max(heights) == min(heights), heights  # value and .grad, 16 each


CLEARED_AT_THE_END = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for _ in range(2):
    loss = (w * w).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_the_inspector_reads_grad_as_the_run_left_it(page: Any) -> None:
    # zero_grad() after the last step leaves w.grad None: the inspector said the last
    # accumulation's value (in PyTorch w.grad is None here)
    open_app(page)
    run_source(page, CLEARED_AT_THE_END)
    leaf = page.evaluate("() => window.gradwalk.graph.core.nodes('[kind = \"leaf\"]').id()")
    page.evaluate(f"() => {{ window.gradwalk.graph.core.$('#{leaf}').emit('tap'); }}")
    body = page.locator(".gw-inspector-body")
    expect(body).to_contain_text(".grad (at the end of the run)")
    expect(body).to_contain_text("None (cleared after its last accumulation)")
    # both accumulations are still listed: 2w at w = [1, 2], then at w after one SGD step
    expect(body.locator(".gw-acc-list li")).to_have_count(2)
    expect(body.locator(".gw-acc-list li").first).to_contain_text("[2, 4]")
    # each names its backward call; no list number repeats it ("1. backward 1: …")
    expect(body.locator(".gw-acc-list li").first).to_contain_text("backward 1:")
    assert (
        body.locator(".gw-acc-list li").first.evaluate("(li) => getComputedStyle(li).listStyleType") == "none"
    )


def start_a_ten_second_run(page: Any) -> None:
    """Open the app and start a run that prints 0..99, 0.1 s apart; return once it printed 3."""
    open_app(page)
    page.evaluate(
        "() => { window.gradwalk.editor.source = 'import time\\nfor i in range(100):\\n    print(i, flush=True)\\n    time.sleep(0.1)\\n'; }"
    )
    page.click("[data-gw=run]")
    expect(page.locator(".gw-stdout")).to_contain_text("3")


def test_stop_cancels_a_long_run(page: Any) -> None:
    start_a_ten_second_run(page)
    page.click("[data-gw=stop]")
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "cancelled")
    # the runner's reason is shown, and the status line says how long the run went on
    expect(page.locator("[data-stopped=cancelled]")).to_contain_text("cancelled")
    expect(page.locator(".gw-run-status")).to_contain_text("stopped · ")
    expect(page.locator(".gw-run-status")).not_to_contain_text("0.000 s")


def test_a_stop_the_server_never_read_is_said_again_when_the_stream_reconnects(page: Any) -> None:
    # A viewer that falls behind a flood of events is closed with 1013 and reconnects. A
    # cancel sent as the server closed was never read, and the run went on to its time limit.
    start_a_ten_second_run(page)
    # the server drops the socket just as Stop's cancel is sent: the cancel is lost with it
    page.evaluate(
        """() => {
            const ws = window.gradwalk.stream.ws;
            ws.send = () => ws.close();
        }"""
    )
    page.click("[data-gw=stop]")
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "cancelled", timeout=30_000)
    # (100 prints 0.1 s apart: the run would have ended "ok" after 10 s, or by its time limit)
    assert "99" not in page.locator(".gw-stdout").inner_text().split()


def test_a_dropped_stream_resumes_without_loss_or_duplicates(page: Any) -> None:
    open_app(page)
    page.evaluate(
        "() => { window.gradwalk.editor.source = 'import time\\nfor i in range(30):\\n"
        '    print(f"line {i}", flush=True)\\n    time.sleep(0.05)\\n\'; }'
    )
    page.click("[data-gw=run]")
    expect(page.locator(".gw-stdout")).to_contain_text("line 4")
    # Drop the websocket mid-run: the client reconnects with ?after=<last seq>.
    page.evaluate("() => window.gradwalk.stream.ws.close()")
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "ok", timeout=60_000)
    lines = page.locator(".gw-stdout").inner_text().split()
    assert " ".join(lines) == " ".join(f"line {i}" for i in range(30))
    seqs = page.evaluate("() => window.gradwalk.model.events.map((e) => e.seq)")
    assert seqs == list(range(len(seqs)))


def test_the_numbers_an_op_was_passed_are_written_out(page: Any) -> None:
    """`4*x` reads as `4 * x` in the tape and on the graph: not `x * …`, nor `x * 4` (the
    order PyTorch hands the mode)."""
    open_app(page, "?view=tape")
    run_example(page, "cubic")
    mul_op = page.evaluate("() => window.gradwalk.model.ops.find((o) => o.name === 'rmul').index")
    expect(page.locator(f".gw-op-row[data-op='{mul_op}'] .gw-op-io")).to_have_text("x, 4 → 4 * x")
    labels = page.evaluate("() => window.gradwalk.graph.core.nodes().map((n) => n.data('label'))")
    assert any("4 * x" in str(label) for label in labels), labels


def test_a_live_tape_names_a_module_output_once_an_op_outside_the_module_reads_it(page: Any) -> None:
    # `net.fc1`'s output is known as one only when `relu` (in `net`, outside `fc1`) reads
    # it; a live run whose events arrived between the two showed `t3` in linear's row for
    # good, where the finished trace showed `net.fc1(…)`.
    open_app(page, "?view=tape")
    run_example(page, "small_net")
    row = ".gw-op-row[data-op='1'] .gw-op-io"
    finished = page.locator(row).inner_text()
    assert finished.endswith("→ net.fc1(…)"), finished
    page.evaluate(
        """() => {
            const app = window.gradwalk, events = app.model.events;
            const model = new app.model.constructor();
            model.source = app.model.source;
            app.setModel(model, null);
            const relu = events.findIndex((e) => e.type === 'op' && e.name === 'relu');
            model.ingest(events.slice(0, relu));
            model.ingest(events.slice(relu));
        }"""
    )
    expect(page.locator(row)).to_have_text(finished)


ATTENTION = (
    "import torch\nimport torch.nn as nn\nattn = nn.MultiheadAttention(8, 2)\nx = torch.randn(3, 1, 8)\n"
    "out, _ = attn(x, x, x)\nout.sum().backward()\n"
)

_LINE_BREAKS = """(selector) => {
    const out = [];
    for (const el of document.querySelectorAll(selector)) {
        const chars = [];  // [character, top of its line box]
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let t = walker.nextNode(); t; t = walker.nextNode()) {
            for (let i = 0; i < t.length; i++) {
                const range = document.createRange();
                range.setStart(t, i);
                range.setEnd(t, i + 1);
                const rect = range.getClientRects()[0];
                chars.push([t.textContent[i], rect ? Math.round(rect.top) : null]);
            }
        }
        const seen = chars.filter(([c, top]) => c.trim() && top !== null);
        for (let i = 1; i < seen.length; i++) {
            if (seen[i][1] === seen[i - 1][1]) continue;
            const k = chars.indexOf(seen[i]);
            out.push([el.textContent, chars[k - 1][0] + '|' + seen[i][0]]);
        }
    }
    return out;
}"""


def test_a_long_op_name_wraps_at_its_underscores(page: Any) -> None:
    # presenter type at 1280 x 720: `multi_head_attention_forward` broke as `multi_head_a|ttention_for|ward`
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, "?view=tape", presenter=True)
    run_source(page, ATTENTION)
    expect(page.locator(".gw-op-name", has_text="multi_head_attention_forward")).to_have_count(1)
    breaks = page.evaluate(_LINE_BREAKS, ".gw-op-name")
    assert breaks, "the name fits on one line: the case is not tested"
    cut = [(text, at) for text, at in breaks if at[0] != "_"]
    assert not cut, cut


def test_the_inspector_wraps_a_node_s_links_and_saved_names_as_text(page: Any) -> None:
    # presenter type at 1280 x 720, attn.out_proj's AddmmBackward0: the wrapped next_functions
    # link `AccumulateGrad → attn.out_proj.bias.grad` was centred, and the saved name
    # `mat1_sym_sizes` broke as `mat1_s|ym_siz|es`
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, "?view=tape", presenter=True)
    run_source(page, ATTENTION)
    node = page.evaluate(
        "() => window.gradwalk.graph.core.nodes().filter((n) => (n.data('label') || '').startsWith('AddmmBackward0')).first().id()"
    )
    page.evaluate(f"() => {{ window.gradwalk.graph.core.$('#{node}').emit('tap'); }}")
    body = page.locator(".gw-inspector-body")
    link = body.locator(".gw-edge-list .gw-ref", has_text="AccumulateGrad")
    expect(link).to_have_text("AccumulateGrad → attn.out_proj.bias.grad")
    lines = link.evaluate(
        """(el) => {
            const range = document.createRange();
            range.selectNodeContents(el);
            return [...range.getClientRects()].map((r) => Math.round(r.left - el.getBoundingClientRect().left));
        }"""
    )
    assert len(lines) > 1, "the link fits on one line: the case is not tested"
    assert max(lines) <= 2, lines  # every line starts at the link's left edge
    expect(body.locator(".gw-table td", has_text="mat1_sym_sizes")).to_have_count(1)
    breaks = page.evaluate(_LINE_BREAKS, ".gw-inspector-body .gw-table td:first-child")
    assert breaks, "no saved name wraps: the case is not tested"
    cut = [(text, at) for text, at in breaks if at[0] != "_"]
    assert not cut, cut


_NODE_BOX = """(label) => {
    const cy = window.gradwalk.graph.core;
    const node = cy.nodes().filter((n) => (n.data('label') || '').startsWith(label)).first();
    const b = node.renderedBoundingBox({ includeLabels: false });
    return { inside: b.x1 >= 0 && b.y1 >= 0 && b.x2 <= cy.width() && b.y2 <= cy.height(), pan: cy.pan(), selected: node.selected() };
}"""


def test_a_node_picked_in_the_inspector_is_brought_into_the_graph_s_view(page: Any) -> None:
    # next_functions' TBackward0 picked in the inspector was ringed off-screen, under "7 more"
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, "?view=tape", presenter=True)
    run_source(page, ATTENTION)
    settle(page)
    before = page.evaluate(_NODE_BOX, "TBackward0")
    assert not before["inside"], "TBackward0 is in view already: the case is not tested"
    addmm = page.evaluate(
        "() => window.gradwalk.graph.core.nodes().filter((n) => (n.data('label') || '').startsWith('AddmmBackward0')).first().id()"
    )
    pan = page.evaluate("() => window.gradwalk.graph.core.pan()")
    page.evaluate(f"() => {{ window.gradwalk.graph.core.$('#{addmm}').emit('tap'); }}")
    expect(page.locator(".gw-inspector-body .gw-inspect-title")).to_contain_text("AddmmBackward0")
    settle(page)
    assert page.evaluate("() => window.gradwalk.graph.core.pan()") == pan  # a node clicked is not moved
    page.click(".gw-edge-list .gw-ref >> text=TBackward0")
    expect(page.locator(".gw-inspector-body .gw-inspect-title")).to_contain_text("TBackward0")
    settle(page)
    after = page.evaluate(_NODE_BOX, "TBackward0")
    assert after["inside"] and after["selected"], after


def test_a_tape_in_a_narrow_column_wraps_names_at_their_dots_not_mid_name(page: Any) -> None:
    # In presenter type at 1280 x 720 the tape's column holds about 13 characters:
    # `net.fc1.weight,` was cut as `net.fc1.weigh` / `t,`. Lines now end at a space, a dot,
    # a comma or an opening bracket.
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, "?view=tape", presenter=True)
    run_example(page, "small_net")
    breaks = page.evaluate(_LINE_BREAKS, ".gw-op-io")
    assert len(breaks) > 5, breaks  # the case: rows wrapped
    cut = [(text, at) for text, at in breaks if at[0] not in " .,("]
    assert not cut, cut


def test_the_layout_worker_comes_with_the_bundles_version_and_is_cached_for_good(page: Any) -> None:
    """The worker is fetched by the bundle (``layout.ts``), with its ?v=, and replaced with it."""
    workers: list[Any] = []
    page.on("response", lambda r: workers.append(r) if "/elk-worker.js" in r.url else None)
    open_app(page)
    run_example(page, "cubic")
    assert page.evaluate("() => window.gradwalk.graph.lastLayout.layout") == "elk"
    [worker] = workers
    script = page.locator("script[src*='app.js']").get_attribute("src")
    assert worker.url.endswith(script.split("app.js", 1)[1])  # the same ?v= as app.js
    assert worker.headers["cache-control"] == "public, max-age=31536000, immutable"
