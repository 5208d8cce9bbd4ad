"""Less common autograd surfaces, recorded as they run without gradwalk (hunt 48).

A hunt over ~90 snippets (torch.autograd.functional and torch.func, forward-mode AD,
checkpointing, parametrizations, complex and sparse gradients, saved-tensor hooks, multi-grad
and post-accumulate hooks, double backward, inference mode, tensor subclasses, foreach and
fused optimizers, LBFGS, autocast, threads, async and generator loops, gradcheck, pruning,
packed RNNs, distributions, custom optimizers) found two kinds of difference. A tensor
subclass with its own ``__torch_function__`` saw gradwalk's reads of tensors: the ``detach``
a detector ran on a leaf after its ``AccumulateGrad`` (the backward walk's node hooks were
not muted), the ``_version`` / ``grad_fn`` / ``is_leaf`` reads of ``torch.autograd.grad``'s
roots, a subclass parameter's ``.grad`` read to name a tensor in an op of plain tensors, and
the saved-tensor hook's reads where a checkpointed block is recomputed in backward; one with
its own ``__torch_dispatch__`` saw the reads of its values, a backward's loss and seed and
a node's saved tensors as aten ops (``_local_scalar_dense``, ``ones_like``, ``detach``), and
an optimizer step's norms of its gradients failed (``tolist`` refuses such a subclass). And
a Hessian taken with ``vectorize=True`` and ``outer_jacobian_strategy="forward-mode"`` runs
ops on the legacy vmap's batched tensors, which have no storage: reading their address lost
the op's node (and raised in the snippet under ``GRADWALK_STRICT``). Each test fails on the
code before the fix; the rest of the hunt, which passed, is kept as a few representative
snippets.
"""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import assert_as_plain, run_plain

_LOGGED = (
    "import torch\n"
    "from collections import Counter\n"
    "calls = Counter()\n"
    "class Logged(torch.Tensor):\n"
    "    @classmethod\n"
    "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
    "        calls[getattr(func, '__name__', str(func))] += 1\n"
    "        return super().__torch_function__(func, types, args, kwargs or {})\n"
)


def test_a_subclass_leaf_sees_no_read_of_the_backward_walk() -> None:
    # a detector's `leaf.detach().sum()` after the leaf's AccumulateGrad ran in the node hook
    # unmuted: the subclass counted a `detach` the snippet never called
    source = _LOGGED.replace(
        "return super().__torch_function__(func, types, args, kwargs or {})",
        "with torch._C.DisableTorchFunctionSubclass():\n            return func(*args, **(kwargs or {}))",
    ) + (
        "x = torch.tensor([1.0, 2.0, 3.0]).as_subclass(Logged)\n"
        "x.requires_grad_(True)\n"
        "y = (x.exp() + x).sum()\n"
        "y.backward()\n"
        "print(x.grad.tolist())\n"
        "print(sorted(calls.items()))\n"
    )
    trace = assert_as_plain(source, leaves=("x",))
    assert "detach" not in q.stdout(trace)


def test_a_subclass_root_sees_no_read_of_autograd_grad() -> None:
    # torch.autograd.grad's roots were looked up (their _version, grad_fn, is_leaf) with the
    # subclass's __torch_function__ on: three `__get__` calls more than without gradwalk
    source = _LOGGED + (
        "x = torch.tensor([1.0, -2.0]).as_subclass(Logged).requires_grad_()\n"
        "g, = torch.autograd.grad((x * x).sum(), x)\n"
        "print(type(g).__name__, g.tolist())\n"
        "print(sorted(calls.items()))\n"
    )
    assert_as_plain(source)


#: a Parameter subclass that counts the torch functions run on it, by name, in ``calls``
_LOGGED_PARAM = (
    "import torch, torch.nn as nn\n"
    "from collections import Counter\n"
    "calls = Counter()\n"
    "class LoggedParam(nn.Parameter):\n"
    "    @classmethod\n"
    "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
    "        calls[getattr(func, '__name__', str(func))] += 1\n"
    "        with torch._C.DisableTorchFunctionSubclass():\n"
    "            return func(*args, **(kwargs or {}))\n"
)


