"""Snippets that touch a tensor autograd saved, recorded as they run without gradwalk.

Fuzzing the engine with custom Functions, views and in-place ops found that the tensors a
graph saves were kept as detached aliases: a saved input's ``.data`` replaced after the
forward, or the input detached in place, was not seen by backward (a gradient unlike
PyTorch's, or a backward that ran where PyTorch's fails), and the in-place error named the
wrong node for a custom Function's saved output and none for a saved view. Each test runs
the snippet plainly and recorded, and compares output, errors and final gradients.
"""

from __future__ import annotations

import torch

from engine import queries as q
from engine import record
from engine.events import FullValue, Trace
from tests.engine.snippets import run_plain


def _recorded_error(trace: Trace) -> tuple[str, str, int | None] | None:
    errors = q.errors(trace)
    return (errors[0].exc_type, errors[0].message, errors[0].line) if errors else None


def _final_grad(trace: Trace, name: str) -> torch.Tensor:
    (final,) = [e for e in q.events_of(trace, "tensor_final") if e.name == name]
    assert isinstance(final.grad, FullValue)
    return torch.tensor(final.grad.flat).reshape(final.grad.shape)


def _assert_as_plain(source: str, leaves: tuple[str, ...] = ()) -> Trace:
    """Record ``source`` and check it printed and raised what it does without gradwalk, and
    that each of ``leaves`` ends with PyTorch's own ``.grad``, bitwise."""
    printed, error, scope = run_plain(source, seed=None)
    trace = record(source)
    assert q.stdout(trace) == printed
    assert _recorded_error(trace) == error
    for name in leaves:
        want = scope[name].grad
        got = _final_grad(trace, name).to(want.dtype)
        assert torch.equal(got, want), (name, got, want)
    return trace


def test_a_leafs_data_replaced_after_the_forward_is_what_backward_uses() -> None:
    # w * w saved w itself: PyTorch's backward reads the new values; an alias kept the old
    source = (
        "import torch\n"
        "w = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = (w * w).sum()\n"
        "w.data = torch.tensor([10.0, 20.0])\n"
        "y.backward()\n"
        "print(w.grad)\n"
    )
    _assert_as_plain(source, leaves=("w",))


def test_a_saved_intermediates_data_replaced_after_the_forward_is_what_backward_uses() -> None:
    source = (
        "import torch\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "h = x * 3\n"
        "z = (h * x).sum()\n"
        "h.data = torch.tensor([100.0, 200.0])\n"
        "z.backward()\n"
        "print(x.grad)\n"
    )
    _assert_as_plain(source, leaves=("x",))


def test_a_saved_intermediate_detached_in_place_fails_backward_as_in_pytorch() -> None:
    source = (
        "import torch\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = x * 3\n"
        "z = y * y\n"
        "y.detach_()\n"
        "z.sum().backward()\n"
        "print(x.grad)\n"
    )
    trace = _assert_as_plain(source)
    error = _recorded_error(trace)
    assert error is not None and error[0] == "RuntimeError" and error[2] == 6


def test_the_inplace_error_names_the_custom_function_that_saved_its_output() -> None:
    # "which is output 0 of Sq": the node that saved it, not the add_ that changed it
    source = (
        "import torch\n"
        "class Sq(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        y = x * x\n"
        "        ctx.save_for_backward(y, x)\n"
        "        return y\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        y, x = ctx.saved_tensors\n"
        "        return 2 * x * g\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = Sq.apply(x)\n"
        "y.add_(1)\n"
        "y.sum().backward()\n"
    )
    trace = _assert_as_plain(source)
    error = _recorded_error(trace)
    assert error is not None and "which is output 0 of Sq," in error[1]


def test_the_inplace_error_names_the_view_of_a_changed_base_as_pytorch_does() -> None:
    # y[1] *= y[0] saved the view y[0]; its base changed, so PyTorch reads its grad_fn as
    # AsStrided: "which is output 0 of AsStrided" (the view was a temporary, gone with the alias)
    source = (
        "import torch\n"
        "x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)\n"
        "y = x * 2\n"
        "y[0] += 1\n"
        "y[1] *= y[0]\n"
        "y.pow(2).sum().backward()\n"
    )
    trace = _assert_as_plain(source)
    error = _recorded_error(trace)
    assert error is not None and "which is output 0 of AsStrided," in error[1]


def test_what_a_custom_function_saved_is_read_at_each_backward_as_in_pytorch() -> None:
    # ctx.save_for_backward of an intermediate and a leaf; between two backward calls over a
    # retained graph the leaf's data is replaced: the second reads the new values
    source = (
        "import torch\n"
        "class Mul(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x, y):\n"
        "        ctx.save_for_backward(x, y)\n"
        "        return x * y\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        x, y = ctx.saved_tensors\n"
        "        return g * y, g * x\n"
        "a = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "h = a.sin()\n"
        "out = (Mul.apply(h, a) * h).sum()\n"
        "out.backward(retain_graph=True)\n"
        "a.data = a.data * 2\n"
        "out.backward()\n"
        "print(a.grad)\n"
    )
    _assert_as_plain(source, leaves=("a",))


def test_leaves_held_in_a_plain_list_or_dict_end_with_their_grads_named_by_place() -> None:
    # unnamed, such a leaf had no final state: the trace showed no .grad for it at all
    source = (
        "import torch\n"
        "params = [torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0], requires_grad=True)]\n"
        "cfg = {'w': torch.tensor([0.5], requires_grad=True)}\n"
        "loss = ((params[0] * params[1]).sum() * cfg['w']).sum()\n"
        "loss.backward()\n"
    )
    trace = _assert_as_plain(source)
    _, _, scope = run_plain(source, seed=None)
    plain = {"params[0]": scope["params"][0], "params[1]": scope["params"][1], "cfg['w']": scope["cfg"]["w"]}
    for name, leaf in plain.items():
        assert torch.equal(_final_grad(trace, name), leaf.grad), name
