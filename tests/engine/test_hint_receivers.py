"""backward() (or autograd.grad) of an expression written in the call, not a name: the hint
names the expression as written (``g.sum()``, not "This tensor") and looks for the cause
from the tensor the expression starts from (``g``, ``x.grad``)."""

from __future__ import annotations

import pytest

from engine.explain_seed import chain_root, grad_output_of, name_before

from .snippets import raised_as_plain

CASES = {
    "the sum of autograd.grad's gradient": (
        "import torch\n"
        "x = torch.randn(5, requires_grad=True)\n"
        "(g,) = torch.autograd.grad((x ** 3).sum(), x)\n"
        "g.sum().backward()\n",
        4,
        [
            "g.sum() is not part of any graph",
            "g comes from torch.autograd.grad at line 3",
            "Pass create_graph=True to that call",
        ],
    ),
    "a penalty on a .grad, in the call": (
        "import torch\n"
        "x = torch.randn(5, requires_grad=True)\n"
        "(x ** 2).sum().backward()\n"
        "x.grad.pow(2).sum().backward()\n",
        4,
        [
            "x.grad.pow(2).sum() is not part of any graph",
            "x.grad is a gradient that backward() (line 3) filled without create_graph=True",
        ],
    ),
    "autograd.grad of a .grad's sum": (
        "import torch\n"
        "x = torch.randn(5, requires_grad=True)\n"
        "(x ** 2).sum().backward()\n"
        "torch.autograd.grad(x.grad.sum(), x)\n",
        4,
        ["x.grad.sum() is not part of any graph", "x.grad is a gradient that backward() (line 3)"],
    ),
    "a model's output computed under no_grad": (
        "import torch\n"
        "model = torch.nn.Linear(3, 1)\n"
        "x = torch.randn(4, 3)\n"
        "with torch.no_grad():\n"
        "    model(x).sum().backward()\n",
        5,
        ["model(x).sum() is not part of any graph"],
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_hint_names_the_expression_and_finds_its_cause(case: str) -> None:
    source, line, phrases = CASES[case]
    err = raised_as_plain(source, line)
    for phrase in phrases:
        assert phrase in (err.hint or ""), (phrase, err.hint)


def test_how_a_line_writes_the_tensor_it_differentiates() -> None:
    assert name_before(".backward(", "loss.backward()") == "loss"
    assert name_before(".backward(", "out[0].backward()") == "out[0]"
    assert name_before(".backward(", "(x * 3).sum().backward()") is None
    assert name_before(".backward(", "torch.autograd.backward(loss)") is None
    assert grad_output_of("torch.autograd.grad(x.grad.sum(), x)") == "x.grad.sum()"
    assert [
        chain_root(e) for e in ["g.sum()", "x.grad.pow(2).sum()", "self.loss", "model(x).sum()", "out[0]"]
    ] == [
        "g",
        "x.grad",
        "self.loss",
        None,
        None,
    ]
