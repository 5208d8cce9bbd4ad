"""A review of the app as its users see it (the third pass): a learner reading the legend, a
learner whose MLP keeps its saved tensors on screen.

Each test is one problem found in screenshots: the graph's legend listed "parameter" and
"plain input" under a scalar snippet that has neither; an MLP's MseLossBackward0 was laid out
far right of the network it feeds, so its first view showed the loss and an empty box.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import (
    ROOT,
    expect,
    open_app,
    run_example,
    run_source,
    settle,
    shot,
    stored_run,
    wait_graph,
)

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"
POSITION = ".gw-stepper .gw-position"

MLP = """import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
x = torch.randn(8, 3)
y = torch.randn(8, 1)
loss = nn.functional.mse_loss(net(x), y)
loss.backward()
"""


def _legend(page: Any) -> list[str]:
    """The graph legend's entries on screen."""
    texts: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('.gw-pane-graph .gw-legend li')]
            .filter((li) => li.offsetParent !== null)
            .map((li) => li.querySelector('.gw-legend-text').textContent)"""
    )
    return texts


def test_the_legend_lists_only_the_kinds_of_node_the_graph_shows(page: Any) -> None:
    page.set_viewport_size({"width": 1366, "height": 768})
    open_app(page)
    run_example(page, "cubic")
    # y = x**3 - 4*x: ops, one AccumulateGrad, the leaf x (saved by pow: a dotted edge);
    # no parameter and no plain input, which the legend had listed all the same
    assert _legend(page) == ["op (grad_fn)", "AccumulateGrad", "leaf, requires grad", "saved for backward"]
    settle(page)
    shot(page, "review50-01-legend-cubic")
    # saved tensors turned off: nothing saved is drawn, so nothing saved is explained
    page.get_by_label("Show saved tensors").uncheck()
    page.wait_for_function("() => window.gradwalk.graph.core.edges('[kind = \"saved\"]').length === 0")
    wait_graph(page)
    expect(page.locator(".gw-pane-graph .gw-legend li[data-kind=saved]")).to_be_hidden()
    assert _legend(page) == ["op (grad_fn)", "AccumulateGrad", "leaf, requires grad"]
    # an MLP: parameters and plain inputs, no plain leaf
    run_source(page, MLP)
    page.get_by_label("Show saved tensors").check()
    wait_graph(page)
    page.wait_for_function("() => window.gradwalk.graph.core.nodes('[kind = \"saved\"]').length > 0")
    assert _legend(page) == [
        "op (grad_fn)",
        "AccumulateGrad",
        "parameter",
        "plain input",
        "saved for backward",
    ]
    # while stepping, the saved entry stays only where something saved is drawn
    page.locator("body").press("2")
    expect(page.locator(".gw-pane-graph .gw-legend")).to_have_attribute("data-mode", "walk")
    assert "saved for backward" in _legend(page)
    assert "parameter" not in _legend(page)


# The loss and the node its gradient goes to first (the walk's first two steps), as drawn.
WALK_START = """() => {
    const cy = window.gradwalk.graph.core;
    const loss = cy.nodes().filter((n) => n.data('label')?.startsWith('MseLossBackward0'));
    const first = loss.outgoers("edge[kind = 'grad']").targets();
    const box = (c) => { const b = c.renderedBoundingBox({ includeLabels: false, includeOverlays: false });
                         return [b.x1, b.y1, b.x2, b.y2]; };
    return { loss: box(loss), first: box(first), name: first.data('label'), w: cy.width(), h: cy.height(),
             saved: cy.nodes('[kind = "saved"]').length };
}"""


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_an_mlp_with_its_saved_tensors_opens_where_the_walk_starts(page: Any, size: tuple[int, int]) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    run = stored_run(page.server, MLP)
    page.goto(f"{page.server.url}/?run={run}")
    wait_graph(page)
    page.get_by_label("Show saved tensors").check()
    page.wait_for_function("() => window.gradwalk.graph.core.nodes('[kind = \"saved\"]').length > 0")
    wait_graph(page)
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    settle(page)
    view = page.evaluate(WALK_START)
    assert view["saved"] > 0 and view["name"].startswith("AddmmBackward0"), view
    for part in ("loss", "first"):
        x1, y1, x2, y2 = view[part]
        assert x1 >= 0 and y1 >= 0 and x2 <= view["w"] and y2 <= view["h"], (part, view)
    # the loss is laid out over the node it feeds, not a pane's width to its right
    lx = (view["loss"][0] + view["loss"][2]) / 2
    fx = (view["first"][0] + view["first"][2]) / 2
    assert abs(lx - fx) < 0.25 * view["w"], view
    shot(page, f"review50-04-mlp-saved-{size[0]}")
    # the stepper opens there too, its first node running
    page.locator("body").press("2")
    expect(page.locator(".gw-step-card .gw-node-name")).to_have_text("MseLossBackward0")
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    view = page.evaluate(WALK_START)
    x1, y1, x2, y2 = view["loss"]
    assert x1 >= 0 and y1 >= 0 and x2 <= view["w"] and y2 <= view["h"], view
