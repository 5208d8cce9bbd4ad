"""Hints for library calls given the wrong thing (engine/explain_calls.py): Adam given
momentum (SGD given betas), a scheduler given the model, LBFGS stepped without a closure,
opt.step(loss), clip_grad_norm_ given the model, nn.init.xavier_* on a bias, a tensor assigned
where a layer keeps a Parameter. Each snippet raises as it does without gradwalk, and each fix
the hint gives runs, printing what plain Python prints."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

MODEL = "import torch\nimport torch.nn as nn\nmodel = nn.Linear(3, 1)\n"
TRAINED = (
    MODEL
    + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nloss = model(torch.ones(4, 3)).pow(2).mean()\n"
)

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, fixes: each a list of (wrong, right))
    "Adam given momentum": (
        MODEL
        + "opt = torch.optim.Adam(model.parameters(), lr=0.01, momentum=0.8)\nprint(opt.defaults.get('betas'), opt.defaults.get('momentum'))\n",
        4,
        [
            "Adam has no momentum setting",
            "betas=(0.8, 0.999) in place of momentum=0.8",
            "torch.optim.SGD(…, momentum=0.8)",
        ],
        [[("momentum=0.8", "betas=(0.8, 0.999)")], [("optim.Adam(", "optim.SGD(")]],
    ),
    "SGD given betas": (
        MODEL + "opt = torch.optim.SGD(model.parameters(), lr=0.01, betas=(0.9, 0.99))\n",
        4,
        ["SGD has no betas", "momentum=0.9 in place of betas=…"],
        [[("betas=(0.9, 0.99)", "momentum=0.9")]],
    ),
    "a scheduler given the model": (
        TRAINED.split("loss =")[0] + "sched = torch.optim.lr_scheduler.StepLR(model, step_size=10)\n"
        "print(sched.get_last_lr())\n",
        5,
        [
            "StepLR changes the learning rate of an optimizer",
            "was given model (a Linear)",
            "torch.optim.lr_scheduler.StepLR(opt, step_size=10)",
        ],
        [[("StepLR(model,", "StepLR(opt,")]],
    ),
    "a scheduler given the parameters, with two optimizers in sight": (
        "import torch\nimport torch.nn as nn\ng, d = nn.Linear(2, 2), nn.Linear(2, 1)\n"
        "optG = torch.optim.Adam(g.parameters())\noptD = torch.optim.SGD(d.parameters(), lr=0.1)\n"
        "sched = torch.optim.lr_scheduler.ExponentialLR(g.parameters(), gamma=0.9)\n",
        6,
        [
            "was given g.parameters()",
            "(the one whose rate it sets: optG or optD)",
            "ExponentialLR(optG, gamma=0.9)",
        ],
        [[("ExponentialLR(g.parameters(),", "ExponentialLR(optG,")]],
    ),
    "LBFGS stepped without a closure": (
        MODEL + "opt = torch.optim.LBFGS(model.parameters())\nloss = model(torch.ones(4, 3)).pow(2).mean()\n"
        "loss.backward()\nopt.step()\n",
        7,
        [
            "LBFGS evaluates the loss several times within one step",
            "opt.step(closure), with def closure(): opt.zero_grad(); loss = model(torch.ones(4, 3)).pow(2).mean(); "
            "loss.backward(); return loss.",
        ],
        [
            [
                (
                    "opt.step()",
                    "def closure(): opt.zero_grad(); loss = model(torch.ones(4, 3)).pow(2).mean(); loss.backward(); "
                    "return loss\nprint(round(opt.step(closure).item(), 4))",
                )
            ]
        ],
    ),
    "step given the loss": (
        TRAINED + "loss.backward()\nopt.step(loss)\nprint(model.weight.grad is not None)\n",
        7,
        [
            "opt.step() takes no loss",
            "it called loss, a tensor",
            "loss.backward() (line 6) has computed them, so call opt.step()",
        ],
        [[("opt.step(loss)", "opt.step()")]],
    ),
    "step given the loss before backward": (
        TRAINED + "opt.step(loss)\n",
        6,
        ["opt.step() takes no loss", "call loss.backward() first, then opt.step()"],
        [[("opt.step(loss)", "loss.backward()\nopt.step()")]],
    ),
    "clip_grad_norm_ given the model": (
        MODEL
        + "model(torch.ones(4, 3)).pow(2).mean().backward()\nnn.utils.clip_grad_norm_(model, max_norm=1.0)\n",
        5,
        ["clip_grad_norm_ clips tensors' gradients", "given model itself (an nn.Linear)"],
        [[("clip_grad_norm_(model,", "clip_grad_norm_(model.parameters(),")]],
    ),
    "clip_grad_value_ given a Sequential": (
        "import torch\nimport torch.nn as nn\nnet = nn.Sequential(nn.Linear(3, 1))\n"
        "net(torch.ones(4, 3)).sum().backward()\ntorch.nn.utils.clip_grad_value_(net, 0.5)\nprint(net[0].bias.grad)\n",
        5,
        ["given net itself (an nn.Sequential)", "torch.nn.utils.clip_grad_value_(net.parameters(), 0.5)"],
        [[("clip_grad_value_(net,", "clip_grad_value_(net.parameters(),")]],
    ),
    "xavier_uniform_ on a bias": (
        "import torch.nn as nn\nlayer = nn.Linear(4, 3)\nnn.init.xavier_uniform_(layer.weight)\n"
        "nn.init.xavier_uniform_(layer.bias)\nprint(layer.bias.tolist())\n",
        4,
        ["fan in and fan out", "layer.bias is 1-D (3 values)", "nn.init.zeros_(layer.bias)"],
        [[("nn.init.xavier_uniform_(layer.bias)", "nn.init.zeros_(layer.bias)")]],
    ),
    "kaiming_normal_ on every parameter": (
        "import torch.nn as nn\nfrom torch.nn import init\nnet = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))\n"
        "for p in net.parameters():\n    init.kaiming_normal_(p)\n",
        5,
        ["p is 1-D (3 values)", "if p.dim() > 1: init.kaiming_normal_(p), else init.zeros_(p)"],
        [
            [
                (
                    "    init.kaiming_normal_(p)\n",
                    "    if p.dim() > 1:\n        init.kaiming_normal_(p)\n    else:\n        init.zeros_(p)\n",
                )
            ]
        ],
    ),
    "a tensor assigned as a weight": (
        "import torch\nimport torch.nn as nn\nlayer = nn.Linear(3, 2)\nlayer.weight = torch.ones(2, 3)\n"
        "print(layer(torch.ones(1, 3)).shape)\n",
        4,
        [
            "layer.weight is one of the module's parameters, and torch.ones(2, 3) is a plain tensor",
            "layer.weight = nn.Parameter(torch.ones(2, 3))",
            "with torch.no_grad(): layer.weight.copy_(torch.ones(2, 3))",
        ],
        [
            [("layer.weight = torch.ones(2, 3)", "layer.weight = nn.Parameter(torch.ones(2, 3))")],
            [
                (
                    "layer.weight = torch.ones(2, 3)",
                    "with torch.no_grad(): layer.weight.copy_(torch.ones(2, 3))",
                )
            ],
        ],
    ),
    "an integer tensor assigned as a bias": (
        "import torch\nfrom torch import nn\nlayer = nn.Linear(3, 2)\nb = torch.zeros(2, dtype=torch.long)\n"
        "layer.bias = b\n",
        5,
        ["(torch.LongTensor)", "layer.bias = nn.Parameter((b).float())", "layer.bias.copy_(b)"],
        [
            [("layer.bias = b", "layer.bias = nn.Parameter((b).float())")],
            [("layer.bias = b", "with torch.no_grad(): layer.bias.copy_(b)")],
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_call_given_the_wrong_thing_is_told_in_the_snippets_terms(name: str) -> None:
    source, line, phrases, fixes = CASES[name]
    hinted(source, line, phrases)
    for fix in fixes:  # each fix the hint gives runs, and prints what plain Python prints
        fixed_runs(source, fix)


NEAR_MISSES = {
    # a tensor called like a function: the names module's hint, not step()'s
    "a tensor called": (TRAINED + "y = loss(2)\n", 6, "loss is a tensor here"),
    # iterating a layer, with no clip_grad_* in sight
    "a layer iterated": (MODEL + "for layer in model:\n    print(layer)\n", 4, None),
    # an int assigned as a parameter: not a tensor to wrap
    "an int assigned as a weight": (MODEL + "model.weight = 3\n", 4, None),
    # an optimizer's own unexpected setting that neither Adam nor SGD has
    "Adam given nesterov": (MODEL + "opt = torch.optim.Adam(model.parameters(), nesterov=True)\n", 4, None),
}

CALL_PHRASES = (
    "takes no loss",
    "has no momentum",
    "clips tensors' gradients",
    "fan in and fan out",
    "nn.Parameter(",
)


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_a_similar_error_of_another_cause_gets_no_call_hint(name: str) -> None:
    source, line, theirs = NEAR_MISSES[name]
    hint = raised_as_plain(source, line).hint or ""
    assert not any(phrase in hint for phrase in CALL_PHRASES), hint
    if theirs:
        assert theirs in hint, hint
