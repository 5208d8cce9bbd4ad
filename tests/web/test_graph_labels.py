"""Edge labels in real Chromium: every gradient the stepper writes on an edge can be read."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import LABEL_OVERLAPS, labels_placed, open_app, run_example, settle, shot

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
