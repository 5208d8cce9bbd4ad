"""Hunt 55: every number of a backward walk, checked against PyTorch's own (tests/engine/truth.py).

The checker runs each snippet without gradwalk, hooks every node of each backward call
with PyTorch's public hooks, and compares the trace's nodes, their order and edges, every
gradient each node received and sent (bitwise for whole values; min, max, mean, std and
norm for summaries), each accumulation's before / added / after, the named tensors' values,
the final ``.grad`` of each named leaf and each optimizer step's norms. The bugs it found
come first; then the snippets that agree (all from the start, but for two of them,
const_grad_big and lstm_full, whose constant MeanBackward0 gradient showed bug 1), as a
guard. Recording the guard with ``Limits(max_value_elements=0)`` (every value a summary)
found bug 2 and the post-accumulate case of bug 4.

Legitimately different views, which the checker leaves out (see its docstring): a backward
call made inside another's walk (a custom Function's backward calling
``torch.autograd.grad``, reentrant checkpointing), iterations recorded metrics-only, and
the gradient norm of an ``opt.step(closure)`` (LBFGS: the closure makes several gradients).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.events import Limits
from engine.values import to_value
from tests.engine.snippets import corpus
from tests.engine.truth import assert_truthful

GUARD = corpus(Path(__file__).with_name("truth55_snippets.txt"))

# --- bug 1: the std of a summary whose elements sit far from zero ------------------------


def test_summary_std_of_weights_near_one_thousand() -> None:
    """1,000 weights of 1000.0 +- 0.001: the float32 ``sumsq - n * mean**2`` left mostly
    rounding, and the summary's std read 0.25 where PyTorch's is 0.001."""
    w = torch.randn(1000, generator=torch.Generator().manual_seed(0)) * 1e-3 + 1000.0
    value = to_value(w, 64)
    assert value["std"] == pytest.approx(w.double().std().item(), rel=1e-4, abs=0)
    assert value["mean"] == pytest.approx(w.double().mean().item(), rel=1e-9, abs=0)


def test_summary_std_of_a_constant_gradient_is_zero() -> None:
    """MeanBackward0 hands on 800 equal elements (1/800): their std is 0, not 4e-7."""
    assert to_value(torch.full((800,), 1 / 800), 64)["std"] == 0.0
    assert to_value(torch.full((800,), 1 / 800, dtype=torch.float16), 64)["std"] == 0.0


def test_layernorm_steps_show_pytorch_std() -> None:
    """A LayerNorm trained three steps with Adam: its weight near 1.0 and the gradient of
    ``.mean()`` show PyTorch's std in the walk and in the final values."""
    assert_truthful(
        "import torch, torch.nn as nn\n"
        "ln = nn.LayerNorm(200)\n"
        "opt = torch.optim.Adam(ln.parameters(), lr=1e-3)\n"
        "x = torch.randn(4, 200)\n"
        "for i in range(3):\n"
        "    opt.zero_grad()\n"
        "    ln(x).pow(3).mean().backward()\n"
        "    opt.step()\n"
    )


def test_vanishing_gradients_of_a_sigmoid_stack_show_pytorch_std() -> None:
    """Forty sigmoids: each gradient is nearly constant (about 0.2**k), and the walk showed
    stds up to 2,000 times PyTorch's; x.grad's (2.8e-27) read 0."""
    assert_truthful(
        "import torch\n"
        "x = torch.randn(100, requires_grad=True)\n"
        "h = x\n"
        "for i in range(40):\n"
        "    h = torch.sigmoid(h)\n"
        "h.sum().backward()\n"
    )


# --- bug 2: a summary of elements whose squares are too small for float32 ----------------


def test_summary_of_a_vanishing_gradient_keeps_its_norm() -> None:
    """Elements near 1e-24: their float32 squares flush to zero, and the norm and std read 0."""
    g = torch.randn(500, generator=torch.Generator().manual_seed(0)) * 1e-24
    value = to_value(g, 64)
    assert value["norm"] == pytest.approx(g.double().norm().item(), rel=1e-6, abs=0)
    assert value["std"] == pytest.approx(g.double().std().item(), rel=1e-5, abs=0)
    assert to_value(torch.zeros(500), 64)["norm"] == 0.0


