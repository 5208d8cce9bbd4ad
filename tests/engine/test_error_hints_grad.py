"""The hint for an error from a ``.grad`` that was ``None`` (``x - lr * x.grad``: "unsupported
operand type(s) for *: 'float' and 'NoneType'") says which tensor's ``.grad`` it was and why:
not a leaf (gradient descent by hand that rebinds the leaf, above all), no requires_grad, or
no backward() yet; and the one for a number assigned to a ``.grad`` (``w.grad = 0``). Each
snippet raises as it does without gradwalk."""

from __future__ import annotations

import warnings

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import fixed_runs, hinted, plain_error, raised_as_plain

CASES = {
    # name: (snippet that raises, line, phrases the hint must hold)
    "a step by hand that rebinds the leaf": (
        "import torch\nx = torch.randn(3, requires_grad=True)\nfor i in range(3):\n"
        "    y = (x ** 2).sum()\n    y.backward()\n    x = x - 0.1 * x.grad\n",
        6,
        [
            "x.grad is None because x is not a leaf but the result of an op (SubBackward0), "
            "made at line 6 (x = x - 0.1 * x.grad)",
            "with torch.no_grad(): x -= 0.1 * x.grad, then x.grad.zero_()",
            "torch.optim.SGD([x], lr=…)",
        ],
    ),
    "a step by hand in a function": (
        "import torch\ndef step(w, lr):\n    return w - lr * w.grad\nw = torch.ones(2, requires_grad=True)\n"
        "for i in range(2):\n    (w * w).sum().backward()\n    w = step(w, 0.1)\n",
        3,
        ["w.grad is None because w is not a leaf", "with torch.no_grad(): w -= lr * w.grad"],
    ),
    "the grad of a computed tensor": (
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = x * 2\ny.sum().backward()\nz = y.grad * 2\n",
        5,
        [
            "y.grad is None because y is not a leaf",
            "(MulBackward0), made at line 3 (y = x * 2)",
            "y.retain_grad()",
        ],
    ),
    "a tensor that does not require grad": (
        "import torch\nx = torch.ones(3)\ny = (x * 2).sum()\nz = x.grad + 1\n",
        4,
        ["x.grad is None because x does not require grad", "requires_grad=True"],
    ),
    "no backward yet": (
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = (x * 2).sum()\nstep = 0.1 * x.grad\n",
        4,
        ["x.grad is None because no backward() has run yet", "Call it before this line"],
    ),
    "zeroing a grad before the first backward": (
        "import torch\nw = torch.ones(3, requires_grad=True)\nfor i in range(2):\n    w.grad.zero_()\n"
        "    (w * 2).sum().backward()\n",
        4,
        ["w.grad is None until the first backward() reaches w", "if w.grad is not None: w.grad.zero_()"],
    ),
    "zeroing a grad zero_grad() reset": (
        "import torch\nw = torch.ones(3, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
        "(w * 2).sum().backward()\nopt.step()\nopt.zero_grad()\nw.grad.data.zero_()\n",
        7,
        ["no backward() has reached w since its .grad was reset", "the reset already cleared it"],
    ),
    "a leaf rebound to a detached copy": (
        "import torch\nw = torch.ones(3, requires_grad=True)\n(w * 2).sum().backward()\nw = w.detach()\n"
        "print(w.grad.norm())\n",
        5,
        ["w.grad is None because w does not require grad, made at line 4 (w = w.detach())"],
    ),
    "a parameter after zero_grad": (
        "import torch\nnet = torch.nn.Linear(2, 1)\nnet(torch.ones(1, 2)).sum().backward()\nnet.zero_grad()\n"
        "print(net.weight.grad * 2)\n",
        5,
        ["net.weight.grad is None: no backward() has reached net.weight", "zero_grad() sets .grad to None"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_grad_that_was_none_gets_its_tensor_and_cause_in_the_hint(name: str) -> None:
    source, line, phrases = CASES[name]
    trace = record(source)
    err = q.errors(trace)[0]
    with warnings.catch_warnings():  # plain PyTorch warns of the .grad read, as in the recorded run
        warnings.simplefilter("ignore")
        plain = plain_error(source)
    assert (err.exc_type, err.message) == (type(plain).__name__, str(plain))
    assert err.line == line, err
    assert err.hint is not None
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)
    # the hint read no .grad of a computed tensor: PyTorch's warning is the snippet's own, once a read
    stderr = "".join(e.text for e in q.events_of(trace, "output") if e.stream == "stderr")
    assert stderr.count("is not a leaf Tensor is being accessed") == (
        1 if "is not a leaf" in err.hint else 0
    ), stderr


def test_a_grad_the_frame_does_not_show_keeps_the_general_hint() -> None:
    # the .grad of an object's attribute that is not a module: nothing to look at safely
    source = (
        "import torch\nclass Box:\n    @property\n    def t(self):\n        raise RuntimeError('never read')\n"
        "b = Box()\nv = None\nprint(v * 2, b.t.grad)\n"
    )
    err = q.errors(record(source))[0]
    assert err.exc_type == "TypeError" and err.line == 8
    assert err.hint is not None and err.hint.startswith("A .grad on this line is None"), err.hint


@pytest.mark.parametrize(
    ("assignment", "said"),
    [
        ("w.grad = 0", "this line gives it 0, a Python int"),
        ("w.grad = [0.0]", "this line gives it [0.0], a Python list"),
    ],
)
def test_a_number_assigned_to_a_grad_is_told_how_to_clear_it(assignment: str, said: str) -> None:
    # "assigned grad expected to be a Tensor or None but got grad of type int" had no hint
    source = (
        "import torch\nw = torch.tensor(1.0, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
        f"for i in range(3):\n    ((w - 3) ** 2).backward()\n    opt.step()\n    {assignment}\n"
    )
    err = raised_as_plain(source, 7)
    assert err.hint == (
        f"w.grad holds a tensor the shape of w, or None; {said}. To clear the gradient before the next "
        "backward(), set w.grad = None (what optimizer.zero_grad() does) or zero it in place: w.grad.zero_()."
    )


@pytest.mark.parametrize(
    ("assignment", "said", "fix"),
    [
        (
            "x.grad = torch.tensor(1.0)",
            ["x.grad must have the shape of x, [2, 3]", "a tensor of shape []", "torch.full_like(x, value)"],
            "x.grad = torch.full_like(x, 1.0)",
        ),
        (
            "x.grad = torch.arange(6.0)",
            ["a tensor of shape [6]", "Reshape it: x.grad = torch.arange(6.0).reshape_as(x)"],
            "x.grad = torch.arange(6.0).reshape_as(x)",
        ),
    ],
)
def test_a_gradient_of_another_shape_assigned_gets_one_of_the_tensors(
    assignment: str, said: list[str], fix: str
) -> None:
    source = f"import torch\nx = torch.ones(2, 3, requires_grad=True)\n{assignment}\nprint(x.grad.sum())\n"
    hinted(source, 3, said)
    fixed_runs(source, [(assignment, fix)])


def test_a_number_returned_to_jacobian_is_told_to_stay_a_tensor() -> None:
    source = (
        "import torch\nfrom torch.autograd.functional import jacobian\n\n\ndef f(t):\n"
        "    return (t ** 2).sum().item()\n\n\nprint(jacobian(f, torch.ones(3)))\n"
    )
    hinted(source, 9, ["jacobian differentiates the tensors f returns, and f returned a float", ".item()"])
    fixed_runs(source, [("(t ** 2).sum().item()", "(t ** 2).sum()")], printed="tensor([2., 2., 2.])\n")
