"""Correct snippets from the areas of hunt 50 (loading state dicts, building optimizers with
param groups, bfloat16 and autocast on the CPU, einsum, gather and scatter, embeddings,
nn.init, complex and sparse tensors, torch.func, module hooks, distributions, CTC loss, packed
sequences, nn.MultiheadAttention, batch norm in eval, float64 layers), which record as they
run without gradwalk: the same prints, errors and leaf gradients. A regression guard: the hunt
found no fidelity bug here."""

from __future__ import annotations

import pytest

from tests.engine.snippets import assert_as_plain

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

_PASSING: dict[str, tuple[str, tuple[str, ...]]] = {
    "state_dict_renamed_and_loaded_non_strict": (
        H
        + "a = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n"
        + "sd = {'module.' + k: v for k, v in a.state_dict().items()}\n"
        + "b = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n"
        + "print(b.load_state_dict({k.removeprefix('module.'): v for k, v in sd.items()}))\n"
        + "c = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 5))\n"
        + "keep = {k: v for k, v in a.state_dict().items() if not k.startswith('2.')}\n"
        + "print(c.load_state_dict(keep, strict=False))\n"
        + "print(torch.equal(c[0].weight, a[0].weight))\n",
        (),
    ),
    "state_dict_round_trip_through_bytes": (
        H
        + "import io\n"
        + "m = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))\n"
        + "m(torch.randn(5, 3))\n"
        + "buf = io.BytesIO()\n"
        + "torch.save(m.state_dict(), buf)\n"
        + "buf.seek(0)\n"
        + "n = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))\n"
        + "n.load_state_dict(torch.load(buf))\n"
        + "print(n[1].running_mean, n[1].num_batches_tracked)\n",
        (),
    ),
    "optimizer_state_dict_round_trip": (
        H
        + "m = nn.Linear(3, 1)\n"
        + "opt = torch.optim.Adam(m.parameters(), lr=0.1)\n"
        + "m(torch.randn(4, 3)).pow(2).mean().backward()\n"
        + "opt.step()\n"
        + "opt2 = torch.optim.Adam(m.parameters(), lr=0.5)\n"
        + "opt2.load_state_dict(opt.state_dict())\n"
        + "print(opt2.param_groups[0]['lr'], sorted(opt2.state[m.weight]))\n",
        (),
    ),
    "param_groups_with_their_own_rates": (
        H
        + "model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))\n"
        + "opt = torch.optim.SGD([{'params': model[0].parameters(), 'lr': 0.01},\n"
        + "                       {'params': model[2].parameters()}], lr=0.1, momentum=0.9)\n"
        + "for _ in range(3):\n"
        + "    opt.zero_grad()\n"
        + "    loss = model(torch.randn(8, 3)).pow(2).mean()\n"
        + "    loss.backward()\n"
        + "    opt.step()\n"
        + "print([g['lr'] for g in opt.param_groups], round(loss.item(), 6))\n",
        (),
    ),
    "add_param_group_later": (
        H
        + "a = nn.Linear(2, 2)\n"
        + "b = nn.Linear(2, 1)\n"
        + "opt = torch.optim.Adam(a.parameters(), lr=0.01)\n"
        + "opt.add_param_group({'params': b.parameters(), 'lr': 0.1})\n"
        + "b(a(torch.randn(3, 2))).sum().backward()\n"
        + "opt.step()\n"
        + "print(len(opt.param_groups), b.weight)\n",
        (),
    ),
    "tensor_lr_of_one_element": (
        H
        + "w = torch.randn(3, requires_grad=True)\n"
        + "opt = torch.optim.SGD([w], lr=torch.tensor(0.1))\n"
        + "(w ** 2).sum().backward()\n"
        + "opt.step()\n"
        + "print(w)\n",
        ("w",),
    ),
    "maximize_and_list_of_params": (
        H
        + "w = torch.tensor([1.0, -2.0], requires_grad=True)\n"
        + "opt = torch.optim.SGD([w], lr=0.1, maximize=True)\n"
        + "(-(w ** 2).sum()).backward()\n"
        + "opt.step()\n"
        + "print(w.detach())\n",
        ("w",),
    ),
    "autocast_bfloat16_on_cpu": (
        H
        + "lin = nn.Linear(4, 3)\n"
        + "x = torch.randn(2, 4)\n"
        + "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
        + "    y = lin(x)\n"
        + "    z = y.float().softmax(-1)\n"
        + "print(y.dtype, z.dtype)\n"
        + "z.sum().backward()\n"
        + "print(lin.weight.grad.dtype)\n",
        (),
    ),
    "bfloat16_model_and_input": (
        H
        + "m = nn.Linear(3, 2).to(torch.bfloat16)\n"
        + "x = torch.randn(4, 3, dtype=torch.bfloat16)\n"
        + "out = m(x)\n"
        + "out.float().sum().backward()\n"
        + "print(out.dtype, m.weight.grad.dtype, out.float().numpy().shape)\n",
        (),
    ),
    "float64_layers": (
        H
        + "m = nn.Sequential(nn.Conv1d(1, 2, 3), nn.Flatten(), nn.Linear(12, 1)).double()\n"
        + "x = torch.arange(8, dtype=torch.float64).reshape(1, 1, 8)\n"
        + "loss = m(x).sum()\n"
        + "loss.backward()\n"
        + "print(loss.dtype, m[2].weight.grad.dtype)\n",
        (),
    ),
    "einsum_attention_and_batched_outer": (
        H
        + "q = torch.randn(2, 5, 4, requires_grad=True)\n"
        + "k = torch.randn(2, 6, 4)\n"
        + "scores = torch.einsum('bqd,bkd->bqk', q, k).softmax(-1)\n"
        + "outer = torch.einsum('bi,bj->bij', q[:, 0], k[:, 0])\n"
        + "print(scores.shape, outer.shape, torch.einsum('ii', torch.eye(3)))\n"
        + "(scores.sum() + outer.sum()).backward()\n",
        ("q",),
    ),
    "gather_scatter_and_take_along_dim": (
        H
        + "logits = torch.randn(4, 5, requires_grad=True)\n"
        + "targets = torch.tensor([0, 4, 2, 1])\n"
        + "picked = logits.gather(1, targets.unsqueeze(1)).squeeze(1)\n"
        + "best = torch.take_along_dim(logits, logits.argmax(1, keepdim=True), dim=1)\n"
        + "counts = torch.zeros(5).scatter_add_(0, targets, torch.ones(4))\n"
        + "onehot = torch.zeros(4, 5).scatter_(1, targets.unsqueeze(1), 1.0)\n"
        + "print(counts, onehot.sum(0))\n"
        + "(picked.sum() + best.sum()).backward()\n",
        ("logits",),
    ),
    "scatter_reduce_mean": (
        H
        + "src = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)\n"
        + "idx = torch.tensor([0, 1, 0, 1])\n"
        + "out = torch.zeros(2).scatter_reduce(0, idx, src, reduce='mean', include_self=False)\n"
        + "out.sum().backward()\n"
        + "print(out)\n",
        ("src",),
    ),
    "embedding_with_padding_idx": (
        H
        + "emb = nn.Embedding(6, 3, padding_idx=0)\n"
        + "ids = torch.tensor([[1, 2, 0], [3, 0, 0]])\n"
        + "out = emb(ids)\n"
        + "out.sum().backward()\n"
        + "print(emb.weight.grad[0], out.shape)\n"
        + "pre = nn.Embedding.from_pretrained(torch.randn(4, 2), freeze=False)\n"
        + "print(pre(torch.tensor([3], dtype=torch.int32)).shape)\n",
        (),
    ),
    "nn_init_under_no_grad": (
        H
        + "lin = nn.Linear(4, 3)\n"
        + "nn.init.kaiming_normal_(lin.weight, nonlinearity='relu')\n"
        + "nn.init.zeros_(lin.bias)\n"
        + "w = torch.empty(3, requires_grad=True)\n"
        + "with torch.no_grad():\n"
        + "    w.normal_(0, 0.1)\n"
        + "def init(m):\n"
        + "    if isinstance(m, nn.Linear):\n"
        + "        nn.init.constant_(m.weight, 0.5)\n"
        + "net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())\n"
        + "net.apply(init)\n"
        + "(lin(torch.randn(2, 4)).sum() + w.sum() + net(torch.ones(1, 2)).sum()).backward()\n"
        + "print(lin.bias.grad, w.grad, net[0].weight.grad)\n",
        ("w",),
    ),
    "complex_leaf_grad": (
        H
        + "z = torch.tensor([1 + 1j, 2 - 1j], requires_grad=True)\n"
        + "loss = (z * z.conj()).real.sum()\n"
        + "loss.backward()\n"
        + "print(z.grad, z.grad.abs() > 1)\n",
        (),
    ),
    "complex_fft_to_real_loss": (
        H
        + "x = torch.randn(8, requires_grad=True)\n"
        + "spec = torch.fft.rfft(x)\n"
        + "power = spec.abs().pow(2).sum()\n"
        + "power.backward()\n"
        + "print(spec.dtype, torch.view_as_real(spec).shape)\n",
        ("x",),
    ),
    "sparse_matmul_backward": (
        H
        + "i = torch.tensor([[0, 1, 1], [2, 0, 2]])\n"
        + "v = torch.tensor([3.0, 4.0, 5.0])\n"
        + "s = torch.sparse_coo_tensor(i, v, (2, 3))\n"
        + "w = torch.randn(3, 2, requires_grad=True)\n"
        + "y = torch.sparse.mm(s, w)\n"
        + "y.sum().backward()\n"
        + "print(s.to_dense(), y.shape)\n",
        ("w",),
    ),
    "sparse_embedding_with_sparse_adam": (
        H
        + "emb = nn.Embedding(10, 3, sparse=True)\n"
        + "opt = torch.optim.SparseAdam(emb.parameters(), lr=0.1)\n"
        + "emb(torch.tensor([1, 2, 2])).sum().backward()\n"
        + "print(emb.weight.grad.is_sparse)\n"
        + "opt.step()\n"
        + "print(emb.weight[1])\n",
        (),
    ),
    "vmap_with_in_dims_and_randomness": (
        H
        + "from torch.func import vmap\n"
        + "def f(x, w):\n"
        + "    y = torch.zeros_like(x)\n"
        + "    y = y + x * w\n"
        + "    return y.sum()\n"
        + "xs = torch.randn(4, 3)\n"
        + "print(vmap(f, in_dims=(0, None))(xs, torch.ones(3)))\n"
        + "print(vmap(lambda x: x + torch.rand(()), randomness='same')(torch.zeros(3)))\n"
        + "print(vmap(f, in_dims=(1, None))(xs.T, torch.ones(3)))\n",
        (),
    ),
    "grad_with_aux_and_jacrev_of_a_tuple": (
        H
        + "from torch.func import grad, jacrev\n"
        + "def f(x):\n"
        + "    return (x ** 2).sum(), x.mean()\n"
        + "g, aux = grad(f, has_aux=True)(torch.tensor([1.0, 2.0]))\n"
        + "j = jacrev(lambda x: (x.sin(), x.cos()))(torch.tensor([0.0, 1.0]))\n"
        + "print(g, aux, j[0], j[1])\n",
        (),
    ),
    "module_hooks_with_the_right_arguments": (
        H
        + "seen = []\n"
        + "lin = nn.Linear(3, 2)\n"
        + "lin.register_forward_hook(lambda mod, inp, out: seen.append(tuple(out.shape)))\n"
        + "lin.register_full_backward_hook(lambda mod, gi, go: seen.append((gi[0] is None, tuple(go[0].shape))))\n"
        + "x = torch.randn(4, 3)\n"
        + "lin(x).sum().backward()\n"
        + "x2 = torch.randn(4, 3, requires_grad=True)\n"
        + "lin(x2).sum().backward()\n"
        + "print(seen)\n",
        ("x2",),
    ),
    "distributions_validated": (
        H
        + "from torch.distributions import Normal, Categorical, Uniform, MultivariateNormal, Independent\n"
        + "mu = torch.zeros(3, requires_grad=True)\n"
        + "d = Normal(mu, F.softplus(torch.ones(3)) + 1e-5)\n"
        + "x = d.rsample()\n"
        + "lp = d.log_prob(x).sum()\n"
        + "c = Categorical(logits=torch.randn(4, 3))\n"
        + "print(c.log_prob(torch.tensor([0, 1, 2, 0])).shape, Uniform(0.0, 2.0).log_prob(torch.tensor(1.0)))\n"
        + "m = MultivariateNormal(torch.zeros(2), covariance_matrix=torch.diag(torch.ones(2)))\n"
        + "ind = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)\n"
        + "print(torch.allclose(m.log_prob(torch.ones(2)), ind.log_prob(torch.ones(2))))\n"
        + "lp.backward()\n",
        ("mu",),
    ),
    "ctc_loss_time_first": (
        H
        + "ctc = nn.CTCLoss(zero_infinity=True)\n"
        + "logits = torch.randn(4, 30, 10, requires_grad=True)\n"
        + "log_probs = logits.log_softmax(2).transpose(0, 1)\n"
        + "targets = torch.randint(1, 10, (4, 8))\n"
        + "loss = ctc(log_probs, targets, torch.full((4,), 30), torch.tensor([8, 7, 6, 5]))\n"
        + "loss.backward()\n"
        + "print(round(loss.item(), 4), logits.grad.abs().sum())\n",
        (),
    ),
    "packed_lstm_unsorted": (
        H
        + "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
        + "lstm = nn.LSTM(4, 5, batch_first=True)\n"
        + "x = torch.randn(3, 6, 4, requires_grad=True)\n"
        + "lengths = torch.tensor([[2], [6], [3]]).flatten()\n"
        + "packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)\n"
        + "out, (h, c) = lstm(packed)\n"
        + "padded, lens = pad_packed_sequence(out, batch_first=True, total_length=6)\n"
        + "print(padded.shape, lens, h.shape)\n"
        + "h.sum().backward()\n"
        + "print(x.grad[0, 2:].abs().sum(), x.grad.abs().sum())\n",
        (),
    ),
    "multihead_attention_with_masks": (
        H
        + "mha = nn.MultiheadAttention(8, 2, batch_first=True)\n"
        + "x = torch.randn(3, 5, 8, requires_grad=True)\n"
        + "causal = nn.Transformer.generate_square_subsequent_mask(5)\n"
        + "pad = torch.tensor([[False] * 5, [False] * 4 + [True], [False] * 3 + [True] * 2])\n"
        + "out, w = mha(x, x, x, attn_mask=causal, key_padding_mask=pad)\n"
        + "out2, _ = mha(x, x, x, need_weights=False)\n"
        + "print(out.shape, w.shape, _)\n"
        + "(out.sum() + out2.sum()).backward()\n"
        + "print(x.grad.abs().sum())\n",
        (),
    ),
    "batch_norm_one_sample_in_eval": (
        H
        + "model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU())\n"
        + "model(torch.randn(8, 3))\n"
        + "model.eval()\n"
        + "with torch.no_grad():\n"
        + "    print(model(torch.randn(1, 3)).shape, model[1].num_batches_tracked)\n"
        + "bn = nn.BatchNorm1d(16)\n"
        + "print(bn(torch.randn(4, 10, 16).transpose(1, 2)).transpose(1, 2).shape)\n",
        (),
    ),
    "complex_weights_layer": (
        H
        + "lin = nn.Linear(3, 2, dtype=torch.cfloat)\n"
        + "z = torch.randn(4, 3, dtype=torch.cfloat)\n"
        + "loss = lin(z).abs().pow(2).mean()\n"
        + "loss.backward()\n"
        + "print(lin.weight.grad.dtype, loss.dtype)\n",
        (),
    ),
    "caught_errors_go_on": (
        H
        + "m = nn.Linear(3, 2)\n"
        + "try:\n"
        + "    torch.optim.Adam(m.parameters(), betas=0.9)\n"
        + "except TypeError as e:\n"
        + "    print('caught', e)\n"
        + "try:\n"
        + "    torch.einsum('ij,jk->il', torch.ones(2, 2), torch.ones(2, 2))\n"
        + "except RuntimeError as e:\n"
        + "    print('caught', e)\n"
        + "opt = torch.optim.Adam(m.parameters(), betas=(0.9, 0.99))\n"
        + "m(torch.ones(1, 3)).sum().backward()\n"
        + "opt.step()\n"
        + "print(m.bias)\n",
        (),
    ),
}


@pytest.mark.parametrize("name", list(_PASSING))
def test_a_correct_snippet_of_hunt50_records_as_it_runs_without_gradwalk(name: str) -> None:
    source, leaves = _PASSING[name]
    assert_as_plain(source, leaves)
