"""Correct code a false-positive hunt over 100 idiomatic snippets found flagged, and the
mistakes beside each that are still said: a model frozen whole and in eval mode (a linear
probe's backbone, a distillation teacher) is not training in eval mode; a column that is a view
of the vector it meets, made on the line above, pairs its values on purpose; gradients the loop
reads after backward() (per-sample gradients summed: DP-SGD, EWC's Fisher) are used before the
clear; a loss meant to climb (maximize=True) is not diverging; a penalty on several parameters'
gradients (gradient-norm regularisation) is meant to add into the first derivative; a GAN's
generator run on fixed noise under no_grad draws samples, it is not evaluated."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import recorded_silently

SILENT = {
    "the DCGAN tutorial's progress images: the generator run on fixed noise under no_grad": "import torch\nfrom torch import nn\ntorch.manual_seed(0)\nnz = 4\nG = nn.Sequential(nn.Linear(nz, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))\nD = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))\noptG = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))\noptD = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))\nbce = nn.BCEWithLogitsLoss()\nfixed_noise = torch.randn(8, nz)\nsamples = []\nfor it in range(6):\n    real = torch.randn(16, 2) + 3\n    fake = G(torch.randn(16, nz))\n    optD.zero_grad()\n    lossD = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))\n    lossD.backward()\n    optD.step()\n    optG.zero_grad()\n    lossG = bce(D(fake), torch.ones(16, 1))\n    lossG.backward()\n    optG.step()\n    if it % 2 == 0:\n        with torch.no_grad():\n            shown = G(fixed_noise).detach()\n        samples.append(shown)\nprint(len(samples))\n",
    "gradient-norm regularisation: a penalty on every parameter's gradient, backpropagated": "import torch, torch.nn as nn\ntorch.manual_seed(0)\n# gradient-norm regularisation: minimise L + lam * ||dL/dw||^2, so .grad should hold the sum of both gradients\nmodel = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\nlam = 0.01\nfor step in range(6):\n    x, y = torch.randn(16, 4), torch.randn(16, 1)\n    loss = nn.functional.mse_loss(model(x), y)\n    opt.zero_grad()\n    loss.backward(create_graph=True)\n    penalty = lam * sum(p.grad.pow(2).sum() for p in model.parameters())\n    penalty.backward()\n    opt.step()\n    for p in model.parameters():\n        p.grad = None    # break the graph held by .grad\nprint(loss.item())\n",
    "a linear probe: the backbone frozen whole in eval mode": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nbackbone = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2))\nproj = nn.Linear(32, 10)\n# self-supervised-ish pretraining of the backbone\npre_opt = torch.optim.Adam(list(backbone.parameters()) + list(proj.parameters()), lr=1e-3)\nfor _ in range(5):\n    x = torch.randn(32, 10)\n    l = nn.functional.mse_loss(proj(backbone(x)), x)\n    pre_opt.zero_grad(); l.backward(); pre_opt.step()\n# linear probe: backbone frozen in eval mode, only the classifier trains\nbackbone.eval()\nbackbone.requires_grad_(False)\nclf = nn.Linear(32, 3)\nopt = torch.optim.SGD(clf.parameters(), lr=0.1)\nfor step in range(8):\n    x = torch.randn(32, 10); y = torch.randint(0, 3, (32,))\n    loss = nn.functional.cross_entropy(clf(backbone(x)), y)\n    opt.zero_grad(); loss.backward(); opt.step()\nprint(loss.item())\n",
    "a teacher trained, then frozen in eval mode for distillation": "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\nteacher = nn.Sequential(nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 4))\nt_opt = torch.optim.Adam(teacher.parameters(), lr=1e-3)\nfor step in range(5):\n    x, y = torch.randn(32, 10), torch.randint(0, 4, (32,))\n    l = F.cross_entropy(teacher(x), y); t_opt.zero_grad(); l.backward(); t_opt.step()\nteacher.eval()\nteacher.requires_grad_(False)\nstudent = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))\ns_opt = torch.optim.Adam(student.parameters(), lr=1e-3)\nfor step in range(6):\n    x = torch.randn(32, 10)\n    loss = F.mse_loss(student(x), teacher(x))\n    s_opt.zero_grad(); loss.backward(); s_opt.step()\nprint(loss.item())\n",
    "a same-class mask from a column made on the line above": "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\nenc = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))\nopt = torch.optim.Adam(enc.parameters(), lr=1e-3)\nfor step in range(10):\n    x = torch.randn(20, 8); y = torch.randint(0, 4, (20,))\n    z = F.normalize(enc(x), dim=1)\n    logits = z @ z.T / 0.2\n    eye = torch.eye(20, dtype=torch.bool)\n    y_col = y.view(-1, 1)\n    pos = (y_col == y).float().masked_fill(eye, 0)     # same-class pairs, (20, 20) on purpose\n    logits = logits.masked_fill(eye, -1e9)\n    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)\n    loss = -((pos * log_prob).sum(1) / pos.sum(1).clamp_min(1)).mean()\n    opt.zero_grad(); loss.backward(); opt.step()\nprint(loss.item())\n",
    "a ranking loss over all pairs, its column made on the line above": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nscorer = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))\nopt = torch.optim.Adam(scorer.parameters(), lr=1e-3)\nfor step in range(10):\n    x = torch.randn(16, 8); rel = torch.randn(16)\n    s = scorer(x).squeeze(1)                     # (16,)\n    s_col = s.unsqueeze(1)                       # (16, 1)\n    r_col = rel.unsqueeze(1)\n    # RankNet over all pairs of the list: (16, 16) on purpose\n    s_diff = s_col - s\n    target = (r_col > rel).float()\n    loss = nn.functional.binary_cross_entropy_with_logits(s_diff, target)\n    opt.zero_grad(); loss.backward(); opt.step()\nprint(loss.item())\n",
    "EWC's Fisher: per-sample gradients squared and summed, then cleared": "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\nXA, yA = torch.randn(20, 6), torch.randint(0, 2, (20,))\nfor step in range(5):   # task A\n    l = F.cross_entropy(model(XA), yA); opt.zero_grad(); l.backward(); opt.step()\n# diagonal Fisher on task A, one sample at a time\nfisher = [torch.zeros_like(p) for p in model.parameters()]\nfor i in range(8):\n    model.zero_grad()\n    F.cross_entropy(model(XA[i:i+1]), yA[i:i+1]).backward()\n    for f, p in zip(fisher, model.parameters()):\n        f += p.grad.detach() ** 2 / 8\nanchor = [p.detach().clone() for p in model.parameters()]\nXB, yB = torch.randn(20, 6), torch.randint(0, 2, (20,))\nfor step in range(6):   # task B with the EWC penalty\n    ewc = sum((f * (p - a) ** 2).sum() for f, p, a in zip(fisher, model.parameters(), anchor))\n    loss = F.cross_entropy(model(XB), yB) + 100 * ewc\n    opt.zero_grad(); loss.backward(); opt.step()\nprint(loss.item())\n",
    "DP-SGD: per-sample gradients clipped and summed, then cleared": "import torch, torch.nn as nn\ntorch.manual_seed(0)\n# DP-SGD by microbatches: clip each example's gradient, sum, add noise, then step\nmodel = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nC, sigma = 1.0, 0.5\nfor step in range(4):\n    X, Y = torch.randn(6, 6), torch.randint(0, 2, (6,))\n    summed = [torch.zeros_like(p) for p in model.parameters()]\n    for i in range(X.size(0)):\n        opt.zero_grad()\n        nn.functional.cross_entropy(model(X[i:i+1]), Y[i:i+1]).backward()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), C)\n        for s, p in zip(summed, model.parameters()):\n            s += p.grad\n    for s, p in zip(summed, model.parameters()):\n        p.grad = (s + sigma * C * torch.randn_like(s)) / X.size(0)\n    opt.step()\nprint(step)\n",
    "an adversarial perturbation with maximize=True, its loss climbing on purpose": "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\nclf = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))\ncopt = torch.optim.Adam(clf.parameters(), lr=3e-2)\nX = torch.randn(64, 4); y = (X[:, 0] > 0).long()\nfor _ in range(40):\n    l = F.cross_entropy(clf(X), y); copt.zero_grad(); l.backward(); copt.step()\nclf.eval(); clf.requires_grad_(False)\ndelta = torch.zeros_like(X, requires_grad=True)\nattack = torch.optim.Adam([delta], lr=0.3, maximize=True)\nfor step in range(12):\n    loss = F.cross_entropy(clf(X + delta), y)\n    attack.zero_grad(); loss.backward(); attack.step()\n    print(step, loss.item())\n",
}

SAID = {
    # name: (snippet, the kind, its line)
    "a validation on random data under no_grad, dropout on: a classifier, not a generator": (
        "import torch\nfrom torch import nn\ntorch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 1))\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nX, y = torch.randn(64, 4), torch.randn(64, 1)\nXv = torch.randn(16, 4)\nfor epoch in range(3):\n    loss = nn.functional.mse_loss(model(X), y)\n    opt.zero_grad(); loss.backward(); opt.step()\n    with torch.no_grad():\n        pred = model(Xv)\n    print(pred.mean().item())\n",
        "train-mode-in-evaluation",
        12,
    ),
    "model.eval() never undone, the model it holds trained on": (
        "import torch, torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2))\nopt = torch.optim.Adam(model.parameters(), lr=1e-3)\nXv, yv = torch.randn(20, 10), torch.randint(0, 2, (20,))\nmodel.train()\nfor epoch in range(3):\n    for _ in range(3):\n        x, y = torch.randn(16, 10), torch.randint(0, 2, (16,))\n        loss = nn.functional.cross_entropy(model(x), y)\n        opt.zero_grad(); loss.backward(); opt.step()\n    model.eval()\n    with torch.no_grad():\n        print(epoch, nn.functional.cross_entropy(model(Xv), yv).item())\n",
        "eval-mode-in-training",
        12,
    ),
    "argmax(keepdim=True) compared with the labels": (
        "import torch, torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Linear(6, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor step in range(10):\n    x, y = torch.randn(16, 6), torch.randint(0, 4, (16,))\n    out = model(x)\n    loss = nn.functional.cross_entropy(out, y)\n    opt.zero_grad(); loss.backward(); opt.step()\n    pred = out.argmax(dim=1, keepdim=True)\n    acc = (pred == y).float().mean()\nprint(acc.item())\n",
        "broadcast-in-comparison",
        11,
    ),
    "zero_grad() inside the accumulation loop": (
        "import torch, torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Linear(6, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\naccum = 4\nfor i in range(16):\n    x, y = torch.randn(4, 6), torch.randn(4, 1)\n    opt.zero_grad()\n    loss = nn.functional.mse_loss(model(x), y) / accum\n    loss.backward()\n    if (i + 1) % accum == 0:\n        opt.step()\nprint(loss.item())\n",
        "gradients-cleared-unused",
        10,
    ),
    "a learning rate too high": (
        "import torch, torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Linear(10, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.9)\nX = torch.randn(64, 10) * 3; Y = X.sum(1, keepdim=True)\nfor step in range(12):\n    loss = nn.functional.mse_loss(model(X), Y)\n    opt.zero_grad(); loss.backward(); opt.step()\n    print(step, loss.item())\n",
        "loss-diverging",
        4,
    ),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_idiomatic_code_the_detectors_took_for_a_mistake_stays_silent(name: str) -> None:
    recorded_silently(SILENT[name])


@pytest.mark.parametrize("name", sorted(SAID))
def test_the_mistake_beside_it_is_still_said(name: str) -> None:
    source, kind, line = SAID[name]
    found = [(p.kind, p.line) for p in q.pitfalls(record(source))]
    assert (kind, line) in found, found
