"""Less common PyTorch surfaces, recorded as they run without gradwalk.

A fidelity hunt over ~110 snippets (torch.linalg, torch.fft and complex gradients,
torch.distributions, sparse and nested tensors, torch.func, forward-mode AD, checkpointing
with both ``use_reentrant`` values, autocast, explicit generators, hooks, a user's own
TorchFunctionMode and TorchDispatchMode) found one difference: nested tensors. A strided
nested tensor raises on ``.shape``, and the graph's saved-tensor bookkeeping read it, so a
recording of ``nt * 2`` lost the op's node (and under ``GRADWALK_STRICT`` raised in the
snippet); a jagged one's ragged dimension is a symbol, which went into the trace and made
``record`` itself fail the trace's schema. The rest, which passed, are kept here: each
prints its gradients with ``tolist()`` (so equal output means bitwise-equal gradients,
complex and sparse ones included) and must record with nothing unrecorded and no pitfall.
"""

from __future__ import annotations

import pytest

from engine import queries as q
from tests.engine.snippets import assert_as_plain


def test_a_strided_nested_tensors_ops_keep_their_nodes() -> None:
    # `.shape` raises on a strided nested tensor: reading it for the saved tensors of `nt * 2`
    # dropped the op's node (and raised in the snippet under GRADWALK_STRICT)
    source = (
        "import torch\n"
        "a = torch.randn(2, 3, requires_grad=True)\n"
        "b = torch.randn(4, 3, requires_grad=True)\n"
        "nt = torch.nested.as_nested_tensor([a, b])\n"
        "out = nt * 2\n"
        "parts = out.unbind()\n"
        "(parts[0].sum() + parts[1].pow(2).sum()).backward()\n"
        "print(a.grad.tolist(), b.grad.tolist())\n"
    )
    trace = assert_as_plain(source, leaves=("a", "b"))
    assert "MulBackward0" in q.node_names(trace).values()


def test_two_nested_tensors_multiplied_meet_no_detector_that_reads_a_shape() -> None:
    # `h * h` is an op the pitfall detectors watch (broadcast-in-loss read both operands'
    # .shape): the op went unrecorded, and raised in the snippet under GRADWALK_STRICT
    source = (
        "import torch\n"
        "a = torch.randn(2, 3, requires_grad=True)\n"
        "b = torch.randn(4, 3, requires_grad=True)\n"
        "h = torch.nested.as_nested_tensor([a, b]) * 2\n"
        "sq = h * h\n"
        "parts = sq.unbind()\n"
        "(parts[0].sum() + parts[1].sum()).backward()\n"
        "print(a.grad.tolist(), b.grad.tolist())\n"
    )
    assert_as_plain(source, leaves=("a", "b"))


def test_a_jagged_nested_tensor_records_a_valid_trace() -> None:
    # the ragged dimension of a jagged tensor's shape is a symbol (j1), not an int: it went
    # into tensor, saved-tensor, gradient and (chunk's several outputs) grad_shapes events,
    # and `record` failed the trace's schema
    source = (
        "import torch\n"
        "a = torch.randn(2, 4, requires_grad=True)\n"
        "b = torch.randn(3, 4, requires_grad=True)\n"
        "nj = torch.nested.as_nested_tensor([a, b], layout=torch.jagged)\n"
        "p, r = nj.chunk(2, dim=-1)\n"
        "out = (p.sin() * r).values()\n"
        "print(out.shape, nj.is_nested)\n"
        "out.pow(2).sum().backward()\n"
        "print(a.grad.tolist(), b.grad.tolist())\n"
    )
    trace = assert_as_plain(source, leaves=("a", "b"))
    names = q.tensor_names(trace)
    (nj,) = [e for e in q.events_of(trace, "tensor") if names.get(e.id) == "nj"]
    assert nj.shape == []  # a nested tensor has no one shape


