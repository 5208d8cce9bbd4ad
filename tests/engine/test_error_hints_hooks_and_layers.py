"""Hints for errors of hooks (engine/explain_hooks.py), of layers given the wrong layout
(batch norm over (batch, time, features), a kernel bigger than what is left of the image), and
of training-loop code (param_groups indexed with 'lr', torch.stack of .item() values): each
snippet raises as it does without gradwalk, and the hint names the cause and the fix."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import raised_as_plain

CLIP_ABOVE_BACKWARD = "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.01)\nX = torch.randn(32, 4) * 10; y = torch.randn(32, 1)\nfor i in range(6):\n    opt.zero_grad()\n    loss = nn.functional.mse_loss(model(X), y)\n    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    loss.backward()\n    opt.step()\n"


CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold)
    "a hook on a tensor that gets no gradient": (
        'import torch\nx = torch.randn(3)\nw = torch.randn(3, requires_grad=True)\nx.register_hook(lambda g: print("grad of x", g))\nloss = (w * x).sum()\nloss.backward()\n',
        4,
        ["x does not require grad", "x.requires_grad_()"],
    ),
    "a forward hook with two arguments": (
        'import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\nacts = {}\ndef save_act(module, output):\n    acts["relu"] = output.detach()\nmodel[1].register_forward_hook(save_act)\nout = model(torch.randn(5, 4))\nout.sum().backward()\n',
        8,
        [
            "save_act is registered with register_forward_hook at line 7",
            "hook(module, input, output): 3 arguments",
        ],
    ),
    "a tensor hook that returns a norm": (
        "import torch\nx = torch.randn(4, requires_grad=True)\nh = x * 3\nh.register_hook(lambda g: g.norm())\nloss = (h ** 2).sum()\nloss.backward()\n",
        6,
        [
            "must have the gradient's shape, or be None",
            "line 4: h.register_hook(lambda g: g.norm())",
            "lambda g: print(g.norm())",
        ],
    ),
    "a full backward hook before an in-place ReLU": (
        'import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 2))\ngrads = {}\ndef save_grad(module, grad_in, grad_out):\n    grads["lin0"] = grad_out[0]\nmodel[0].register_full_backward_hook(save_grad)\nout = model(torch.randn(3, 4))\nout.sum().backward()\n',
        8,
        ["A full backward hook (line 7) wraps the outputs of its module", "nn.ReLU()"],
    ),
    "batch norm given (batch, time, features)": (
        "import torch\nimport torch.nn as nn\nN, T, C = 4, 10, 16\nx = torch.randn(N, T, C)\nbn = nn.BatchNorm1d(C)\nout = bn(x)\n",
        6,
        [
            "built for 16 features, and dim 1 of this input holds 10",
            "bn(x.transpose(1, 2)).transpose(1, 2)",
            "nn.LayerNorm(16)",
        ],
    ),
    "a kernel bigger than what is left of the image": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Sequential(\n    nn.Conv2d(1, 8, 5), nn.MaxPool2d(2),\n    nn.Conv2d(8, 16, 5), nn.MaxPool2d(2),\n    nn.Conv2d(16, 32, 5),\n)\nx = torch.randn(4, 1, 28, 28)\nout = model(x)\n",
        9,
        ["it is 4×4 per channel, smaller than the 5×5 kernel", "padding=2"],
    ),
    "param_groups indexed with 'lr'": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(3):\n    opt.param_groups['lr'] *= 0.5\n",
        6,
        ["param_groups is a list", "for g in opt.param_groups: g['lr'] *= 0.5"],
    ),
    "torch.stack of .item() values": (
        "import torch\nw = torch.randn(3, requires_grad=True)\nlosses = []\nfor i in range(4):\n    x = torch.randn(3)\n    losses.append(((w * x).sum() - 1.0).pow(2).item())\nloss = torch.stack(losses).mean()\nloss.backward()\n",
        7,
        ["element 0 of this list is a Python float", "losses.append(loss)"],
    ),
    "data made under inference_mode into a model": (
        "import torch\nimport torch.nn as nn\nwith torch.inference_mode():\n    X = torch.randn(16, 4) * 2 + 1\n"
        "model = nn.Linear(4, 1)\nloss = nn.functional.mse_loss(model(X), X.sum(1, keepdim=True))\n",
        6,
        [
            "X was made under torch.inference_mode() (line 4), so it is an inference tensor",
            "Make X under torch.no_grad() instead",
            "X = X.clone()",
        ],
    ),
    "an inference tensor the failing line does not name": (
        "import torch\nimport torch.nn as nn\ndef batch():\n    with torch.inference_mode():\n"
        "        return torch.randn(16, 4)\nmodel = nn.Linear(4, 1)\nloss = model(batch()).sum()\n",
        7,
        ["A tensor made under torch.inference_mode() reached", "torch.no_grad()", "X = X.clone()"],
    ),
    "gradcheck in float32": (
        "import torch\ndef f(x):\n    return (x.sin() * x).sum()\nx = torch.linspace(-2, 2, 5, requires_grad=True)\n"
        "print(torch.autograd.gradcheck(f, (x,)))\n",
        5,
        ["float32's 7 digits cannot resolve", "dtype=torch.float64"],
    ),
    "label smoothing passed in weight's place": (
        "import torch\nimport torch.nn.functional as F\nlogits = torch.randn(5, 3, requires_grad=True)\n"
        "y = torch.randint(0, 3, (5,))\nloss = F.cross_entropy(logits, y, 0.1)\n",
        5,
        ["one number per class", "label_smoothing=0.1"],
    ),
    ".double() of a leaf, then its .grad": (
        "import torch\nw = torch.randn(3, requires_grad=True).double()\nloss = (w ** 2).sum()\nloss.backward()\n"
        "with torch.no_grad():\n    w -= 0.1 * w.grad\n",
        6,
        [
            ".double() then made a converted copy of it",
            "torch.randn(3, dtype=torch.float64, requires_grad=True)",
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hint_names_the_cause(name: str) -> None:
    source, line, phrases = CASES[name]
    err = raised_as_plain(source, line)
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)


def test_clipping_written_above_backward_is_said_to_run_before_it() -> None:
    # it was said to run "after opt.step()": the last iteration's step, true but not where to look
    source = CLIP_ABOVE_BACKWARD
    (p,) = q.pitfalls(record(source))
    assert (p.kind, p.line) == ("clip-after-step", 10)
    assert p.title == "clip_grad_norm_ runs before backward(): it clips nothing the step uses"
    assert p.fix.startswith("Move it below loss.backward() (line 11), before opt.step() (line 12)"), p.fix


def test_a_gradcheck_mismatch_in_float64_is_not_blamed_on_precision() -> None:
    # a backward that is wrong: float64 does not save it, and the hint must not say it would
    source = (
        "import torch\nclass Sq(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n        return x ** 2\n    @staticmethod\n    def backward(ctx, g):\n"
        "        x, = ctx.saved_tensors\n        return 3 * x * g\n"
        "x = torch.randn(4, dtype=torch.float64, requires_grad=True)\ntorch.autograd.gradcheck(Sq.apply, (x,))\n"
    )
    err = q.errors(record(source))[0]
    assert err.exc_type == "GradcheckError" and "float32" not in (err.hint or ""), err.hint
