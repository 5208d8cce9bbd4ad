"""Edges that skip a layer go around the nodes between, in real Chromium (web/src/graph-routes.ts)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import LABEL_OVERLAPS, labels_placed, open_app, run_source, settle, shot

pytestmark = pytest.mark.browser

# Every edge drawn through a node other than its own two ends, as [source, target, node]
# (labels' first lines): the edge's line as Cytoscape draws it (its ends on the node
# borders, through its bend points when it has them) sampled every 2 px against each node's
# body shrunk by 4 px (graph-routes.ts routes a line 3 px inside a node; grazing is fine).
# An edge between two nodes only (a bundle of parallel curves, x * x) is left out: nothing
# lies between them.
EDGES_THROUGH_NODES = """() => {
    const cy = window.gradwalk.graph.core;
    const name = (n) => n.data('label').split('\\n')[0];
    const bodies = cy.nodes(':visible:childless').map((n) => [n, n.boundingBox({ includeLabels: false })]);
    const through = [];
    cy.edges(':visible').forEach((e) => {
        if (e.parallelEdges().length > 1) return;
        const bends = e.data('routeW') === undefined ? [] : e.segmentPoints();
        const line = [e.sourceEndpoint(), ...bends, e.targetEndpoint()];
        for (const [n, b] of bodies) {
            if (n.same(e.source()) || n.same(e.target())) continue;
            const inside = line.slice(1).some((q, i) => {
                const p = line[i], steps = Math.ceil(Math.hypot(q.x - p.x, q.y - p.y) / 2);
                for (let k = 0; k <= steps; k++) {
                    const x = p.x + (q.x - p.x) * k / steps, y = p.y + (q.y - p.y) * k / steps;
                    if (x > b.x1 + 4 && x < b.x2 - 4 && y > b.y1 + 4 && y < b.y2 - 4) return true;
                }
                return false;
            });
            if (inside) through.push([name(e.source()), name(e.target()), name(n)]);
        }
    });
    return through;
}"""

PRODUCT_RULE = """import torch
x = torch.tensor(1.5, requires_grad=True)
y = x * torch.exp(x)
y.backward()
"""

SKIP_CONNECTION = """import torch
x = torch.randn(4, requires_grad=True)
h = torch.tanh(x * 2)
h = torch.sin(h) + 1
y = (x + h).sum()
y.backward()
"""

RESIDUAL_BLOCKS = """import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, d)
        self.fc2 = nn.Linear(d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))

net = nn.Sequential(Block(4), Block(4))
loss = net(torch.randn(2, 4)).pow(2).mean()
loss.backward()
"""


TRANSFORMER_LAYER = """import torch
import torch.nn as nn
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
loss = layer(torch.randn(1, 3, 8)).pow(2).mean()
loss.backward()
"""


@pytest.mark.parametrize(
    ("name", "source", "routed"),
    [
        # MulBackward0 sends x's gradient straight to its AccumulateGrad, past ExpBackward0
        # (drawn through it, it read as a second edge into exp); with "saved" shown, the
        # dashed line from MulBackward0 to x, which it saved, passed the saved exp(x) too
        ("product-rule", PRODUCT_RULE, 2),
        # the skip edge from x + h to x ran through TanhBackward0 and MulBackward0
        ("skip-connection", SKIP_CONNECTION, 1),
        # residual blocks in module groups: routes are in the groups' coordinates in ELK
        ("residual-blocks", RESIDUAL_BLOCKS, 2),
        # the skip edge around linear2 left AddBackward0 left of its centre, on ELK's
        # straight lane: drawn from the centre instead, it clipped the TBackward0 below
        ("transformer-layer", TRANSFORMER_LAYER, 2),
    ],
)
def test_no_edge_is_drawn_through_a_node(page: Any, name: str, source: str, routed: int) -> None:
    open_app(page)
    run_source(page, source)
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    assert page.evaluate("() => window.gradwalk.graph.lastLayout.layout") == "elk"
    assert page.evaluate(EDGES_THROUGH_NODES) == []
    # the edges that had to bend are routed, and only as many as had to
    assert page.evaluate("() => window.gradwalk.graph.core.edges('[routeW]').length") >= routed
    labels_placed(page)
    # a routed edge's label sits on its own line, off nodes and other labels
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(f"() => ({LABEL_OVERLAPS})().length === 0", timeout=3_000)
    assert page.evaluate(LABEL_OVERLAPS) == []
    settle(page)
    shot(page, f"routes-{name}")


def test_a_straight_edge_stays_a_straight_line(page: Any) -> None:
    # the cubic's edges cross no node: none is routed, each is one straight line
    open_app(page)
    run_source(
        page, "import torch\nx = torch.tensor(2.0, requires_grad=True)\ny = x ** 3 - 4 * x\ny.backward()\n"
    )
    assert page.evaluate("() => window.gradwalk.graph.core.edges('[routeW]').length") == 0