_PASSING: dict[str, tuple[str, tuple[str, ...]]] = {
    "fft_and_complex_leaf_grads": (
        "import torch\n"
        "z = torch.randn(4, 4, dtype=torch.complex64, requires_grad=True)\n"
        "x = torch.randn(16, requires_grad=True)\n"
        "F = torch.fft.fftn(z)\n"
        "y = torch.fft.irfft(torch.fft.rfft(x) * torch.exp(-torch.arange(9.0) / 4), n=16)\n"
        "loss = (F * F.conj()).real.sum() + F.angle().sum() + (y ** 2).sum()\n"
        "loss.backward()\n"
        "print(torch.view_as_real(z.grad).tolist(), x.grad.tolist())\n",
        ("x",),
    ),
    "complex_linalg": (
        "import torch\n"
        "A = torch.randn(3, 3, dtype=torch.cfloat, requires_grad=True)\n"
        "w, V = torch.linalg.eigh(A @ A.mH + torch.eye(3))\n"
        "loss = w.sum() + torch.linalg.det(A).abs() + torch.linalg.svdvals(A).sum()\n"
        "loss.backward()\n"
        "print(w.tolist(), torch.view_as_real(A.grad).tolist())\n",
        (),
    ),
    "real_linalg": (
        "import torch\n"
        "A = (torch.randn(3, 3, dtype=torch.float64) + 3 * torch.eye(3)).requires_grad_()\n"
        "b = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)\n"
        "U, S, Vh = torch.linalg.svd(A)\n"
        "L = torch.linalg.cholesky(A @ A.mT)\n"
        "Q, R = torch.linalg.qr(A)\n"
        "s, ld = torch.linalg.slogdet(A)\n"
        "loss = (torch.linalg.solve(A, b).sum() + S.sum() + L.diagonal().log().sum() + Q.sum() + ld\n"
        "        + torch.linalg.inv(A).trace() + torch.linalg.matrix_exp(0.1 * A).sum()\n"
        "        + torch.linalg.lstsq(A, b).solution.sum())\n"
        "loss.backward()\n"
        "print(A.grad.tolist(), b.grad.tolist())\n"
        "torch.linalg.cholesky(-A @ A.mT)\n",
        ("A", "b"),
    ),
    "sparse_leaf_and_sparse_mm": (
        "import torch\n"
        "s = torch.eye(3).to_sparse().requires_grad_()\n"
        "v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "c = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2], [2, 0, 1]]), v, (3, 3))\n"
        "d = torch.randn(3, 2, requires_grad=True)\n"
        "(torch.sparse.mm(s, d).sum() + torch.sparse.mm(c, d).sum() + torch.sparse.sum(c * 2)).backward()\n"
        "print(s.grad.to_dense().tolist(), v.grad.tolist(), d.grad.tolist())\n",
        ("v", "d"),
    ),
    "distributions": (
        "import torch\n"
        "from torch.distributions import Categorical, Normal, RelaxedBernoulli, kl_divergence\n"
        "mu = torch.zeros(3, requires_grad=True)\n"
        "logits = torch.zeros(4, requires_grad=True)\n"
        "d = Normal(mu, 1.5)\n"
        "x = d.rsample((5,))\n"
        "c = Categorical(logits=logits)\n"
        "a = c.sample((3,))\n"
        "r = RelaxedBernoulli(torch.tensor(0.5), logits=logits).rsample()\n"
        "loss = (-d.log_prob(x).mean() + kl_divergence(d, Normal(torch.ones(3), 1.0)).sum()\n"
        "        - (c.log_prob(a) * (a == 2)).sum() + r.sum())\n"
        "loss.backward()\n"
        "print(a.tolist(), mu.grad.tolist(), logits.grad.tolist())\n",
        ("mu", "logits"),
    ),
    "checkpoint_both_ways_with_dropout": (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "x = torch.randn(8, requires_grad=True)\n"
        "def block(t):\n"
        "    return F.dropout(t * 3, p=0.5, training=True)\n"
        "y = checkpoint(block, x, use_reentrant=False)\n"
        "z = checkpoint(block, x, use_reentrant=True)\n"
        "(y.sum() + z.pow(2).sum()).backward()\n"
        "print(y.tolist(), z.tolist(), x.grad.tolist(), torch.rand(2).tolist())\n",
        ("x",),
    ),
    "forward_ad_then_backward": (
        "import torch\n"
        "import torch.autograd.forward_ad as fwAD\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "with fwAD.dual_level():\n"
        "    d = fwAD.make_dual(w * 2, torch.ones(3))\n"
        "    out = fwAD.unpack_dual((d.sin() * d).sum())\n"
        "    (out.tangent + out.primal).backward()\n"
        "print(w.grad.tolist())\n",
        ("w",),
    ),
    "func_transforms": (
        "import copy\n"
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.func import functional_call, grad, hessian, jacrev, stack_module_state, vmap\n"
        "x = torch.randn(4, 2)\n"
        "print(vmap(grad(lambda t: (t.sin() * t).sum()))(x).tolist())\n"
        "print(jacrev(torch.tanh)(x[0]).tolist(), hessian(lambda t: (t ** 3).sum())(x[0]).tolist())\n"
        "models = [nn.Linear(2, 2) for _ in range(3)]\n"
        "params, buffers = stack_module_state(models)\n"
        "base = copy.deepcopy(models[0]).to('meta')\n"
        "out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))(params, buffers, x)\n"
        "out.sum().backward()\n"
        "print(params['weight'].grad.tolist())\n",
        (),
    ),
    "packed_lstm_ctc_embedding_bag": (
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence\n"
        "lstm = nn.LSTM(3, 5, batch_first=True, bidirectional=True)\n"
        "x = pad_sequence([torch.randn(5, 3), torch.randn(2, 3)], batch_first=True).requires_grad_()\n"
        "packed = pack_padded_sequence(x, torch.tensor([2, 5]).flip(0), batch_first=True, enforce_sorted=False)\n"
        "out, (h, c) = lstm(packed)\n"
        "padded, lens = pad_packed_sequence(out, batch_first=True)\n"
        "lp = padded.transpose(0, 1).log_softmax(2)\n"
        "ctc = F.ctc_loss(lp, torch.tensor([[1, 2], [3, 3]]), lens, torch.tensor([2, 2]), zero_infinity=True)\n"
        "w = torch.randn(10, 3, requires_grad=True)\n"
        "bag = F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3]), w, torch.tensor([0, 4]), mode='max')\n"
        "(ctc + h.sum() + bag.pow(2).sum()).backward()\n"
        "print(x.grad.tolist(), w.grad.tolist())\n",
        ("w",),
    ),
    "parametrizations": (
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.nn.utils.parametrizations import orthogonal, spectral_norm, weight_norm\n"
        "a = orthogonal(nn.Linear(3, 3))\n"
        "b = spectral_norm(nn.Linear(3, 2))\n"
        "c = weight_norm(nn.Linear(2, 2))\n"
        "c(b(a(torch.randn(2, 3)))).sum().backward()\n"
        "for m in (a, b, c):\n"
        "    print([(n, p.grad.tolist()) for n, p in m.named_parameters()])\n",
        (),
    ),
    "autocast_bfloat16_default_float64_generator": (
        "import torch\n"
        "import torch.nn as nn\n"
        "g = torch.Generator().manual_seed(123)\n"
        "lin = nn.Linear(4, 3)\n"
        "x = torch.randn(2, 4, generator=g, requires_grad=True)\n"
        "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
        "    y = torch.relu(lin(x[torch.randperm(2, generator=g)])).sum()\n"
        "print(y.dtype)\n"
        "y.float().backward()\n"
        "torch.set_default_dtype(torch.float64)\n"
        "try:\n"
        "    w = torch.randn(3, generator=g, requires_grad=True)\n"
        "    (w * torch.tensor([1.0, 2.0, 3.0])).sum().backward()\n"
        "    print(w.dtype, w.grad.tolist())\n"
        "finally:\n"
        "    torch.set_default_dtype(torch.float32)\n"
        "print(lin.weight.grad.tolist(), x.grad.tolist(), g.initial_seed())\n",
        ("x",),
    ),
    "scatter_index_put_masked": (
        "import torch\n"
        "src = torch.randn(6, requires_grad=True)\n"
        "v = torch.randn(4, requires_grad=True)\n"
        "idx = torch.tensor([0, 1, 1, 3, 0, 2])\n"
        "y = v.clone()\n"
        "y.index_put_((torch.tensor([0, 0, 3]),), src[:3], accumulate=True)\n"
        "r = torch.zeros(3).scatter_reduce(0, torch.tensor([0, 0, 1, 2, 2, 2]), src, reduce='amax', include_self=False)\n"
        "mask = src.detach() > 0\n"
        "m = src.masked_scatter(~mask, v.repeat(2)).masked_fill(mask, 0.5)\n"
        "loss = (v.scatter_add(0, idx, src).pow(2).sum() + torch.zeros(4).index_add(0, idx, src).sum()\n"
        "        + (y * torch.arange(4.0)).sum() + r.sum() + m.sum() + torch.cumprod(src, 0).sum()\n"
        "        + torch.logcumsumexp(src, 0).sum() + torch.kthvalue(src, 2).values + src.topk(2).values.sum())\n"
        "loss.backward()\n"
        "print(src.grad.tolist(), v.grad.tolist())\n",
        ("src", "v"),
    ),
    "a_users_own_modes": (
        "import torch\n"
        "from torch.overrides import TorchFunctionMode\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "class Count(TorchFunctionMode):\n"
        "    n = 0\n"
        "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
        "        Count.n += 1\n"
        "        return func(*args, **(kwargs or {}))\n"
        "class Log(TorchDispatchMode):\n"
        "    ops: list = []\n"
        "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
        "        Log.ops.append(func.__name__)\n"
        "        return func(*args, **(kwargs or {}))\n"
        "w = torch.ones(3, requires_grad=True)\n"
        "with Count(), Log():\n"
        "    y = (w * 2).exp().sum()\n"
        "    y.backward()\n"
        "print(Count.n, sorted(set(Log.ops)), w.grad.tolist())\n",
        ("w",),
    ),
    "anomaly_mode_names_the_nan": (
        "import torch\n"
        "x = torch.tensor([1.0, 4.0], requires_grad=True)\n"
        "with torch.autograd.detect_anomaly():\n"
        "    (x.sqrt() * x).sum().backward()\n"
        "    print(x.grad.tolist())\n"
        "    y = torch.tensor([0.0, 1.0], requires_grad=True)\n"
        "    (y.sqrt() * 0).sum().backward()\n"
        "    print(y.grad)\n",
        (),
    ),
}


# a snippet whose gradient is really NaN is told so (not a false alarm)
_PITFALLS = {"anomaly_mode_names_the_nan": ("non-finite-gradient",)}


@pytest.mark.parametrize("name", list(_PASSING))
def test_a_less_common_surface_records_as_it_runs_without_gradwalk(name: str) -> None:
    source, leaves = _PASSING[name]
    assert_as_plain(source, leaves, _PITFALLS.get(name, ()))
