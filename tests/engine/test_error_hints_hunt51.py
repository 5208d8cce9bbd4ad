"""Hints a hunt over 180 failing snippets found missing or wrong, in areas no earlier hunt covered
(the training step's pieces are in test_error_hints_hunt51b.py): torch.func given a Python number
to differentiate by, bare tensors to jvp, a tangent of another shape, functional_call's inputs
one by one, vmap's in_dims as a list, has_aux of a function that returns the loss alone; custom
autograd.Function backward passes that use ctx.saved_tensors whole or return a number; layers
built with settings PyTorch refuses (groups, padding='same' with a stride, a pooling's padding,
Dropout(50), a dotted ModuleDict key, a buffer given a float, a ModuleDict indexed by position,
an EmbeddingBag without offsets); poolings and interpolation given inputs of another number of
dimensions; ops of real numbers given integers and float() of many numbers; an LSTMCell given a
sequence, a GRUCell given (h, c), nll_loss of (N, T, C), key padding masks of the query's
length; topk, multinomial, repeat, randperm, index_select and bincount given counts or indices
they cannot take; and scatter of an index past the columns (gather had that hint). Each snippet
raises as it does without gradwalk, at the line given, the hint names the snippet's own
variables, and the fix it gives runs. Left alone: errors whose message gives the fix
(pack_padded_sequence's enforce_sorted, interpolate given both size and scale_factor, a missing
state_dict key) and rarer ones (a zero stride, pixel_shuffle's channels, F.fold, F.pad of more
pairs than dimensions)."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
FN = H + "from torch.func import grad, jacrev, jacfwd, jvp, vjp, functional_call\n"
SQ = (
    "class Sq(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
    "        ctx.save_for_backward(x)\n        return x * x\n    @staticmethod\n    def backward(ctx, g):\n"
)

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    "grad given an int to differentiate by": (
        FN + "def f(x, n):\n    return (x ** n).sum()\ng = grad(f, argnums=1)(torch.randn(3), 2)\nprint(g)\n",
        7,
        [
            "argument 1 (argnums=1), and that is 2, a Python int",
            "grad(f, argnums=1)(torch.randn(3), torch.tensor(2.0))",
        ],
        [("torch.randn(3), 2)", "torch.randn(3), torch.tensor(2.0))")],
    ),
    "jacrev's argnums holding a setting": (
        FN + "def f(x, n):\n    return x ** n\nJ = jacrev(f, argnums=(0, 1))(torch.randn(3), 2)\n",
        7,
        ["that is 2, a Python int", "leave it out of argnums: argnums=0"],
        [("argnums=(0, 1)", "argnums=0")],
    ),
    "grad of a Python float": (
        FN + "def f(x):\n    return x ** 2\ng = grad(f)(3.0)\nprint(g)\n",
        7,
        ["that is 3.0, a Python float", "grad(f)(torch.tensor(3.0))"],
        [("grad(f)(3.0)", "grad(f)(torch.tensor(3.0))")],
    ),
    "jacfwd of a Python float": (
        FN + "def f(x):\n    return x.sin()\nJ = jacfwd(f)(2.0)\nprint(J)\n",
        7,
        ["torch.func.jacfwd differentiates by argument 0", "jacfwd(f)(torch.tensor(2.0))"],
        [("(2.0)", "(torch.tensor(2.0))")],
    ),
    "vjp of a Python float": (
        FN + "out, fn = vjp(torch.sin, 2.0)\n",
        5,
        [
            "torch.func.vjp differentiates by its first argument, and that is 2.0",
            "vjp(torch.sin, torch.tensor(2.0))",
        ],
        [("vjp(torch.sin, 2.0)", "vjp(torch.sin, torch.tensor(2.0))")],
    ),
    "jvp given bare tensors": (
        FN + "def f(x):\n    return x.sin()\nx = torch.randn(3)\nv = torch.ones(3)\nout, t = jvp(f, x, v)\n",
        9,
        ["primals (x) and tangents (v) must be tuples", "jvp(f, (x,), (v,))"],
        [("jvp(f, x, v)", "jvp(f, (x,), (v,))")],
    ),
    "jvp given a tangent of another shape": (
        FN + "def f(x):\n    return x.sin()\nx = torch.randn(3)\nout, t = jvp(f, (x,), (torch.randn(4),))\n",
        8,
        ["the primal is [3] and the tangent [4]", "torch.randn_like(x)"],
        [("torch.randn(4)", "torch.randn_like(x)")],
    ),
    "functional_call given its inputs one by one": (
        FN
        + "m = nn.Bilinear(3, 3, 2)\nparams = dict(m.named_parameters())\nx = torch.randn(4, 3)\ny = torch.randn(4, 3)\n"
        + "out = functional_call(m, params, x, y)\n",
        9,
        ["which y (a Tensor) is not", "functional_call(m, params, (x, y))"],
        [("params, x, y)", "params, (x, y))")],
    ),
    "groups that do not divide the channels": (
        H + "conv = nn.Conv2d(6, 8, 3, groups=4)\nprint(conv(torch.randn(1, 6, 5, 5)).shape)\n",
        4,
        ["in_channels=6 is not", "groups one of 1, 2 here"],
        [("groups=4", "groups=2")],
    ),
    "padding='same' with a stride": (
        H
        + "conv = nn.Conv2d(3, 4, 3, stride=2, padding='same')\nprint(conv(torch.randn(1, 3, 8, 8)).shape)\n",
        4,
        ["a stride above 1 cannot do", "nn.Conv2d(3, 4, 3, stride=2, padding=1)"],
        [("padding='same'", "padding=1")],
    ),
    "a pooling padded past half its window": (
        H + "pool = nn.MaxPool2d(kernel_size=2, padding=2)\nx = torch.randn(1, 3, 8, 8)\ny = pool(x)\n",
        6,
        ["pool (MaxPool2d) pads", "with kernel_size=2 padding can be 0 to 1, and it is 2"],
        [("padding=2", "padding=1")],
    ),
    "dropout given a percentage": (
        H + "drop = nn.Dropout(50)\n",
        4,
        ["it was given 50. For 50% write p=0.5"],
        [("Dropout(50)", "Dropout(0.5)")],
    ),
    "a ModuleDict key with a dot": (
        H + "d = nn.ModuleDict({'enc.fc': nn.Linear(3, 3)})\n",
        4,
        ["A module name", "('enc.fc' as 'enc_fc')"],
        [("'enc.fc'", "'enc_fc'")],
    ),
    "a buffer given a Python float": (
        H
        + "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.register_buffer('scale', 2.0)\n"
        + "m = M()\nprint(m.scale)\n",
        7,
        ["'scale' was given a Python float", "self.register_buffer('scale', torch.tensor(2.0))"],
        [("'scale', 2.0)", "'scale', torch.tensor(2.0))")],
    ),
    "AvgPool1d given images": (
        H + "pool = nn.AvgPool1d(2)\nx = torch.randn(4, 3, 8, 8)\ny = pool(x)\n",
        6,
        [
            "pool (AvgPool1d) pools the last 1 dimension of (N, C, L)",
            "x is 4-D, (N, C, H, W) images",
            "nn.AvgPool2d",
        ],
        [("nn.AvgPool1d(2)", "nn.AvgPool2d(2)")],
    ),
    "MaxPool2d given an image without channels": (
        H + "pool = nn.MaxPool2d(2)\nimg = torch.randn(8, 8)\ny = pool(img)\nprint(y.shape)\n",
        6,
        ["img is 2-D, without its channel dimension", "img.unsqueeze(0) for one sample"],
        [("pool(img)", "pool(img.unsqueeze(0))")],
    ),
    "MaxPool2d given a dimension too many": (
        H + "pool = nn.MaxPool2d(2)\nx = torch.randn(2, 1, 3, 8, 8)\ny = pool(x)\n",
        6,
        ["x is 5-D", "If x, (2, 1, 3, 8, 8), is images with a dimension too many, drop it: x.squeeze(1)"],
        [("pool(x)", "pool(x.squeeze(1))")],
    ),
    "AdaptiveAvgPool1d given feature maps": (
        H
        + "pool = nn.AdaptiveAvgPool1d(1)\nfeats = torch.randn(4, 16, 7, 7)\ny = pool(feats)\nprint(y.shape)\n",
        6,
        ["pool (AdaptiveAvgPool1d)", "nn.AdaptiveAvgPool2d"],
        [("AdaptiveAvgPool1d", "AdaptiveAvgPool2d")],
    ),
    "bilinear interpolation of one image": (
        H
        + "x = torch.randn(3, 8, 8)\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\nprint(y.shape)\n",
        5,
        [
            "one sample without its batch dimension",
            "F.interpolate(x.unsqueeze(0), scale_factor=2, mode='bilinear').squeeze(0)",
        ],
        [
            (
                "F.interpolate(x, scale_factor=2, mode='bilinear')",
                "F.interpolate(x.unsqueeze(0), scale_factor=2, mode='bilinear').squeeze(0)",
            )
        ],
    ),
    "linear upsampling of images": (
        H + "up = nn.Upsample(scale_factor=2, mode='linear')\ny = up(torch.randn(2, 3, 8, 8))\n",
        5,
        ["mode='linear' resizes 1 dimension", "this input is 4-D. For this input pass mode='bilinear'"],
        [("mode='linear'", "mode='bilinear'")],
    ),
    "softmax of integers": (
        H + "x = torch.tensor([1, 2, 3])\np = F.softmax(x, dim=0)\nprint(p)\n",
        5,
        ["softmax computes with real numbers, and x holds whole numbers (int64)", "x.float()"],
        [("F.softmax(x,", "F.softmax(x.float(),")],
    ),
    "randn_like of integers": (
        H + "x = torch.arange(5)\nnoise = torch.randn_like(x)\n",
        5,
        ["randn_like computes with real numbers, and x holds whole numbers (int64)", "x.float()"],
        [("randn_like(x)", "randn_like(x.float())")],
    ),
    "std of integers": (
        H + "counts = torch.tensor([1, 2, 3])\ns = counts.std()\nprint(s)\n",
        5,
        ["std computes with real numbers, and counts holds whole numbers", "counts.float()"],
        [("counts.std()", "counts.float().std()")],
    ),
    "float() of an accuracy's booleans": (
        H + "acc = torch.tensor([1, 0, 2, 0]) == torch.tensor([0, 1, 2, 0])\nprint(float(acc))\n",
        5,
        ["acc holds 4, shape (4,)", "acc.float().mean().item()"],
        [("float(acc)", "acc.float().mean().item()")],
    ),
    "int() of several predictions": (
        H + "preds = torch.tensor([2, 0, 1, 1])\nprint(int(preds))\n",
        5,
        ["int() reads one number out of a tensor, and preds holds 4", "preds[i].item()", "preds.tolist()"],
        [("int(preds)", "preds.tolist()")],
    ),
    "ctx.saved_tensors used whole": (
        H
        + SQ
        + "        x = ctx.saved_tensors\n        return 2 * x * g\n"
        + "x = torch.randn(3, requires_grad=True)\nSq.apply(x).sum().backward()\nprint(x.grad)\n",
        12,
        ["x is ctx.saved_tensors whole", "x, = ctx.saved_tensors"],
        [("x = ctx.saved_tensors", "x, = ctx.saved_tensors")],
    ),
    "ctx.saved_tensors of two used whole": (
        H
        + "class Mul(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, a, b):\n"
        + "        ctx.save_for_backward(a, b)\n        return a * b\n    @staticmethod\n    def backward(ctx, g):\n"
        + "        saved = ctx.saved_tensors\n        return g * saved[1], g * saved\n"
        + "a = torch.randn(3, requires_grad=True)\nb = torch.randn(3, requires_grad=True)\n"
        + "Mul.apply(a, b).sum().backward()\nprint(a.grad)\n",
        12,
        ["a tuple of the 2 tensors", "a, b = ctx.saved_tensors"],
        [
            ("saved = ctx.saved_tensors", "a, b = ctx.saved_tensors"),
            ("g * saved[1], g * saved", "g * b, g * a"),
        ],
    ),
    "a backward that returns a number": (
        H
        + "class Double(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x * 2\n"
        + "    @staticmethod\n    def backward(ctx, grad_output):\n        return 2\n"
        + "x = torch.randn(3, requires_grad=True)\nDouble.apply(x).sum().backward()\nprint(x.grad)\n",
        12,
        ["Double's backward returned a Python int", "return grad_output * (the derivative)"],
        [("return 2\n", "return grad_output * 2\n")],
    ),
    "nll_loss of a sequence's (N, T, C) log-probabilities": (
        H
        + "logp = torch.randn(4, 10, 5).log_softmax(-1)\ny = torch.randint(0, 5, (4, 10))\nloss = F.nll_loss(logp, y)\n",
        6,
        ["logp is (4, 10, 5): 10 positions before 5 classes", "F.nll_loss(logp.permute(0, 2, 1), y)"],
        [("F.nll_loss(logp, y)", "F.nll_loss(logp.permute(0, 2, 1), y)")],
    ),
    "an LSTMCell given a whole sequence": (
        H + "cell = nn.LSTMCell(4, 8)\nx = torch.randn(5, 2, 4)\nh, c = cell(x)\n",
        6,
        ["cell is an nn.LSTMCell: it runs one time step", "x is 3-D, a whole sequence", "use nn.LSTM"],
        [("h, c = cell(x)", "h, c = cell(x[0])")],
    ),
    "a GRUCell given an LSTM's (h, c)": (
        H
        + "cell = nn.GRUCell(4, 8)\nx = torch.randn(2, 4)\nh = torch.zeros(2, 8)\nc = torch.zeros(2, 8)\n"
        + "h = cell(x, (h, c))\n",
        8,
        ["cell is an nn.GRUCell, whose state is one tensor", "cell(x, h)"],
        [("cell(x, (h, c))", "cell(x, h)")],
    ),
    "topk of more than the dimension holds": (
        H + "scores = torch.randn(8, 3)\nv, i = scores.topk(5)\n",
        5,
        ["scores, (8, 3), has 3 there, fewer than k=5", "scores.topk(min(5, scores.size(-1)))"],
        [("scores.topk(5)", "scores.topk(min(5, scores.size(-1)))")],
    ),
    "multinomial of more draws than categories": (
        H + "p = torch.tensor([0.5, 0.5])\ns = torch.multinomial(p, 3)\n",
        5,
        ["each of the 2 categories can come up once", "torch.multinomial(p, 3, replacement=True)"],
        [("torch.multinomial(p, 3)", "torch.multinomial(p, 3, replacement=True)")],
    ),
    "repeat with fewer counts than dimensions": (
        H + "x = torch.randn(2, 3)\ny = x.repeat(2)\nprint(y.shape)\n",
        5,
        ["x has 2, (2, 3), while the call gives 1", "x.repeat(2, 1) repeats along dim 0"],
        [("x.repeat(2)", "x.repeat(2, 1)")],
    ),
    "randperm of a division": (
        H + "n = 10\nidx = torch.randperm(n / 2)\n",
        5,
        ["n / 2 is a float", "torch.randperm(int(n / 2))"],
        [("n / 2", "n // 2")],
    ),
    "a buffer set to a Python number": (
        H
        + "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + "        self.register_buffer('count', torch.zeros(()))\n    def forward(self, x):\n"
        + "        self.count = self.count.item() + 1\n        return x\nm = M()\ny = m(torch.randn(3))\nprint(m.count)\n",
        9,
        ["'count' was given a Python float", "self.count = self.count + 1, without .item()"],
        [("self.count.item() + 1", "self.count + 1")],
    ),
    "a ModuleDict indexed by position": (
        H + "heads = nn.ModuleDict({'a': nn.Linear(3, 1)})\ny = heads[0](torch.randn(2, 3))\n",
        5,
        ["heads is an nn.ModuleDict, looked up by its keys ('a')", "heads['a']"],
        [("heads[0]", "heads['a']")],
    ),
    "an EmbeddingBag given one row of ids": (
        H + "bag = nn.EmbeddingBag(10, 3)\nx = torch.tensor([1, 2, 4, 5])\nout = bag(x)\nprint(out.shape)\n",
        6,
        ["bag (nn.EmbeddingBag) reads a 1-D input as many bags", "bag(x.unsqueeze(0))"],
        [("bag(x)", "bag(x.unsqueeze(0))")],
    ),
    "a key_padding_mask made for the query": (
        H
        + "attn = nn.MultiheadAttention(16, 4, batch_first=True)\nq = torch.randn(2, 5, 16)\nkv = torch.randn(2, 7, 16)\n"
        + "kpm = torch.zeros(2, 5, dtype=torch.bool)\nout, _ = attn(q, kv, kv, key_padding_mask=kpm)\n",
        8,
        ["one column per position of kv: 7, and kpm has 5", "the mask goes with the keys, kv"],
        [("torch.zeros(2, 5, dtype", "torch.zeros(2, 7, dtype")],
    ),
    "a src_key_padding_mask of another length": (
        H
        + "layer = nn.TransformerEncoderLayer(16, 4, batch_first=True)\nx = torch.randn(2, 5, 16)\n"
        + "kpm = torch.zeros(2, 6, dtype=torch.bool)\ny = layer(x, src_key_padding_mask=kpm)\n",
        7,
        ["src_key_padding_mask is (batch, key length)", "position of x: 5, and kpm has 6"],
        [("torch.zeros(2, 6,", "torch.zeros(2, 5,")],
    ),
    "vmap's in_dims as a list": (
        FN
        + "from torch.func import vmap\ndef f(x, y):\n    return x * y\n"
        + "out = vmap(f, in_dims=[0, None])(torch.randn(4, 3), torch.randn(3))\n",
        8,
        ["[0, None] is a list", "in_dims=(0, None)"],
        [("in_dims=[0, None]", "in_dims=(0, None)")],
    ),
    "grad with has_aux of a function that returns the loss alone": (
        FN + "def f(x):\n    return (x ** 2).sum()\ng, aux = grad(f, has_aux=True)(torch.randn(3))\n",
        7,
        ["has_aux=True tells grad that f returns a pair, (loss, aux)", "leave has_aux out"],
        [("g, aux = grad(f, has_aux=True)", "g = grad(f)")],
    ),
    "scatter of a label past the columns": (
        H
        + "labels = torch.tensor([0, 2, 3, 1])\nonehot = torch.zeros(4, 3).scatter_(1, labels.unsqueeze(1), 1)\n",
        5,
        ["labels.unsqueeze(1) holds 3", "has 3 entries along dim 1, numbered 0 to 2"],
        [("torch.zeros(4, 3)", "torch.zeros(4, 4)")],
    ),
    "index_select of float positions": (
        H + "x = torch.randn(5, 3)\nidx = torch.tensor([0.0, 1.0])\ny = x.index_select(0, idx)\n",
        6,
        ["idx holds floats (float32)", "x.index_select(0, idx.long())"],
        [("x.index_select(0, idx)", "x.index_select(0, idx.long())")],
    ),
    "bincount of floats": (
        H + "y = torch.tensor([0.0, 1.0, 1.0])\nc = torch.bincount(y)\nprint(c)\n",
        5,
        ["y holds floats (float32)", "y.long()"],
        [("bincount(y)", "bincount(y.long())")],
    ),
    "bincount of negative labels": (
        H + "y = torch.tensor([0, -1, 1])\nc = torch.bincount(y)\nprint(c)\n",
        5,
        ["y holds negative numbers (the lowest is -1)", "y[y >= 0]"],
        [("bincount(y)", "bincount(y[y >= 0])")],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_hint_names_the_cause_and_the_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)