def test_a_subclass_parameter_sees_no_read_of_an_op_of_plain_tensors() -> None:
    # naming a tensor read off a leaf (`w.grad`, `w.data`) reads each recent leaf's `.grad`:
    # in an op of plain tensors the subclass's handler was left on, and counted the reads
    source = _LOGGED_PARAM + (
        "m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n"
        "m[0].weight = LoggedParam(m[0].weight.detach().clone())\n"
        "opt = torch.optim.Adam(m.parameters(), lr=0.01)\n"
        "for i in range(3):\n"
        "    opt.zero_grad()\n"
        "    loss = nn.functional.cross_entropy(m(torch.randn(5, 3)), torch.tensor([0, 1, 0, 1, 1]))\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    print(i, loss.item())\n"
        "print(type(m[0].weight).__name__, m[0].weight.grad.sum().item())\n"
        "print(sorted(calls.items()))\n"
    )
    assert_as_plain(source)


def test_a_subclass_parameter_sees_no_read_of_gradient_clipping() -> None:
    # clip_grad_norm_'s wrapper read every parameter's `.grad` for the tape with the
    # subclass's handler on: 12 `__get__` more than without gradwalk over three steps
    source = _LOGGED_PARAM + (
        "m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n"
        "m[0].weight = LoggedParam(m[0].weight.detach().clone())\n"
        "m[2].bias = LoggedParam(torch.zeros(2))\n"
        "opt = torch.optim.Adam(m.parameters(), lr=0.01)\n"
        "for i in range(3):\n"
        "    opt.zero_grad()\n"
        "    loss = nn.functional.cross_entropy(m(torch.randn(5, 3)), torch.tensor([0, 1, 0, 1, 1]))\n"
        "    loss.backward()\n"
        "    nn.utils.clip_grad_norm_(m.parameters(), 1.0)\n"
        "    opt.step()\n"
        "    print(i, loss.item())\n"
        "print(sorted(calls.items()))\n"
    )
    assert_as_plain(source)


def test_a_subclass_in_a_checkpointed_block_sees_no_read_of_the_saved_tensor_hook() -> None:
    # the block recomputed in backward saves its tensors with the tape mode on the stack and
    # subclass dispatch on: gradwalk's pack hook read `untyped_storage`, `get_device`,
    # `is_leaf` and `grad_fn` of the saved subclass tensor through its __torch_function__
    source = _LOGGED + (
        "from torch.utils.checkpoint import checkpoint\n"
        "w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)\n"
        "x = torch.tensor([0.5, 1.0, 2.0]).as_subclass(Logged)\n"
        "y = checkpoint(lambda a: (a * w).sin(), x, use_reentrant=False)\n"
        "y.sum().backward()\n"
        "print(w.grad.tolist())\n"
        "print(sorted(calls.items()))\n"
    )
    assert_as_plain(source, leaves=("w",))


def test_a_subclass_parameter_sees_no_check_of_its_saved_tensor_in_backward() -> None:
    # backward unpacks what w * w saved: gradwalk's unpack hook checks the saved tensor's
    # version and grad_fn, which a subclass parameter's __torch_function__ counted (and a
    # SGD step's reads of p.grad for the metrics, before the fixes of this file, 60 in all)
    source = _LOGGED_PARAM + (
        "w = LoggedParam(torch.tensor([[0.5, -0.3], [0.2, 0.8]]))\n"
        "b = LoggedParam(torch.zeros(2))\n"
        "opt = torch.optim.SGD([w, b], lr=0.1, momentum=0.9, weight_decay=0.01)\n"
        "for i in range(3):\n"
        "    opt.zero_grad(set_to_none=False)\n"
        "    out = torch.nn.functional.linear(torch.randn(3, 2), w, b)\n"
        "    loss = out.relu().sum() + 0.1 * (w ** 2).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    print(i, loss.item())\n"
        "print(w.tolist(), b.grad.tolist())\n"
        "print(sorted(calls.items()))\n"
    )
    assert_as_plain(source)


