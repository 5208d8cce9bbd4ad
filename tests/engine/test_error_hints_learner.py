"""The hint for backward() of a tensor with no graph names the cause a beginner hit: no
tensor of the snippet requires grad, the line (.data, .detach(), torch.no_grad()) that cut
the chain back to the leaves, requires_grad asked for after the loss was computed, or a step
by hand that rebound the leaf outside the graph. Each snippet raises as it does without
gradwalk."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_error, raised_as_plain

CASES = {
    # name: (snippet whose last line raises, phrases the hint must hold)
    "no tensor requires grad": (
        "import torch\nw = torch.tensor([1.0, 2.0])\nx = torch.tensor([3.0, 4.0])\n"
        "loss = (w * x).sum()\nloss.backward()\n",
        [
            "No tensor here requires grad (w, x: requires_grad=False)",
            "w = torch.tensor(..., requires_grad=True)",
        ],
    ),
    "an accuracy counted from argmax as the loss": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 3)\nx = torch.randn(5, 4)\n"
        "target = torch.tensor([0, 1, 2, 0, 1])\npred = model(x).argmax(dim=1)\n"
        "loss = (pred != target).float().mean()\nloss.backward()\n",
        [
            "Line 6 (pred = model(x).argmax(dim=1)) cuts the chain back to the leaves",
            "argmax gives the positions of the largest values, and a position has no gradient",
            "F.cross_entropy(scores, target)",
        ],
    ),
    "a loss built from .data": (
        "import torch\nw = torch.tensor([1.0, 2.0], requires_grad=True)\ny = w.data * 2\n"
        "loss = y.sum()\nloss.backward()\n",
        ["Line 3 (y = w.data * 2) cuts the chain back to the leaves", "use w itself"],
    ),
    "a loss computed under no_grad": (
        "import torch\nmodel = torch.nn.Linear(3, 1)\nx = torch.randn(4, 3)\nwith torch.no_grad():\n"
        "    out = model(x)\nloss = out.mean()\nloss.backward()\n",
        ["Line 4 (with torch.no_grad():) cuts the chain", "compute the loss outside it"],
    ),
    "a detached hidden value": (
        "import torch\nw = torch.randn(3, requires_grad=True)\nh = (w * 2).detach()\n"
        "loss = h.sum()\nloss.backward()\n",
        ["Line 3 (h = (w * 2).detach()) cuts the chain", "leave it out where the gradient must flow"],
    ),
    "requires_grad_() after the loss": (
        "import torch\nx = torch.tensor([1.0, 2.0])\nloss = (x * 2).sum()\nx.requires_grad_()\n"
        "loss.backward()\n",
        [
            "x was made to require grad at line 4 (x.requires_grad_()), after loss was computed from it "
            "at line 3: autograd records only the ops on tensors that already require grad",
            "create x with requires_grad=True, or move line 4 above line 3",
        ],
    ),
    "requires_grad = True after the loss, through another tensor": (
        "import torch\nx = torch.tensor([1.0, 2.0])\nh = x * 2\nloss = h.sum()\nx.requires_grad = True\n"
        "loss.backward()\n",
        ["x was made to require grad at line 5 (x.requires_grad = True), after loss was computed at line 4"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_loss_without_a_graph_gets_its_cause_in_the_hint(name: str) -> None:
    source, phrases = CASES[name]
    err = q.errors(record(source))[0]
    plain = plain_error(source)
    assert (err.exc_type, err.message) == (type(plain).__name__, str(plain))
    assert err.line == source.count("\n"), err
    assert err.hint is not None and err.hint.startswith("loss is not part of any graph"), err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)


GENERIC = {
    # a comparison has no gradient, and no line cuts the chain by name (argmax does: CASES)
    "a comparison": (
        "import torch\nx = torch.randn(4, 3, requires_grad=True)\npred = (x > 0).float()\n"
        "loss = pred.sum()\nloss.backward()\n"
    ),
    # a no_grad() block earlier in the snippet computes something the loss never uses
    "an unrelated no_grad block before": (
        "import torch\nx = torch.randn(4, 3, requires_grad=True)\nwith torch.no_grad():\n"
        "    acc = (x > 0).float().mean()\npred = (x > 0.5).float()\nloss = pred.sum()\n"
        "loss.backward()\n"
    ),
}


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_a_cut_the_snippet_does_not_show_keeps_the_list_of_causes(name: str) -> None:
    hint = q.errors(record(GENERIC[name]))[0].hint or ""
    assert "argmax" in hint and "Line " not in hint and "No tensor here" not in hint, hint


def step_by_hand(update: str) -> str:
    """Linear regression stepped by hand, ``update`` the loop's last line (line 8)."""
    return (
        "import torch\nw = torch.randn(3, 1, requires_grad=True)\nX, Y = torch.randn(10, 3), torch.randn(10, 1)\n"
        "for i in range(3):\n    loss = ((X @ w - Y) ** 2).mean()\n    loss.backward()\n"
        f"    with torch.no_grad():\n        {update}\n"
    )


