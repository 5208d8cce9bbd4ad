"""non-finite-gradient in a real Chromium against a real server: the node a NaN came out of is
ringed on the graph and noted on its step of the walk; found in a step recorded metrics-only,
the card records that iteration in full on request, and the node is then named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine import record
from tests.conftest import case_source

from .conftest import card_of, expect, load_trace, open_app, record_in_full, run_example, run_source, shot

pytestmark = pytest.mark.browser

TITLE = "A gradient became NaN in backward, though the loss is finite"
RINGED = "() => window.gradwalk.graph.core.$('.gw-pitfall').map((n) => n.data('label') || n.id())"

# minimising √w walks w past 0 at the fifth step, which runs metrics-only
PAST_ZERO_AT_STEP_5 = (
    "import torch\n\nw = torch.tensor([1.0], requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.5)\n"
    "for step in range(8):\n    opt.zero_grad()\n    loss = torch.where(w > 0, w.sqrt(), 0.0).sum()\n"
    "    loss.backward()\n    opt.step()\nprint(w)\n"
)


def test_the_node_a_nan_gradient_came_out_of_is_ringed_and_noted_on_its_step(page: Any) -> None:
    open_app(page)
    run_example(page, "pitfall_nan_gradient")
    expect(page.locator(".cm-gw-pitfall-widget")).to_have_attribute("data-line", "5")
    card = page.locator(".gw-notice-pitfall[data-kind=non-finite-gradient]")
    expect(card).to_contain_text(TITLE)
    expect(card).to_contain_text("It first did in SqrtBackward0")
    expect(card.locator(".gw-pitfall-graph")).to_have_text("ringed on the graph: 1 node")
    expect(card.locator(".gw-metrics-only")).to_have_count(0)  # recorded in full: nothing to ask
    ringed = page.evaluate(RINGED)
    assert len(ringed) == 1 and ringed[0].startswith("SqrtBackward0"), ringed

    page.locator("#gw-tab-stepper").click()
    # the walk's item at that node carries a ⚠ (it was listed before the pitfall arrived)
    marked = page.locator(".gw-walk-item:has(.gw-walk-pitfall)")
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text("SqrtBackward0")
    expect(marked.locator(".gw-walk-pitfall")).to_have_attribute("title", TITLE)
    for name in ("WhereBackward0", "SqrtBackward0"):
        page.locator(".gw-walk-item", has_text=name).click()
        step_card = page.locator(".gw-step-card")
        expect(step_card.locator(".gw-node-name")).to_contain_text(name)
        # the note is on the node the NaN came out of, and on no other
        expect(step_card.locator(".gw-note-pitfall")).to_have_count(1 if name == "SqrtBackward0" else 0)
    note = page.locator(".gw-step-card .gw-note-pitfall")
    expect(note.locator("summary")).to_have_text(f"⚠{TITLE}")
    expect(note.locator(".gw-pitfall-message")).to_be_hidden()
    note.locator("summary").click()
    expect(note.locator(".gw-pitfall-message")).to_contain_text("0 × ∞ (or 0 × NaN) is NaN")
    expect(page.locator(".gw-step-card .gw-numbers")).to_contain_text("NaN, NaN, 0.25")
    shot(page, "nan-gradient-step")


def test_a_nan_gradient_in_a_metrics_only_step_is_named_once_recorded_in_full(page: Any) -> None:
    open_app(page)
    run_source(page, PAST_ZERO_AT_STEP_5)
    card = page.locator(".gw-notice-pitfall[data-kind=non-finite-gradient]")
    expect(card).to_contain_text("At optimizer step 5 the gradient norm is nan")
    expect(card.locator(".gw-metrics-only")).to_contain_text("after optimizer step 4")
    assert page.evaluate(RINGED) == []
    record_in_full(page, card)
    card = page.locator(".gw-notice-pitfall[data-kind=non-finite-gradient]")
    expect(card).to_contain_text("It first did in SqrtBackward0, the backward of sqrt at line 7")
    expect(card.locator(".gw-metrics-only")).to_have_count(0)
    expect(page.locator(".cm-gw-pitfall-widget")).to_have_attribute("data-line", "7")
    shot(page, "nan-gradient-recorded-in-full")


def test_a_pitfall_that_arrives_after_its_nodes_item_marks_it_then(page: Any) -> None:
    """Streamed, the walk may list a node before the pitfall about it comes: the ⚠ and the
    card's note follow when it does."""
    # as the server sends it: NaN as the string "NaN"
    events = json.loads(record(case_source("pitfall_nan_gradient.py")).model_dump_json())["events"]
    cut = next(i for i, e in enumerate(events) if e["type"] == "pitfall")
    open_app(page, "?view=stepper")
    load_trace(page, {"events": events[:cut]})
    card = card_of(page, "SqrtBackward0")
    expect(page.locator(".gw-walk-pitfall")).to_have_count(0)
    expect(card.locator(".gw-note-pitfall")).to_have_count(0)
    page.evaluate("(rest) => window.gradwalk.model.ingest(rest)", events[cut:])
    expect(page.locator(".gw-walk-item:has(.gw-walk-pitfall)")).to_contain_text("SqrtBackward0")
    expect(card.locator(".gw-note-pitfall summary")).to_have_text(f"⚠{TITLE}")
