"""The graph of one backward() call draws what that call walked (hunt 65): not the ops that
point into its leaves later (the nn.Sequential tutorial's last print, ``weight[:, 0]``), nor
the AccumulateGrad nodes other ``autograd.grad`` calls made for the same leaf (torch.func's
Jacobian by rows), in the Tape's graph, the Backward stepper and an embed."""

from __future__ import annotations

from typing import Any

from .conftest import expect, stored_run, wait_graph, wait_viewer

# "Learning PyTorch with Examples", nn.Sequential + Flatten (20 steps rather than 2,000)
SEQUENTIAL = (
    "import torch, math\nx = torch.linspace(-math.pi, math.pi, 2000)\ny = torch.sin(x)\n"
    "p = torch.tensor([1, 2, 3])\nxx = x.unsqueeze(-1).pow(p)\n"
    "model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))\n"
    "loss_fn = torch.nn.MSELoss(reduction='sum')\nlearning_rate = 1e-6\nfor t in range(20):\n"
    "    y_pred = model(xx)\n    loss = loss_fn(y_pred, y)\n    if t % 100 == 99:\n        print(t, loss.item())\n"
    "    model.zero_grad()\n    loss.backward()\n    with torch.no_grad():\n"
    "        for param in model.parameters():\n            param -= learning_rate * param.grad\n"
    "linear_layer = model[0]\n"
    "print(f'Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + "
    "{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3')\n"
)

# the torch.func tutorial's compute_jac: one autograd.grad per row of the Jacobian
JACOBIAN = (
    "import torch\nimport torch.nn.functional as F\nD = 16\nweight = torch.randn(D, D)\n"
    "bias = torch.randn(D)\nx = torch.randn(D)\ndef predict(weight, bias, x):\n"
    "    return F.linear(x, weight, bias).tanh()\nxp = x.clone().requires_grad_()\nunit_vectors = torch.eye(D)\n"
    "def compute_jac(xp):\n"
    "    jacobian_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0] for vec in unit_vectors]\n"
    "    return torch.stack(jacobian_rows)\njacobian = compute_jac(xp)\nprint(jacobian.shape)\n"
)

# the names of the grad_fn nodes drawn (op and AccumulateGrad elements), and their node ids
DRAWN = (
    "(app) => app.graph.core.nodes().filter((n) => ['op', 'acc'].includes(n.data('kind')))"
    ".map((n) => [app.model.node(n.data('node')).name, n.data('node')])"
)
RAN = "(app, i) => [...app.model.backward(i).byNode.keys()].sort((a, b) => a - b)"


def _drawn(target: Any, app: str = "window.gradwalk") -> list[list[Any]]:
    drawn: list[list[Any]] = target.evaluate(f"() => ({DRAWN})({app})")
    return drawn


def _ran(target: Any, call: int, app: str = "window.gradwalk") -> list[int]:
    ran: list[int] = target.evaluate(f"(i) => ({RAN})({app}, i)", call)
    return ran


def test_call_1_of_a_sequential_fit_leaves_out_the_selects_of_the_print_after_the_loop(page: Any) -> None:
    run = stored_run(page.server, SEQUENTIAL)
    page.goto(f"{page.server.url}/?run={run}&view=tape")
    wait_graph(page)
    expect(page.locator(".gw-graph-calls select")).to_have_value("0")
    # the print's weight[:, 0], [:, 1], [:, 2] were drawn in call 1's graph, into its weight's
    # AccumulateGrad: they ran 20 steps after it and are walked by no call
    drawn = _drawn(page)
    assert "SelectBackward0" not in [name for name, _ in drawn]
    assert sorted(node for _, node in drawn) == _ran(page, 0)
    expect(page.locator(".gw-graph-info")).to_have_text("6 nodes")
    # the tape greys the print's ops, as it does another call's
    greyed = page.evaluate(
        """() => { const m = window.gradwalk.model;
            return m.ops.filter((op) => op.nodes.some((n) => m.node(n)?.name === 'SelectBackward0'))
                .map((op) => document.querySelector(`.gw-op-row[data-op="${op.index}"]`).classList.contains('elsewhere')); }"""
    )
    assert greyed == [True, True, True]
    # the Backward stepper draws the same graph (it had faded them, not left them out)
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card h3")).to_be_visible()
    wait_graph(page)
    assert sorted(node for _, node in _drawn(page)) == _ran(page, 0)

    # and so does an embed
    embed = page.context.new_page()
    try:
        embed.goto(f"{page.server.url}/embed/{run}?view=graph&call=1")
        wait_viewer(embed)
        assert sorted(node for _, node in _drawn(embed, "window.gradwalkViewer")) == _ran(
            embed, 0, "window.gradwalkViewer"
        )
    finally:
        embed.close()

    # every call's graph still draws the selects
    page.goto(f"{page.server.url}/?run={run}&view=tape&call=all")
    wait_graph(page)
    page.wait_for_function(
        f"() => ({DRAWN})(window.gradwalk).filter(([name]) => name === 'SelectBackward0').length === 3"
    )


def test_each_autograd_grad_call_draws_one_accumulate_grad_of_its_leaf(page: Any) -> None:
    run = stored_run(page.server, JACOBIAN)
    page.goto(f"{page.server.url}/?run={run}&view=tape")
    wait_graph(page)
    expect(page.locator(".gw-graph-calls select")).to_have_value("0")
    # call 1's four nodes and the one AccumulateGrad of xp they reach; ten had fanned into xp,
    # one per autograd.grad call recorded in full
    names = sorted(name for name, _ in _drawn(page))
    assert names == ["AccumulateGrad", "AddmmBackward0", "TanhBackward0", "ViewBackward0", "ViewBackward0"]
    expect(page.locator(".gw-graph-info")).to_have_text("5 nodes")
    leaves = page.evaluate(
        "() => window.gradwalk.graph.core.nodes().filter((n) => n.data('kind') === 'leaf').length"
    )
    assert leaves == 1
    # and in the Backward stepper
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card h3")).to_be_visible()
    wait_graph(page)
    assert sorted(name for name, _ in _drawn(page)) == names
