"""Hints for the errors of a custom torch.autograd.Function (engine/explain_functions.py): each
snippet raises as it does without gradwalk, and the hint names the class, its inputs and
what to write."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

CASES = {
    # name: (snippet, the line that raises, exception type, phrases the hint must hold)
    "backward returns too few gradients": (
        "import torch\nclass MulConst(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, k):\n        ctx.k = k\n        return x * k\n    @staticmethod\n    def backward(ctx, grad_out):\n        return grad_out * ctx.k\nx = torch.randn(3, requires_grad=True)\ny = MulConst.apply(x, 2.0)\ny.sum().backward()\n",
        12,
        "RuntimeError",
        ["MulConst.backward must return one gradient per input of forward", "(x, k)", "return …, None"],
    ),
    "a Function instantiated, not applied": (
        "import torch\nclass Square(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x ** 2\n    @staticmethod\n    def backward(ctx, g):\n        x, = ctx.saved_tensors\n        return 2 * x * g\nx = torch.randn(3, requires_grad=True)\ny = Square()(x)\n",
        12,
        "RuntimeError",
        ["write Square.apply(x), not Square()(x)"],
    ),
    "save_for_backward given a number": (
        "import torch\nclass Scale(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, alpha):\n        ctx.save_for_backward(x, alpha)\n        return x * alpha\n    @staticmethod\n    def backward(ctx, g):\n        x, alpha = ctx.saved_tensors\n        return g * alpha, None\nx = torch.randn(3, requires_grad=True)\ny = Scale.apply(x, 0.5)\n",
        12,
        "TypeError",
        ["was given alpha, a float", "ctx.alpha = alpha"],
    ),
    "backward returns a gradient of the wrong shape": (
        "import torch\nclass RowSum(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x.sum(dim=1)\n    @staticmethod\n    def backward(ctx, g):\n        return g\nx = torch.randn(2, 3, requires_grad=True)\ny = RowSum.apply(x)\ny.sum().backward()\n",
        11,
        "RuntimeError",
        ["input 0 has shape [2, 3]", "g.unsqueeze(1).expand(2, 3)"],
    ),
    "ctx.saved_tensors called": (
        "import torch\nclass Cube(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x ** 3\n    @staticmethod\n    def backward(ctx, g):\n        x, = ctx.saved_tensors()\n        return 3 * x ** 2 * g\n"
        "x = torch.randn(3, requires_grad=True)\nCube.apply(x).sum().backward()\n",
        9,
        "TypeError",
        ["x, = ctx.saved_tensors"],
    ),
    # the hint took Sq for an nn.Module: "the arguments of a module call are its forward()'s"
    "forward without ctx": (
        "import torch\nclass Sq(torch.autograd.Function):\n    @staticmethod\n    def forward(x):\n        return x ** 2\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g\ny = Sq.apply(torch.tensor([1.0, 2.0], requires_grad=True))\n",
        9,
        "TypeError",
        ["Sq.forward(x) takes no ctx", "then the inputs of apply()", "def forward(ctx, x):"],
    ),
    "backward without ctx": (
        "import torch\nclass Sq(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x ** 2\n"
        "    @staticmethod\n    def backward(g):\n        return g\ny = Sq.apply(torch.tensor([1.0, 2.0], requires_grad=True))\n"
        "y.sum().backward()\n",
        10,
        "TypeError",
        ["Sq.backward(g) takes no ctx", "then the gradient of each output", "def backward(ctx, g):"],
    ),
    "forward and backward not static": (
        "import torch\nclass Relu(torch.autograd.Function):\n    def forward(self, ctx, x):\n        ctx.save_for_backward(x)\n        return x.clamp(min=0)\n    def backward(self, ctx, g):\n        x, = ctx.saved_tensors\n        return g * (x > 0)\nx = torch.randn(4, requires_grad=True)\ny = Relu.apply(x)\n",
        10,
        "TypeError",
        ["Relu is an autograd.Function, whose forward and backward must be static methods", "@staticmethod"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_custom_functions_error_gets_a_hint_in_its_own_terms(name: str) -> None:
    source, line, exc_type, phrases = CASES[name]
    err = raised_as_plain(source, line)
    assert err.exc_type == exc_type, err
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)


_MUL = (
    "import torch\nclass Mul(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, a, b):\n"
    "        SAVE\n        return a * b\n    @staticmethod\n    def backward(ctx, g):\n"
    "        a, b = ctx.saved_tensors\n        return g * b, g * a\n"
    "a = torch.tensor([1.0, 2.0], requires_grad=True)\nb = torch.tensor([3.0, 4.0], requires_grad=True)\n"
    "CALL\nprint(a.grad)\n"
)
_APPLIED = "Mul.apply(a, b).sum().backward()"
_SAVED = "ctx.save_for_backward(a, b)"

# name: (what SAVE and CALL become, the line that raises, phrases the hint must hold, the fix)
MISUSES = {
    "save_for_backward called once per tensor": (
        ("ctx.save_for_backward(a); ctx.save_for_backward(b)", _APPLIED),
        9,
        ["Mul.forward calls ctx.save_for_backward 2 times", "only the last call's (b)", _SAVED],
        ("ctx.save_for_backward(a); ctx.save_for_backward(b)", _SAVED),
    ),
    "the Function called like a function": (
        (_SAVED, "Mul(a, b).sum().backward()"),
        13,
        ["Mul(a, b) makes a Mul object, not its output", "Write Mul.apply(a, b)."],
        ("Mul(a, b)", "Mul.apply(a, b)"),
    ),
    "forward called with None for ctx": (
        (_SAVED, "Mul.forward(None, a, b).sum().backward()"),
        5,
        ["Mul.forward was called directly (line 13), so its ctx is None", "Call Mul.apply with the inputs"],
        ("Mul.forward(None, a, b)", "Mul.apply(a, b)"),
    ),
    "forward called without ctx": (
        (_SAVED, "Mul.forward(a, b).sum().backward()"),
        13,
        ["Mul.forward was called directly (line 13), without the ctx apply makes"],
        ("Mul.forward(a, b)", "Mul.apply(a, b)"),
    ),
}


@pytest.mark.parametrize("name", sorted(MISUSES))
def test_a_function_applied_wrong_gets_the_apply_it_needs_and_the_fix_runs(name: str) -> None:
    (save, call), line, phrases, fix = MISUSES[name]
    source = _MUL.replace("SAVE", save).replace("CALL", call)
    hinted(source, line, phrases)
    fixed_runs(source, [fix], printed="tensor([3., 4.])\n")
