"""Pitfalls and error hints in a real Chromium against a real server: at their line, in the
output panel and on the graph."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from .conftest import ROOT, expect, open_app, run_example, shot

pytestmark = pytest.mark.browser

RINGED = "() => window.gradwalk.graph.core.$('.gw-pitfall').map((n) => n.data('label') || n.id())"


def test_broadcast_pitfall_at_line_9_with_its_explanation_and_fix(page: Any) -> None:
    open_app(page)
    run_example(page, "pitfall_broadcast_loss")

    line = page.locator(".cm-line.cm-gw-pitfall-line")
    expect(line).to_have_count(1)
    expect(line).to_contain_text("loss = ((pred - y) ** 2).mean()")
    marker = page.locator(".cm-gw-pitfall-gutter .cm-gw-pitfall-marker")
    expect(marker).to_have_count(1)
    expect(marker).to_have_attribute(
        "title", "Shapes (32, 1) and (32,) broadcast to (32, 32)\n(click for the explanation and the fix)"
    )

    widget = page.locator(".cm-gw-pitfall-widget")
    expect(widget).to_have_attribute("data-line", "9")
    expect(widget).to_contain_text("Shapes (32, 1) and (32,) broadcast to (32, 32)")
    message = widget.locator(".cm-gw-pitfall-message")
    fix = widget.locator(".cm-gw-pitfall-fix")
    expect(message).to_be_hidden()
    # The gutter marker opens the explanation and the fix under the line.
    marker.click()
    expect(message).to_be_visible()
    expect(message).to_contain_text("32×32 = 1024 terms instead of 32")
    expect(fix).to_contain_text("Fix: Make the shapes match: pred.squeeze(-1)")
    shot(page, "pitfalls-01-broadcast-at-line-9")
    # ... and clicking its title closes it again.
    widget.locator("summary").click()
    expect(message).to_be_hidden()

    # Hovering the line shows the same explanation in a tooltip.
    line.hover()
    tip = page.locator(".cm-gw-pitfall-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("1024 terms")
    expect(tip).to_contain_text("pred.squeeze(-1)")
    shot(page, "pitfalls-02-broadcast-tooltip")
    page.mouse.move(5, 5)

    card = page.locator(".gw-notice-pitfall")
    expect(card).to_have_count(1)
    expect(card).to_have_attribute("data-line", "9")
    expect(card).to_have_attribute("data-kind", "broadcast-in-loss")
    expect(card).to_contain_text("line 9")
    expect(card).to_contain_text("1024 terms instead of 32")
    expect(card).to_contain_text("Fix: Make the shapes match")

    # On the graph: the pitfall names no tensor, so the nodes its line built are ringed.
    ringed = page.evaluate(RINGED)
    assert any("SubBackward0" in label for label in ringed), ringed
    assert all(
        page.evaluate(
            "(id) => window.gradwalk.model.nodeLine(Number(id.slice(1)))",
            n,
        )
        == 9
        for n in page.evaluate("() => window.gradwalk.graph.core.$('.gw-pitfall').map((n) => n.id())")
    )
    # Hovering the card lights its line in the editor and its nodes on the graph.
    card.hover()
    expect(page.locator(".cm-line.cm-gw-linked")).to_contain_text("loss = ((pred - y)")
    linked = page.evaluate("() => window.gradwalk.graph.core.$('.linked.gw-pitfall').length")
    assert linked >= 1
    shot(page, "pitfalls-03-broadcast-card-hovered")

    # The marks belong to the code that ran: editing it clears them.
    page.evaluate(
        "() => { const v = window.gradwalk.editor.view; v.dispatch({ changes: { from: 0, insert: '# edited\\n' } }); }"
    )
    expect(page.locator(".cm-gw-pitfall-widget")).to_have_count(0)
    expect(page.locator(".cm-gw-pitfall-line")).to_have_count(0)


def test_parameters_never_optimized_are_ringed_on_the_graph(page: Any) -> None:
    open_app(page)
    run_example(page, "pitfall_unregistered_layers")
    widget = page.locator(".cm-gw-pitfall-widget")
    expect(widget).to_have_attribute("data-line", "10")
    expect(widget).to_contain_text("Parameters get gradients but never train")
    pitfall = page.evaluate("() => window.gradwalk.model.pitfalls[0]")
    assert pitfall["tensors"], pitfall
    ringed = set(page.evaluate("() => window.gradwalk.graph.core.$('.gw-pitfall').map((n) => n.id())"))
    for t in pitfall["tensors"]:
        acc = page.evaluate(f"() => window.gradwalk.model.accumulatorOf({t})")
        assert f"t{t}" in ringed or f"n{acc}" in ringed, (t, ringed)
    expect(page.locator(".gw-pitfall-graph")).to_contain_text("ringed on the graph")
    shot(page, "pitfalls-04-unregistered-layers-ringed")


def test_a_clean_training_loop_shows_no_pitfall(page: Any) -> None:
    open_app(page)
    run_example(page, "clean_training")
    expect(page.locator(".gw-notice-pitfall")).to_have_count(0)
    expect(page.locator(".cm-gw-pitfall-widget")).to_have_count(0)
    assert page.evaluate("() => window.gradwalk.graph.core.$('.gw-pitfall').length") == 0


def test_an_embed_rings_the_pitfall_and_lists_it_with_the_code(page: Any) -> None:
    source = (ROOT / "server" / "examples" / "pitfall_broadcast_loss.py").read_text()
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        run = client.post("/api/runs", json={"source": source}).raise_for_status().json()
        deadline = time.monotonic() + 90
        while client.get(f"/api/runs/{run['id']}").json()["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, "the run never finished"
            time.sleep(0.1)
    page.set_viewport_size({"width": 960, "height": 640})
    page.goto(f"{page.server.url}/embed/{run['id']}?view=code")
    page.wait_for_function(
        "() => window.gradwalkViewer && window.gradwalkViewer.graph.core.$('.gw-pitfall').length >= 1"
    )
    card = page.locator(".gw-viewer .gw-notice-pitfall")
    expect(card).to_have_attribute("data-line", "9")
    expect(card).to_contain_text("Fix: Make the shapes match")
    line = page.locator(".gw-code-line.gw-code-pitfall")
    expect(line).to_have_count(1)
    expect(line).to_have_attribute("data-line", "9")
    expect(line).to_have_attribute("title", "⚠ Shapes (32, 1) and (32,) broadcast to (32, 32)")
    shot(page, "pitfalls-06-embed-code")
