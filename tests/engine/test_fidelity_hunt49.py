"""Snippets of surfaces no earlier hunt recorded, which already record as they run without
gradwalk (prints, errors, leaf gradients): prints of torch.func's wrapped tensors, vmap's
randomness, a snippet's own saved-tensor hooks beside gradwalk's, custom Functions written with
setup_context, set_materialize_grads, mark_dirty and mark_non_differentiable, module hooks with
kwargs and backward pre-hooks, sparse softmax and CSR products, autograd.grad batched over its
gradients, parametrizations cached and removed, checkpoint_sequential, forward-mode AD through an
in-place ReLU, complex polar coordinates, MAML through functional_call, scatter_reduce pooling and a
tensor hook inside torch.func.grad. A regression guard: the hunt found no fidelity bug here."""

from __future__ import annotations

import pytest

from tests.engine.snippets import assert_as_plain

_PASSING: dict[str, tuple[str, tuple[str, ...]]] = {
    "prints_inside_vmap_and_grad": (
        "import torch\n"
        "from torch.func import vmap, grad\n"
        "def f(x):\n"
        "    print(type(x).__name__, x.shape)\n"
        "    print(x)\n"
        "    return x.sin().sum()\n"
        "xs = torch.tensor([[1.0, 2.0], [3.0, 4.0]])\n"
        "print(vmap(f)(xs))\n"
        "print(grad(f)(xs[0]))\n",
        (),
    ),
    "vmap_randomness_keeps_the_generator": (
        "import torch\n"
        "from torch.func import vmap\n"
        "xs = torch.zeros(3, 2)\n"
        "print(vmap(lambda x: x + torch.randn(2), randomness='different')(xs))\n"
        "print(vmap(lambda x: x + torch.randn(2), randomness='same')(xs))\n"
        "print(torch.rand(2))\n",
        (),
    ),
    "own_saved_tensor_hooks": (
        "import torch\n"
        "packed = []\n"
        "def pack(t):\n"
        "    packed.append(tuple(t.shape))\n"
        "    return t.to(torch.float16)\n"
        "def unpack(t):\n"
        "    return t.to(torch.float32)\n"
        "w = torch.randn(4, 3, requires_grad=True)\n"
        "x = torch.randn(2, 4)\n"
        "with torch.autograd.graph.saved_tensors_hooks(pack, unpack):\n"
        "    y = (x @ w).tanh().sum()\n"
        "y.backward()\n"
        "print(packed, w.grad.dtype)\n",
        ("w",),
    ),
    "function_with_setup_context_under_grad": (
        "import torch\n"
        "class Mul(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(x, k):\n"
        "        return x * k\n"
        "    @staticmethod\n"
        "    def setup_context(ctx, inputs, output):\n"
        "        x, k = inputs\n"
        "        ctx.k = k\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g * ctx.k, None\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "Mul.apply(x, 5.0).sum().backward()\n"
        "print(x.grad.tolist())\n"
        "print(torch.func.grad(lambda t: Mul.apply(t, 2.0).sum())(torch.ones(3)).tolist())\n",
        ("x",),
    ),
    "function_without_materialized_grads": (
        "import torch\n"
        "class Split(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        ctx.set_materialize_grads(False)\n"
        "        return x * 2, x * 3\n"
        "    @staticmethod\n"
        "    def backward(ctx, g1, g2):\n"
        "        out = torch.zeros(3)\n"
        "        if g1 is not None:\n"
        "            out = out + 2 * g1\n"
        "        if g2 is not None:\n"
        "            out = out + 3 * g2\n"
        "        print(g1 is None, g2 is None)\n"
        "        return out\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "a, b = Split.apply(x)\n"
        "a.sum().backward()\n"
        "print(x.grad.tolist())\n",
        ("x",),
    ),
    "function_that_marks_dirty": (
        "import torch\n"
        "class AddOneInPlace(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        x.add_(1)\n"
        "        ctx.mark_dirty(x)\n"
        "        return x\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "y = AddOneInPlace.apply(x.clone())\n"
        "(y * 2).sum().backward()\n"
        "print(x.grad.tolist())\n",
        ("x",),
    ),
    "function_with_a_non_differentiable_output": (
        "import torch\n"
        "class SortIdx(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        vals, idx = x.sort()\n"
        "        ctx.mark_non_differentiable(idx)\n"
        "        ctx.save_for_backward(idx)\n"
        "        return vals, idx\n"
        "    @staticmethod\n"
        "    def backward(ctx, g, _):\n"
        "        idx, = ctx.saved_tensors\n"
        "        out = torch.zeros_like(g)\n"
        "        out[idx] = g\n"
        "        return out\n"
        "x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)\n"
        "vals, idx = SortIdx.apply(x)\n"
        "(vals * torch.arange(3.0)).sum().backward()\n"
        "print(x.grad.tolist(), idx.requires_grad)\n",
        ("x",),
    ),
    "module_hooks_with_kwargs_and_backward_pre_hook": (
        "import torch\n"
        "import torch.nn as nn\n"
        "lin = nn.Linear(2, 2)\n"
        "calls = []\n"
        "def pre(module, args, kwargs):\n"
        "    calls.append(('pre', sorted(kwargs)))\n"
        "    return args, kwargs\n"
        "def post(module, args, kwargs, out):\n"
        "    calls.append(('post', out.shape))\n"
        "    return out * 2\n"
        "lin.register_forward_pre_hook(pre, with_kwargs=True)\n"
        "lin.register_forward_hook(post, with_kwargs=True)\n"
        "lin.register_full_backward_pre_hook(lambda m, go: calls.append(('bpre', go[0].shape)))\n"
        "y = lin(input=torch.ones(1, 2))\n"
        "y.sum().backward()\n"
        "print(calls, lin.weight.grad.tolist())\n",
        (),
    ),
    "backward_hook_that_scales_grad_input": (
        "import torch\n"
        "import torch.nn as nn\n"
        "lin = nn.Linear(3, 3)\n"
        "def halve(module, gin, gout):\n"
        "    return tuple(None if g is None else g * 0.5 for g in gin)\n"
        "lin.register_full_backward_hook(halve)\n"
        "x = torch.randn(2, 3, requires_grad=True)\n"
        "lin(x).relu().sum().backward()\n"
        "print(x.grad.tolist())\n",
        ("x",),
    ),
    "sparse_softmax_and_csr_product": (
        "import torch\n"
        "i = torch.tensor([[0, 0, 1, 2], [0, 2, 1, 0]])\n"
        "v = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)\n"
        "s = torch.sparse_coo_tensor(i, v, (3, 3)).coalesce()\n"
        "out = torch.sparse.softmax(s, dim=1)\n"
        "torch.sparse.sum(out * out).backward()\n"
        "print(out.to_dense().tolist(), v.grad.tolist())\n"
        "A = torch.tensor([[0., 2., 0.], [1., 0., 3.]]).to_sparse_csr()\n"
        "x = torch.randn(3, 2, requires_grad=True)\n"
        "y = A @ x\n"
        "y.pow(2).sum().backward()\n"
        "print(y.tolist(), x.grad.tolist())\n",
        ("x",),
    ),
    "gradients_batched_by_autograd_grad": (
        "import torch\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "y = x.sin() * 2\n"
        "I = torch.eye(3)\n"
        "(J,) = torch.autograd.grad(y, x, I, is_grads_batched=True)\n"
        "print(J.tolist())\n",
        (),
    ),
    "cached_then_removed_parametrization": (
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.nn.utils.parametrize as P\n"
        "from torch.nn.utils.parametrizations import orthogonal\n"
        "layer = orthogonal(nn.Linear(3, 3))\n"
        "x = torch.randn(2, 3, requires_grad=True)\n"
        "with P.cached():\n"
        "    y = layer(x) + layer(x)\n"
        "y.sum().backward()\n"
        "print(x.grad.tolist())\n"
        "lin = orthogonal(nn.Linear(3, 3))\n"
        "W = lin.weight.detach().clone()\n"
        "P.remove_parametrizations(lin, 'weight')\n"
        "print(type(lin).__name__, torch.allclose(lin.weight, W), isinstance(lin.weight, nn.Parameter))\n"
        "lin(torch.randn(2, 3)).sum().backward()\n"
        "print(lin.weight.grad.shape)\n",
        ("x",),
    ),
    "checkpoint_sequential": (
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.utils.checkpoint import checkpoint_sequential\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))\n"
        "x = torch.randn(3, 4, requires_grad=True)\n"
        "out = checkpoint_sequential(model, 2, x, use_reentrant=False)\n"
        "out.sum().backward()\n"
        "print(x.grad.tolist())\n",
        (),
    ),
    "forward_ad_through_an_inplace_relu": (
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.autograd.forward_ad as fwAD\n"
        "net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 1))\n"
        "x = torch.randn(2, 3)\n"
        "with fwAD.dual_level():\n"
        "    out = net(fwAD.make_dual(x, torch.ones_like(x)))\n"
        "    print(fwAD.unpack_dual(out).tangent.shape)\n",
        (),
    ),
    "complex_polar": (
        "import torch\n"
        "r = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "theta = torch.tensor([0.3, 1.2], requires_grad=True)\n"
        "z = torch.polar(r, theta)\n"
        "w = z * torch.exp(1j * theta)\n"
        "(w.real.sum() + w.imag.pow(2).sum()).backward()\n"
        "print(r.grad.tolist(), theta.grad.tolist())\n",
        ("r", "theta"),
    ),
    "maml_with_functional_call": (
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.func import functional_call\n"
        "model = nn.Linear(2, 1)\n"
        "meta_opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
        "xs, ys = torch.randn(4, 2), torch.randn(4, 1)\n"
        "xq, yq = torch.randn(4, 2), torch.randn(4, 1)\n"
        "params = dict(model.named_parameters())\n"
        "inner = nn.functional.mse_loss(functional_call(model, params, (xs,)), ys)\n"
        "grads = torch.autograd.grad(inner, params.values(), create_graph=True)\n"
        "fast = {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads)}\n"
        "outer = nn.functional.mse_loss(functional_call(model, fast, (xq,)), yq)\n"
        "meta_opt.zero_grad()\n"
        "outer.backward()\n"
        "meta_opt.step()\n"
        "print(model.weight.grad.tolist(), model.bias.grad.tolist())\n",
        (),
    ),
    "scatter_reduce_mean_pooling": (
        "import torch\n"
        "x = torch.randn(6, 2, requires_grad=True)\n"
        "batch = torch.tensor([0, 0, 1, 1, 1, 2])\n"
        "pooled = torch.zeros(3, 2).scatter_reduce(0, batch[:, None].expand(-1, 2), x, reduce='mean', include_self=False)\n"
        "pooled.pow(2).sum().backward()\n"
        "print(pooled.tolist(), x.grad.tolist())\n",
        ("x",),
    ),
    "tensor_hook_inside_grad": (
        "import torch\n"
        "from torch.func import grad\n"
        "seen = []\n"
        "def f(x):\n"
        "    y = x * 2\n"
        "    y.register_hook(lambda g: seen.append(g.tolist()))\n"
        "    return y.sum()\n"
        "print(grad(f)(torch.ones(2)).tolist(), seen)\n",
        (),
    ),
}


@pytest.mark.parametrize("name", list(_PASSING))
def test_a_surface_no_hunt_recorded_records_as_it_runs_without_gradwalk(name: str) -> None:
    source, leaves = _PASSING[name]
    assert_as_plain(source, leaves)
