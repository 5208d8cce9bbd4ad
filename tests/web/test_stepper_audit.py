"""What the stepper's cards and the inspector say for snippets beyond the examples, checked
against PyTorch: each expected text was worked out by hand from the snippet (the numbers in
the comments) and compared with a plain PyTorch run.

Each test runs a snippet on the real server, opens it in the stepper, clicks a node in the
walk and reads the card, as a student would.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ROOT, card_of, expect, open_stepper, shot, stored_run

pytestmark = pytest.mark.browser


def test_a_broadcast_input_gets_the_gradient_summed_back_to_its_shape(page: Any) -> None:
    # a [3, 1] + b [1, 4]: grad is twelve ones; a.grad = 4 per row, b.grad = 3 per column.
    # The card said "∂loss/∂a = grad = [[4], [4], [4]]": grad is [3×4], not [[4], [4], [4]].
    open_stepper(
        page,
        "import torch\na = torch.tensor([[1.0], [2.0], [3.0]], requires_grad=True)\n"
        "b = torch.tensor([[10.0, 20.0, 30.0, 40.0]], requires_grad=True)\n"
        "c = a * b\nloss = c.sum()\nloss.backward()\n",
    )
    card = card_of(page, "MulBackward0")
    # a.grad = Σ over the columns of b = 10 + 20 + 30 + 40; b.grad = 1 + 2 + 3
    expect(card).to_contain_text(
        "∂loss/∂a = grad · b, summed over the broadcast dim 1 → [3×1] = [[100], [100], [100]]"
    )
    expect(card).to_contain_text(
        "∂loss/∂b = grad · a, summed over the broadcast dim 0 → [1×4] = [[6, 6, 6, 6]]"
    )
    shot(page, "audit-broadcast")


def test_a_mean_over_one_dim_divides_by_that_dims_size(page: Any) -> None:
    # x [2, 3], m = x.mean(dim=0): each mean averages 2 elements, so N = 2 (the card said
    # N = 6, all of x); m * m reaches m along two edges, 2.5 + 2.5 = 5 for its first element
    open_stepper(
        page,
        "import torch\nx = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)\n"
        "m = x.mean(dim=0)\nloss = (m * m).sum()\nloss.backward()\n",
    )
    card = card_of(page, "MeanBackward1")
    expect(card).to_contain_text("out = mean(a) over dim 0")
    expect(card).to_contain_text(
        "∂loss/∂x = grad / N, copied along dim 0 (N = 2) = [[2.5, 3.5, 4.5], [2.5, 3.5, 4.5]]"
    )
    # two paths arrived: the card said only "[5, 7, 9]"
    expect(card).to_contain_text(
        "grad = ∂loss/∂m = [5, 7, 9], the sum of 2 paths: [2.5, 3.5, 4.5] + [2.5, 3.5, 4.5]"
    )
    shot(page, "audit-mean-dim")


def test_a_python_number_factor_is_named_in_the_rule(page: Any) -> None:
    # h = x * 3, x / 4 of a vector: the card said "grad · other" and "grad / b"
    open_stepper(
        page,
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "loss = (x * 3).sum() + (x / 4).sum()\nloss.backward()\n",
    )
    expect(card_of(page, "MulBackward0")).to_contain_text("∂loss/∂x = grad · 3 = [3, 3]")
    expect(card_of(page, "DivBackward0")).to_contain_text("∂loss/∂x = grad / 4 = [0.25, 0.25]")
    # the x.grad card: 3 + 0.25 per element, from two paths
    expect(card_of(page, "AccumulateGrad")).to_contain_text("the sum of 2 paths")
    # the inspector names the number DivBackward0 saved (it said "a int64 number")
    page.locator(".gw-walk-item", has_text="DivBackward0").click()
    node = page.evaluate(
        "() => [...window.gradwalk.model.nodes.values()].find((n) => n.name === 'DivBackward0').id"
    )
    page.goto(page.url.replace("view=stepper", "view=inspector") + f"&sel=n{node}")
    saved = page.locator(".gw-inspector-body table.gw-table")
    expect(saved).to_contain_text("4 (a Python number)")


def test_the_inspector_names_a_tensor_made_inside_an_op_and_fits_its_pane(page: Any) -> None:
    # addmm saves the weight's transpose, made inside F.linear: it read "a float32 number [4×3]",
    # and the table was wider than the side pane (its bytes column cut to "byt")
    page.set_viewport_size({"width": 1280, "height": 720})
    open_stepper(
        page,
        "import torch\nimport torch.nn as nn\nnet = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))\n"
        "loss = net(torch.randn(2, 4)).pow(2).sum()\nloss.backward()\n",
    )
    # the second layer's addmm: its input requires grad, so it saves the weight's transpose
    node = page.evaluate(
        """() => [...window.gradwalk.model.nodes.values()].find((n) => n.name === 'AddmmBackward0'
            && n.saved.some((s) => s.name === 'mat2' && s.tensor === null)).id"""
    )
    page.goto(page.url.replace("view=stepper", "view=inspector") + f"&sel=n{node}")
    saved = page.locator(".gw-inspector-body table.gw-table")
    expect(saved).to_contain_text("a float32 tensor, made inside the op")
    expect(saved).not_to_contain_text("float32 number")
    fits = page.evaluate(
        """() => { const t = document.querySelector('.gw-inspector-body table.gw-table').getBoundingClientRect();
        const pane = document.querySelector('.gw-inspector-body').getBoundingClientRect();
        return [t.right, pane.right]; }"""
    )
    assert fits[0] <= fits[1] + 0.5, fits


def test_pow_with_a_tensor_exponent_and_a_number_base(page: Any) -> None:
    # c = a ** b at a = 2, b = 3: ∂c/∂a = 3 · 2² = 12, ∂c/∂b = 8 · ln 2 = 5.545.
    # r = 2 ** x: ∂r/∂x = 2ˣ · ln 2; the card wrote the power rule "grad · b · 2^(b−1)"
    open_stepper(
        page,
        "import torch\na = torch.tensor(2.0, requires_grad=True)\nb = torch.tensor(3.0, requires_grad=True)\n"
        "x = torch.tensor(1.0, requires_grad=True)\nloss = a ** b + 2 ** x\nloss.backward()\n",
    )
    card = card_of(page, "PowBackward1")
    expect(card).to_contain_text("∂loss/∂a = grad · b · a^(b − 1) = 1 × 3 × 2^(3 − 1) = 12")
    expect(card).to_contain_text("∂loss/∂b = grad · (a**b) · ln(a) = 1 × 8 × ln(2) = 5.545")
    card = card_of(page, "PowBackward2")
    expect(card).to_contain_text("out = 2 ** a · an exponential")
    expect(card).to_contain_text("∂loss/∂x = grad · (2**x) · ln(2) = 1 × 2 × ln(2) = 1.386")


def test_a_gradient_given_to_backward_is_the_seed_not_1(page: Any) -> None:
    # y = x**2 is not a scalar: y.backward(v) starts from v. The card said
    # "grad = ∂y/∂y = [1, 0.1, 0.01] (the seed: backward() starts from 1 at the root)"
    open_stepper(
        page,
        "import torch\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\ny = x ** 2\n"
        "y.backward(torch.tensor([1.0, 0.1, 0.01]))\n",
    )
    card = card_of(page, "PowBackward0")
    incoming = card.locator(".gw-incoming")
    expect(incoming).to_contain_text("grad = [1, 0.1, 0.01] (the seed: the gradient given to backward()")
    expect(incoming).not_to_contain_text("starts from 1")
    expect(incoming).not_to_contain_text("∂y/∂y")
    shot(page, "audit-seed")


def test_backward_on_a_leaf_starts_its_accumulate_grad_from_the_seed(page: Any) -> None:
    # x.backward(g) on a leaf runs x's AccumulateGrad alone (it was an empty walk); its card
    # said "grad = ∂x/∂x = [0.1, 0.2, 0.3]", false for a seed that is not 1
    open_stepper(
        page,
        "import torch\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "x.backward(torch.tensor([0.1, 0.2, 0.3]))\n",
    )
    card = card_of(page, "AccumulateGrad")
    incoming = card.locator(".gw-incoming")
    expect(incoming).to_contain_text("grad = [0.1, 0.2, 0.3] (the seed: the gradient given to backward()")
    expect(incoming).not_to_contain_text("∂x/∂x")
    expect(card).to_contain_text("x.grad: None → [0.1, 0.2, 0.3]")
    expect(page.locator(".gw-graph-info")).to_have_text("1 node")
    page.keyboard.press("End")
    expect(page.locator(".gw-step-card")).to_contain_text("there was no graph to walk or free")


def test_mse_with_reduction_sum_does_not_divide_by_n(page: Any) -> None:
    # sum((x − y)²) at x = [1, 2, 3], y = [1.5, 2, 2]: 2(x − y) = [−1, 0, 2], no / 3
    open_stepper(
        page,
        "import torch\nimport torch.nn.functional as F\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "loss = F.mse_loss(x, torch.tensor([1.5, 2.0, 2.0]), reduction='sum')\nloss.backward()\n",
    )
    card = card_of(page, "MseLossBackward0")
    expect(card).to_contain_text("out = sum((x − y)²)")
    expect(card).to_contain_text("∂loss/∂x = grad · 2(x − y) = [−1, 0, 2]")


def test_softmax_sums_the_product_and_a_negative_addend_is_bracketed(page: Any) -> None:
    # softmax's backward is out · (grad − Σ(grad · out)): "Σ grad · out" read as (Σ grad) · out.
    # c = a / b at 3, 2: ∂c/∂b = −3/4, first set into b.grad (None before), then added again
    # by a second backward(), written "b.grad: −0.75 + (−0.75)" like the paths' sums
    open_stepper(
        page,
        "import torch\nimport torch.nn.functional as F\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "a = torch.tensor(3.0, requires_grad=True)\nb = torch.tensor(2.0, requires_grad=True)\n"
        "loss = F.softmax(x, dim=0)[0] + a / b\nloss.backward(retain_graph=True)\nloss.backward()\n",
    )
    expect(card_of(page, "SoftmaxBackward0")).to_contain_text("out · (grad − Σ(grad · out)) (Σ over dim 0)")
    expect(card_of(page, "AccumulateGrad → b.grad")).to_contain_text("b.grad: None → −0.75")
    page.evaluate("() => window.gradwalk.store.set({ step: window.gradwalk.model.timeline.length - 1 })")
    expect(card_of(page, "AccumulateGrad → b.grad")).to_contain_text("b.grad: −0.75 + (−0.75) → −1.5")


def test_an_intermediate_that_retains_its_grad_shows_it_in_the_inspector(page: Any) -> None:
    # leaf_retain_grad: h = x * 3 calls retain_grad(), and PyTorch keeps h.grad = [6, 12];
    # the inspector showed h's value and nothing of its .grad (the trace held none)
    source = (ROOT / "server" / "examples" / "leaf_retain_grad.py").read_text()
    run = stored_run(page.server, source)
    trace = page.request.get(f"{page.server.url}/api/runs/{run}/trace").json()
    h = next(e["id"] for e in trace["events"] if e["type"] == "tensor_final" and e["name"] == "h")
    page.goto(f"{page.server.url}/?run={run}&view=inspector&sel=t{h}")
    body = page.locator(".gw-inspector-body")
    expect(body).to_contain_text(".grad (kept by retain_grad(), at the end of the run)")
    expect(body).to_contain_text("min 6 · max 12 · mean 9")
    shot(page, "audit-retain-grad")


ATTENTION = (
    "import torch, torch.nn.functional as F\ntorch.manual_seed(0)\n"
    "q = torch.randn(1, 2, 4, 8, requires_grad=True)\nk = torch.randn(1, 2, 4, 8, requires_grad=True)\n"
    "v = torch.randn(1, 2, 4, 8, requires_grad=True)\n"
    "out = F.scaled_dot_product_attention(q, k, v, is_causal=True)\nout.sum().backward()\n"
)


def test_attentions_fused_node_writes_its_backward_out_and_its_name_fits_the_card(page: Any) -> None:
    # The card said "grad through the attention weights into Q" and its title, one 46-letter
    # word, ran out past the card's right edge.
    scope: dict[str, Any] = {}
    exec(ATTENTION, scope)
    norms = {name: f"{scope[name].grad.norm().item():.4g}" for name in ("q", "k", "v")}
    open_stepper(page, ATTENTION)
    card = card_of(page, "ScaledDotProductFlashAttentionForCpuBackward0")
    expect(card.locator(".gw-step-summary")).to_have_text(
        "out = P v, P = softmax(q kᵀ · 1/√8) · attention; causal: each query's later keys masked out of P"
    )
    rules = card.locator(".gw-rule")
    expect(rules.nth(0)).to_contain_text(
        "∂(sum(out))/∂q = dS k · 1/√8, dS = P ⊙ (G − Σ_row P ⊙ G), G = grad vᵀ"
    )
    expect(rules.nth(1)).to_contain_text("∂(sum(out))/∂k = dSᵀ q · 1/√8 (dS as for q)")
    expect(rules.nth(2)).to_contain_text("∂(sum(out))/∂v = Pᵀ grad (P: the attention weights)")
    # the numbers the card shows are PyTorch's own gradients, read by their norms
    for i, name in enumerate(("q", "k", "v")):
        expect(rules.nth(i)).to_contain_text(f"‖·‖ {norms[name]}")
    title, box = page.evaluate(
        """() => [document.querySelector('.gw-step-card .gw-node-name').getBoundingClientRect().right,
                  document.querySelector('.gw-step-card').getBoundingClientRect().right]"""
    )
    assert title <= box, (title, box)
    shot(page, "stepper-attention")
