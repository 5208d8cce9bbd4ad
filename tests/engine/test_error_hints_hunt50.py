"""Hints a hunt over 163 failing snippets found missing or wrong, in areas no earlier hunt covered:
loading state dicts, building optimizers, mixed dtypes (bfloat16, half, float64), einsum
equations, gather and scatter, embeddings, nn.init, complex and sparse tensors, torch.func's
vmap and grad, module and tensor hooks, torch.distributions, CTC loss, packed sequences,
nn.MultiheadAttention and batch norm. Missing: a checkpoint's layers under other names, buffers
a checkpoint lacks (track_running_stats=False), one tensor given to load_state_dict, an
optimizer's state loaded into one over other parameters, a checkpoint of other layers (it was
told only of the sizes that differ, and to leave those keys out); a learning rate of several
numbers, a negative lr, momentum or weight_decay, betas=0.9, one tensor as params, a dict of
named parameters as params; ops that order complex numbers (>, max, sort, relu), float() of a
complex number, a real layer given complex input (it was told of NumPy's float64),
view_as_complex of a last dimension not 2; einsum given more or fewer operands than terms, an
output letter no input has, a letter twice in the output, a digit in the equation, operands of
two dtypes; bmm of half and float; a bfloat16 tensor's .numpy(); a write of another dtype
(x[idx] = v, scatter_); scatter_add_ given a src smaller than its index; take_along_dim given
argmax's indices; gather along dim 0 with class indices (it was told the tensor needs more
rows); Embedding's padding_idx past its rows, from_pretrained of a vector, uint8 indices (it was
told they were floats); vmap's in_dims past the input's dimensions, a function that returns
None, a random op, an in-place write into a tensor made inside; a forward hook written as a
lambda of one argument; a backward hook reading grad_input[0], None for data; w.normal_() on a
leaf (it was told to write w -= lr * w.grad); nn.init given a layer; nn.MultiheadAttention's
(output, weights) used as a tensor; CTCLoss given log_probs batch first, lengths of another
count, an input length past T; pack_padded_sequence given a column of lengths; Uniform's low
above its high (no fix was given), MultivariateNormal given a vector for its covariance, and a
support quoted twice in log_prob's hint. Each snippet raises as it does without gradwalk, at the
line given, the hint names the snippet's own variables, and the fix it gives runs. Left alone:
errors whose message already gives the fix (an RNN given float64, add(sparse, dense), Adam given
sparse gradients, .numpy() of a sparse tensor) and rarer ones (nn.init of an integer tensor,
functional_call missing a key, MultiheadAttention's kdim, sparse indices of the wrong rank)."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted

H = "import torch\nimport torch.nn as nn\n"
FUNC = H + "from torch.func import vmap\n"
CTC = H + "ctc = nn.CTCLoss()\n"

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    "a checkpoint's layers under other names": (
        H
        + "class A(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(3, 2)\n"
        + "class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.head = nn.Linear(3, 2)\n"
        + "sd = A().state_dict()\nb = B()\nb.load_state_dict(sd)\n",
        13,
        ["'fc.' for 'head.'", "b.load_state_dict({k.replace('fc.', 'head.', 1): v for k, v in sd.items()})"],
        [
            (
                "b.load_state_dict(sd)",
                "b.load_state_dict({k.replace('fc.', 'head.', 1): v for k, v in sd.items()})",
            )
        ],
    ),
    "a checkpoint of other layers, renumbered": (
        H
        + "a = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))\n"
        + "b = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))\nb.load_state_dict(a.state_dict())\n",
        5,
        [
            "made of other layers, not the same layers in other sizes",
            "keys b lacks (2.weight, 2.bias",
            "renumbers",
        ],
        [("nn.Linear(4, 8), nn.Linear(8, 2))", "nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))")],
    ),
    "buffers the checkpoint lacks": (
        H
        + "a = nn.BatchNorm1d(4, track_running_stats=False)\nb = nn.BatchNorm1d(4)\nb.load_state_dict(a.state_dict())\n",
        5,
        [
            "b keeps running statistics (num_batches_tracked, running_mean, running_var)",
            "track_running_stats=False",
        ],
        [("b = nn.BatchNorm1d(4)", "b = nn.BatchNorm1d(4, track_running_stats=False)")],
    ),
    "one tensor given to load_state_dict": (
        H + "m = nn.Linear(3, 2)\nm.load_state_dict(m.weight)\n",
        4,
        ["m.weight is one tensor", "with torch.no_grad(): m.weight.copy_("],
        [("m.load_state_dict(m.weight)", "m.load_state_dict(m.state_dict())")],
    ),
    "an optimizer's state loaded into one over other parameters": (
        H
        + "m = nn.Linear(3, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        + "opt2 = torch.optim.SGD([nn.Parameter(torch.randn(2))], lr=0.1)\nopt2.load_state_dict(opt.state_dict())\n",
        6,
        ["names its parameters by position", "opt's groups hold 2 parameters, opt2's 1"],
        [("[nn.Parameter(torch.randn(2))]", "m.parameters()")],
    ),
    "a learning rate of several numbers": (
        H + "m = nn.Linear(3, 2)\nopt = torch.optim.SGD(m.parameters(), lr=torch.tensor([0.1, 0.2]))\n",
        4,
        ["lr=torch.tensor([0.1, 0.2]) holds several", "param groups, one dict each"],
        [("lr=torch.tensor([0.1, 0.2])", "lr=0.1")],
    ),
    "a negative learning rate": (
        H + "m = nn.Linear(3, 2)\nopt = torch.optim.Adam(m.parameters(), lr=-0.001)\n",
        4,
        ["lr=-0.001 is negative", "maximize=True", "torch.optim.Adam(m.parameters(), lr=0.001)"],
        [("lr=-0.001", "lr=0.001")],
    ),
    "a negative momentum": (
        H + "m = nn.Linear(3, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=-0.9)\n",
        4,
        ["momentum=-0.9 is negative", "torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)"],
        [("momentum=-0.9", "momentum=0.9")],
    ),
    "a negative weight decay": (
        H + "m = nn.Linear(3, 2)\nopt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=-0.1)\n",
        4,
        ["weight_decay=-0.1 is negative", "weight_decay=0.1)"],
        [("weight_decay=-0.1", "weight_decay=0.1")],
    ),
    "betas of one number": (
        H + "m = nn.Linear(3, 2)\nopt = torch.optim.Adam(m.parameters(), betas=0.9)\n",
        4,
        ["betas takes two numbers", "betas=0.9 is one", "betas=(0.9, 0.999)"],
        [("betas=0.9", "betas=(0.9, 0.999)")],
    ),
    "one tensor as params": (
        H + "w = torch.randn(3, requires_grad=True)\nopt = torch.optim.SGD(w, lr=0.1)\n",
        4,
        ["given one tensor, w", "torch.optim.SGD([w], lr=0.1)"],
        [("SGD(w,", "SGD([w],")],
    ),
    "a dict of named parameters as params": (
        H + "m = nn.Linear(3, 2)\nopt = torch.optim.SGD(dict(m.named_parameters()), lr=0.1)\n",
        4,
        [
            "dict(m.named_parameters()) is a dict",
            "the parameters' names",
            "torch.optim.SGD(m.parameters(), lr=0.1)",
        ],
        [("dict(m.named_parameters())", "m.parameters()")],
    ),
    "a comparison of complex numbers": (
        H
        + "z = torch.randn(3, dtype=torch.cfloat, requires_grad=True)\n(z.abs() ** 2).sum().backward()\n"
        + "print(z.grad > 0)\n",
        5,
        ["z.grad is complex (complex64)", "no order", "a comparison (>)", "z.grad.abs()"],
        [("z.grad > 0", "z.grad.abs() > 0")],
    ),
    "relu of complex numbers": (
        H + "z = torch.randn(3, dtype=torch.cfloat)\ny = torch.relu(z)\n",
        4,
        ["z is complex (complex64)", "torch.complex(torch.relu(z.real), torch.relu(z.imag))"],
        [("torch.relu(z)", "torch.complex(torch.relu(z.real), torch.relu(z.imag))")],
    ),
    "max of complex numbers": (
        H + "z = torch.randn(3, dtype=torch.cfloat)\nm = z.max()\n",
        4,
        ["no order", "z[z.abs().argmax()]"],
        [("z.max()", "z[z.abs().argmax()]")],
    ),
    "sort of complex numbers": (
        H + "z = torch.randn(4, dtype=torch.cfloat)\ns, i = torch.sort(z)\n",
        4,
        ["sort() has no meaning", "order = z.abs().argsort()"],
        [("s, i = torch.sort(z)", "order = z.abs().argsort()\ns = z[order]")],
    ),
    "float() of a complex number": (
        H + "z = torch.tensor(1 + 2j)\nv = float(z)\n",
        4,
        ["z is the complex number (1+2j)", "nothing is too large", "float(z.real)"],
        [("float(z)", "float(z.real)")],
    ),
    "a real layer given complex input": (
        H + "lin = nn.Linear(3, 2)\nz = torch.randn(4, 3, dtype=torch.cfloat)\ny = lin(z)\n",
        5,
        [
            "z is complex (complex64) and lin's weights are real (float32)",
            "dtype=torch.cfloat",
            "lin(z.real)",
        ],
        [("nn.Linear(3, 2)", "nn.Linear(3, 2, dtype=torch.cfloat)")],
    ),
    "view_as_complex of a last dimension not 2": (
        H + "x = torch.randn(3, 3)\nz = torch.view_as_complex(x)\n",
        4,
        ["(real part, imaginary part) pairs", "x is (3, 3)", "torch.complex(x, torch.zeros_like(x))"],
        [("torch.view_as_complex(x)", "torch.complex(x, torch.zeros_like(x))")],
    ),
    "einsum given fewer operands than terms": (
        H + "a = torch.randn(3, 4)\nb = torch.randn(4, 5)\nc = torch.einsum('ij,jk->ik', a)\n",
        5,
        ["2 input terms ('ij', 'jk')", "it was given 1 operand"],
        [("'ij,jk->ik', a)", "'ij,jk->ik', a, b)")],
    ),
    "einsum given more operands than terms": (
        H + "a = torch.randn(3, 4)\nb = torch.randn(4, 5)\nc = torch.einsum('ij,jk->ik', [a, b, b])\n",
        5,
        ["it was given 3 operands"],
        [("[a, b, b]", "[a, b]")],
    ),
    "an einsum output letter no input has": (
        H + "a = torch.randn(3, 4)\nb = torch.randn(4, 5)\nc = torch.einsum('ij,jk->il', a, b)\n",
        5,
        ["the output 'il' names 'l', and no input term has it", "Likely 'k' is meant: ij,jk->ik"],
        [("->il", "->ik")],
    ),
    "an einsum letter twice in the output": (
        H + "a = torch.randn(3, 4)\nc = torch.einsum('ij->ii', a)\n",
        4,
        ["'i' is there twice", "('ij->i')"],
        [("'ij->ii'", "'ij->i'")],
    ),
    "a digit in an einsum equation": (
        H + "a = torch.randn(3, 4)\nc = torch.einsum('i1->i', a)\n",
        4,
        ["'1' at index 1 is not one", "a dimension of size 1 needs a letter too"],
        [("'i1->i'", "'ij->i'")],
    ),
    "einsum of float and integer operands": (
        H
        + "a = torch.randn(3, 4)\nb = torch.arange(20).reshape(4, 5)\nc = torch.einsum('ij,jk->ik', a, b)\n",
        5,
        ["einsum: a (made at line 3) is float32, b (made at line 4) is int64", "b.float()"],
        [("a, b)", "a, b.float())")],
    ),
    "bmm of half and float": (
        H + "a = torch.randn(2, 3, 4).half()\nb = torch.randn(2, 4, 5)\nc = torch.bmm(a, b)\n",
        5,
        ["bmm: a (made at line 3) is float16, b (made at line 4) is float32", "b.to(torch.float16)"],
        [("torch.bmm(a, b)", "torch.bmm(a.float(), b)")],
    ),
    ".numpy() of bfloat16": (
        H + "x = torch.randn(3, dtype=torch.bfloat16)\nprint(x.numpy())\n",
        4,
        ["NumPy has no bfloat16 dtype", "x.float().numpy()"],
        [("x.numpy()", "x.float().numpy()")],
    ),
    "an indexed write of another dtype": (
        H + "x = torch.zeros(4)\nv = torch.ones(2, dtype=torch.bfloat16)\nx[torch.tensor([0, 1])] = v\n",
        5,
        ["v holds bfloat16 numbers where x holds float32", "x[torch.tensor([0, 1])] = v.to(x.dtype)"],
        [("= v\n", "= v.to(x.dtype)\n")],
    ),
    "a scatter of another dtype": (
        H
        + "x = torch.zeros(3, 4)\nidx = torch.tensor([[0, 1], [2, 3], [1, 0]])\n"
        + "src = torch.ones(3, 2, dtype=torch.float64)\nx.scatter_(1, idx, src)\n",
        6,
        ["(x is float32, src float64)", "x.scatter_(1, idx, src.to(x.dtype))"],
        [("x.scatter_(1, idx, src)", "x.scatter_(1, idx, src.to(x.dtype))")],
    ),
    "scatter_add_ given a src smaller than its index": (
        H
        + "x = torch.zeros(3, 4)\nidx = torch.tensor([[0, 1, 2], [2, 3, 0], [1, 0, 1]])\nsrc = torch.ones(2, 2)\n"
        + "x.scatter_add_(1, idx, src)\n",
        6,
        ["idx is (3, 3) and src (2, 2)", "torch.ones_like(idx, dtype=x.dtype)"],
        [("src = torch.ones(2, 2)", "src = torch.ones_like(idx, dtype=x.dtype)")],
    ),
    "take_along_dim given argmax's indices": (
        H + "x = torch.randn(4, 5)\nidx = x.argmax(dim=1)\ny = torch.take_along_dim(x, idx, dim=1)\n",
        5,
        ["one dimension fewer, as argmax(dim=1) gives", "torch.take_along_dim(x, idx.unsqueeze(1), dim=1)"],
        [("take_along_dim(x, idx,", "take_along_dim(x, idx.unsqueeze(1),")],
    ),
    "gather along dim 0 with class indices": (
        H
        + "logits = torch.randn(8, 10)\ntargets = torch.tensor([9, 1, 2, 3, 4, 5, 6, 7])\n"
        + "picked = logits.gather(0, targets.unsqueeze(1))\n",
        5,
        ["which fit dim 1 (10 entries)", "logits.gather(1, targets.unsqueeze(1))"],
        [("gather(0,", "gather(1,")],
    ),
    "Embedding's padding_idx past its rows": (
        H + "emb = nn.Embedding(5, 3, padding_idx=5)\n",
        3,
        ["0 to 4, and padding_idx=5 is past them", "nn.Embedding(6, …, padding_idx=5)"],
        [("nn.Embedding(5,", "nn.Embedding(6,")],
    ),
    "Embedding.from_pretrained of a vector": (
        H + "w = torch.randn(10)\nemb = nn.Embedding.from_pretrained(w)\n",
        4,
        ["w is (10,)", "w.unsqueeze(1)"],
        [("from_pretrained(w)", "from_pretrained(w.unsqueeze(1))")],
    ),
    "uint8 indices into an Embedding": (
        H + "emb = nn.Embedding(10, 4)\nids = torch.tensor([1, 2], dtype=torch.uint8)\nout = emb(ids)\n",
        5,
        ["this one holds uint8 (bytes)"],
        [("emb(ids)", "emb(ids.long())")],
    ),
    "vmap's in_dims past the input's dimensions": (
        FUNC + "def f(x):\n    return x.sum()\nout = vmap(f, in_dims=2)(torch.randn(4, 3))\n",
        6,
        ["in_dims=2 asks vmap to split an input of f along dim 2, and it has 2 dimensions (0 to 1)"],
        [("in_dims=2", "in_dims=0")],
    ),
    "a vmapped function that returns None": (
        FUNC + "def f(x):\n    y = x * 2\nout = vmap(f)(torch.randn(4, 3))\n",
        6,
        ["f returns None", "return the tensor it computes"],
        [("    y = x * 2\n", "    y = x * 2\n    return y\n")],
    ),
    "a random op inside vmap": (
        FUNC + "def f(x):\n    return x + torch.randn(3)\nout = vmap(f)(torch.randn(4, 3))\n",
        5,
        ["torch.randn(3) draws random numbers inside f", "vmap(f, randomness='different')"],
        [("vmap(f)", "vmap(f, randomness='different')")],
    ),
    "an in-place write inside vmap into a tensor made there": (
        FUNC
        + "def f(x):\n    y = torch.zeros(3)\n    y.add_(x)\n    return y\nout = vmap(f)(torch.randn(4, 3))\n",
        6,
        ["y, made inside f with shape [3]", "y = y + x", "torch.zeros_like(x)"],
        [("y.add_(x)", "y = y + x")],
    ),
    "a forward hook as a lambda of one argument": (
        H
        + "lin = nn.Linear(3, 2)\nlin.register_forward_hook(lambda out: print(out.shape))\nlin(torch.randn(2, 3))\n",
        5,
        [
            "takes 1 argument",
            "hook(module, input, output)",
            "in that order: lambda module, input, out: print(out.shape)",
        ],
        [("lambda out:", "lambda module, input, out:")],
    ),
    "a backward hook reading grad_input of data": (
        H
        + "lin = nn.Linear(3, 2)\nlin.register_full_backward_hook(lambda mod, gi, go: print(gi[0].shape))\n"
        + "lin(torch.randn(2, 3)).sum().backward()\n",
        4,
        ["gi[0] is None", "read go[0] (grad_output)"],
        [("gi[0].shape", "go[0].shape")],
    ),
    "normal_ on a leaf": (
        H + "w = torch.empty(3, 4, requires_grad=True)\nw.normal_(0, 0.1)\n",
        4,
        ["w.normal_(0, 0.1) fills w in place", "nn.init.normal_(w, 0, 0.1)"],
        [("w.normal_(0, 0.1)", "nn.init.normal_(w, 0, 0.1)")],
    ),
    "fill_ on a layer's weight": (
        H + "lin = nn.Linear(3, 2)\nlin.weight.fill_(0.5)\n",
        4,
        ["nn.init.constant_(lin.weight, 0.5)"],
        [("lin.weight.fill_(0.5)", "nn.init.constant_(lin.weight, 0.5)")],
    ),
    "nn.init given a layer": (
        H + "lin = nn.Linear(3, 2)\nnn.init.kaiming_normal_(lin)\n",
        4,
        ["lin is a layer (Linear)", "nn.init.kaiming_normal_(lin.weight)"],
        [("kaiming_normal_(lin)", "kaiming_normal_(lin.weight)")],
    ),
    "MultiheadAttention's pair used as a tensor": (
        H
        + "mha = nn.MultiheadAttention(8, 2, batch_first=True)\nx = torch.randn(4, 6, 8)\nout = mha(x, x, x)\n"
        + "y = out + x\n",
        6,
        ["out is a pair, (attn_output, attn_weights)", "out, _ = mha(q, k, v)"],
        [("out = mha(x, x, x)", "out, _ = mha(x, x, x)")],
    ),
    "CTCLoss given log_probs batch first": (
        CTC
        + "log_probs = torch.randn(16, 50, 20).log_softmax(2)\ntargets = torch.randint(1, 20, (16, 10))\n"
        + "input_lengths = torch.full((16,), 50)\ntarget_lengths = torch.full((16,), 10)\n"
        + "loss = ctc(log_probs, targets, input_lengths, target_lengths)\n",
        8,
        ["log_probs is (16, 50, 20)", "the 16 input_lengths match dim 0", "log_probs.transpose(0, 1)"],
        [("ctc(log_probs,", "ctc(log_probs.transpose(0, 1),")],
    ),
    "CTCLoss given lengths of another count": (
        CTC
        + "log_probs = torch.randn(50, 4, 20).log_softmax(2)\ntargets = torch.randint(1, 20, (4, 10))\n"
        + "loss = ctc(log_probs, targets, torch.full((3,), 50), torch.full((4,), 10))\n",
        6,
        ["holds a batch of 4", "torch.full((4,), 50)"],
        [("torch.full((3,), 50)", "torch.full((4,), 50)")],
    ),
    "CTCLoss given an input length past T": (
        CTC
        + "log_probs = torch.randn(50, 4, 20).log_softmax(2)\ntargets = torch.randint(1, 20, (4, 10))\n"
        + "loss = ctc(log_probs, targets, [50, 50, 50, 60], [10, 10, 10, 10])\n",
        6,
        ["log_probs is (50, 4, 20), (T, N, C): 50 steps, and one length is 60"],
        [("50, 60]", "50, 50]")],
    ),
    "pack_padded_sequence given a column of lengths": (
        H
        + "from torch.nn.utils.rnn import pack_padded_sequence\nx = torch.randn(3, 5, 4)\n"
        + "lengths = torch.tensor([[5], [3], [2]])\npacked = pack_padded_sequence(x, lengths, batch_first=True)\n",
        6,
        ["lengths has 2 dimensions", "Pass lengths.flatten()"],
        [("(x, lengths,", "(x, lengths.flatten(),")],
    ),
    "Uniform's low above its high": (
        H + "from torch.distributions import Uniform\nd = Uniform(torch.tensor(1.0), torch.tensor(0.0))\n",
        4,
        ["low must be below high", "Uniform(torch.tensor(0.0), torch.tensor(1.0))"],
        [("Uniform(torch.tensor(1.0), torch.tensor(0.0))", "Uniform(torch.tensor(0.0), torch.tensor(1.0))")],
    ),
    "MultivariateNormal given a vector for its covariance": (
        H
        + "from torch.distributions import MultivariateNormal\n"
        + "d = MultivariateNormal(torch.zeros(3), covariance_matrix=torch.ones(3))\n",
        4,
        ["torch.ones(3) is a vector", "covariance_matrix=torch.diag(torch.ones(3))"],
        [("covariance_matrix=torch.ones(3)", "covariance_matrix=torch.diag(torch.ones(3))")],
    ),
    "log_prob outside an interval's support": (
        H
        + "from torch.distributions import Uniform\nd = Uniform(0.0, 1.0)\nprint(d.log_prob(torch.tensor(1.5)))\n",
        5,
        ["upper_bound=1.0): numbers from 0.0 to 1.0; torch.tensor(1.5) holds"],
        [("torch.tensor(1.5)", "torch.tensor(0.5)")],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_hint_names_the_cause_and_the_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)