REBOUND = {
    # the update rebinds w to a new tensor, which under no_grad requires no grad: the second
    # pass's loss has no graph, and the hint said "No tensor here requires grad (w, X, Y)"
    "under no_grad": (
        step_by_hand("w = w - 0.1 * w.grad"),
        "line 8 (w = w - 0.1 * w.grad) inside torch.no_grad(), made a new tensor that requires no grad",
    ),
    "through .data": (
        step_by_hand("pass").replace(
            "    with torch.no_grad():\n        pass\n", "    w = w.data - 0.1 * w.grad\n"
        ),
        "line 7 (w = w.data - 0.1 * w.grad) made a new tensor without history",
    ),
    "detached": (
        step_by_hand("pass").replace(
            "    with torch.no_grad():\n        pass\n", "    w = (w - 0.1 * w.grad).detach()\n"
        ),
        "line 7 (w = (w - 0.1 * w.grad).detach()) made a new tensor without history",
    ),
}


@pytest.mark.parametrize("name", sorted(REBOUND))
def test_a_step_by_hand_that_rebinds_the_leaf_is_named_with_the_in_place_update(name: str) -> None:
    source, said = REBOUND[name]
    err = raised_as_plain(source, 6)
    assert err.hint is not None
    assert f"w no longer requires grad: {said} and bound w to it, in place of the leaf" in err.hint, err.hint
    assert "inside torch.no_grad(): w -= 0.1 * w.grad rather than w = …, then w.grad.zero_()" in err.hint
    assert "No tensor here requires grad" not in err.hint


def test_a_tensor_that_never_required_grad_rebound_under_no_grad_is_not_said_to_have_lost_it() -> None:
    source = (
        "import torch\nw = torch.tensor([1.0, 2.0])\nwith torch.no_grad():\n    w = w * 2\n"
        "loss = (w * 3).sum()\nloss.backward()\n"
    )
    hint = q.errors(record(source))[0].hint or ""
    assert "No tensor here requires grad (w: requires_grad=False)" in hint and "no longer" not in hint, hint


def test_a_training_step_decorated_with_no_grad_is_named_at_its_decorator() -> None:
    source = (
        "import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nX, Y = torch.randn(8, 3), torch.randn(8, 1)\n"
        "@torch.no_grad()\ndef train_step():\n    loss = ((model(X) - Y) ** 2).mean()\n"
        "    if loss > 0:\n        loss.backward()\ntrain_step()\n"
    )
    err = raised_as_plain(source, 8)
    assert (
        err.hint is not None
        and (
            "Line 4 (@torch.no_grad()) turns recording off for the whole of train_step(): nothing computed "
            "inside it is recorded for backward, so loss has no graph. Take the decorator off a training step"
        )
        in err.hint
    ), err.hint


SECOND_ORDER = {
    # gradients without create_graph=True carry no graph: a second derivative, a gradient penalty
    "autograd.grad": (
        "import torch\nx = torch.tensor(3.0, requires_grad=True)\n(dy,) = torch.autograd.grad(x ** 3, x)\n"
        "dy.backward()\n",
        "dy comes from torch.autograd.grad at line 3 ((dy,) = torch.autograd.grad(x ** 3, x)), called without "
        "create_graph=True",
    ),
    "a .grad filled by backward()": (
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n(x ** 3).sum().backward()\n"
        "penalty = x.grad.pow(2).sum()\npenalty.backward()\n",
        "penalty is computed from x.grad at line 4 (penalty = x.grad.pow(2).sum()), which backward() (line 3) "
        "filled without create_graph=True",
    ),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_a_gradient_without_create_graph_differentiated_again_is_told_to_pass_it(name: str) -> None:
    source, said = SECOND_ORDER[name]
    err = raised_as_plain(source, source.count("\n"))
    assert err.hint is not None and said in err.hint and "create_graph=True" in err.hint.split(said)[1], (
        err.hint
    )
    # with create_graph=True the same snippet runs
    fixed = source.replace("x ** 3, x)", "x ** 3, x, create_graph=True)").replace(
        ".sum().backward()", ".sum().backward(create_graph=True)"
    )
    assert q.errors(record(fixed)) == []
