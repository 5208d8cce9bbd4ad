"""The architectures a deep-learning course teaches, recorded and read in the graph and the
stepper in real Chromium: what a node made inside a layer's one op computes, a dim passed
as -1, nn.LSTM's fused node."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import expect, open_stepper, settle, shot

pytestmark = pytest.mark.browser

# a text classifier: embedding, mean pooling, a linear layer, cross-entropy; then attention
TEXT_CLASSIFIER = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
emb, fc = nn.Embedding(10, 8), nn.Linear(8, 2)
attn = nn.MultiheadAttention(8, 2, batch_first=True)
ids = torch.tensor([[1, 2, 3], [4, 5, 1]])
h = emb(ids)
ctx, weights = attn(h, h, h)
logits = fc(ctx.mean(dim=1))
loss = F.cross_entropy(logits, torch.tensor([0, 1]))
loss.backward()
"""

LSTM = """import torch, torch.nn as nn
torch.manual_seed(0)
lstm = nn.LSTM(3, 4)
out, (h, c) = lstm(torch.randn(3, 2, 3))
loss = out.sum()
loss.backward()
"""


def card_of(page: Any, node_name: str) -> Any:
    """Click the first node of the walk called ``node_name`` (not LogSoftmaxBackward0 for
    SoftmaxBackward0); return its card."""
    whole = re.compile(rf"(?<![A-Za-z]){node_name}")
    page.locator(".gw-walk-item", has_text=whole).first.click()
    card = page.locator(".gw-step-card")
    expect(card.locator(".gw-node-name")).to_have_text(whole)
    return card


def node_label(page: Any, name: str) -> str:
    """The graph label of the first grad_fn node called ``name``."""
    label: str = page.evaluate(
        """(name) => window.gradwalk.graph.core.nodes("[kind = 'op']")
            .map((n) => n.data('label')).find((l) => l.split('\\n')[0] === name)""",
        name,
    )
    return label


def test_cross_entropy_and_attention_nodes_say_what_they_compute(page: Any) -> None:
    # LogSoftmaxBackward0 (made inside F.cross_entropy) was a bare name in the graph and
    # "∂loss/∂(LogSoftmaxBackward0's output)" on NllLossBackward0's card; attention's softmax
    # card read "Σ over dim 18446744073709551615" (PyTorch saves dim=-1 unsigned)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    open_stepper(page, TEXT_CLASSIFIER)
    assert node_label(page, "LogSoftmaxBackward0") == "LogSoftmaxBackward0\nlog_softmax(logits) · [2×2]"
    assert node_label(page, "SoftmaxBackward0").startswith("SoftmaxBackward0\nsoftmax(")
    expect(card_of(page, "NllLossBackward0")).to_contain_text("∂loss/∂(log_softmax(logits)) = −grad / N")
    softmax = card_of(page, "SoftmaxBackward0")
    expect(softmax).to_contain_text("(Σ over dim -1)")
    expect(softmax).not_to_contain_text("18446744073709551615")
    settle(page)
    shot(page, "architectures-attention-softmax-card")
    assert errors == []


def test_the_lstm_node_has_its_rule(page: Any) -> None:
    # MkldnnRnnLayerBackward0 (nn.LSTM on the CPU) had "no rule is written out for this op"
    open_stepper(page, LSTM)
    card = card_of(page, "MkldnnRnnLayerBackward0")
    expect(card).to_contain_text("an LSTM layer over every time step in one op")
    expect(card).to_contain_text("∂loss/∂lstm.weight_hh_l0 = Σ over time steps of (gate grads)ₜᵀ @ hₜ₋₁")
    expect(card).not_to_contain_text("no rule")
    settle(page)
    shot(page, "architectures-lstm-card")
