"""The lessons on checkpointing, on BatchNorm in train() and eval() and on inference_mode() in
real Chromium: each opens where its
text points, and the step card, the output, the graph memory chart, the tape and the error
under its line show what the text says (the figures themselves are checked against the traces
in tests/server/test_lessons_memory_modes.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.test_lessons_memory_modes import CHECKPOINTED

from .conftest import expect, run_source, shot
from .lessons_served import STEP_CARD, opened_at

pytestmark = pytest.mark.browser

MEMORY_FOOT = "[data-chart=memory] .gw-chart-foot"


def test_the_checkpoint_lesson_opens_at_a_tanh_that_saved_nothing_and_compares_memory_in_its_try(
    page: Any,
) -> None:
    card = opened_at(page, "checkpoint", "step 2 of 6")
    expect(card).to_contain_text("the graph keeps only block's input x, 4 KiB")
    expect(page.locator(STEP_CARD).locator(".gw-node-name")).to_have_text("TanhBackward0")
    expect(page.locator(".gw-output")).to_contain_text("block runs\nblock runs\nx.grad norm 17.6053")
    shot(page, "lessons-checkpoint")
    page.click("#gw-tab-charts")
    expect(page.locator("[data-chart=memory]")).to_be_visible()
    expect(page.locator(MEMORY_FOOT)).to_contain_text("peak 4 KiB")
    # the try: the block called directly, then compared with the checkpointed run
    source = page.evaluate("() => window.gradwalk.editor.source")
    run_source(page, source.replace(CHECKPOINTED, "y = block(x)"))
    expect(page.locator(".gw-output")).to_contain_text("block runs\nx.grad norm 17.6053")
    expect(page.locator(".gw-output")).not_to_contain_text("block runs\nblock runs")
    page.click("#gw-tab-charts")
    page.check("input[aria-label='Compare with the run before']")
    expect(page.locator(MEMORY_FOOT)).to_contain_text("this run: first 8 KiB → last 0 B · peak 12 KiB")
    expect(page.locator("[data-chart=memory] .gw-chart-foot-base")).to_contain_text(
        "run before (dashed): first 4 KiB → last 0 B · peak 4 KiB"
    )
    shot(page, "lessons-checkpoint-try")


def test_the_inference_mode_lesson_shows_the_unrecorded_encoder_and_the_error_naming_feats(
    page: Any,
) -> None:
    opened_at(page, "inference-mode")
    page.wait_for_selector("[data-gw=status][data-state=error]", timeout=60_000)
    expect(page.locator("[role=tab][data-view=tape]")).to_have_attribute("aria-selected", "true")
    encoder = page.locator(".gw-tape .gw-op-row", has_text="linear")
    expect(encoder).to_contain_text("→ feats")
    expect(encoder.locator(".gw-badge-nograd")).to_have_text("inference_mode")
    widget = page.locator(".cm-gw-error-widget")
    expect(widget).to_have_attribute("data-line", "19")
    expect(widget.locator(".cm-gw-error-hint")).to_contain_text(
        "feats was made under torch.inference_mode() (line 14)"
    )
    expect(widget.locator(".cm-gw-error-hint")).to_contain_text("feats = feats.clone()")
    expect(page.locator(".gw-graph-empty")).to_contain_text("the run stopped on RuntimeError at line 19")
    shot(page, "lessons-inference-mode")


def test_the_batch_norm_lesson_opens_where_one_rows_gradient_reaches_every_row(page: Any) -> None:
    card = opened_at(page, "batch-norm", "step 3 of 7")
    expect(card).to_contain_text("Each column sums to 0")
    step = page.locator(STEP_CARD)
    expect(step.locator(".gw-node-name")).to_have_text("NativeBatchNormBackward0")
    expect(step).to_contain_text("[[1, 1],\n [0, 0],\n [0, 0],\n [0, 0]]")  # what arrived: row 0 only
    expect(step).to_contain_text("[−0.2971, −0.2105]]")  # what it sends x: every row
    expect(step).to_contain_text("out 1 → bn.weight.grad")
    expect(page.locator(".gw-output")).to_contain_text("[-0.2971, -0.2105]])")
    shot(page, "lessons-batch-norm")
    # the try: eval() normalises with the running statistics, and only row 0 gets a gradient
    source = page.evaluate("() => window.gradwalk.editor.source")
    run_source(page, source.replace("out = bn(x)\n", "bn.eval()\nout = bn(x)\n"))
    expect(page.locator(".gw-output")).to_contain_text("tensor([[1.0000, 1.0000],\n        [0.0000, 0.0000],")
