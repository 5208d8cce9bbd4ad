"""A snippet's own hooks on one saved tensor (NOTE [A snippet's hooks on one saved tensor] in
engine/saved_hooks.py): ``grad_fn._raw_saved_self.register_hooks(pack, unpack)``, the first
example of PyTorch's tutorial on saved-tensor hooks, raised "hooks have already been set" while
recording, since gradwalk's own hooks count what every graph holds. Each snippet here records
as it runs without gradwalk: the same prints (the hooks' own included), errors and gradients."""

from __future__ import annotations

import torch

from engine import record
from tests.engine.snippets import assert_as_plain

TUTORIAL = """import torch

def pack_hook(x):
    print("Packing", x)
    return x

def unpack_hook(x):
    print("Unpacking", x)
    return x

a = torch.ones(5, requires_grad=True)
b = torch.ones(5, requires_grad=True) * 2
y = a * b
y.grad_fn._raw_saved_self.register_hooks(pack_hook, unpack_hook)
y.sum().backward()
print(a.grad)
"""


def test_the_tutorials_first_example_records_as_it_runs() -> None:
    trace = assert_as_plain(TUTORIAL, ("a",))
    assert "Packing" in "".join(e.text for e in trace.events if e.type == "output")


def test_hooks_that_keep_the_tensor_elsewhere_give_the_same_gradients() -> None:
    # the tutorial's "saving to another place": pack keeps a copy in a list and returns its
    # index; unpack hands the copy back; a second pair on the same tensor is refused
    assert_as_plain(
        """import torch
store = []
def pack(x):
    store.append(x.clone())
    return len(store) - 1
def unpack(i):
    return store[i]
w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = w.exp()
out = (h * h).sum()
h.grad_fn._raw_saved_result.register_hooks(pack, unpack)
try:
    h.grad_fn._raw_saved_result.register_hooks(pack, unpack)
except RuntimeError as e:
    print("again:", e)
out.backward(retain_graph=True)
print(w.grad, len(store))
try:
    h.grad_fn._raw_saved_result.register_hooks(1, 2)
except TypeError as e:
    print("not callables:", str(e).splitlines()[0])
""",
        ("w",),
    )


def test_an_unpack_hook_that_returns_no_tensor_fails_as_without_gradwalk() -> None:
    assert_as_plain(
        """import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.sin()
y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: 5)
y.sum().backward()
"""
    )


def test_pytorchs_own_method_is_back_after_a_run() -> None:
    method = torch._C._autograd.SavedTensor.register_hooks
    record(TUTORIAL)
    assert torch._C._autograd.SavedTensor.register_hooks is method
