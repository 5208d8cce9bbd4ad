"""What the stepper's cards say for the ops a course's snippets use beyond the first audit
(test_stepper_audit.py): logistic regression by hand and its library losses, clamp and relu
at their bound, max and maximum with ties, var / std / norm, softplus, smooth L1, 1 / b,
repeat. Each expected number is PyTorch's own gradient (the card's right-hand side is what
the engine passed), worked out by hand in the comments; each rule is the derivative PyTorch
uses, special points included.

Each test runs a snippet on the real server, opens it in the stepper, clicks a node in the
walk and reads the card, as a student would.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import expect, shot
from .test_stepper_audit import open_stepper

pytestmark = pytest.mark.browser


def card_at(page: Any, node: str, nth: int = 0) -> Any:
    """Click the ``nth`` walk item that is exactly ``node`` (``MaxBackward0``, not
    ``AmaxBackward0``); return the card."""
    exact = re.compile(rf"^\s*\d+\s*{re.escape(node)}\s*$")
    page.locator(".gw-walk-item").filter(has_text=exact).nth(nth).click()
    card = page.locator(".gw-step-card")
    expect(card.locator(".gw-node-name")).to_have_text(node)
    return card


def card_saying(page: Any, node: str, summary: str) -> Any:
    """Click the walk item ``node`` whose card's summary contains ``summary`` (of several
    nodes of one name); return the card."""
    exact = re.compile(rf"^\s*\d+\s*{re.escape(node)}\s*$")
    for nth in range(page.locator(".gw-walk-item").filter(has_text=exact).count()):
        card = card_at(page, node, nth)
        if summary in card.locator(".gw-step-summary").inner_text():
            return card
    raise AssertionError(f"no {node} card says {summary!r}")


def test_a_compound_factor_is_bracketed_in_logistic_regression(page: Any) -> None:
    # the loss by hand: −mean(y·log p + (1 − y)·log(1 − p)). The cards said
    # "grad · 1 − y" and "grad / 1 − p", which read as grad − y and grad − p.
    open_stepper(
        page,
        "import torch\nx = torch.tensor([[1.0, 2.0], [-1.0, 0.5], [0.0, -2.0]])\n"
        "y = torch.tensor([1.0, 0.0, 1.0])\nw = torch.tensor([0.5, -0.25], requires_grad=True)\n"
        "b = torch.tensor(0.1, requires_grad=True)\nz = x @ w + b\np = torch.sigmoid(z)\n"
        "loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()\nloss.backward()\n",
    )
    # z = [0.1, −0.525, 0.6]; p = σ(z) = [0.525, 0.3717, 0.6457]; grad = −1/3 per row
    card = card_at(page, "MulBackward0")
    expect(card).to_contain_text("∂loss/∂(log(1 − p)) = grad · (1 − y) = [0, −0.3333, 0]")
    card = card_at(page, "LogBackward0")
    # −1/3 / (1 − 0.3717) = −0.5305
    expect(card).to_contain_text("∂loss/∂(1 − p) = grad / (1 − p) = [0, −0.5305, 0]")
    shot(page, "hunt2-logreg")


def test_the_library_bce_losses_write_their_derivative(page: Any) -> None:
    # F.binary_cross_entropy(p, y): (p − y) / (p(1 − p)) / N; with logits: (σ(z) − y) / N.
    # Both fell to "BinaryCrossEntropyBackward0: the gradient in, the gradients out".
    open_stepper(
        page,
        "import torch\nimport torch.nn.functional as F\n"
        "z = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\ny = torch.tensor([1.0, 0.0, 1.0])\n"
        "p = torch.sigmoid(z)\nloss = F.binary_cross_entropy(p, y) + F.binary_cross_entropy_with_logits(z, y)\n"
        "loss.backward()\n",
    )
    # p = [0.6225, 0.2689, 0.8808]: (0.6225 − 1) / (0.6225 · 0.3775) / 3 = −0.5355
    card = card_at(page, "BinaryCrossEntropyBackward0")
    expect(card).to_contain_text("out = mean(−(y · log p + (1 − y) · log(1 − p)))")
    expect(card).to_contain_text(
        "∂loss/∂p = grad · (p − y) / (p · (1 − p)) / N (N = 3) = [−0.5355, 0.456, −0.3784]"
    )
    # (0.6225 − 1) / 3 = −0.1258: the same as going through the sigmoid node
    card = card_at(page, "BinaryCrossEntropyWithLogitsBackward0")
    expect(card).to_contain_text("∂loss/∂z = grad · (σ(z) − y) / N (N = 3) = [−0.1258, 0.08965, −0.03973]")
    expect(card.locator(".gw-step-summary")).not_to_contain_text("the gradient in, the gradients out")
    shot(page, "hunt2-bce")


def test_clamp_min_names_its_one_bound_and_passes_the_gradient_at_it(page: Any) -> None:
    # x.clamp(min=0) saves no max: the card said "out = clamp(x, 0, max)" and "inside
    # [0, max]". At x = 0 clamp passes the gradient (x ≥ min) where relu does not.
    open_stepper(
        page,
        "import torch\nx = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)\n"
        "m = x.clamp(min=0)\nk = x.clamp(max=1.5)\n"
        "loss = (m * 3).sum() + (k * 5).sum() + torch.relu(x).sum()\nloss.backward()\n",
    )
    card = card_saying(page, "ClampBackward1", "min=")
    expect(card).to_contain_text("out = clamp(x, min=0)")
    expect(card).to_contain_text(
        "∂loss/∂x = grad where x ≥ 0 (the bound included), 0 where it was clamped = [0, 3, 3]"
    )
    expect(card).not_to_contain_text("max")
    card = card_saying(page, "ClampBackward1", "max=")
    expect(card).to_contain_text("out = clamp(x, max=1.5)")
    expect(card).to_contain_text(
        "∂loss/∂x = grad where x ≤ 1.5 (the bound included), 0 where it was clamped = [5, 5, 0]"
    )
    # relu at 0 sends 0
    expect(card_at(page, "ReluBackward0")).to_contain_text("∂loss/∂x = grad · [out > 0] = [0, 0, 1]")
    shot(page, "hunt2-clamp")


def test_max_and_amax_share_a_tie_and_max_dim_routes_to_its_index(page: Any) -> None:
    # x.max() and amax split a tie evenly (5 twice: 0.5 each); max(dim=0) sends the whole
    # gradient to the index it returned. The card said "grad at each maximum's position"
    # (a full grad to each tie) and amax fell to the generic "the gradient in, ... out".
    open_stepper(
        page,
        "import torch\nx = torch.tensor([[1.0, 5.0, 5.0], [4.0, 2.0, 0.0]], requires_grad=True)\n"
        "a = x.max()\nv, i = x.max(dim=0)\nc = torch.amax(x, dim=1)\nloss = a + v.sum() + c.sum()\n"
        "loss.backward()\n",
    )
    card = card_at(page, "MaxBackward1")
    expect(card).to_contain_text(
        "∂loss/∂x = grad at the maximum, 0 elsewhere (k tied maxima share it: grad / k each)"
        " = [[0, 0.5, 0.5], [0, 0, 0]]"
    )
    card = card_at(page, "AmaxBackward0")
    expect(card).to_contain_text("out = amax(x, dim=1)")
    expect(card).to_contain_text("(k tied maxima share it: grad / k each) = [[0, 0.5, 0.5], [1, 0, 0]]")
    card = card_at(page, "MaxBackward0")
    expect(card).to_contain_text("out = max(x, dim=0)")
    expect(card).to_contain_text("grad at the index max(dim) returned, 0 elsewhere")
    shot(page, "hunt2-max-ties")


def test_maximum_halves_the_gradient_at_a_tie(page: Any) -> None:
    # torch.maximum(x, y) at x = [1, 3, −2], y = [2, 3, −5]: x wins the last, y the first,
    # they tie at 3 and share it. The card was the generic "∂loss/∂x ← [0, 0.5, 1]".
    open_stepper(
        page,
        "import torch\nx = torch.tensor([1.0, 3.0, -2.0], requires_grad=True)\n"
        "y = torch.tensor([2.0, 3.0, -5.0], requires_grad=True)\nloss = torch.maximum(x, y).sum()\n"
        "loss.backward()\n",
    )
    card = card_at(page, "MaximumBackward0")
    expect(card).to_contain_text("out = maximum(x, y) elementwise")
    expect(card).to_contain_text(
        "∂loss/∂x = grad where x > y, grad / 2 where they tie, 0 elsewhere = [0, 0.5, 1]"
    )
    expect(card).to_contain_text(
        "∂loss/∂y = grad where y > x, grad / 2 where they tie, 0 elsewhere = [1, 0.5, 0]"
    )


def test_norm_var_and_std_name_their_input_and_divisor(page: Any) -> None:
    # w.norm() at w = [3, −4]: w / ‖w‖ = [0.6, −0.8]; the card said "grad · x / ‖x‖" for w.
    # x.var() at x = [1, 2, 3, 6] (mean 3): 2(x − 3) / 3; it was the generic fallback.
    # var(unbiased=False) divides by N, not N − 1.
    open_stepper(
        page,
        "import torch\nw = torch.tensor([3.0, -4.0], requires_grad=True)\n"
        "x = torch.tensor([1.0, 2.0, 3.0, 6.0], requires_grad=True)\n"
        "m = torch.tensor([[1.0, 4.0], [3.0, 2.0]], requires_grad=True)\n"
        "loss = w.norm() + x.var() + x.std() + m.var(dim=0, unbiased=False).sum()\nloss.backward()\n",
    )
    card = card_at(page, "LinalgVectorNormBackward0")
    expect(card).to_contain_text("out = ‖w‖")
    expect(card).to_contain_text("∂loss/∂w = grad · w / ‖w‖ (0 where ‖w‖ = 0) = [0.6, −0.8]")
    card = card_saying(page, "VarBackward0", "var(x)")
    expect(card).to_contain_text("∂loss/∂x = grad · 2(x − mean) / (N − 1) (N = 4) = [−1.333, −0.6667, 0, 2]")
    # std = √(14/3) = 2.160: (1 − 3) / (3 · 2.160) = −0.3086
    card = card_at(page, "StdBackward0")
    expect(card).to_contain_text(
        "∂loss/∂x = grad · (x − mean) / ((N − 1) · std) (N = 4) = [−0.3086, −0.1543, 0, 0.4629]"
    )
    # columns [1, 3] and [4, 2], mean 2 and 3: 2(x − mean) / 2
    card = card_saying(page, "VarBackward0", "var(m, dim=0)")
    expect(card).to_contain_text("out = var(m, dim=0) = Σ(m − mean)² / N")
    expect(card).to_contain_text("∂loss/∂m = grad · 2(m − mean) / N (N = 2) = [[−1, 1], [1, −1]]")
    shot(page, "hunt2-var")


def test_softplus_smooth_l1_and_log_softmax_name_the_input(page: Any) -> None:
    # softplus' derivative is σ(x); smooth L1's is clamp(d / β, −1, 1) / N; both were the
    # generic fallback. log_softmax of `logits` wrote "softmax(x)".
    open_stepper(
        page,
        "import torch\nimport torch.nn.functional as F\nx = torch.tensor([-1.0, 0.0, 1.5], requires_grad=True)\n"
        "t = torch.tensor([1.0, 0.0, 0.5])\nlogits = torch.tensor([[2.0, 1.0, 0.1]], requires_grad=True)\n"
        "loss = F.softplus(x).sum() + F.smooth_l1_loss(x, t) + F.nll_loss(F.log_softmax(logits, dim=1), torch.tensor([0]))\n"
        "loss.backward()\n",
    )
    # σ(−1), σ(0), σ(1.5)
    expect(card_at(page, "SoftplusBackward0")).to_contain_text(
        "∂loss/∂x = grad · σ(x) (grad itself where x > 20) = [0.2689, 0.5, 0.8176]"
    )
    # d = x − t = [−2, 0, 1]: clamp(d, −1, 1) / 3
    card = card_at(page, "SmoothL1LossBackward0")
    expect(card).to_contain_text("with d = x − t")
    expect(card).to_contain_text("∂loss/∂x = grad · clamp(d / β, −1, 1) / N (N = 3) = [−0.3333, 0, 0.3333]")
    expect(card_at(page, "LogSoftmaxBackward0")).to_contain_text(
        "∂loss/∂logits = grad − softmax(logits) · Σ grad (Σ over dim 1)"
    )


def test_one_over_b_reciprocal_and_repeat(page: Any) -> None:
    # 1 / b runs as reciprocal(b) times 1: the Mul said "grad · other" and the reciprocal
    # was the generic fallback; x.repeat(2) too. Its 12-element gradient was shown only as
    # "[12] ‖·‖ 22.49" in the table of what the engine passed.
    open_stepper(
        page,
        "import torch\nb = torch.tensor([3.0, 4.0], requires_grad=True)\n"
        "x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)\n"
        "loss = (1 / b).sum() + (x.repeat(2) * torch.arange(12.0)).sum() + torch.sqrt(x + 3).sum()\n"
        "loss.backward()\n",
    )
    card = card_saying(page, "MulBackward0", "reciprocal")
    expect(card).to_contain_text("PyTorch computes 1 / b as 1 times the reciprocal 1 / b")
    expect(card).to_contain_text("= grad · 1 = [1, 1]")
    # −1 / 3², −1 / 4²
    card = card_at(page, "ReciprocalBackward0")
    expect(card).to_contain_text("out = 1 / b")
    expect(card).to_contain_text("∂loss/∂b = −grad / b² = [−0.1111, −0.0625]")
    # the gradient of e = x.repeat(2) is arange(12): each x gets i + (i + 6)
    card = card_at(page, "RepeatBackward0")
    expect(card).to_contain_text("out = x.repeat(2)")
    expect(card).to_contain_text("∂loss/∂x = grad summed over the copies → [6] = [6, 8, 10, 12, 14, 16]")
    expect(card.locator(".gw-numbers")).to_contain_text("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]")
    # √(x + 3): the rule named "a", which nothing on the card is called
    expect(card_at(page, "SqrtBackward0")).to_contain_text("= grad / (2 · √(x + 3)) = [0.25, 0.2236")
    shot(page, "hunt2-repeat")


def test_where_names_its_condition_and_leaky_relu_its_slope(page: Any) -> None:
    # torch.where(mask, x, y): the card said "grad where cond holds" of a `mask` the snippet
    # named; leaky_relu was written for an `x` and a `slope` it never gave the value of.
    open_stepper(
        page,
        "import torch\nimport torch.nn.functional as F\nx = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)\n"
        "y = torch.tensor([5.0, 5.0, 5.0], requires_grad=True)\nmask = x > 0\n"
        "loss = torch.where(mask, x, y).sum() + F.leaky_relu(y - 6, 0.1).sum()\nloss.backward()\n",
    )
    card = card_at(page, "WhereBackward0")
    expect(card).to_contain_text("out = where(mask, a, b)")
    expect(card).to_contain_text("∂loss/∂x = grad where mask holds, 0 elsewhere = [0, 0, 1]")
    expect(card).to_contain_text("∂loss/∂y = grad where mask fails, 0 elsewhere = [1, 1, 0]")
    # y − 6 = −1 everywhere: slope · grad
    card = card_at(page, "LeakyReluBackward0")
    expect(card).to_contain_text("(slope = 0.1)")
    expect(card).to_contain_text("= grad where (y − 6) > 0, slope · grad elsewhere = [0.1, 0.1, 0.1]")


def test_split_pieces_are_named_by_output_and_relu6_excludes_its_bounds(page: Any) -> None:
    # a, b = x.split(2): the card of a * 3 said "∂loss/∂b = grad · 3" (every edge into the
    # split node was named after its last output), and the split node's card said "the sum
    # of 2 paths" of two outputs' gradients. relu6 (hardtanh) sends 0 at 0 and at 6, where
    # clamp sends grad; round was the generic fallback.
    open_stepper(
        page,
        "import torch\nimport torch.nn.functional as F\nx = torch.tensor([-1.0, 0.0, 6.0, 3.0], requires_grad=True)\n"
        "a, b = x.split(2)\ny = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)\nlo, hi = y.chunk(2)\n"
        "loss = (a * 3).sum() + (b * 2).sum() + F.relu6(x).sum() + torch.round(x).sum() + (lo * 5).sum()\n"
        "loss.backward()\n",
    )
    texts = [card_at(page, "MulBackward0", nth).inner_text() for nth in range(3)]
    assert any("∂loss/∂a = grad · 3 = [3, 3]" in t for t in texts), texts
    assert any("∂loss/∂b = grad · 2 = [2, 2]" in t for t in texts), texts
    assert not any("∂loss/∂b = grad · 3" in t for t in texts), texts
    card = card_saying(page, "SplitBackward0", "pieces of x")
    expect(card.locator(".gw-incoming")).to_have_text("grad: ∂loss/∂a = [3, 3]; ∂loss/∂b = [2, 2]")
    expect(card).to_contain_text("∂loss/∂x = each piece's grad put back in its place")
    card = card_saying(page, "SplitBackward0", "pieces of y")
    expect(card.locator(".gw-incoming")).to_have_text(
        "grad: ∂loss/∂lo = [5, 5]; ∂loss/∂hi = none reached it (zeros)"
    )
    card = card_at(page, "HardtanhBackward0")
    expect(card).to_contain_text(
        "∂loss/∂x = grad where 0 < x < 6 (the bounds excluded, unlike clamp), 0 elsewhere = [0, 0, 0, 1]"
    )
    expect(card_at(page, "RoundBackward0")).to_contain_text(
        "∂loss/∂x = 0 (round is flat between its jumps: no gradient passes) = [0, 0, 0, 0]"
    )
    shot(page, "hunt2-split")


def test_a_compound_base_is_bracketed_in_the_power_rule(page: Any) -> None:
    # mse by hand, ((x − 1.5) ** 2).mean(): the card said "grad · 2 · x − 1.5", which reads
    # as (grad · 2 · x) − 1.5; and (y + 1) ** 3 said "grad · 3 · y + 1²"
    open_stepper(
        page,
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = torch.tensor(3.0, requires_grad=True)\n"
        "loss = ((x - 1.5) ** 2).mean() + (y + 1) ** 3\nloss.backward()\n",
    )
    # grad = 1/2 per element: 0.5 · 2 · (x − 1.5) = [−0.5, 0.5]; 3 · 4² = 48
    card = card_saying(page, "PowBackward0", "a**2")
    expect(card).to_contain_text("∂loss/∂(x − 1.5) = grad · 2 · (x − 1.5) = [−0.5, 0.5]")
    card = card_saying(page, "PowBackward0", "a**3")
    expect(card).to_contain_text("∂loss/∂(y + 1) = grad · 3 · (y + 1)² = 1 × 3 × 4² = 48")


def test_a_matrix_in_the_numbers_table_sits_under_its_name_one_row_a_line(page: Any) -> None:
    # A [16x2] gradient beside its name had half the card: each of its rows broke over two
    # lines. A matrix now goes under its name, across the card; a number that fits a line
    # still sits beside its name, on the name's line (centred beside a [5x16] gradient,
    # "grad in" once sat half a screen below the numbers' first line)
    open_stepper(
        page,
        "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"
        "fc = nn.Linear(4, 2)\nx = torch.randn(16, 4)\nloss = (fc(x) * 1e-3).sum()\nloss.backward()\n",
    )
    card_at(page, "AddmmBackward0")
    rows = page.evaluate(
        """() => [...document.querySelectorAll('.gw-step-card .gw-numbers tr')].map((row) => {
            // where each cell's text is drawn, and in how many lines
            const text = (cell) => {
                const range = document.createRange();
                range.selectNodeContents(cell);
                return range;
            };
            const cell = row.querySelector('td') ?? row.querySelector('th');
            const range = text(cell);
            const box = range.getBoundingClientRect();
            const name = row.querySelector('th');
            return {kind: row.className, text: cell.textContent, top: box.top, bottom: box.bottom,
                    nameTop: name ? text(name).getBoundingClientRect().top : null,
                    headedBy: cell.hasAttribute('headers') ? document.getElementById(cell.getAttribute('headers'))?.textContent : null,
                    lines: new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size,
                    width: cell.getBoundingClientRect().width, table: row.closest('table').getBoundingClientRect().width};
        })"""
    )
    kinds = [r["kind"] for r in rows]
    # grad in: the [16x2] gradient of fc(x) * 1e-3's sum, 1e-3 everywhere, under its name
    at = kinds.index("gw-matrix")
    name, matrix = rows[at - 1], rows[at]
    assert name["kind"] == "gw-matrix-name" and name["text"] == "grad in", rows
    assert matrix["text"].count("\n") == 15 and matrix["text"].startswith("[[0.001, 0.001],"), matrix
    assert matrix["lines"] == 16, matrix  # one line per row of the matrix
    assert abs(name["bottom"] - matrix["top"]) <= 8, (name, matrix)
    assert matrix["headedBy"] == "grad in", matrix  # what a screen reader names it by
    assert matrix["width"] >= 0.95 * matrix["table"], matrix
    # a row that fits a line keeps its name beside it, on the same line
    beside = [r for r in rows if r["kind"] == ""]
    assert beside, rows
    for row in beside:
        assert row["lines"] == 1 and abs(row["nameTop"] - row["top"]) <= 2, row
