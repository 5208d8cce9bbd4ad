"""Hints for the errors of a practitioner building a model from scratch (engine/explain_practice.py,
engine/explain_practice_index.py), found by a hunt over 80 such snippets: attention masks of the
wrong dtype or shape, graph message passing with node ids out of range, float or 1-D indices, a
diffusion schedule gathered or broadcast wrong, a VAE's KL summed over the batch and its encoder
output split along it, distributions given a log-scale or raw scores, LayerNorm and GroupNorm of
channels-first maps, .item() and if inside vmap, an RNN's packed output indexed, a tied weight of
another width, a class token joined without expanding it. Each snippet raises as it does without
gradwalk, at the line given, and the fix the hint gives runs. Near misses keep the other hints."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the fix as (wrong, right) edits)
    "masked_fill given a float causal mask": (
        H
        + "T = 5\nscores = torch.randn(2, T, T)\nmask = torch.tril(torch.ones(T, T))\n"
        + "scores = scores.masked_fill(mask, float('-inf'))\n"
        + "print(scores.softmax(-1).shape)\n",
        7,
        ["mask holds float32 0s and 1s", "scores.masked_fill(mask == 0, float('-inf'))"],
        [("masked_fill(mask,", "masked_fill(mask == 0,")],
    ),
    "a key padding mask laid against the scores from the right": (
        H
        + "scores = torch.randn(2, 4, 6, 6)\npad = torch.zeros(2, 6, dtype=torch.bool)\n"
        + "pad[1, 4:] = True\nscores = scores.masked_fill(pad, float('-inf'))\n"
        + "print(scores.shape)\n",
        7,
        [
            "pad is (2, 6), one row per sequence",
            "scores.masked_fill(pad[:, None, None, :], float('-inf')), (2, 1, 1, 6)",
        ],
        [("masked_fill(pad,", "masked_fill(pad[:, None, None, :],")],
    ),
    "scaled_dot_product_attention given a (batch, keys) mask": (
        H
        + "q = k = v = torch.randn(2, 4, 6, 8)\nkeep = torch.ones(2, 6, dtype=torch.bool)\n"
        + "out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)\nprint(out.shape)\n",
        6,
        ["keep is (2, 6)", "attn_mask=keep[:, None, None, :]"],
        [("attn_mask=keep)", "attn_mask=keep[:, None, None, :])")],
    ),
    "a causal mask made for one position more": (
        H
        + "T = 5\natt = torch.randn(2, 4, T, T)\n"
        + "mask = torch.tril(torch.ones(T + 1, T + 1)).bool()\n"
        + "att = att.masked_fill(~mask, float('-inf'))\nprint(att.shape)\n",
        7,
        ["mask is (6, 6), a mask for 6 positions", "scores it masks are 5 × 5", "att.size(-1)"],
        [("T + 1, T + 1", "T, T")],
    ),
    "scaled_dot_product_attention given an integer mask": (
        H
        + "q = k = v = torch.randn(2, 4, 6, 8)\n"
        + "mask = torch.tril(torch.ones(6, 6, dtype=torch.long))\n"
        + "out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\nprint(out.shape)\n",
        6,
        ["True where a query may attend", "mask holds integers", "pass mask.bool()"],
        [("attn_mask=mask)", "attn_mask=mask.bool())")],
    ),
    "nn.MultiheadAttention given an integer key_padding_mask": (
        H
        + "mha = nn.MultiheadAttention(16, 4, batch_first=True)\nx = torch.randn(2, 5, 16)\n"
        + "lengths = torch.tensor([5, 3])\n"
        + "pad = torch.arange(5)[None, :] >= lengths[:, None]\n"
        + "out, w = mha(x, x, x, key_padding_mask=pad.long())\nprint(out.shape)\n",
        8,
        ["True at the keys to leave out", "pad.long() holds integers", "key_padding_mask=pad."],
        [("key_padding_mask=pad.long()", "key_padding_mask=pad")],
    ),
    "a 3-D attn_mask of one mask per sequence": (
        H
        + "mha = nn.MultiheadAttention(16, 4, batch_first=True)\nx = torch.randn(2, 5, 16)\n"
        + "causal = torch.triu(torch.ones(2, 5, 5, dtype=torch.bool), 1)\n"
        + "out, w = mha(x, x, x, attn_mask=causal)\nprint(out.shape)\n",
        7,
        ["batch × num_heads = 8", "causal has 2", "attn_mask=causal.repeat_interleave(4, dim=0)"],
        [("attn_mask=causal)", "attn_mask=causal.repeat_interleave(4, dim=0))")],
    ),
    "positional encodings made for fewer positions than the sequence": (
        H
        + "class PosEnc(nn.Module):\n    def __init__(self, d, max_len=50):\n"
        + "        super().__init__()\n"
        + "        self.register_buffer('pe', torch.randn(max_len, d))\n"
        + "    def forward(self, x):\n        return x + self.pe[: x.size(1)]\n"
        + "y = PosEnc(32)(torch.randn(4, 80, 32))\nprint(y.shape)\n",
        9,
        ["self.pe holds 50 positions", "the sequence has 80", "max_len of at least 80"],
        [("max_len=50", "max_len=100")],
    ),
    "index_add_ given float node ids": (
        H
        + "x = torch.randn(5, 8)\nedge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])\n"
        + "msg = x[edge_index[0]]\nout = torch.zeros(5, 8)\n"
        + "out.index_add_(0, edge_index[1].float(), msg)\nprint(out.shape)\n",
        8,
        ["edge_index[1].float() holds floats", "out.index_add_(0, edge_index[1], msg)"],
        [("edge_index[1].float()", "edge_index[1]")],
    ),
    "index_add_ of float64 messages into float32": (
        H
        + "x = torch.randn(5, 8, dtype=torch.float64)\n"
        + "edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])\nmsg = x[edge_index[0]]\n"
        + "out = torch.zeros(5, 8).index_add_(0, edge_index[1], msg)\nprint(out.shape)\n",
        7,
        ["msg is float64", "index_add_(0, edge_index[1], msg.float())"],
        [("edge_index[1], msg)", "edge_index[1], msg.float())")],
    ),
    "node ids counted from 1": (
        H
        + "x = torch.randn(5, 8)\nedge_index = torch.tensor([[1, 2, 3, 4], [2, 1, 4, 5]])\n"
        + "msg = x[edge_index[0]]\n"
        + "out = torch.zeros(5, 8).index_add_(0, edge_index[1], msg)\nprint(out.shape)\n",
        7,
        ["edge_index[1] holds 5", "has 5 entries, numbered 0 to 4", "counted from 1", "edge_index[1] - 1"],
        [("edge_index[1], msg)", "edge_index[1] - 1, msg)"), ("x[edge_index[0]]", "x[edge_index[0] - 1]")],
    ),
    "an edge list of pairs unpacked": (
        H
        + "x = torch.randn(5, 8)\n"
        + "edge_index = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4]])\n"
        + "src, dst = edge_index\nout = torch.zeros(5, 8).index_add_(0, dst, x[src])\n"
        + "print(out.shape)\n",
        6,
        ["edge_index is (4, 2): 4 rows of 2", "src, dst = edge_index.T"],
        [("src, dst = edge_index", "src, dst = edge_index.T")],
    ),
    "scatter_add of messages by a 1-D index": (
        H
        + "x = torch.randn(5, 8)\nedge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])\n"
        + "msg = x[edge_index[0]]\n"
        + "out = torch.zeros(5, 8).scatter_add(0, edge_index[1], msg)\nprint(out.shape)\n",
        7,
        [
            "edge_index[1] is (4,) where msg is (4, 8)",
            "edge_index[1].unsqueeze(1).expand_as(msg)",
            "index_add(0, edge_index[1], msg)",
        ],
        [
            (
                "scatter_add(0, edge_index[1], msg)",
                "scatter_add(0, edge_index[1].unsqueeze(1).expand_as(msg), msg)",
            )
        ],
    ),
    "gather of a 1-D schedule by a column of timesteps": (
        H
        + "alphas_cumprod = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000), 0)\n"
        + "t = torch.randint(0, 1000, (8, 1))\na = alphas_cumprod.gather(-1, t)\n"
        + "print(a.shape)\n",
        6,
        [
            "alphas_cumprod is (1000,) and t (8, 1)",
            "alphas_cumprod[t]",
            "alphas_cumprod.gather(-1, t.flatten())",
        ],
        [("alphas_cumprod.gather(-1, t)", "alphas_cumprod[t]")],
    ),
    "a timestep drawn up to T": (
        H
        + "T = 10\nabar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, T), 0)\n"
        + "t = torch.randint(1, T + 1, (64,))\na = abar[t]\nprint(a.shape)\n",
        7,
        ["t holds 10, and abar has 10 entries", "torch.randint(0, 10, …)"],
        [("torch.randint(1, T + 1,", "torch.randint(0, T,")],
    ),
    "a per-sample factor times a batch of images": (
        H
        + "abar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000), 0)\n"
        + "x0 = torch.randn(8, 3, 16, 16)\nt = torch.randint(0, 1000, (8,))\n"
        + "noise = torch.randn_like(x0)\n"
        + "xt = abar[t].sqrt() * x0 + (1 - abar[t]).sqrt() * noise\nprint(xt.shape)\n",
        8,
        ["abar[t].sqrt() is (8,), one number per sample", "abar[t].sqrt().view(-1, 1, 1, 1), (8, 1, 1, 1)"],
        [("abar[t]", "abar[t].view(-1, 1, 1, 1)")],
    ),
    "a time embedding added to feature maps": (
        H
        + "h = torch.randn(8, 64, 16, 16)\ntemb = nn.Linear(128, 64)(torch.randn(8, 128))\n"
        + "h = h + temb\nprint(h.shape)\n",
        6,
        ["temb is (8, 64)", "temb[..., None, None], (8, 64, 1, 1)"],
        [("h + temb", "h + temb[..., None, None]")],
    ),
    "a VAE's KL summed over the batch": (
        H
        + "mu = torch.randn(8, 20)\nlogvar = torch.randn(8, 20)\n"
        + "recon, x = torch.rand(8, 784), torch.rand(8, 784)\n"
        + "rec = F.binary_cross_entropy(recon, x, reduction='none').sum(1)\n"
        + "kl = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(0)\n"
        + "loss = (rec + kl).mean()\nprint(loss.shape)\n",
        9,
        ["kl (line 8) was summed over dim 0, the batch", "rec holds one per sample (8)", ".sum(1)"],
        [(".exp()).sum(0)", ".exp()).sum(1)")],
    ),
    "a VAE's encoder output split along the batch": (
        H
        + "enc, dec = nn.Linear(784, 40), nn.Linear(20, 784)\nx = torch.randn(8, 784)\n"
        + "mu, logvar = enc(x).chunk(2, dim=0)\n"
        + "z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)\nout = dec(z)\n"
        + "print(out.shape)\n",
        8,
        ["Line 6 (mu, logvar = enc(x).chunk(2, dim=0)) splits along dim 0", "chunk(2, dim=-1)"],
        [("chunk(2, dim=0)", "chunk(2, dim=-1)")],
    ),
    "Normal given a log-variance as its scale": (
        H
        + "mu = torch.randn(8, 20)\nlogvar = torch.linspace(-2, 1, 160).view(8, 20)\n"
        + "q = torch.distributions.Normal(mu, logvar)\nprint(q.rsample().shape)\n",
        6,
        ["logvar holds numbers below 0", "Normal(mu, torch.exp(0.5 * logvar))"],
        [("Normal(mu, logvar)", "Normal(mu, torch.exp(0.5 * logvar))")],
    ),
    "Normal given a log standard deviation": (
        H
        + "mean, log_std = torch.zeros(8, 2), torch.full((8, 2), -1.0)\n"
        + "dist = torch.distributions.Normal(mean, log_std)\nprint(dist.sample().shape)\n",
        5,
        ["log_std holds numbers below 0", "Normal(mean, log_std.exp())"],
        [("Normal(mean, log_std)", "Normal(mean, log_std.exp())")],
    ),
    "Categorical given raw scores as probs": (
        H
        + "logits = torch.tensor([[2.0, -1.0, 0.5]])\ndist = torch.distributions.Categorical(probs=logits)\n"
        + "print(dist.sample().shape)\n",
        5,
        ["logits holds others: raw scores", "Categorical(logits=logits)", "softmax"],
        [("probs=logits", "logits=logits")],
    ),
    "Q-values gathered by an action past the last": (
        H
        + "q = torch.randn(8, 3)\nactions = torch.randint(0, 3, (8, 1))\nactions[0, 0] = 3\n"
        + "q_sa = q.gather(1, actions)\nprint(q_sa.shape)\n",
        7,
        ["actions holds 3, and q has 3 entries along dim 1, numbered 0 to 2"],
        [("actions[0, 0] = 3", "actions[0, 0] = 2")],
    ),
    "LayerNorm given channels-first maps": (
        H + "ln = nn.LayerNorm(64)\nx = torch.randn(2, 64, 8, 8)\ny = ln(x)\nprint(y.shape)\n",
        6,
        ["(2, 64, 8, 8), has them in dim 1", "ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)"],
        [("y = ln(x)", "y = ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)")],
    ),
    "LayerNorm given (batch, channels, length)": (
        H + "ln = nn.LayerNorm(64)\nx = torch.randn(8, 64, 10)\ny = ln(x)\nprint(y.shape)\n",
        6,
        ["ln(x.transpose(1, 2)).transpose(1, 2)"],
        [("y = ln(x)", "y = ln(x.transpose(1, 2)).transpose(1, 2)")],
    ),
    "GroupNorm whose groups do not divide the channels": (
        H + "gn = nn.GroupNorm(8, 30)\nprint(gn(torch.randn(2, 30, 4, 4)).shape)\n",
        4,
        ["30 channels do not split into 8", "g one of 3, 5, 6, 10", "32 channels"],
        [("GroupNorm(8, 30)", "GroupNorm(6, 30)")],
    ),
    ".item() inside vmap": (
        H
        + "from torch.func import vmap\ndef f(x):\n    return x * x.sum().item()\n"
        + "y = vmap(f)(torch.randn(4, 3))\nprint(y.shape)\n",
        6,
        ["vmap runs f once for the whole batch", "return x * x.sum()."],
        [(".item()", "")],
    ),
    "an if on a tensor inside vmap": (
        H
        + "from torch.func import vmap\ndef f(x):\n    if x.sum() > 0:\n        return x\n"
        + "    return -x\ny = vmap(f)(torch.randn(4, 3))\nprint(y.shape)\n",
        6,
        ["x.sum() > 0 holds one answer per sample", "torch.where(x.sum() > 0, a, b)"],
        [
            (
                "    if x.sum() > 0:\n        return x\n    return -x\n",
                "    return torch.where(x.sum() > 0, x, -x)\n",
            )
        ],
    ),
    "a collate_fn that hands the samples back": (
        H
        + "from torch.utils.data import DataLoader, TensorDataset\n"
        + "ds = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))\n"
        + "loader = DataLoader(ds, batch_size=4, collate_fn=lambda b: b)\n"
        + "model = nn.Linear(4, 2)\nfor xb, yb in loader:\n    out = model(xb)\n"
        + "print(out.shape)\n",
        8,
        ["Each batch of loader is what its collate_fn returns", "xb, yb takes it apart into 2"],
        [
            (
                "collate_fn=lambda b: b",
                "collate_fn=lambda b: (torch.stack([x for x, _ in b]), torch.stack([y for _, y in b]))",
            )
        ],
    ),
    "pad_sequence of steps of different sizes": (
        H
        + "from torch.nn.utils.rnn import pad_sequence\n"
        + "seqs = [torch.randn(5, 8), torch.randn(3, 7)]\n"
        + "batch = pad_sequence(seqs, batch_first=True)\nprint(batch.shape)\n",
        6,
        ["pads only the first dimension", "seqs[0] is (5, 8) and seqs[1] (3, 7)"],
        [("torch.randn(3, 7)", "torch.randn(3, 8)")],
    ),
    "an LSTM's packed output indexed as a tensor": (
        H
        + "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
        + "lstm = nn.LSTM(8, 16, batch_first=True)\nx = torch.randn(3, 6, 8)\n"
        + "packed = pack_padded_sequence(x, torch.tensor([6, 4, 2]), batch_first=True)\n"
        + "out, _ = lstm(packed)\nlast = out[:, -1]\nprint(last.shape)\n",
        9,
        [
            "out is a PackedSequence",
            "out, lengths = pad_packed_sequence(out, batch_first=True)",
            "out[torch.arange(len(lengths)), lengths - 1]",
        ],
        [
            (
                "last = out[:, -1]",
                "out, lengths = pad_packed_sequence(out, batch_first=True)\nlast = out[torch.arange(len(lengths)), lengths - 1]",
            )
        ],
    ),
    "a head tied to an embedding of another width": (
        H
        + "emb = nn.Embedding(100, 32)\nhead = nn.Linear(64, 100, bias=False)\n"
        + "head.weight = emb.weight\ny = head(torch.randn(2, 64))\nprint(y.shape)\n",
        7,
        [
            "head was built as nn.Linear(64, 100), but its weight is now emb.weight, (100, 32)",
            "make emb 64 wide",
        ],
        [("nn.Embedding(100, 32)", "nn.Embedding(100, 64)")],
    ),
    "a class token joined without expanding it to the batch": (
        H
        + "cls = nn.Parameter(torch.zeros(1, 1, 16))\nx = torch.randn(4, 5, 16)\n"
        + "x = torch.cat([cls, x], dim=1)\nprint(x.shape)\n",
        6,
        ["cls is (1, 1, 16), a batch of 1", "cls.expand(x.size(0), -1, -1)"],
        [("[cls, x]", "[cls.expand(x.size(0), -1, -1), x]")],
    ),
    "a transposed convolution given its output's channels": (
        H
        + "up = nn.ConvTranspose2d(32, 64, 2, stride=2)\nx = torch.randn(8, 64, 8, 8)\n"
        + "y = up(x)\nprint(y.shape)\n",
        6,
        ["in_channels=32, with 64 out", "in_channels=64"],
        [("ConvTranspose2d(32, 64,", "ConvTranspose2d(64, 32,")],
    ),
    "an encoder's causal mask made for another length": (
        H
        + "layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)\n"
        + "enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)\n"
        + "x = torch.randn(2, 5, 16)\n"
        + "causal = nn.Transformer.generate_square_subsequent_mask(6)\n"
        + "out = enc(x, mask=causal)\nprint(out.shape)\n",
        8,
        ["mask= goes with x here", "generate_square_subsequent_mask(x.size(1))"],
        [("generate_square_subsequent_mask(6)", "generate_square_subsequent_mask(x.size(1))")],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_practitioner_errors_get_their_cause_and_a_fix_that_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)


NEAR_MISSES = {
    # two feature matrices of unrelated shapes: no per-sample factor, the generic hint stays
    "tensors whose shapes do not line up either way": (
        H + "a = torch.randn(3, 4)\nb = torch.randn(4, 3)\nc = a + b\n",
        6,
        "Broadcasting lines the shapes up from the right",
    ),
    # a plain int past the end keeps the indexing hint that names the loop or the count
    "an int index past the end": (
        H + "x = torch.randn(5)\ny = x[5]\n",
        5,
        "x has 5 entries, numbered 0 to 4",
    ),
    # torch.cat of two batches along dim 1 whose batches differ, neither of size 1: not a token
    "two batches of different sizes joined along dim 1": (
        H + "a = torch.randn(2, 3, 4)\nb = torch.randn(4, 3, 4)\nc = torch.cat([a, b], dim=1)\n",
        6,
        "torch.cat joins tensors along dim=1",
    ),
    # a key padding mask of the right shape for a transposed score layout is not guessed at
    "a Linear layer given the wrong width, no tied weight": (
        H + "head = nn.Linear(32, 100)\ny = head(torch.randn(2, 64))\n",
        5,
        "nn.Linear(32, 100) takes 32 features per sample",
    ),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_errors_of_other_causes_keep_the_other_hints(name: str) -> None:
    source, line, begins = NEAR_MISSES[name]
    err = raised_as_plain(source, line)
    assert err.hint is not None and err.hint.startswith(begins), err.hint
