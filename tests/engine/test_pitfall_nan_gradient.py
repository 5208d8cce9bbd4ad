"""non-finite-gradient: a finite loss whose backward turns a gradient NaN or inf names the
node where it first did, why, and the fix; the gradients stay PyTorch's own."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
import torch

from engine import queries as q
from engine import record
from engine.events import Limits
from tests.conftest import case_source


def _plain_grads(source: str, *names: str) -> dict[str, list[float]]:
    scope: dict[str, Any] = {}
    torch.manual_seed(0)
    exec(compile(source, "plain.py", "exec"), scope)
    return {name: scope[name].grad.reshape(-1).tolist() for name in names}


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(
        (math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True)
    )


def _only_pitfall(source: str) -> Any:
    trace = record(source)
    (p,) = q.pitfalls(trace)
    assert p.kind == "non-finite-gradient"
    return trace, p


def test_a_where_that_guards_sqrt_in_forward_only_is_explained_at_the_sqrt() -> None:
    source = case_source("pitfall_nan_gradient.py")
    trace, p = _only_pitfall(source)
    assert p.line == 5 and p.metrics_only_after is None
    (sqrt_node,) = [nid for nid, name in q.node_names(trace).items() if name == "SqrtBackward0"]
    assert p.nodes == [sqrt_node]  # the graph rings the node the NaN came out of
    assert p.title == "A gradient became NaN in backward, though the loss is finite"
    assert p.message.startswith(
        "The loss is finite (2), yet a gradient came out NaN in backward. It first did in SqrtBackward0"
    )
    assert "sent NaN at element [0] (2 of 3 elements)" in p.message
    assert "sqrt's slope, 1/(2·√x), is infinite at x = 0 and NaN below 0" in p.message
    assert "The gradient arriving at that element was 0, and 0 × ∞ (or 0 × NaN) is NaN" in p.message
    assert "torch.where(x > 0, torch.sqrt(torch.where(x > 0, x, 1.0)), 0.0) (the 'double where')" in p.fix
    # what the app shows is PyTorch's own gradient, NaN where PyTorch has NaN
    assert _same(q.final_grads(trace)["x"], _plain_grads(source, "x")["x"])


CASES = {
    # name: (snippet lines after `import torch`, the line of the op, node, what, masked by a
    # where, words of the fix)
    "pairwise distances": (
        "torch.manual_seed(0)\npts = torch.randn(4, 2, requires_grad=True)\ndiff = pts[:, None] - pts[None]\n"
        "dist = (diff ** 2).sum(-1).sqrt()\nloss = dist.mean()\nloss.backward()\n",
        5,
        "SqrtBackward0",
        "inf",
        False,
        "A distance √(Σd²) between two equal points is the usual case: add the epsilon inside the square root",
    ),
    "log guarded by a where, in the snippet's own name": (
        "p = torch.tensor([0.0, 0.5], requires_grad=True)\n"
        "loss = torch.where(p > 0, torch.log(p), 0.0).sum()\nloss.backward()\n",
        3,
        "LogBackward0",
        "NaN",
        True,
        "torch.where(p > 0, torch.log(torch.where(p > 0, p, 1.0)), 0.0)",
    ),
    "entropy p · log(p) at p = 0": (
        "p = torch.tensor([0.0, 0.5], requires_grad=True)\n"
        "loss = -torch.where(p > 0, p * torch.log(p), 0.0).sum()\nloss.backward()\n",
        3,
        "MulBackward0",
        "NaN",
        True,
        "torch.where(p > 0, p * torch.log(torch.where(p > 0, p, 1.0)), 0.0) for p · log(p)",
    ),
    "acos at 1": (
        "c = torch.tensor([1.0, 0.0], requires_grad=True)\nloss = torch.acos(c).sum()\nloss.backward()\n",
        3,
        "AcosBackward0",
        "-inf",
        False,
        "torch.acos(c.clamp(-1 + 1e-6, 1 - 1e-6))",
    ),
    "a reciprocal guarded by a where": (
        "d = torch.tensor([0.0, 2.0], requires_grad=True)\nloss = torch.where(d != 0, 1 / d, 0.0).sum()\n"
        "loss.backward()\n",
        3,
        "ReciprocalBackward0",
        "NaN",
        True,
        "torch.where(d != 0, 1 / torch.where(d != 0, d, 1.0), 0.0)",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_node_a_gradient_first_went_non_finite_in_is_named(name: str) -> None:
    body, line, node, what, masked, fix = CASES[name]
    source = "import torch\n" + body
    trace, p = _only_pitfall(source)
    assert p.line == line  # the line that made the node
    assert f"It first did in {node}, " in p.message, p.message
    assert re.search(rf"sent {re.escape(what)}( to its input \d of \d)? at element \[", p.message), p.message
    assert ("0 × ∞ (or 0 × NaN) is NaN" in p.message) == masked
    assert fix in p.fix, p.fix
    leaf = next(iter(q.final_grads(trace)))
    assert _same(q.final_grads(trace)[leaf], _plain_grads(source, leaf)[leaf])


def test_a_root_of_several_elements_says_backward_started_from_finite_values() -> None:
    _, p = _only_pitfall(
        "import torch\nx = torch.tensor([0.0, 1.0], requires_grad=True)\ny = torch.sqrt(x)\n"
        "y.backward(torch.ones(2))\n"
    )
    assert p.title == "A gradient became inf in backward, though backward started from finite values"
    assert p.message.startswith("Backward started from finite values, yet")


def test_a_training_loop_is_told_the_gradients_cause_not_a_learning_rate() -> None:
    """The NaN gradient reaches the weights at the first step and the loss goes NaN after it:
    non-finite-loss would blame the learning rate, and stays quiet once the cause is said."""
    source = (
        "import torch\nw = torch.tensor([0.0, 1.0], requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
        "for step in range(10):\n    opt.zero_grad()\n    loss = torch.where(w > 0, w.sqrt(), 0.0).sum()\n"
        "    loss.backward()\n    opt.step()\nprint(w)\n"
    )
    trace, p = _only_pitfall(source)
    assert p.line == 6
    assert "torch.where(w > 0, torch.sqrt(torch.where(w > 0, w, 1.0)), 0.0)" in p.fix
    assert q.stdout(trace) == "tensor([   nan, 0.4136], requires_grad=True)\n"  # as without gradwalk


def test_finite_gradients_and_a_nan_loss_are_not_reported() -> None:
    # the same where, with its input kept in range: nothing to say
    fine = "import torch\nx = torch.tensor([-1.0, 4.0], requires_grad=True)\n" + (
        "loss = torch.where(x > 0, torch.sqrt(torch.where(x > 0, x, 1.0)), 0.0).sum()\nloss.backward()\n"
    )
    assert q.pitfalls(record(fine)) == []
    # a loss that is NaN already: non-finite-loss, not this
    nan_loss = "import torch\nx = torch.tensor([-1.0], requires_grad=True)\nloss = torch.sqrt(x).sum()\nloss.backward()\n"
    assert [p.kind for p in q.pitfalls(record(nan_loss))] == ["non-finite-loss"]


def test_a_step_recorded_metrics_only_says_which_step_to_record_in_full() -> None:
    """Minimising √w walks w down past 0 at the fifth step, where the where's 0 meets sqrt's
    NaN slope: a step no node of which is read, so the gradient norm tells, and the loss
    that goes on finite rules out an exploding learning rate."""
    source = (
        "import torch\nw = torch.tensor([1.0], requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.5)\n"
        "for step in range(8):\n    opt.zero_grad()\n    loss = torch.where(w > 0, w.sqrt(), 0.0).sum()\n"
        "    loss.backward()\n    opt.step()\n"
    )
    trace = record(source)
    (p,) = q.pitfalls(trace)
    assert (p.kind, p.line, p.nodes, p.metrics_only_after) == ("non-finite-gradient", 8, [], 4)
    assert p.message.startswith(
        "At optimizer step 5 the gradient norm is nan, though the loss was finite (0)"
    )
    assert "record step 5 in full to have it named" in p.message
    (fifth,) = [e for e in q.optimizer_steps(trace) if e.step == 5]
    assert fifth.grad_norm is not None and math.isnan(fifth.grad_norm)  # PyTorch's NaN, as shown
    # recorded in full, the step names its node
    (p,) = q.pitfalls(record(source, limits=Limits(detail_every=5)))
    assert (p.kind, p.line) == ("non-finite-gradient", 6) and "It first did in SqrtBackward0" in p.message


def test_a_gradient_too_large_to_keep_whole_is_read_from_the_tensor() -> None:
    """Past Limits.max_value_elements a trace keeps statistics, not elements: where the NaN
    is, and what arrived there, are read from the gradients themselves."""
    _, p = _only_pitfall(
        "import torch\nx = torch.zeros(100, 100, requires_grad=True)\nx.data[3, 4] = 1.0\n"
        "loss = torch.where(x > 0, torch.sqrt(x), 0.0).sum()\nloss.backward()\n"
    )
    assert "sent NaN at element [0, 0] (9999 of 10000 elements)" in p.message, p.message
    assert "The gradient arriving at that element was 0, and 0 × ∞" in p.message
