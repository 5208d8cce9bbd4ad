"""The session's silent-bug pitfalls as a learner meets them in a real Chromium against a real
server: the torch.tensor([...]) example's card at its line, with torch.stack in the fix, and
a classifier whose nn.Softmax feeds nn.NLLLoss, flagged at the loss's line; and the
inspector's word on the example's two AccumulateGrad nodes for one leaf."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ROOT, expect, open_app, run_example, run_source, shot, stored_run

pytestmark = pytest.mark.browser

SOFTMAX_INTO_NLL = (
    "import torch, torch.nn as nn\ntorch.manual_seed(0)\n"
    "model = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "X, Y = torch.randn(32, 4), torch.randint(0, 3, (32,))\n"
    "for i in range(5):\n    opt.zero_grad()\n    loss = nn.NLLLoss()(model(X), Y)\n"
    "    loss.backward()\n    opt.step()\n"
)


def test_the_tensor_copy_example_shows_its_pitfall_at_the_copy_with_torch_stack(page: Any) -> None:
    open_app(page)
    run_example(page, "pitfall_tensor_copy")
    expect(page.locator(".cm-gw-pitfall-widget")).to_have_attribute("data-line", "7")
    card = page.locator(".gw-notice-pitfall[data-kind=tensor-copied-off-graph]")
    expect(card).to_contain_text("torch.tensor(…) copies values off the graph")
    expect(card).to_contain_text("v = torch.stack([a * b, a + b])")
    expect(page.locator(".gw-stdout").first).to_contain_text("tensor(1.) None")
    shot(page, "tensor-copy-pitfall")


def test_softmax_into_nll_loss_is_flagged_at_the_loss_with_its_negative_value(page: Any) -> None:
    open_app(page)
    run_source(page, SOFTMAX_INTO_NLL)
    expect(page.locator(".cm-gw-pitfall-widget")).to_have_attribute("data-line", "8")
    card = page.locator(".gw-notice-pitfall[data-kind=nll-loss-without-log-softmax]")
    expect(card).to_contain_text("nll_loss given probabilities, not log-probabilities")
    expect(card).to_contain_text("nn.LogSoftmax(dim=1)")


def test_a_leaf_with_two_accumulate_grad_nodes_says_why_in_the_inspector(page: Any, server: Any) -> None:
    # The copy example's graph shows two "AccumulateGrad → a.grad" boxes (the first, held
    # only by the discarded a * b and a + b, was freed; "+ a" made another) and nothing said why.
    run = stored_run(server, (ROOT / "server/examples/pitfall_tensor_copy.py").read_text())
    page.goto(f"{server.url}/?run={run}&view=inspector&sel=n0")
    body = page.locator(".gw-inspector-body")
    note = body.locator(".gw-inspect-note")
    expect(body.locator(".gw-facts dt").first).to_have_text("leaf")  # it outputs nothing
    expect(note).to_contain_text("a has 2 AccumulateGrad nodes; this is number 1.")
    expect(note).to_contain_text("Each adds into the same a.grad. The others: node 4 (line 8).")
    shot(page, "two-accumulators")
    note.locator("button.gw-ref", has_text="node 4").click()
    expect(note).to_contain_text("this is number 2.")
    expect(body).to_contain_text("in backward 1")  # the one the walk ran
    # the leaf's card links both; b, which has one, gets no note
    page.goto(f"{server.url}/?run={run}&view=inspector&sel=t0")
    expect(body.locator(".gw-facts")).to_contain_text("node 0 (line 7), node 4 (line 8)")
    page.goto(f"{server.url}/?run={run}&view=inspector&sel=n1")
    expect(body.locator(".gw-inspect-title")).to_contain_text("AccumulateGrad")
    expect(note).to_have_count(0)
