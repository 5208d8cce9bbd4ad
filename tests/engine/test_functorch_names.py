"""torch.func's wrapped tensors take no name and no final state: the snippet's own leaves and
parameters keep theirs (NOTE [No names for torch.func wrappers] in engine/tensors.py, NOTE
[Parameters under torch.func] in engine/modules.py). The grads under those names are
PyTorch's own."""

from __future__ import annotations

from typing import Any

import pytest

from engine import queries as q
from engine import record
from engine.summary import summarize
from tests.engine.snippets import plain_grads


def _finals(trace: Any) -> list[str]:
    return [e.name for e in q.events_of(trace, "tensor_final")]


FUNCTIONAL_CALL = """
import torch
from torch.func import functional_call, grad
model = torch.nn.Linear(3, 1)
x = torch.ones(2, 3)
params = dict(model.named_parameters())
g = grad(lambda p: functional_call(model, p, (x,)).sum())(params)
model(x).sum().backward()
print(model.weight.grad)
"""


def test_a_model_first_called_through_functional_call_keeps_its_parameters_names() -> None:
    trace = record(FUNCTIONAL_CALL)
    assert q.stdout(trace) == "tensor([[2., 2., 2.]])\n"
    assert q.final_grads(trace) == {"model.weight": [2.0, 2.0, 2.0], "model.bias": [2.0]}
    assert sorted(_finals(trace)) == ["model.bias", "model.weight"]
    # the names are the real parameters', the ones their accumulations name
    named = {tid: name for tid, name in q.tensor_names(trace).items() if name.startswith("model.")}
    accumulated = {e.tensor for e in q.events_of(trace, "grad_accumulated")}
    assert set(named) == accumulated
    summary = summarize(trace).splitlines()
    assert "  model.weight.grad = [[2, 2, 2]]" in summary  # a [1, 3] weight, in rows as PyTorch prints it
    assert "  model.bias.grad = [2]" in summary


def test_a_model_named_before_functional_call_keeps_its_parameters_names() -> None:
    source = """
import torch
from torch.func import functional_call, grad
model = torch.nn.Linear(3, 1)
x = torch.ones(2, 3)
model(x).sum().backward()
g = grad(lambda p: functional_call(model, p, (x,)).sum())(dict(model.named_parameters()))
model(x).sum().backward()
"""
    trace = record(source)
    assert q.final_grads(trace) == {"model.weight": [4.0, 4.0, 4.0], "model.bias": [4.0]}
    assert sorted(_finals(trace)) == ["model.bias", "model.weight"]


def test_a_leaf_shadowed_by_its_wrapper_inside_grad_has_one_final_state() -> None:
    # inside grad(f), f's `w` is functorch's wrapper of the module level's w
    source = """
import torch
from torch.func import grad
def f(w):
    return (w ** 2).sum()
w = torch.tensor([1.0, 2.0], requires_grad=True)
print(grad(f)(w))
f(w).backward()
print(w.grad)
"""
    trace = record(source)
    assert q.stdout(trace) == "tensor([2., 4.], grad_fn=<MulBackward0>)\ntensor([2., 4.])\n"
    assert _finals(trace) == ["w"]
    assert q.final_grads(trace) == {"w": [2.0, 4.0]}
    assert list(q.tensor_names(trace).values()).count("w") == 1


PER_SAMPLE = """
import torch
from torch.func import functional_call, grad, jvp, vmap
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
params = {k: v.detach() for k, v in model.named_parameters()}
def loss_fn(p, x, y):
    out = functional_call(model, p, (x.unsqueeze(0),))
    return ((out - y) ** 2).mean()
x = torch.randn(5, 3, requires_grad=True)
y = torch.randn(5, 1)
g = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
out, tangent = jvp(lambda t: t.sin(), (x,), (torch.ones_like(x),))
((model(x) - y) ** 2).mean().backward()
"""


def test_per_sample_gradients_leave_the_models_final_grads_to_its_parameters() -> None:
    trace = record(PER_SAMPLE)
    names = ["model[0].weight", "model[0].bias", "model[2].weight", "model[2].bias", "x"]
    plain = plain_grads(PER_SAMPLE, names)
    finals = q.final_grads(trace)
    assert (
        sorted(finals)
        == sorted(_finals(trace))
        == ["model.0.bias", "model.0.weight", "model.2.bias", "model.2.weight", "x"]
    )
    for name in names:
        assert finals[name.replace("[", ".").replace("]", "")] == pytest.approx(plain[name], rel=1e-6)
    # neither the comprehension's `v` nor jvp's `t` (a wrapper of x) names a tensor
    assert not {"v", "t", "p"} & set(q.tensor_names(trace).values())