def test_walk_of_a_vanishing_gradient_shows_its_norm() -> None:
    assert_truthful(
        "import torch\n"
        "x = torch.randn(500, requires_grad=True)\n"
        "(x * torch.randn(500) * 1e-24).sum().backward()\n"
    )


# --- bug 3: a node that changes what it received, in place ------------------------------


def test_custom_function_that_scales_its_incoming_gradient_in_place() -> None:
    """``g.mul_(2); return g`` in a Function's backward: the walk showed the node receiving
    6 where MulBackward0 sent it 3 (what it received was read after it ran)."""
    assert_truthful(
        "import torch\n"
        "class Double(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return x * 1\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        g.mul_(2)\n"
        "        return g\n"
        "x = torch.randn(100, requires_grad=True)\n"
        "(Double.apply(x) * 3).sum().backward()\n"
    )


def test_module_backward_hook_that_scales_grad_input_in_place() -> None:
    """A full backward hook halving ``grad_input[0]`` in place runs as a post-hook of the
    node that hands the gradient on: the walk showed that node receiving the halved one."""
    assert_truthful(
        "import torch, torch.nn as nn\n"
        "lin = nn.Linear(3, 3)\n"
        "def h(m, gin, gout):\n"
        "    gin[0].mul_(0.5)\n"
        "lin.register_full_backward_hook(h)\n"
        "x = torch.randn(2, 3, requires_grad=True)\n"
        "(lin(x) * 2).sum().backward()\n"
    )


# --- bug 4: writes through .data, which leave a tensor's version as it was ---------------


@pytest.mark.parametrize("n", [3, 100])
def test_tensor_hook_that_writes_through_data(n: int) -> None:
    """``g.data.mul_(10)`` in a tensor hook: the next node showed the gradient from before
    the write (read once and cached by object and version)."""
    assert_truthful(
        "import torch\n"
        f"x = torch.randn({n}, requires_grad=True)\n"
        "y = x * 2\n"
        "def h(g):\n"
        "    g.data.mul_(10)\n"
        "y.register_hook(h)\n"
        "y.sin().sum().backward()\n"
    )


def test_custom_function_that_writes_through_data() -> None:
    assert_truthful(
        "import torch\n"
        "class Double(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return x * 1\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        g.data.mul_(2)\n"
        "        return g\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "(Double.apply(x) * 3).sum().backward()\n"
    )


def test_module_backward_hook_that_writes_through_data() -> None:
    assert_truthful(
        "import torch, torch.nn as nn\n"
        "lin = nn.Linear(3, 3)\n"
        "def h(m, gin, gout):\n"
        "    gin[0].data.mul_(0.5)\n"
        "lin.register_full_backward_hook(h)\n"
        "x = torch.randn(2, 3, requires_grad=True)\n"
        "(lin(x) * 2).sum().backward()\n"
    )


def test_post_accumulate_hook_that_writes_through_data() -> None:
    """A leaf's post-accumulate hook scaling ``p.grad.data``: the accumulation's ``after``
    showed the gradient before the hook (a 100-element summary, cached by its memory)."""
    assert_truthful(
        "import torch\n"
        "w = torch.randn(100, requires_grad=True)\n"
        "def h(p):\n"
        "    p.grad.data.mul_(0.1)\n"
        "w.register_post_accumulate_grad_hook(h)\n"
        "(w * 4).sum().backward()\n"
    )


# --- guard: snippets whose every number agreed from the start ---------------------------


@pytest.mark.parametrize("name", list(GUARD))
def test_walk_equals_pytorch(name: str) -> None:
    assert_truthful(GUARD[name])


@pytest.mark.parametrize(
    "name",
    ["scalar_chain", "attention", "complex", "half", "nan_grad", "inf_grad", "embedding_sparse", "max_ties"],
)
def test_walk_as_summaries_equals_pytorch(name: str) -> None:
    """Every value a summary (``max_value_elements=0``): the statistics of small tensors,
    scalars, complex, half, NaN and inf gradients."""
    assert_truthful(GUARD[name], Limits(max_value_elements=0))


@pytest.mark.parametrize(
    "example",
    ["cubic", "product", "small_net", "retain_graph", "grad_hook", "custom_function", "accumulate_loop"],
)
def test_app_example_walk_equals_pytorch(example: str) -> None:
    """The app's own examples (server/examples), the walks a learner steps through first."""
    assert_truthful((Path(__file__).parents[2] / "server" / "examples" / f"{example}.py").read_text())
