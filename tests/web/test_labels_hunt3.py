"""Node labels and stepper rules for the snippets a course on RNNs and attention shows,
in real Chromium against a real server running real PyTorch."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import card_of, expect, open_app, open_stepper, run_source, shot

pytestmark = pytest.mark.browser

NODE_LABELS = "() => window.gradwalk.graph.core.nodes(':childless').map((n) => n.data('label'))"


def second_lines(page: Any, node_name: str) -> list[str]:
    """The second lines of the graph nodes whose first line is ``node_name``."""
    labels = page.evaluate(NODE_LABELS)
    return [label.split("\n")[1] for label in labels if label.split("\n")[0] == node_name and "\n" in label]


RNN_BY_HAND = """import torch
torch.manual_seed(0)
x = torch.randn(5, 1, 8)
h = torch.zeros(1, 8)
W = torch.randn(8, 8, requires_grad=True)
for t in range(5):
    h = torch.tanh(h @ W + x[t])
loss = h.sum()
loss.backward()
"""


def test_an_rnn_unrolled_by_hand_tells_its_steps_apart(page: Any) -> None:
    # Every tensor the loop line made is bound to `h`: all five TanhBackward0 nodes read
    # `h · [1×8]` and every MmBackward0 `h @ W`, step 1 as step 5. Each is counted as a
    # recurrence is written: h₁ = tanh(h @ W + x[0]), h₂ = tanh(h₁ @ W + x[1]), ...
    open_app(page)
    run_source(page, RNN_BY_HAND)
    assert sorted(second_lines(page, "TanhBackward0")) == [f"h{s} · [1×8]" for s in "₁₂₃₄₅"]
    assert sorted(second_lines(page, "AddBackward0")) == [
        "h @ W + x[0] · [1×8]",
        "h₁ @ W + x[1] · [1×8]",
        "h₂ @ W + x[2] · [1×8]",
        "h₃ @ W + x[3] · [1×8]",
        "h₄ @ W + x[4] · [1×8]",
    ]
    # the tape reads the same: the last step's tanh made h₅, and loss is its sum
    tape = page.locator("[data-gw=tape]")
    expect(tape).to_contain_text("h₄ @ W + x[4] → h₅")
    expect(tape).to_contain_text("h₅ → loss")
    shot(page, "labels-hunt3-rnn-by-hand")


def test_the_stepper_names_each_step_of_a_hand_unrolled_rnn(page: Any) -> None:
    # the walk of the same loop: each MmBackward0 card said "∂loss/∂W = hᵀ @ grad", the
    # same for all five steps; the count reads in a transpose too (h₄ᵀ, not (h₄)ᵀ)
    open_stepper(page, RNN_BY_HAND)
    card = card_of(page, "MmBackward0")
    expect(card).to_contain_text("∂loss/∂h₄ = grad @ Wᵀ")
    expect(card).to_contain_text("∂loss/∂W = h₄ᵀ @ grad")


TRAINING_LOOP = """import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
x = torch.randn(4, 3)
for step in range(3):
    loss = ((x @ w) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
"""


def test_a_training_loop_keeps_its_plain_names(page: Any) -> None:
    # A line that binds `loss` each step does not make it from the last step's loss: its
    # three losses are three graphs, not a recurrence, and keep the name `loss`.
    open_app(page)
    run_source(page, TRAINING_LOOP)
    assert second_lines(page, "MeanBackward0") == ["loss · scalar"] * 3


ATTENTION = """import torch, torch.nn as nn
torch.manual_seed(0)
attn = nn.MultiheadAttention(8, 2, batch_first=True)
x = torch.randn(2, 4, 8)
out, w = attn(x, x, x)
loss = out.sum()
loss.backward()
"""


def test_the_nodes_inside_multi_head_attention_say_what_they_compute(page: Any) -> None:
    # F.multi_head_attention_forward is one recorded op: the nodes it makes inside have no
    # tensor in the trace, and only the few activations naming.ts knew (softmax) had a
    # second line; the two score and value products read just `BmmBackward0`.
    open_app(page)
    run_source(page, ATTENTION)
    labels = page.evaluate(NODE_LABELS)
    bare = [label for label in labels if "\n" not in label and label != "AccumulateGrad"]
    assert bare == [], labels
    assert second_lines(page, "BmmBackward0") == ["#1 … @ … · [4×4×4]", "#2 … @ … · [4×4×4]"]
    assert second_lines(page, "AddmmBackward0") == ["attn.out_proj.bias + … @ … · [8×8]"]
    shot(page, "labels-hunt3-attention-inner-nodes")


RNN_MODULE = """import torch, torch.nn as nn
torch.manual_seed(0)
rnn = nn.RNN(4, 3, batch_first=True)
out, h = rnn(torch.randn(2, 5, 4))
loss = out.sum()
loss.backward()
"""


def test_the_steps_inside_an_nn_rnn_are_counted(page: Any) -> None:
    # nn.RNN runs all its steps in one op: the nodes it makes have no tensor, and its five
    # steps' AddmmBackward0 nodes (b_hh + h @ W_hhᵀ) read just `AddmmBackward0`. Counted in
    # the order the op made them, they read as its steps.
    open_app(page)
    run_source(page, RNN_MODULE)
    assert second_lines(page, "AddmmBackward0") == [
        f"#{k} rnn.bias_hh_l0 + … @ … · [2×3]" for k in range(1, 6)
    ]
    assert sorted(second_lines(page, "TBackward0")) == sorted(
        [f"#{k} rnn.weight_hh_l0ᵀ · [3×3]" for k in range(1, 6)] + ["#6 rnn.weight_ih_l0ᵀ · [4×3]"]
    )
    assert sorted(second_lines(page, "TanhBackward0")) == [f"#{k} tanh(…) · [2×3]" for k in range(1, 6)]


GATES_AND_MASKS = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(2, 5, 4, requires_grad=True)
cell = nn.GRUCell(4, 3)
h = cell(x[:, 0])
attn = nn.MultiheadAttention(4, 2, batch_first=True)
pad = torch.tensor([[False, False, False, True, True]] * 2)
o, _ = attn(x, x, x, key_padding_mask=pad)
causal = torch.ones(5, 5, dtype=torch.bool).tril()
s = F.scaled_dot_product_attention(x, x, x, attn_mask=causal, dropout_p=0.1)
loss = h.sum() + o.sum() + s.sum()
loss.backward()
"""


@pytest.mark.parametrize(
    ("node", "summary"),
    [
        ("UnsafeSplitBackward0", "out = the pieces of x (split, chunk or unbind)"),
        ("BaddbmmBackward0", "out = M + A @ B, batched · the mask or bias M plus a batched product"),
        ("SafeSoftmaxBackward0", "0 in a row masked out entirely (masked attention)"),
        ("ReshapeAliasBackward0", "out = a reshaped"),
    ],
)
def test_gates_and_masked_attention_have_their_rules(page: Any, node: str, summary: str) -> None:
    # A GRU cell chunks its gates (UnsafeSplitBackward0), masked attention adds its mask to
    # the scores (BaddbmmBackward0) and softmaxes them safely (SafeSoftmaxBackward0), and
    # scaled_dot_product_attention's math path reshapes (ReshapeAliasBackward0): each card
    # said "no rule is written out for this op".
    open_stepper(page, GATES_AND_MASKS)
    card = card_of(page, node)
    expect(card.locator(".gw-step-summary")).to_contain_text(summary)
    expect(card).not_to_contain_text("no rule is written out")


INDEXING = """import torch
torch.manual_seed(0)
x = torch.randn(4, 3, requires_grad=True)
index = torch.tensor([[0], [1], [2], [0]])
g = torch.gather(x, 1, index)
s = torch.zeros(4, 3).scatter(1, index, x[:, :1])
sa = torch.zeros(4, 3).scatter_add(1, index, x[:, 1:2])
ia = torch.zeros(5, 3).index_add(0, torch.tensor([0, 0, 1, 4]), x)
masked = x.masked_fill(x < 0, 0.0)
loss = g.sum() + s.sum() + sa.sum() + ia.sum() + masked.sum()
loss.backward()
"""


@pytest.mark.parametrize(
    ("node", "rule"),
    [
        ("GatherBackward0", "∂loss/∂x = grad added back at the places index picked, 0 elsewhere"),
        ("ScatterBackward0", "∂loss/∂(x[:, :1]) = grad gathered from the places src was written to"),
        ("ScatterAddBackward0", "∂loss/∂(x[:, 1:2]) = grad gathered from the places src was added to"),
        ("IndexAddBackward0", "∂loss/∂x = grad's rows at index (index_select)"),
        ("MaskedFillBackward0", "∂loss/∂x = grad where the mask fails, 0 where it holds (those were filled)"),
    ],
)
def test_gather_scatter_and_masking_have_their_rules(page: Any, node: str, rule: str) -> None:
    # what a course shows after plain indexing: each of these cards said "no rule is
    # written out for this op" and only listed PyTorch's numbers
    open_stepper(page, INDEXING)
    card = card_of(page, node)
    expect(card.locator(".gw-rule").first).to_contain_text(rule)
    expect(card).not_to_contain_text("no rule is written out")


DROPOUT = """import torch, torch.nn as nn
torch.manual_seed(0)
x = torch.randn(3, 4, requires_grad=True)
drop = nn.Dropout(0.5)
loss = (drop(x) * 3).sum()
loss.backward()
"""


def test_dropout_reads_as_a_random_mask_not_a_product(page: Any) -> None:
    # On the CPU dropout multiplies by a random mask: its MulBackward0 card read
    # "out = a * b · product rule" and "∂loss/∂x = grad · other", a factor with no name.
    open_stepper(page, DROPOUT)
    page.locator(".gw-walk-item", has_text="MulBackward0").nth(1).click()
    card = page.locator(".gw-step-card")
    expect(card.locator(".gw-step-summary")).to_contain_text("out = dropout(x) = x · mask / (1 − p)")
    expect(card.locator(".gw-rule").first).to_contain_text(
        "∂loss/∂x = grad · mask / (1 − p): scaled where the element was kept, 0 where it was dropped"
    )
