"""The hint for backward() of a tensor with no graph names the cause a beginner hit: no
tensor of the snippet requires grad, or the line (.data, .detach(), torch.no_grad()) that cut
the chain back to the leaves. Each snippet raises as it does without gradwalk."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_error

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
    # argmax has no gradient, and no line cuts the chain by name
    "argmax": (
        "import torch\nx = torch.randn(4, 3, requires_grad=True)\npred = x.argmax(dim=1).float()\n"
        "loss = pred.sum()\nloss.backward()\n"
    ),
    # a no_grad() block earlier in the snippet computes something the loss never uses
    "an unrelated no_grad block before": (
        "import torch\nx = torch.randn(4, 3, requires_grad=True)\nwith torch.no_grad():\n"
        "    acc = (x > 0).float().mean()\npred = x.argmax(dim=1).float()\nloss = pred.sum()\n"
        "loss.backward()\n"
    ),
}


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_a_cut_the_snippet_does_not_show_keeps_the_list_of_causes(name: str) -> None:
    hint = q.errors(record(GENERIC[name]))[0].hint or ""
    assert "argmax" in hint and "Line " not in hint and "No tensor here" not in hint, hint
