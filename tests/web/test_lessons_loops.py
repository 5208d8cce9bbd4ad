"""Eleven lessons in real Chromium: each opens where its text points, and the step card or the
charts show the figures the text quotes (the figures themselves are checked against the
traces in tests/server/test_lessons_loops.py)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, shot, wait_graph
from .lessons_served import STEP_CARD, opened_at

pytestmark = pytest.mark.browser


def test_the_vector_backward_lesson_shows_v_as_the_seed_its_node_receives(page: Any) -> None:
    card = opened_at(page, "vector-backward", "step 1 of 3")
    expect(card).to_contain_text("PowBackward0 receives v = [1, 0.1, 0.01]")
    step = page.locator(STEP_CARD)
    expect(step.locator(".gw-node-name")).to_have_text("PowBackward0")
    # the card says where the seed came from, and the rule's arithmetic the lesson quotes
    expect(step).to_contain_text("grad = [1, 0.1, 0.01] (the seed: the gradient given to backward()")
    expect(step).to_contain_text("∂y/∂x = grad · 2 · x = [2, 0.4, 0.06]")
    expect(page.locator(".gw-output")).to_contain_text("tensor([2.0000, 0.4000, 0.0600])")
    wait_graph(page)
    shot(page, "lessons-10-vector-backward")
    # Try it: a sum seeds [1, 1, 1]; Then ▶: no argument fails, in PyTorch's words
    card.locator("[data-gw=lesson-try]").click()
    expect(page.locator(".gw-output")).to_contain_text("tensor([2., 4., 6.])", timeout=60_000)
    card.locator("[data-gw=lesson-try]", has_text="Then ▶").click()
    page.wait_for_selector("[data-gw=status][data-state=error]", timeout=60_000)
    expect(page.locator(".gw-output")).to_contain_text(
        "grad can be implicitly created only for scalar outputs"
    )
    assert "\ny.backward()  # no argument\n" in page.evaluate("() => window.gradwalk.editor.source")


def test_the_broadcast_lesson_s_add_node_sums_the_rows_into_b(page: Any) -> None:
    card = opened_at(page, "broadcast-sums", "step 3 of 5")
    expect(card).to_contain_text("add up to [18, 24]")
    step = page.locator(STEP_CARD)
    expect(step.locator(".gw-node-name")).to_have_text("AddBackward0")
    expect(step).to_contain_text("summed over the broadcast dim 0 → [2] = [18, 24]")
    wait_graph(page)
    shot(page, "lessons-11-broadcast-sums")


def test_the_freeze_lesson_s_walk_ends_in_the_layer_that_trains(page: Any) -> None:
    opened_at(page, "freeze-layer", "step 3 of 7")
    step = page.locator(STEP_CARD)
    expect(step.locator(".gw-node-name")).to_have_text("AddmmBackward0")
    expect(step).to_contain_text("no grad needed")  # nothing to the frozen layer's output
    expect(page.locator(".gw-output")).to_contain_text("None")
    wait_graph(page)  # drawn whole before its nodes are read
    nodes = page.evaluate("() => window.gradwalk.graph.core.nodes().map((n) => n.data('label') || '')")
    # the frozen layer's output shows only as what model.2 saved; no node of model.0 or the ReLU
    assert "relu(model.0(…))\n[5×4]" in nodes, nodes
    assert not any(label.startswith(("ReluBackward0", "AddmmBackward0\nmodel.0")) for label in nodes), nodes
    shot(page, "lessons-12-freeze-layer")


def test_the_finite_difference_lesson_shows_autograd_s_exact_slope_and_the_estimate(page: Any) -> None:
    opened_at(page, "finite-differences", "step 4 of 5")
    expect(page.locator(STEP_CARD)).to_contain_text("x.grad: None → 14.75")
    expect(page.locator(".gw-output")).to_contain_text("14.75 14.750099182128906")
    page.click("[role=tab][data-view=tape]")  # the estimate's ops: no_grad, no nodes
    expect(page.locator(".gw-tape .gw-op")).to_have_count(14)
    expect(page.locator(".gw-tape .gw-badge-nograd")).to_have_count(10)


def test_the_accumulate_batches_lesson_adds_the_fourth_batch_into_the_whole_batch_s_gradient(
    page: Any,
) -> None:
    opened_at(page, "accumulate-batches")
    expect(page.locator(".gw-stepper .gw-position")).to_contain_text("step 33 of 34")
    expect(page.locator(STEP_CARD)).to_contain_text(
        "model.weight.grad: [[0.4647, −1.623, −1.353]] + [[0.2887, −0.3557, −0.8695]] → [[0.7534, −1.979, −2.223]]"
    )
    expect(page.locator(".gw-output")).to_contain_text("True")
    wait_graph(page)
    shot(page, "lessons-13-accumulate-batches")


@pytest.mark.parametrize(
    ("lesson", "readouts", "pitfall"),
    [
        ("forgot-zero-grad", {"loss": "last: step 50 · 111.9"}, "still in .grad"),
        (
            "step-without-gradients",
            {
                "loss": "last: step 50 · 106.6",
                "grad": "50 steps, none with a value: no parameter had a gradient",
                "update": "last: step 50 · 0",
            },
            "step() found no gradients",
        ),
        ("update-by-hand", {"calls": "last: step 2000 · 12.29"}, "1999 12.28"),
        (
            "rebound-update",
            {"calls": "last: step 50 · 106.6"},
            "makes a new tensor: the parameter never changes",
        ),
        ("softmax-nll", {"loss": "last: step 60 · -0.7545"}, "nll_loss given probabilities"),
        ("exploding-loss", {"loss": "last: step 400 · NaN"}, "The loss became NaN/Inf"),
    ],
)
def test_a_training_loop_lesson_opens_its_charts_on_what_its_text_says(
    page: Any, lesson: str, readouts: dict[str, str], pitfall: str
) -> None:
    card = opened_at(page, lesson)
    expect(card).to_have_attribute("data-lesson", lesson)
    expect(page.locator("[role=tab][data-view=charts]")).to_have_attribute("aria-selected", "true")
    for chart, text in readouts.items():
        expect(page.locator(f"[data-chart={chart}] .gw-chart-readout")).to_contain_text(text)
    if lesson == "exploding-loss":  # "then a gap where the values stop being numbers"
        expect(page.locator("[data-chart=loss] .gw-chart-foot")).to_contain_text("inf first at step 20")
    expect(page.locator(".gw-output")).to_contain_text(pitfall)
    shot(page, f"lessons-{lesson}")