_LOG_TENSOR = (
    "import torch\n"
    "from collections import Counter\n"
    "from torch.utils._pytree import tree_map\n"
    "log = Counter()\n"
    "class LogTensor(torch.Tensor):\n"
    "    @staticmethod\n"
    "    def __new__(cls, elem):\n"
    "        return torch.Tensor._make_wrapper_subclass(\n"
    "            cls, elem.size(), dtype=elem.dtype, requires_grad=elem.requires_grad)\n"
    "    def __init__(self, elem):\n"
    "        self.elem = elem\n"
    "    __torch_function__ = torch._C._disabled_torch_function_impl\n"
    "    @classmethod\n"
    "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
    "        log[func.overloadpacket.__name__] += 1\n"
    "        unwrap = lambda t: t.elem if isinstance(t, LogTensor) else t\n"
    "        wrap = lambda t: LogTensor(t) if type(t) is torch.Tensor else t\n"
    "        return tree_map(wrap, func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {})))\n"
    "    def __repr__(self):\n"
    "        return f'LogTensor({self.elem})'\n"
)


def test_a_subclass_that_dispatches_to_python_sees_no_read_of_gradwalks() -> None:
    # its value (tolist, item), the loss and seed of a backward (item, ones_like) and a
    # gradient the walk read: each ran the snippet's __torch_dispatch__, which logged
    # `_local_scalar_dense` four times and `ones_like` once more than without gradwalk
    source = _LOG_TENSOR + (
        "x = LogTensor(torch.tensor([1.0, 2.0, 3.0]))\n"
        "w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
        "y = (x * w).sum()\n"
        "y.backward()\n"
        "print(w.grad, y)\n"
        "print(sorted(log.items()))\n"
    )
    trace = assert_as_plain(source)  # w.grad is a LogTensor too: printed, not read
    assert "_local_scalar_dense" not in q.stdout(trace)
    (started,) = q.events_of(trace, "backward_started")
    assert started.seed == [None]  # the seed's ones were never made


def test_a_leaf_that_dispatches_to_python_sees_no_sum_of_the_hand_update_check() -> None:
    # the check for a gradient left in .grad across an update by hand summed the leaf: a `sum`
    # and a `_local_scalar_dense` more in the snippet's log. (One `detach` more or less per
    # saved tensor backward unpacks is PyTorch's own with saved-tensor hooks on: not compared.)
    source = _LOG_TENSOR + (
        "x = LogTensor(torch.tensor([1.0, 2.0, 3.0]))\n"
        "w = LogTensor(torch.tensor([0.5, -1.0, 2.0]).requires_grad_())\n"
        "y = (x * w).exp().sum()\n"
        "y.backward()\n"
        "print({k: v for k, v in sorted(log.items()) if k != 'detach'})\n"
    )
    printed, _, _ = run_plain(source)
    assert q.stdout(record(source)) == printed


def test_an_optimizer_step_on_gradients_that_dispatch_to_python_reads_no_norms() -> None:
    # a Linear fed a LogTensor gets LogTensor gradients: the step's norms read them with
    # tolist(), which such a subclass refuses (an unrecorded step, raised in the snippet
    # under GRADWALK_STRICT) after running its __torch_dispatch__ on them
    source = _LOG_TENSOR + (
        "lin = torch.nn.Linear(3, 1)\n"
        "opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)\n"
        "for i in range(2):\n"
        "    x = LogTensor(torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]]))\n"
        "    opt.zero_grad()\n"
        "    loss = lin(x).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "print(type(lin.weight.grad).__name__, lin.weight.grad)\n"
        "print(sorted(log.items()))\n"
    )
    trace = assert_as_plain(source)
    steps = q.optimizer_steps(trace)
    assert len(steps) == 2
    assert [s.grad_norm for s in steps] == [None, None]  # reported, without norms


def test_a_forward_mode_vectorized_hessian_keeps_its_nodes() -> None:
    # the legacy vmap's batched tensors have no storage: reading their address to match saved
    # tensors lost the op's node (and raised under GRADWALK_STRICT, as the test suite runs)
    source = (
        "import torch\n"
        "from torch.autograd.functional import hessian\n"
        "def f(x):\n"
        "    return (x ** 3).sum() + x.prod()\n"
        "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "H = hessian(f, x, outer_jacobian_strategy='forward-mode', vectorize=True)\n"
        "print(H.tolist())\n"
    )
    assert_as_plain(source)


