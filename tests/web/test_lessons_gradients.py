"""The lessons on a Linear layer's weight gradient, cross-entropy's gradient, gradient clipping,
momentum, Adam and a residual connection in real Chromium: each opens where its text points, and the
step card, the graph's edges or the charts show the figures the text quotes (the figures
themselves are checked against the traces in tests/server/test_lessons_gradients.py)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import card_of, expect, run_source, shot, wait_graph
from .lessons_served import STEP_CARD, opened_at

pytestmark = pytest.mark.browser


def _edge_labels(page: Any) -> list[str]:
    return page.evaluate("() => window.gradwalk.graph.core.edges().map((e) => e.data('label') || '')")


def test_the_linear_layer_lesson_sends_x_transposed_at_grad_to_the_weight(page: Any) -> None:
    card = opened_at(page, "linear-weight-grad", "step 3 of 7")
    expect(card).to_contain_text("row i is g[i] times x")
    step = page.locator(STEP_CARD)
    expect(step.locator(".gw-node-name")).to_have_text("AddmmBackward0")
    expect(step).to_contain_text("∂loss/∂layer.bias = grad summed over the batch rows = [1, −2]")
    expect(step).to_contain_text("∂loss/∂layer.weightᵀ = xᵀ @ grad = [[1, −2], [2, −4], [3, −6]]")
    wait_graph(page)
    shot(page, "lessons-linear-weight-grad")
    # the transpose node turns it into the weight's own shape
    transposed = card_of(page, "TBackward0")
    expect(transposed).to_contain_text("∂loss/∂layer.weight = gradᵀ = [[1, 2, 3], [−2, −4, −6]]")
    expect(page.locator(".gw-output")).to_contain_text("tensor([ 1., -2.])")


def test_the_cross_entropy_lesson_shows_softmax_minus_one_hot_and_its_try_shrinks_the_edge(
    page: Any,
) -> None:
    card = opened_at(page, "cross-entropy-grad", "step 2 of 4")
    step = page.locator(STEP_CARD)
    expect(step.locator(".gw-node-name")).to_have_text("LogSoftmaxBackward0")
    expect(step).to_contain_text("grad = [[0, 0, −1]]")
    expect(step).to_contain_text(
        "∂loss/∂z = grad − softmax(z) · Σ grad (Σ over dim 1) = [[0.659, 0.2424, −0.9014]]"
    )
    expect(page.locator(".gw-output")).to_contain_text("tensor([[ 0.6590,  0.2424, -0.9014]])")
    wait_graph(page)
    assert "‖·‖ 1.14" in _edge_labels(page)
    shot(page, "lessons-cross-entropy-grad")
    # the try: class 0, which the model favours, and the edge into AccumulateGrad shrinks
    source = page.evaluate("() => window.gradwalk.editor.source")
    run_source(page, source.replace("y = torch.tensor([2])", "y = torch.tensor([0])"))
    expect(page.locator(".gw-output")).to_contain_text("tensor([[-0.3410,  0.2424,  0.0986]])")
    labels = _edge_labels(page)
    assert "‖·‖ 0.43" in labels and "‖·‖ 1.14" not in labels, labels
    expect(card).to_contain_text("reads ‖·‖ 0.43 where it read 1.14")


def test_the_clipping_lesson_charts_the_unclipped_spikes_beside_the_capped_gradient(page: Any) -> None:
    opened_at(page, "clip-grad-norm")
    expect(page.locator("[role=tab][data-view=charts]")).to_have_attribute("aria-selected", "true")
    expect(page.locator("[data-chart='metric:unclipped'] .gw-chart-readout")).to_contain_text(
        "last: step 80 · 0.3694"
    )
    expect(page.locator("[data-chart=grad] .gw-chart-readout")).to_contain_text("last: step 80 · 0.3694")
    # the two charts the lesson says nothing of are hidden, and say so
    expect(page.locator("[data-chart=lr]")).to_be_hidden()
    expect(page.locator("[data-chart=memory]")).to_be_hidden()
    expect(page.get_by_role("button", name="show 2 hidden charts")).to_be_visible()
    # the largest value each chart's y axis reaches: the spikes against the cap
    tops = page.evaluate(
        """() => Object.fromEntries(["metric:unclipped", "grad", "update"].map((id) => {
            const plot = window.gradwalk.charts.plotOf(id);
            return [id, Math.max(...plot.data.slice(1).flat().filter((v) => v != null))];
        }))"""
    )
    assert round(tops["metric:unclipped"], 2) == 8.83, tops
    assert tops["grad"] <= 1 + 1e-6 and tops["update"] <= 0.1 + 1e-6, tops
    expect(page.locator(".gw-output")).to_contain_text("w 1.037")
    shot(page, "lessons-clip-grad-norm")


def test_the_momentum_lesson_s_steps_part_from_the_gradient_and_its_try_compares_plain_sgd(
    page: Any,
) -> None:
    opened_at(page, "momentum")
    expect(page.locator("[role=tab][data-view=charts]")).to_have_attribute("aria-selected", "true")
    expect(page.locator("[data-chart=loss] .gw-chart-readout")).to_contain_text("last: step 100 · 7.52e-4")
    expect(page.locator("[data-chart=lr]")).to_be_hidden()
    # the steps the text reads off the two charts: step 4 carried on, step 7 turning round
    drawn = page.evaluate(
        """() => { const s = window.gradwalk.charts.snapshot();
            return [s.grad.series[0].values, s.update.series[0].values]; }"""
    )
    grads, updates = drawn
    assert [round(grads[3], 2), round(updates[3], 3)] == [5.28, 1.217]
    assert [round(grads[6], 2), round(updates[6], 4)] == [45.11, 0.0393]
    shot(page, "lessons-momentum")
    # the try: plain SGD, drawn over the momentum run's dashed line
    source = page.evaluate("() => window.gradwalk.editor.source")
    run_source(page, source.replace("momentum=0.9)", "momentum=0.0)"))
    expect(page.locator("[data-chart=loss] .gw-chart-readout")).to_contain_text("last: step 100 · 0.01923")
    page.check("input[aria-label='Compare with the run before']")
    expect(page.locator(".gw-charts-compare-what")).to_have_text(
        "dashed: line 14: momentum=0.9 → momentum=0.0"
    )
    expect(page.locator(".gw-output")).to_contain_text("w 3.113")


def test_the_adam_lesson_s_steps_stay_lr_long_and_its_try_scales_only_the_gradient(page: Any) -> None:
    opened_at(page, "adam")
    expect(page.locator("[role=tab][data-view=charts]")).to_have_attribute("aria-selected", "true")
    expect(page.locator("[data-chart=grad] .gw-chart-readout")).to_contain_text("last: step 100 · 0.3992")
    expect(page.locator("[data-chart=lr]")).to_be_hidden()
    expect(page.locator("[data-chart=memory]")).to_be_hidden()
    drawn = """() => { const s = window.gradwalk.charts.snapshot();
        return [s.grad.series[0].values, s.update.series[0].values]; }"""
    grads, updates = page.evaluate(drawn)
    assert [round(grads[0], 2), round(updates[0], 4)] == [64.44, 0.1414]
    assert [round(grads[29], 2), round(updates[29], 4)] == [4.92, 0.0687]
    assert [round(grads[45], 2), round(updates[45], 3)] == [4.93, 0.003]
    assert max(updates) == updates[0]
    shot(page, "lessons-adam")
    # the try: the rent in cents, a gradient 105 times as large and the same first step
    source = page.evaluate("() => window.gradwalk.editor.source")
    run_source(page, source.replace("y = 3 * X + 2", "y = 300 * X + 200"))
    expect(page.locator(".gw-output")).to_contain_text("w 9.931")
    grads, updates = page.evaluate(drawn)
    assert [round(grads[0]), round(updates[0], 4)] == [6741, 0.1414]
    assert min(updates) >= 0.139
    page.check("input[aria-label='Compare with the run before']")
    expect(page.locator(".gw-charts-compare-what")).to_have_text("dashed: line 9: 3 * X + 2 → 300 * X + 200")


def test_the_residual_lesson_s_add_sends_its_whole_gradient_down_both_paths(page: Any) -> None:
    opened_at(page, "residual", "step 5 of 27")
    step = page.locator(STEP_CARD)
    expect(step.locator(".gw-node-name")).to_have_text("AddBackward0")
    expect(step).to_contain_text("the sum of 2 paths: [[1, 1, 1, 1]] + [[−0.5613, 0.1538, −0.152, 0.2822]]")
    expect(page.locator(".gw-output")).to_contain_text("tensor(2.1746)")
    wait_graph(page)
    # the running add's two edges out, to the skip and to the branch, carry the same gradient
    sent = page.evaluate(
        """() => window.gradwalk.graph.core.edges()
            .filter((e) => e.source().hasClass('current'))
            .map((e) => e.data('label') || '')"""
    )
    assert sent.count("‖·‖ 1.97") == 2, sent
    shot(page, "lessons-residual")
