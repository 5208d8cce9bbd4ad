"""Hints a hunt over torch.func, forward-mode AD, checkpointing, custom Functions, module hooks,
einsum and linear algebra found wrong or missing. Wrong: .numpy() inside torch.func.grad was
told to take .detach().numpy(), which fails there too; argnums that picks an integer tensor was
told to make the indices floats; vmap's out_dims past what the function returns was read as a
batch of one that lost its batch dimension. Missing: vmap's arguments of different sample counts
(in_dims=(0, None) for one every sample shares), an in_dims of another length, a number mapped
like a tensor; a boolean mask under vmap (torch.where); backward() inside torch.func.grad; an
autograd.Function without setup_context under vmap; make_dual outside dual_level(); vjp's v
shaped like the input; a checkpoint with use_reentrant=True of inputs that do not require grad;
a second derivative through a @once_differentiable backward; backward() of a complex loss
(torch.linalg.eig's eigenvalues); mse_loss of complex tensors; linalg.solve given the right-hand
side as a row; cholesky of a matrix that is not positive-definite; a product of svd's full U;
an einsum letter of two sizes; a full backward hook that returns a tensor; index_add_ into a
leaf; an op a sparse tensor does not have; argnums of an argument passed by keyword (it was told
to pick an earlier argument); a parametrized weight assigned when its parametrization has no
right_inverse; a BatchNorm under vmap; argnums of a model's call for its parameters (it was
told to pick argument 0); model.parameters() given to torch.func.grad; hessian given its inputs
one by one (it was told of a tensor read as one boolean); jacobian of a function that returns a
list (the hint read "returned a list:."); backward() of a value of forward-mode duals; a reentrant
checkpoint given keyword arguments; linalg.solve of a singular matrix. Each snippet raises
as it does without gradwalk, at the line given, the hint names the snippet's own variables, and
the fix it gives runs."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import fixed_runs, hinted, plain_error

FUNC = "import torch\nfrom torch.func import grad, vmap\n"
DOT = FUNC + "def dot(a, b):\n    return (a * b).sum()\nxs = torch.randn(5, 3)\nw = torch.randn(3)\n"
FN = "import torch\nclass Double(torch.autograd.Function):\n    @staticmethod\n"

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    ".numpy() inside torch.func.grad": (
        FUNC
        + "import numpy as np\ndef loss(w):\n    return torch.tensor(np.sum(w.numpy() ** 2))\n"
        + "w = torch.randn(3)\ng = grad(loss)(w)\n",
        5,
        ["w is a tensor the transform follows", "w.detach().numpy() fails too", "torch.sum for np.sum"],
        [("torch.tensor(np.sum(w.numpy() ** 2))", "torch.sum(w ** 2)")],
    ),
    "argnums that picks the indices": (
        FUNC
        + "def f(x, idx):\n    return x[idx].sum()\nx = torch.randn(5)\ng = grad(f, argnums=1)(x, torch.tensor([0, 2]))\n",
        6,
        [
            "argnums=1 differentiates f by its argument 1, torch.tensor([0, 2]), which holds integers",
            "argnums=0 for x",
        ],
        [("argnums=1", "argnums=0")],
    ),
    "vmap's out_dims past what the function returns": (
        FUNC + "xs = torch.randn(4, 3)\nout = vmap(lambda x: x.sum(), out_dims=1)(xs)\n",
        4,
        [
            "out_dims=1 asks vmap to put the batch dimension",
            "returns 0 dimensions per sample, so it can go only at 0",
        ],
        [(", out_dims=1", "")],
    ),
    "vmap of a vector every sample shares": (
        DOT + "out = vmap(dot)(xs, w)\n",
        7,
        ["xs (5, 3) has 5 along dim 0, w (3,) has 3 along dim 0", "vmap(dot, in_dims=(0, None))(xs, w)"],
        [("vmap(dot)(xs, w)", "vmap(dot, in_dims=(0, None))(xs, w)")],
    ),
    "vmap's in_dims shorter than its arguments": (
        DOT + "out = vmap(dot, in_dims=(0,))(xs, w)\n",
        7,
        ["(0,) has 1 for 2 (xs, w)", "vmap(dot, in_dims=(0, None))(xs, w)"],
        [("in_dims=(0,)", "in_dims=(0, None)")],
    ),
    "vmap mapping a number": (
        FUNC + "def scale(x, k):\n    return x * k\nxs = torch.randn(4, 3)\nout = vmap(scale)(xs, 2.0)\n",
        6,
        ["2.0 is no tensor to split", "vmap(scale, in_dims=(0, None))(xs, 2.0)"],
        [("vmap(scale)", "vmap(scale, in_dims=(0, None))")],
    ),
    "a boolean mask under vmap": (
        FUNC + "xs = torch.randn(4, 5)\nout = vmap(lambda x: x[x > 0].sum())(xs)\n",
        4,
        ["x[x > 0] keeps as many elements as pass the mask", "torch.where(x > 0, x, 0)"],
        [("x[x > 0]", "torch.where(x > 0, x, 0)")],
    ),
    "backward() inside torch.func.grad": (
        FUNC
        + "def f(x):\n    y = (x ** 2).sum()\n    y.backward()\n    return y\ng = grad(f)(torch.randn(3))\n",
        5,
        ["y.backward() inside f", "Delete this line and return y"],
        [("    y.backward()\n", "")],
    ),
    "an autograd.Function without setup_context under vmap": (
        FN
        + "    def forward(ctx, x):\n        return x * 2\n    @staticmethod\n    def backward(ctx, g):\n"
        + "        return g * 2\nout = torch.func.vmap(Double.apply)(torch.randn(4, 3))\n",
        9,
        ["Double's forward takes ctx", "setup_context(ctx, inputs, output)", "generate_vmap_rule = True"],
        [
            ("(torch.autograd.Function):\n", "(torch.autograd.Function):\n    generate_vmap_rule = True\n"),
            (
                "    def forward(ctx, x):\n        return x * 2\n",
                "    def forward(x):\n        return x * 2\n    @staticmethod\n"
                "    def setup_context(ctx, inputs, output):\n        pass\n",
            ),
        ],
    ),
    "make_dual outside dual_level()": (
        "import torch\nimport torch.autograd.forward_ad as fwAD\nx = torch.randn(3)\n"
        + "dual = fwAD.make_dual(x, torch.ones(3))\nprint(fwAD.unpack_dual(dual.sin()).tangent)\n",
        4,
        ["fwAD.make_dual works only inside a with fwAD.dual_level(): block", "fwAD.unpack_dual included"],
        [
            (
                "dual = fwAD.make_dual(x, torch.ones(3))\nprint(",
                "with fwAD.dual_level():\n    dual = fwAD.make_dual(x, torch.ones(3))\n    print(",
            )
        ],
    ),
    "vjp's v shaped like the input": (
        "import torch\nfrom torch.autograd.functional import vjp\ndef f(x):\n    return x.reshape(2, 3).sum(0)\n"
        + "x = torch.randn(6)\nout, g = vjp(f, x, torch.ones(6))\n",
        6,
        ["v shaped like what the function returns", "here (3,), and this v is (6,)", "torch.ones(3)"],
        [("torch.ones(6)", "torch.ones(3)")],
    ),
    "a reentrant checkpoint of inputs that do not require grad": (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.checkpoint import checkpoint\n"
        + "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))\nx = torch.randn(3, 4)\n"
        + "out = checkpoint(model, x, use_reentrant=True)\nout.sum().backward()\n",
        7,
        [
            "out comes from checkpoint(model, x, use_reentrant=True) at line 6",
            "and x does not, so the parameters used inside get no gradient",
            "checkpoint(model, x, use_reentrant=False)",
        ],
        [("use_reentrant=True", "use_reentrant=False")],
    ),
    "a second derivative through a @once_differentiable backward": (
        "import torch\nfrom torch.autograd.function import once_differentiable\nclass Cube(torch.autograd.Function):\n"
        + "    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x ** 3\n"
        + "    @staticmethod\n    @once_differentiable\n    def backward(ctx, g):\n        x, = ctx.saved_tensors\n"
        + "        return 3 * x ** 2 * g\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = Cube.apply(x).sum()\n"
        + "g, = torch.autograd.grad(y, x, create_graph=True)\ng.sum().backward()\n",
        16,
        [
            "g comes from torch.autograd.grad(…, create_graph=True) at line 15",
            "marked @once_differentiable at line 9",
        ],
        [("    @once_differentiable\n", "")],
    ),
    "backward() of torch.linalg.eig's eigenvalues": (
        "import torch\nA = torch.randn(3, 3, requires_grad=True)\nw, V = torch.linalg.eig(A)\nloss = w.sum()\n"
        + "loss.backward()\n",
        5,
        ["loss is complex (complex64)", "torch.linalg.eig (line 3) gives complex eigenvalues", "loss.real"],
        [("loss.backward()", "loss.real.backward()")],
    ),
    "mse_loss of complex tensors": (
        "import torch\nimport torch.nn.functional as F\nz = torch.randn(4, dtype=torch.cfloat, requires_grad=True)\n"
        + "target = torch.randn(4)\nloss = F.mse_loss(z, target)\nloss.backward()\n",
        5,
        ["mse_loss compares real numbers", "(z - target).abs().pow(2).mean()"],
        [("F.mse_loss(z, target)", "(z - target).abs().pow(2).mean()")],
    ),
    "linalg.solve given the right-hand side as a row": (
        "import torch\nA = torch.randn(3, 3)\nb = torch.randn(1, 3)\nx = torch.linalg.solve(A, b)\n",
        4,
        ["b must have A's 3 rows first", "b is (1, 3)", "b.squeeze(0)"],
        [("solve(A, b)", "solve(A, b.squeeze(0))")],
    ),
    "cholesky of a random matrix": (
        "import torch\nA = torch.tensor([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [3.0, 0.0, 1.0]], requires_grad=True)\n"
        + "L = torch.linalg.cholesky(A)\n",
        3,
        ["A is not even symmetric", "A @ A.mT + 1e-3 * torch.eye(3)"],
        [("cholesky(A)", "cholesky(A @ A.mT + 1e-3 * torch.eye(3))")],
    ),
    "a product of svd's full U": (
        "import torch\nA = torch.randn(4, 3, requires_grad=True)\nU, S, Vh = torch.linalg.svd(A)\n"
        + "(U @ torch.diag(S) @ Vh).sum().backward()\n",
        4,
        ["U (4, 4), S (3,), Vh (3, 3)", "torch.linalg.svd(A, full_matrices=False)"],
        [("svd(A)", "svd(A, full_matrices=False)")],
    ),
    "an einsum letter of two sizes": (
        "import torch\nq = torch.randn(2, 4, 8)\nk = torch.randn(2, 5, 8)\n"
        + "scores = torch.einsum('bid,bjd->bij', q, k.transpose(1, 2))\n",
        4,
        ["'d' is 8 in q, (2, 4, 8) for 'bid' but 5 in k.transpose(1, 2)", "torch.einsum('bid,bdj->bij'"],
        [("'bid,bjd->bij'", "'bid,bdj->bij'")],
    ),
    "a full backward hook that returns a tensor": (
        "import torch\nimport torch.nn as nn\nlin = nn.Linear(3, 2)\ndef clip(module, grad_input, grad_output):\n"
        + "    return grad_input[0].clamp(-1, 1)\nlin.register_full_backward_hook(clip)\n"
        + "x = torch.randn(4, 3, requires_grad=True)\nlin(x).sum().backward()\n",
        8,
        [
            "clip (registered at line 6)",
            "1 here; what it returned reads as 4 entries",
            "return (grad_input[0].clamp(-1, 1),)",
        ],
        [("return grad_input[0].clamp(-1, 1)", "return (grad_input[0].clamp(-1, 1),)")],
    ),
    "index_add_ into a leaf": (
        "import torch\nnode_emb = torch.zeros(4, 3, requires_grad=True)\nmsg = torch.randn(2, 3)\n"
        + "node_emb.index_add_(0, torch.tensor([0, 2]), msg)\n",
        4,
        ["node_emb is a leaf that requires grad", "out = node_emb.index_add(0, torch.tensor([0, 2]), msg)"],
        [("node_emb.index_add_(", "out = node_emb.index_add(")],
    ),
    "an ensemble's vmap that splits the shared batch too": (
        "import copy\nimport torch\nimport torch.nn as nn\n"
        + "from torch.func import functional_call, stack_module_state, vmap\n"
        + "models = [nn.Linear(3, 2) for _ in range(4)]\nparams, buffers = stack_module_state(models)\n"
        + "base = copy.deepcopy(models[0]).to('meta')\ndef fmodel(p, b, x):\n"
        + "    return functional_call(base, (p, b), (x,))\nx = torch.randn(5, 3)\n"
        + "out = vmap(fmodel)(params, buffers, x)\n",
        11,
        [
            "params (a dict of 2 tensors) has 4 along dim 0, x (5, 3) has 5",
            "vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)",
        ],
        [("vmap(fmodel)", "vmap(fmodel, in_dims=(0, 0, None))")],
    ),
    "argnums of an argument passed by keyword": (
        FUNC
        + "def loss(w, x=None):\n    return (w * x).sum()\n"
        + "g = grad(loss, argnums=1)(torch.randn(3), x=torch.randn(3))\n",
        5,
        [
            "x goes by keyword, which argnums cannot pick",
            "grad(loss, argnums=1)(torch.randn(3), torch.randn(3))",
        ],
        [("x=torch.randn(3))", "torch.randn(3))")],
    ),
    "a parametrized weight assigned without right_inverse": (
        "import torch\nimport torch.nn as nn\nimport torch.nn.utils.parametrize as P\nclass Positive(nn.Module):\n"
        + "    def forward(self, X):\n        return X.exp()\nlayer = nn.Linear(2, 2)\n"
        + "P.register_parametrization(layer, 'weight', Positive())\nwith torch.no_grad():\n"
        + "    layer.weight = torch.ones(2, 2)\n",
        10,
        ["assigning to it asks Positive.right_inverse(value)", "def right_inverse(self, W): return W.log()"],
        [
            (
                "        return X.exp()\n",
                "        return X.exp()\n    def right_inverse(self, W):\n        return W.log()\n",
            )
        ],
    ),
    "a BatchNorm under vmap": (
        "import torch\nimport torch.nn as nn\nfrom torch.func import vmap\n"
        + "model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))\nxs = torch.randn(5, 2, 3)\nout = vmap(model)(xs)\n",
        6,
        [
            "A BatchNorm layer of model updates its running statistics",
            "replace_all_batch_norm_modules_(model)",
        ],
        [("out = vmap", "torch.func.replace_all_batch_norm_modules_(model)\nout = vmap")],
    ),
    "argnums of a model's call for its parameters": (
        "import torch\nimport torch.nn as nn\nfrom torch.func import jacrev\nmodel = nn.Linear(3, 2)\n"
        + "x = torch.randn(3)\nJw = jacrev(model, argnums=1)(x)\n",
        6,
        [
            "its parameters are none of them: model(x) takes only x",
            "jacrev(lambda p: torch.func.functional_call(model, p, (x,)))(dict(model.named_parameters()))",
        ],
        [
            (
                "jacrev(model, argnums=1)(x)",
                "jacrev(lambda p: torch.func.functional_call(model, p, (x,)))(dict(model.named_parameters()))",
            )
        ],
    ),
    "torch.func.grad of model.parameters()": (
        "import torch\nimport torch.nn as nn\nfrom torch.func import grad, functional_call\nmodel = nn.Linear(3, 1)\n"
        + "x, y = torch.randn(8, 3), torch.randn(8, 1)\ndef loss(params):\n"
        + "    return ((functional_call(model, params, (x,)) - y) ** 2).mean()\ng = grad(loss)(model.parameters())\n",
        8,
        ["model.parameters() is a generator", "Pass the parameters by name, dict(model.named_parameters())"],
        [("(model.parameters())", "(dict(model.named_parameters()))")],
    ),
    "hessian given the inputs one by one": (
        "import torch\nfrom torch.autograd.functional import hessian\ndef f(x, y):\n    return (x * y).sum()\n"
        + "a, b = torch.randn(2), torch.randn(2)\nH = hessian(f, a, b)\n",
        6,
        ["the next positional argument is create_graph", "b went there", "hessian(f, (a, b))"],
        [("hessian(f, a, b)", "hessian(f, (a, b))")],
    ),
    "jacobian of a function that returns a list": (
        "import torch\nfrom torch.autograd.functional import jacobian\ndef f(x):\n    return [x.sin(), x.cos()]\n"
        + "J = jacobian(f, torch.randn(3))\n",
        5,
        ["f returned a list. Return a tuple"],
        [("[x.sin(), x.cos()]", "(x.sin(), x.cos())")],
    ),
    "backward() of a value of forward-mode duals": (
        "import torch\nimport torch.autograd.forward_ad as fwAD\nx = torch.randn(3)\nwith fwAD.dual_level():\n"
        + "    d = fwAD.make_dual(x, torch.ones(3))\n    y = (d ** 2).sum()\n    y.backward()\n",
        7,
        ["y is computed from a dual tensor (fwAD.make_dual at line 5)", "fwAD.unpack_dual(y).tangent"],
        [("    y.backward()\n", "    print(fwAD.unpack_dual(y).tangent)\n")],
    ),
    "a reentrant checkpoint given keyword arguments": (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.checkpoint import checkpoint\n"
        + "attn = nn.MultiheadAttention(8, 2, batch_first=True)\nx = torch.randn(2, 5, 8, requires_grad=True)\n"
        + "out, w = checkpoint(attn, x, x, x, need_weights=False, use_reentrant=True)\n",
        6,
        ["passes no keyword arguments on to attn, and this call gives need_weights", "use_reentrant=False"],
        [("use_reentrant=True", "use_reentrant=False")],
    ),
    "linalg.solve of a singular matrix": (
        "import torch\nA = torch.tensor([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)\nb = torch.tensor([1.0, 2.0])\n"
        + "x = torch.linalg.solve(A, b)\n",
        4,
        ["A is singular", "torch.linalg.pinv(A) @ b"],
        [("torch.linalg.solve(A, b)", "torch.linalg.pinv(A) @ b")],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hint_names_the_cause_and_its_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)


def test_an_op_a_sparse_tensor_lacks_is_told_to_densify_it() -> None:
    # PyTorch's message lists every backend, past what a trace keeps of it: compared by its start
    source = "import torch\nA = torch.eye(4).to_sparse().requires_grad_()\nB = A.view(2, 8)\n"
    err = q.errors(record(source))[0]
    plain = plain_error(source)
    assert (err.exc_type, err.line) == (type(plain).__name__, 3)
    assert str(plain).startswith(err.message[:200])
    assert err.hint is not None
    assert "A is a sparse tensor, and view has no sparse version" in err.hint
    assert "A.to_dense().view(…)" in err.hint
    fixed_runs(source, [("A.view(2, 8)", "A.to_dense().view(2, 8)")])
