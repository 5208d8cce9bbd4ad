"""A step opened on a projector (presenter type, 1024 x 768) shows the gradients the running
node sends: the textbook loop's AddmmBackward0 sat at the graph pane's bottom edge, its
gradients' numbers cut off under it (hunt 64, README claims)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import labels_placed, presenter_on, stored_run

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).parents[2] / "server" / "examples" / "clean_training.py"

FLOWING_LABELS = """() => {
    const cy = window.gradwalk.graph.core, w = cy.width(), h = cy.height();
    const only = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false };
    const running = cy.nodes('.current');
    const boxes = running.outgoers('edge.flowing').map((e) => e.renderedBoundingBox(only)).filter((b) => b.w > 0);
    return { w, h, boxes: boxes.map((b) => ({ x1: b.x1, x2: b.x2, y1: b.y1, y2: b.y2 })),
             node: running.renderedBoundingBox({ includeLabels: false }) };
}"""


def test_the_running_nodes_gradients_show_apart_on_a_projector(page: Any) -> None:
    run = stored_run(page.server, EXAMPLE.read_text())
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=2")
    page.wait_for_function("() => window.gradwalk?.model?.isFinished")
    presenter_on(page)
    page.wait_for_function("() => !window.gradwalk.graph.core.animated()")
    labels_placed(page)
    page.wait_for_timeout(300)
    got = page.evaluate(FLOWING_LABELS)
    near = [b for b in got["boxes"] if b["y1"] < got["node"]["y2"] + 120]
    assert len(near) >= 2, got
    # the labels it sends are on screen, under the node
    for b in near:
        assert b["y1"] >= 0 and b["y2"] <= got["h"], got
    # and none hides another: at most a fifth of the smaller one covered
    for i, a in enumerate(near):
        for b in near[i + 1 :]:
            w = min(a["x2"], b["x2"]) - max(a["x1"], b["x1"])
            h = min(a["y2"], b["y2"]) - max(a["y1"], b["y1"])
            smaller = min(
                (a["x2"] - a["x1"]) * (a["y2"] - a["y1"]), (b["x2"] - b["x1"]) * (b["y2"] - b["y1"])
            )
            assert max(w, 0) * max(h, 0) <= smaller / 5, (a, b)
