"""The frontend's unit tests (web/test/*.test.ts) against traces recorded here with PyTorch."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, WEB, need

EXAMPLES = [
    "cubic",
    "product",
    "cubic_twice",
    "small_net",
    "accumulate_loop",
    "custom_function",
    "grad_hook",
    "autograd_grad",
    "retain_graph",
    # loops whose calls copy one graph: the graph's default call (graph-calls.test.ts)
    "fit_by_hand",
    "clean_training",
]


# snippets the library has no example of, recorded for the unit tests under these names
SNIPPETS = {
    # a step clipped by norm: clip_grad_norm_ is one op, its gradients in and out (six each)
    "clipped": "import torch, torch.nn as nn\ntorch.manual_seed(0)\n"
    "net = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))\n"
    "net(torch.randn(4, 2)).sum().backward()\nnn.utils.clip_grad_norm_(net.parameters(), 1.0)\n",
    # two models, one backward() each: each call's graph has a module of its own
    "two_models": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nfirst, second = nn.Linear(2, 1), nn.Linear(2, 1)\n"
    "x = torch.randn(3, 2)\nfirst(x).sum().backward()\nsecond(x).sum().backward()\n",
    # nn.Linear on a batch of sequences: its AddmmBackward0 makes a tensor no op returns
    "linear_3d": "import torch\ntorch.manual_seed(0)\nlayer = torch.nn.Linear(4, 3)\n"
    "out = layer(torch.randn(2, 5, 4))\nout.sum().backward()\n",
    # gradient descent by hand: no optimizer, each backward() call a step
    "manual_gd": "import torch\nX = torch.linspace(-1, 1, 20)\ny = 3 * X + 2\n"
    "w = torch.zeros(1, requires_grad=True)\nfor step in range(10):\n"
    "    loss = ((w * X - y) ** 2).mean()\n    loss.backward()\n    with torch.no_grad():\n"
    "        w -= 0.1 * w.grad\n        w.grad.zero_()\n",
    # attention written out: one SplitBackward0 makes q, k and v (chunk), an uneven split two shapes
    "qkv_chunk": "import torch\ntorch.manual_seed(0)\nx = torch.randn(2, 4, 6, requires_grad=True)\n"
    "w = torch.randn(6, 18, requires_grad=True)\nq, k, v = (x @ w).chunk(3, dim=-1)\n"
    "out = (q @ k.transpose(-2, -1)).softmax(-1) @ v\nhead, tail = out.split([1, 3], dim=1)\n"
    "(head.sum() + tail.mean()).backward()\n",
    # the numbers a card writes out (hunt 63): addmm's beta and alpha, a division that rounds,
    # cross-entropy with an ignored row, a negative gradient into cos, a negative alpha
    "card_numbers": "import torch, torch.nn.functional as F\n"
    "M = torch.tensor([[1., 2.]], requires_grad=True)\nA = torch.tensor([[1., 1.]], requires_grad=True)\n"
    "B = torch.tensor([[2., 0.], [0., 3.]], requires_grad=True)\n"
    "torch.addmm(M, A, B, beta=0.5, alpha=2).sum().backward()\n"
    "bias = torch.tensor([1., 2.], requires_grad=True)\nA2 = torch.ones(3, 2)\n"
    "torch.addmm(bias, A2, B).sum().backward()\n"
    "x = torch.tensor(7., requires_grad=True)\n(torch.div(x, 2, rounding_mode='floor') + x).backward()\n"
    "(torch.div(x, 2, rounding_mode='trunc') * 3).backward()\n"
    "logits = torch.tensor([[1., 2., .5], [.1, .2, .3], [2., 1., 0.]], requires_grad=True)\n"
    "F.cross_entropy(logits, torch.tensor([0, -100, 1])).backward()\n"
    "c = torch.tensor(0.7, requires_grad=True)\n(torch.cos(c) * (-2)).backward()\n"
    "a = torch.tensor(1., requires_grad=True)\nb = torch.tensor(2., requires_grad=True)\n"
    "(torch.sub(a, b, alpha=-2) * 2).backward()\n"
    "p = torch.tensor(3., requires_grad=True)\n(p ** 1 * 5).backward()\n",
    # element sets: a number at an index, a tensor under a mask
    "element_sets": "import torch\nx = torch.ones(4, requires_grad=True)\ny = x * 2\ny[0] = 0\n"
    "mask = torch.tensor([False, True, False, False])\nv = torch.full((1,), 5.0)\ny[mask] = v\n"
    "y.sum().backward()\n",
    # unnamed tensors a learner makes: subscripts, alpha, factories, a (values, indices)
    # pair, a chain past the naming depth (each line's expression is left unnamed)
    "learner_labels": "import torch\nx = torch.arange(6.).requires_grad_()\nw = torch.ones(6, requires_grad=True)\n"
    "mask = x > 2\nx[:2] * 1\nx[1] * 1\nx[mask] * 1\nx[:2] + x[2:4]\ntorch.sub(x, w, alpha=2) * 1\n"
    "torch.arange(5.) * 1\ntorch.zeros(3) + 1\nx.view(2, 3).max(dim=0).values * 1\n(x * 2 + 1) * (x + 1) // 2\n"
    "(((x * 2 + 1).exp() - 3).sum() / 4).sqrt()\n",
    # transposes read as attributes, numbers passed by keyword, a comparison
    "transposes": "import torch\ntorch.manual_seed(0)\nX = torch.randn(4, 3)\nw = torch.randn(2, 3, requires_grad=True)\n"
    "(X @ w.T).sum(dim=1) * 1\ntorch.softmax(X @ w.mT, dim=-1) * 1\n(X > 0) * 1\n",
    # the nodes layers and losses make: cross-entropy, a small conv net, attention
    "layers": "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\n"
    "net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),\n"
    "                    nn.Linear(8, 4), nn.LayerNorm(4), nn.GELU())\n"
    "logits = net(torch.randn(3, 1, 6, 6))\nloss = F.cross_entropy(logits, torch.tensor([0, 2, 1]))\n"
    "loss.backward()\n",
    # a layer applied twice and cross-entropy on its output (architectures.test.ts)
    "shared_layer": "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\n"
    "shared = nn.Linear(4, 4)\nv = torch.randn(2, 4)\nz = shared(shared(v))\n"
    "loss = F.cross_entropy(z, torch.tensor([0, 3]))\nloss.backward()\n",
    # one transformer encoder layer (d_model 8): residual adds of submodule outputs
    "transformer": "import torch, torch.nn as nn\ntorch.manual_seed(0)\n"
    "layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)\n"
    "enc = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)\n"
    "x = torch.randn(2, 3, 8)\nloss = enc(x).pow(2).mean()\nloss.backward()\n",
    # a GRU: its gates are nodes made inside one op, with no tensor of their own
    "gru": "import torch, torch.nn as nn\ntorch.manual_seed(0)\ngru = nn.GRU(3, 4)\n"
    "out, h = gru(torch.randn(3, 2, 3))\nout.sum().backward()\n",
    # dim=-1, as attention's softmax passes it: PyTorch saves it as an unsigned 2**64 - 1
    "negative_dims": "import torch\ntorch.manual_seed(0)\nx = torch.randn(2, 3, requires_grad=True)\n"
    "y = torch.softmax(x, -1) * x.logsumexp(-1, keepdim=True) + x.cumsum(-1) + x.log_softmax(-1)\n"
    "(y.max(dim=-1).values + x.var(dim=-1)).sum().backward()\n",
    # a variable rebound from itself on three lines, and in a loop body of two lines
    "rebound_lines": "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\nh = x * 2\nh = h + 1\n"
    "h = torch.tanh(h)\ng = x * 1\nfor _ in range(2):\n    g = g @ torch.eye(2)\n    g = torch.sigmoid(g)\n"
    "(h.sum() + g.sum()).backward()\n",
    # nn.LSTM: on the CPU one fused node for the whole layer
    "lstm": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nlstm = nn.LSTM(3, 4)\n"
    "out, (h, c) = lstm(torch.randn(3, 2, 3))\nout.sum().backward()\n",
    # F.scaled_dot_product_attention: on the CPU one fused node, causal, then with its own scale
    "attention": "import torch, torch.nn.functional as F\ntorch.manual_seed(0)\n"
    "q, k, v = (torch.randn(1, 2, 4, 8, requires_grad=True) for _ in range(3))\n"
    "F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()\n"
    "F.scaled_dot_product_attention(q, k, v, scale=0.5).sum().backward()\n",
    # cross-entropy's reductions: mean, sum, none, and a mean weighted by class
    "nll_reductions": "import torch, torch.nn.functional as F\ntorch.manual_seed(0)\n"
    "z = torch.randn(3, 4, requires_grad=True)\nt = torch.tensor([0, 2, 1])\n"
    "F.cross_entropy(z, t).backward()\nF.cross_entropy(z, t, reduction='sum').backward()\n"
    "F.cross_entropy(z, t, reduction='none').sum().backward()\n"
    "F.cross_entropy(z, t, weight=torch.tensor([1.0, 2.0, 3.0, 4.0])).backward()\n",
    # True/False passed by position: after a device the trace does not hold, and after a dim
    "positional_flags": "import torch, torch.nn as nn\nmodel = nn.Linear(2, 1)\nmodel.to('cpu')\n"
    "w = model.weight.to('cpu', None, False)\nx = torch.ones(2, 3, requires_grad=True)\ns = x.sum(0, True)\n",
    # an optimizer steps w between its two accumulations: a new version of w each step
    "running_stats": "import torch\nimport torch.nn as nn\nbn = nn.BatchNorm1d(2)\ny = bn(torch.randn(4, 2))\n"
    "bn.double()\n",
    # ops that change the dtype (or make a tensor of another than float32), and ones that do not
    # a loss whose target has no name, in a snippet with a y of its own
    "mse_own_y": "import torch, torch.nn.functional as F\nw = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)\n"
    "y = torch.einsum('ij,kj->ik', torch.tensor([[0.5, -1.0]]), w)\n"
    "loss = F.mse_loss(y[:, 0:2], torch.zeros(1, 2), reduction='sum')\nloss.backward()\n",
    # subscripts whose keys hold tensors beside other things (makemore's probs[range(n), Y])
    "subscript_keys": "import torch\nprobs = torch.rand(4, 5, requires_grad=True)\nY = torch.tensor([1, 0, 4, 2])\n"
    "a = probs[range(4), Y]\nb = probs[torch.arange(4), Y]\nd = probs[Y % 4]\nm = probs[probs > 0.5]\n"
    "f = probs[0, Y] + probs[1, Y]\nz = torch.zeros(4, 5)\nz[range(4), Y] = 1.0\nz[Y % 4, 0] = probs[:, 0].detach()\n",
    # unnamed outputs of calls that passed a tensor by keyword or after a number
    "placed_names": "import torch, torch.nn.functional as F\nx = torch.arange(8.0, requires_grad=True).reshape(2, 4)\n"
    "idx = torch.tensor([[0], [3]])\nw4 = torch.ones(4)\nu = F.layer_norm(x, (4,), weight=w4) * 2\n"
    "g = x.gather(1, idx) * 2\nm = torch.matmul(x, other=x.T) * 2\n",
    # arguments that are neither tensors nor numbers, kept as text (OpRecorded.arguments)
    "arguments": "import torch, torch.nn.functional as F\nx = torch.arange(8.0, requires_grad=True).reshape((2, 4))\n"
    "e = torch.einsum('ij,kj->ik', x, x)\nl = F.mse_loss(x, x.detach() * 0, reduction='sum')\n"
    "c = x[:, 0] * 2\nr = x[0:1]\np = F.pad(x, (1, 1))\ny = x * 1\nwith torch.no_grad():\n"
    "    y[:, 1:3] = 0\nd = x.to(torch.float64)\n"
    # keywords in the call's order; settings passed by position named (conv2d's stride, padding)
    "s = x.sum(dim=1, dtype=torch.float64, keepdim=True)\n"
    "k = F.conv2d(x.view(1, 1, 2, 4), x.view(1, 1, 2, 4)[:, :, :, :1], None, (2, 1), 1, 1, 1)\n"
    # a number before a tensor, a tensor by keyword: the row keeps the call's order and names
    "idx = torch.tensor([[0], [3]])\ngt = x.gather(1, idx)\nw4 = torch.ones(4)\n"
    "ln = F.layer_norm(x, (4,), weight=w4)\n",
    "dtypes": "import torch\nx = torch.arange(4.0, requires_grad=True)\ny = x.to(torch.float64)\n"
    "z = torch.zeros(3, dtype=torch.float64)\nw = y.double() * 2\ns = y.sum(dtype=torch.float32)\n"
    "i = x.long()\nk = torch.randint(0, 3, (2,))\nm = x > 1\nf = torch.ones(2) + 1\n",
    # a loop by hand (calls 11-14 counted), then one with an optimizer (steps 4-8
    # metrics-only), each followed by code recorded in full again (NOTE [Code after the loop])
    "metrics_only_gaps": "import torch\nw = torch.zeros(1, requires_grad=True)\nfor i in range(14):\n"
    "    (w - 1).pow(2).sum().backward()\n    with torch.no_grad():\n        w -= 0.1 * w.grad\n"
    "        w.grad = None\nmid = w * 1\nopt = torch.optim.SGD([w], lr=0.1)\nfor i in range(8):\n"
    "    opt.zero_grad()\n    (w - 2).pow(2).sum().backward()\n    opt.step()\nend = w * 1\n"
    "for i in range(5):\n    opt.zero_grad()\n    (w - 3).pow(2).sum().backward()\n    opt.step()\n",
    "stepped": "import torch\nw = torch.tensor([1.0, 2.0], requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
    "for _ in range(2):\n    opt.zero_grad()\n    (w * w).sum().backward()\n    opt.step()\n",
    # one number through each elementwise function of rules-math.ts: their slopes, written out
    "scalar_math": "import torch\nx = torch.tensor(0.5, requires_grad=True)\nw = torch.tensor(1.5, requires_grad=True)\n"
    "y = (torch.asin(x) + torch.acos(x) + torch.atan(x) + torch.sinh(x) + torch.cosh(x) + torch.asinh(x)\n"
    "     + torch.acosh(w) + torch.atanh(x) + torch.tan(x) + torch.expm1(x) + torch.exp2(x) + torch.log2(x)\n"
    "     + torch.log10(x) + torch.erf(x) + torch.erfc(x) + torch.logit(x) + torch.sinc(x) + torch.atan2(x, w)\n"
    "     + torch.hypot(x, w) + torch.logaddexp(x, w) + torch.logaddexp2(x, w) + torch.xlogy(x, w)\n"
    "     + torch.lerp(x, w, 0.25))\ny.backward()\n",
    # the ops of rules-math.ts, rules-shape.ts and rules-layers.ts on tensors: each has its rule
    "more_ops": "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\n"
    "v = torch.tensor([0.3, -0.2, 0.5, 0.3], requires_grad=True)\nm = torch.randn(3, 3, requires_grad=True)\n"
    "img = torch.randn(1, 2, 4, 4, requires_grad=True)\nt = torch.tensor([0, 2, 1])\n"
    "parts = [torch.fmod(v, 0.2), torch.remainder(v, 0.2), torch.frac(v), torch.addcmul(v, v, v, value=0.5),\n"
    "    torch.addcdiv(v, v, v + 2), torch.erfinv(v), torch.lgamma(v + 1), torch.digamma(v + 1), v.median(),\n"
    "    v.sort().values, v.topk(2).values, v.kthvalue(2).values, v.cumprod(0), v.cummax(0).values,\n"
    "    v.logcumsumexp(0), torch.trace(m), torch.diagonal(m), torch.diag(v), torch.tril(m), torch.triu(m, 1),\n"
    "    v.roll(1), v.unfold(0, 2, 1), v.masked_select(v > 0), v.index_select(0, torch.tensor([0, 0, 2])),\n"
    "    v.take(torch.tensor([1, 3])), F.pad(v, (1, 2)), F.pad(img, (1, 1, 1, 1), mode='reflect'),\n"
    "    F.pixel_shuffle(img.repeat(1, 2, 1, 1), 2), F.unfold(img, 2), F.interpolate(img, scale_factor=2),\n"
    "    F.interpolate(img, scale_factor=2, mode='bilinear'), F.adaptive_avg_pool2d(img, 3), F.adaptive_max_pool2d(img, 3),\n"
    "    F.mish(m), F.hardswish(m), F.hardsigmoid(m), F.celu(m), F.glu(m.repeat(1, 2)), F.logsigmoid(m),\n"
    "    F.prelu(m, torch.tensor([0.25], requires_grad=True)), F.threshold(m, 0.1, 0.0), F.huber_loss(m, m.detach() * 0),\n"
    "    F.soft_margin_loss(m, torch.ones(3, 3)), F.multi_margin_loss(m, t), F.group_norm(img, 1),\n"
    "    torch.dist(v, v * 2), torch.cdist(m, m * 2), F.pdist(m), m.norm(dim=1), torch.linalg.inv(m + 3 * torch.eye(3)),\n"
    "    torch.det(m), torch.linalg.solve(m + 3 * torch.eye(3), m[0]), torch.linalg.cross(m[0], m[1]),\n"
    "    F.embedding_bag(torch.tensor([[0, 2]]), m), torch.complex(v, v).abs()]\n"
    "sum(p.sum() for p in parts).backward()\n",
    # the tutorial's nn.Sequential fit (fewer steps), then weight[:, 0] in its last print:
    # ops on a leaf after the loop are no call's graph (graph-calls.test.ts, hunt 65)
    "sequential_fit": "import torch, math\nx = torch.linspace(-math.pi, math.pi, 2000)\ny = torch.sin(x)\n"
    "p = torch.tensor([1, 2, 3])\nxx = x.unsqueeze(-1).pow(p)\n"
    "model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))\n"
    "loss_fn = torch.nn.MSELoss(reduction='sum')\nlearning_rate = 1e-6\nfor t in range(20):\n"
    "    y_pred = model(xx)\n    loss = loss_fn(y_pred, y)\n    model.zero_grad()\n    loss.backward()\n"
    "    with torch.no_grad():\n        for param in model.parameters():\n"
    "            param -= learning_rate * param.grad\nlinear_layer = model[0]\n"
    "print(f'Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + "
    "{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3')\n",
    # torch.func tutorial's jacobian by rows: autograd.grad per row, a new AccumulateGrad of xp each
    "jacobian_rows": "import torch\nimport torch.nn.functional as F\nD = 16\nweight = torch.randn(D, D)\n"
    "bias = torch.randn(D)\nx = torch.randn(D)\ndef predict(weight, bias, x):\n"
    "    return F.linear(x, weight, bias).tanh()\nxp = x.clone().requires_grad_()\nunit_vectors = torch.eye(D)\n"
    "def compute_jac(xp):\n    jacobian_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0] for vec in unit_vectors]\n"
    "    return torch.stack(jacobian_rows)\njacobian = compute_jac(xp)\nprint(jacobian.shape)\n",
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine.run import record

    out = tmp_path_factory.mktemp("traces")
    sources = {name: (ROOT / "server" / "examples" / f"{name}.py").read_text() for name in EXAMPLES}
    for name, source in {**sources, **SNIPPETS}.items():
        (out / f"{name}.json").write_text(record(source, filename=f"{name}.py").model_dump_json())
    return out


def test_frontend_unit_tests(traces: Path) -> None:
    need(shutil.which("node") is not None, "node is not installed")
    need((WEB / "node_modules" / "esbuild").is_dir(), "web/node_modules is missing: run `make web`")
    result = subprocess.run(
        ["node", "scripts/unit.mjs"],
        cwd=WEB,
        capture_output=True,
        text=True,
        env={**os.environ, "GRADWALK_TRACES": str(traces)},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_the_unit_tests_without_traces_say_how_to_record_them() -> None:
    need(shutil.which("node") is not None, "node is not installed")
    env = {k: v for k, v in os.environ.items() if k != "GRADWALK_TRACES"}
    result = subprocess.run(["node", "scripts/unit.mjs"], cwd=WEB, capture_output=True, text=True, env=env)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "GRADWALK_TRACES" in result.stderr and "pytest tests/web/test_unit.py" in result.stderr
    assert "ENOENT" not in result.stdout + result.stderr  # stopped before any test ran