def test_a_vectorized_jacobian_with_create_graph_keeps_its_gradients() -> None:
    source = (
        "import torch\n"
        "from torch.autograd.functional import jacobian\n"
        "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "J = jacobian(lambda a: a.exp() * a.sin(), x, create_graph=True, vectorize=True)\n"
        "J.diagonal().sum().backward()\n"
        "print(J.diagonal().tolist(), x.grad.tolist())\n"
    )
    assert_as_plain(source, leaves=("x",))


PASSED = {
    "functional": (
        "import torch\n"
        "from torch.autograd.functional import jacobian, hessian, vjp, jvp, hvp\n"
        "def f(x):\n"
        "    return (x ** 3).sum() + x.prod()\n"
        "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "print(hessian(f, x).tolist(), vjp(f, x)[1].tolist())\n"
        "print(jvp(torch.sin, x, torch.ones(3))[1].tolist(), hvp(f, x, torch.ones(3))[1].tolist())\n"
        "J = jacobian(lambda a: a.exp(), x, create_graph=True)\n"
        "J.sum().backward()\n"
        "print(x.grad.tolist())\n"
    ),
    "post_accumulate_hooks": (
        "import torch, torch.nn as nn\n"
        "model = nn.Linear(3, 2)\n"
        "opts = {p: torch.optim.SGD([p], lr=0.1) for p in model.parameters()}\n"
        "def hook(p):\n"
        "    opts[p].step()\n"
        "    opts[p].zero_grad()\n"
        "for p in model.parameters():\n"
        "    p.register_post_accumulate_grad_hook(hook)\n"
        "for i in range(3):\n"
        "    model(torch.randn(4, 3)).pow(2).sum().backward()\n"
        "print(model.weight.tolist(), model.bias.grad)\n"
    ),
    "multi_grad_hook": (
        "import torch\n"
        "from torch.autograd.graph import register_multi_grad_hook\n"
        "a = torch.randn(3, requires_grad=True)\n"
        "b = torch.randn(3, requires_grad=True)\n"
        "seen = []\n"
        "register_multi_grad_hook((a, b), lambda gs: seen.append([g is None for g in gs]))\n"
        "(a * 2 + b * 3).sum().backward()\n"
        "(a * 5).sum().backward()\n"
        "print(seen, a.grad.tolist(), b.grad.tolist())\n"
    ),
    "checkpoint_both": (
        "import torch, torch.nn as nn\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "blk = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.GELU(), nn.Linear(8, 4))\n"
        "x = torch.randn(3, 4, requires_grad=True)\n"
        "for reent in (True, False):\n"
        "    y = checkpoint(blk, x, use_reentrant=reent)\n"
        "    y.pow(2).sum().backward()\n"
        "    print(reent, x.grad.tolist())\n"
    ),
    "lbfgs": (
        "import torch\n"
        "x = torch.tensor([-1.5, 2.0], requires_grad=True)\n"
        "opt = torch.optim.LBFGS([x], lr=1, max_iter=20, line_search_fn='strong_wolfe')\n"
        "def closure():\n"
        "    opt.zero_grad()\n"
        "    loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2\n"
        "    loss.backward()\n"
        "    return loss\n"
        "for i in range(2):\n"
        "    print(opt.step(closure).item())\n"
        "print(x.tolist(), x.grad.tolist())\n"
    ),
    "gradcheck": (
        "import torch\n"
        "from torch.autograd import gradcheck, gradgradcheck\n"
        "x = torch.randn(3, dtype=torch.double, requires_grad=True)\n"
        "W = torch.randn(2, 3, dtype=torch.double, requires_grad=True)\n"
        "f = lambda x, W: torch.tanh(W @ x).exp()\n"
        "print(gradcheck(f, (x, W)), gradgradcheck(f, (x, W)), x.grad)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(PASSED))
def test_passed_snippets_record_as_plain(name: str) -> None:
    assert_as_plain(PASSED[name])
