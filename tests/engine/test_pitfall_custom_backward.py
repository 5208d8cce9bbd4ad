"""custom-backward-ignores-gradient: a custom ``autograd.Function`` whose backward returns the
local derivative alone, never reading the gradient it receives. Said at its return statement
with the numbers the node received and sent; correct Functions, gradient stops and
PyTorch's own Functions stay silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_grads, recorded_silently, the_pitfall

_SQUARE = """import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x


x = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (Square.apply(x) * 3).sum()
loss.backward()
print(x.grad)
"""


def test_a_backward_that_drops_its_gradient_is_said_at_its_return_with_the_numbers() -> None:
    said = the_pitfall(_SQUARE, "custom-backward-ignores-gradient", 13)
    assert said.title == "Square.backward ignores the gradient it receives"
    assert "Square.backward(ctx, grad_output) never reads grad_output" in said.message
    # the node received the 3 of `* 3` and sent 2x regardless: x.grad is [2, 4], not [6, 12]
    assert "received grad_output = [3, 3] and sent [2, 4] regardless" in said.message
    assert "are wrong" in said.message
    assert said.fix.endswith("return grad_output * (2 * x)")
    assert said.nodes, "the report points at the Function's node"
    # the report changes no number: x.grad is PyTorch's own (wrong) [2, 4]
    assert plain_grads(_SQUARE, ["x"]) == {"x": [2.0, 4.0]}


def test_the_fix_the_report_gives_runs_silent_and_gets_the_chain_rule_right() -> None:
    fixed = _SQUARE.replace("return 2 * x", "return grad_output * (2 * x)")
    recorded_silently(fixed)
    assert plain_grads(fixed, ["x"]) == {"x": [6.0, 12.0]}


def test_an_output_summed_into_the_loss_is_said_to_be_right_only_by_luck() -> None:
    source = _SQUARE.replace("(Square.apply(x) * 3).sum()", "Square.apply(x).sum()")
    said = the_pitfall(source, "custom-backward-ignores-gradient", 13)
    assert "received grad_output = [1, 1] and sent [2, 4]" in said.message
    assert "all ones" in said.message and "happens to be right" in said.message


def test_varargs_once_differentiable_and_tuples_are_read_through() -> None:
    source = """import torch
from torch.autograd.function import once_differentiable


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        a, b = ctx.saved_tensors
        return b, a


a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
(Mul.apply(a, b) * 5).backward()
print(a.grad, b.grad)
"""
    said = the_pitfall(source, "custom-backward-ignores-gradient", 15)
    assert "Mul.backward(ctx, *grads) never reads grads[0]" in said.message
    assert "received grads[0] = 5 and sent 3 and 2 regardless" in said.message
    assert "Multiply each gradient backward returns by grads[0]" in said.fix


@pytest.mark.parametrize(
    "backward",
    [
        "return grad_output * 2 * x",  # the chain rule
        "return grad_output.clone().mul_(2 * x)",  # read through a method
        "return None",  # a gradient stop, on purpose
        "return torch.zeros_like(x)",  # a stop that sends zeros
        "def scaled(g):\n            return g * 2 * x\n        return scaled(grad_output)",  # a helper
    ],
)
def test_backwards_that_read_their_gradient_or_stop_it_are_silent(backward: str) -> None:
    recorded_silently(_SQUARE.replace("return 2 * x", backward))


def test_pytorchs_own_functions_and_the_bundled_example_are_silent() -> None:
    checkpointed = """import torch
from torch.utils.checkpoint import checkpoint

lin = torch.nn.Linear(3, 3)
x = torch.randn(2, 3, requires_grad=True)
out = checkpoint(lambda t: torch.tanh(lin(t)), x, use_reentrant=True).sum()
out.backward()
print(x.grad.shape)
"""
    recorded_silently(checkpointed)
    trace = record(Path("server/examples/custom_function.py").read_text())
    assert q.pitfalls(trace) == []
