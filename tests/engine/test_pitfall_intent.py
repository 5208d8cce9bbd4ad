"""Code that does on purpose what a pitfall looks for stays silent, and a pitfall names the
cause the code shows: all pairs of a vector (a ranking loss), batch norm frozen inside a
model that trains, dropout kept on for Monte-Carlo sampling; an optimizer given part of a
model, or the model before it was rebuilt."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import recorded_silently, the_pitfall

PAIRWISE_RANKING = """
import torch, torch.nn as nn
torch.manual_seed(0)
scorer = nn.Linear(5, 1)
opt = torch.optim.SGD(scorer.parameters(), lr=0.05)
X, rel = torch.randn(16, 5), torch.randn(16)
for step in range(3):
    s = scorer(X).squeeze(1)
    diff = s[:, None] - s
    target = (rel[:, None] > rel).float()
    loss = nn.functional.binary_cross_entropy_with_logits(diff, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

FROZEN_BATCH_NORM = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(32, 4), torch.randn(32, 1)
for i in range(3):
    opt.zero_grad(); nn.functional.mse_loss(model(X), y).backward(); opt.step()
model.train()
for m in model.modules():
    if isinstance(m, nn.BatchNorm1d):
        m.eval()
for i in range(3):
    opt.zero_grad(); nn.functional.mse_loss(model(X), y).backward(); opt.step()
"""

MC_DROPOUT = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
X = torch.randn(64, 4); y = X.sum(1, keepdim=True)
for i in range(3):
    opt.zero_grad(); nn.functional.mse_loss(model(X), y).backward(); opt.step()
model.eval()
with torch.no_grad():
    mean = model(X[:4])
model.train()
with torch.no_grad():
    samples = torch.stack([model(X[:4]) for _ in range(20)])
print(samples.std(0).squeeze())
"""


@pytest.mark.parametrize(
    "source",
    [PAIRWISE_RANKING, FROZEN_BATCH_NORM, MC_DROPOUT],
    ids=["all pairs of a vector", "batch norm frozen in a training model", "Monte-Carlo dropout"],
)
def test_code_that_means_it_stays_silent(source: str) -> None:
    recorded_silently(source)


@pytest.mark.parametrize(
    ("source", "kind", "line"),
    [
        # a column of targets against a vector of predictions: the bug, made with [:, None]
        (
            PAIRWISE_RANKING.replace("diff = s[:, None] - s", "diff = (rel[:, None] - s) ** 2").replace(
                "binary_cross_entropy_with_logits(diff, target)", "mse_loss(diff, torch.zeros_like(diff))"
            ),
            "broadcast-in-loss",
            9,
        ),
        # the whole model put in eval mode for good, not one layer
        (
            FROZEN_BATCH_NORM.replace(
                "model.train()\nfor m in model.modules():\n    if isinstance(m, nn.BatchNorm1d):\n        m.eval()\n",
                "model.eval()\n",
            ),
            "eval-mode-in-training",
            9,
        ),
        # model.train() at the top of each epoch, the evaluation further down without eval()
        (
            MC_DROPOUT.replace(
                "model.train()\nwith torch.no_grad():",
                "model.train()\nprint('sampling')\nwith torch.no_grad():",
            ),
            "train-mode-in-evaluation",
            15,
        ),
        # model.train() just before the block, the model run twice in it: no sampling loop
        (
            MC_DROPOUT.replace(
                "samples = torch.stack([model(X[:4]) for _ in range(20)])",
                "a, b = model(X[:4]), model(X[:4])",
            ).replace("print(samples.std(0).squeeze())", "print(torch.equal(a, b))"),
            "train-mode-in-evaluation",
            14,
        ),
        # a teacher's outputs feed the student's loss, but nothing optimizes the teacher
        (
            'import torch\nfrom torch import nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\nteacher = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 3))\nstudent = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))\nopt = torch.optim.SGD(student.parameters(), lr=0.1)\nX = torch.randn(64, 4)\nfor step in range(5):\n    with torch.no_grad():\n        t = teacher(X)\n    loss = F.kl_div(F.log_softmax(student(X), 1), F.softmax(t, 1), reduction="batchmean")\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n',
            "train-mode-in-evaluation",
            11,
        ),
        # a validation before the training step: its loss is printed, not trained on
        (
            "import torch\nfrom torch import nn\ntorch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 1))\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nX, y, Xv, yv = torch.randn(64, 4), torch.randn(64, 1), torch.randn(16, 4), torch.randn(16, 1)\nfor epoch in range(5):\n    with torch.no_grad():\n        val_loss = nn.functional.mse_loss(model(Xv), yv)\n    print(val_loss.item())\n    loss = nn.functional.mse_loss(model(X), y)\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
            "train-mode-in-evaluation",
            9,
        ),
    ],
    ids=[
        "a column made of the targets",
        "the whole model in eval",
        "train() not just before the block",
        "train() before a block with no loop",
        "distillation from a teacher left in training mode",
        "a validation before the training step",
    ],
)
def test_the_mistakes_beside_them_are_still_said(source: str, kind: str, line: int) -> None:
    found = [(p.kind, p.line) for p in q.pitfalls(record(source))]
    assert (kind, line) in found, found


HEAD_ONLY = """
import torch, torch.nn as nn
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
        self.fc = nn.Linear(16, 2)
    def forward(self, x):
        return self.fc(self.backbone(x))
model = Net()
opt = torch.optim.SGD(model.fc.parameters(), lr=0.1)
X, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
for i in range(3):
    opt.zero_grad()
    nn.functional.cross_entropy(model(X), y).backward()
    opt.step()
"""


def test_an_optimizer_given_part_of_the_model_says_so_and_how_to_freeze_the_rest() -> None:
    # it said "Layers kept in a plain Python list are not registered", at the backbone's line
    (p,) = q.pitfalls(record(HEAD_ONLY))
    assert (p.kind, p.line) == ("parameter-not-optimized", 12)
    assert p.title == "The optimizer trains only model.fc"
    assert "zero_grad() never clears them" in p.message and "plain Python list" not in p.message
    assert "for p in model.backbone[0].parameters(): p.requires_grad_(False)" in p.fix
    frozen = HEAD_ONLY.replace("model = Net()\n", "model = Net()\nmodel.backbone.requires_grad_(False)\n")
    recorded_silently(frozen)


def test_a_model_rebuilt_after_its_optimizer_names_both_lines() -> None:
    source = """
import torch, torch.nn as nn
torch.manual_seed(0)
X = torch.randn(64, 3)
y = X @ torch.tensor([[1.0], [-2.0], [0.5]])
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model = nn.Linear(3, 1)          # re-initialise the model before training
for epoch in range(5):
    opt.zero_grad()
    nn.functional.mse_loss(model(X), y).backward()
    opt.step()
"""
    (p,) = q.pitfalls(record(source))
    assert (p.kind, p.line) == ("parameter-not-optimized", 8)
    assert p.title == "model was rebuilt after its optimizer was made"
    assert "Line 8 assigns model a new model after the optimizer was built at line 7" in p.message
    assert "line 7 below line 8" in p.fix


def test_a_model_built_beside_another_on_one_line_is_said_at_that_line() -> None:
    # G, D = …: the line that builds D is found in a tuple assignment too (it had no line at all)
    source = """import torch, torch.nn as nn
torch.manual_seed(0)
G, D = nn.Linear(2, 2), nn.Linear(2, 1)
optG = torch.optim.SGD(G.parameters(), lr=0.1)
for i in range(3):
    loss = D(G(torch.randn(8, 2))).mean()
    optG.zero_grad(); loss.backward()
    optG.step()
"""
    p = the_pitfall(source, "parameter-not-optimized", 3)
    assert p.title == "D is used but no optimizer holds its parameters"


ACCURACY = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
X, y = torch.randn(64, 4), torch.randint(0, 3, (64,))
for step in range(30):
    opt.zero_grad(); nn.functional.cross_entropy(model(X), y).backward(); opt.step()
with torch.no_grad():
    pred = model(X).argmax(dim=1{keep})
    acc = (pred == y).float().mean()
print(round(acc.item(), 4))
"""


def test_an_accuracy_of_a_column_against_a_vector_says_it_compares_every_pair() -> None:
    # (64, 1) == (64,) is (64, 64): the accuracy printed was no accuracy, and nothing said so
    p = the_pitfall(ACCURACY.format(keep=", keepdim=True"), "broadcast-in-comparison", 11)
    assert p.title == "Shapes (64, 1) and (64,) broadcast to (64, 64) in a comparison"
    assert "64×64 = 4096 results instead of 64" in p.message
    assert p.fix.startswith("Make the shapes match before comparing: pred.squeeze(1) (or y.unsqueeze(1))")


@pytest.mark.parametrize(
    "source",
    [
        ACCURACY.format(keep=""),  # the vector of predicted classes
        ACCURACY.format(keep="") + "same_class = y[:, None] == y\nprint(same_class.float().mean().item())\n",
    ],
    ids=["an accuracy of two vectors", "a same-class mask of every pair, on purpose"],
)
def test_comparisons_of_matching_shapes_or_of_all_pairs_on_purpose_stay_silent(source: str) -> None:
    recorded_silently(source)


# correct code the new detectors first took for mistakes (a false-positive hunt over 53 snippets)
SAID_WRONGLY = {
    "an LBFGS closure": "import torch\ntorch.manual_seed(0)\nx, y = torch.randn(20, 3), torch.randn(20, 1)\nm = torch.nn.Linear(3, 1)\nopt = torch.optim.LBFGS(m.parameters())\ndef closure():\n    opt.zero_grad()\n    loss = torch.nn.functional.mse_loss(m(x), y)\n    loss.backward()\n    return loss\nopt.step(closure)\n",
    "one update(opt, loss) helper for a GAN's two optimizers": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nG, D = nn.Linear(2, 2), nn.Linear(2, 1)\noptG, optD = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)\ndef update(opt, loss):\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\nfor it in range(3):\n    fake = G(torch.randn(8, 2))\n    update(optD, D(fake.detach()).mean() - D(torch.randn(8, 2)).mean())\n    update(optG, -D(fake).mean())\n",
    "two generator steps per critic step, each clearing both": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nG, D = nn.Linear(2, 2), nn.Linear(2, 1)\noptG, optD = torch.optim.SGD(G.parameters(), 0.1), torch.optim.SGD(D.parameters(), 0.1)\nfor it in range(3):\n    optD.zero_grad()\n    (D(G(torch.randn(8, 2)).detach()).mean() - D(torch.randn(8, 2)).mean()).backward()\n    optD.step()\n    for _ in range(2):\n        G.zero_grad(); D.zero_grad()\n        (-D(G(torch.randn(8, 2))).mean()).backward()\n        optG.step()\n",
    "accumulation whose last partial group an epoch drops": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Linear(6, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\nbatches = [(torch.randn(5, 6), torch.randn(5, 1)) for _ in range(6)]\nfor epoch in range(2):\n    opt.zero_grad()\n    for i, (xb, yb) in enumerate(batches):\n        (nn.functional.mse_loss(model(xb), yb) / 4).backward()\n        if (i + 1) % 4 == 0:\n            opt.step()\n            opt.zero_grad()\n",
    "a one-hot encoding made by comparing with arange": "import torch\ntorch.manual_seed(0)\ny = torch.randint(0, 10, (10,))           # batch of 10, 10 classes\nonehot = (y.unsqueeze(1) == torch.arange(10)).float()\nprint(onehot.sum(1))\n",
    "masks of pairs made with [:, None]": "import torch\ntorch.manual_seed(0)\nn = 6\neye = torch.arange(n)[:, None] == torch.arange(n)\nq_cls, g_cls = torch.randint(0, 3, (n,)), torch.randint(0, 3, (n,))\nrelevant = q_cls[:, None] == g_cls      # query x gallery match matrix\nprint(eye.sum().item(), relevant.shape)\n",
    "a hook removed each iteration beside one kept for good": "import torch\ntorch.manual_seed(0)\nw = torch.randn(5, requires_grad=True)\nw.register_hook(lambda g: g.clamp(-1, 1))     # once, above the loop\nopt = torch.optim.SGD([w], lr=0.1)\nfor it in range(3):\n    h = w.register_hook(lambda g: print(g.norm().item()))\n    opt.zero_grad()\n    (w ** 2).sum().backward()\n    opt.step()\n    h.remove()\n",
    "Monte-Carlo dropout by a helper that calls m.train() on each nn.Dropout": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1))\nx = torch.randn(8, 5)\nmodel.eval()\nfor m in model.modules():\n    if isinstance(m, nn.Dropout):\n        m.train()                      # MC dropout: only dropout on\nwith torch.no_grad():\n    preds = torch.stack([model(x) for _ in range(20)])\nprint(preds.std(0).mean())\n",
    "F.dropout(training=True) asked for by name": "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\nclass MCNet(nn.Module):\n    def __init__(self):\n        super().__init__(); self.fc1, self.fc2 = nn.Linear(3, 16), nn.Linear(16, 1)\n    def forward(self, x):\n        return self.fc2(F.dropout(F.relu(self.fc1(x)), p=0.2, training=True))\nmodel = MCNet().eval()\nwith torch.no_grad():\n    samples = torch.stack([model(torch.randn(4, 3)) for _ in range(10)])\n",
    "a GAN's fakes made under no_grad for the discriminator's loss, G with batch norm": "import torch\nfrom torch import nn\ntorch.manual_seed(0)\nG = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))\nD = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))\noptG = torch.optim.Adam(G.parameters(), lr=1e-3)\noptD = torch.optim.Adam(D.parameters(), lr=1e-3)\nbce = nn.BCEWithLogitsLoss()\nreal = torch.randn(64, 2) + 3\nfor step in range(20):\n    z = torch.randn(64, 4)\n    with torch.no_grad():\n        fake = G(z)\n    d_loss = bce(D(real), torch.ones(64, 1)) + bce(D(fake), torch.zeros(64, 1))\n    optD.zero_grad()\n    d_loss.backward()\n    optD.step()\n    g_loss = bce(D(G(z)), torch.ones(64, 1))\n    optG.zero_grad()\n    g_loss.backward()\n    optG.step()\n",
    "SWA's update_bn, which runs batch norm in training on purpose": "import torch, torch.nn as nn\ntorch.manual_seed(0)\nfrom torch.optim.swa_utils import AveragedModel, update_bn\nfrom torch.utils.data import DataLoader, TensorDataset\nmodel = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))\nloader = DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=8)\nswa_model = AveragedModel(model)\nswa_model.update_parameters(model)\nupdate_bn(loader, swa_model)\n",
}


@pytest.mark.parametrize("name", sorted(SAID_WRONGLY))
def test_correct_code_the_new_detectors_took_for_mistakes_stays_silent(name: str) -> None:
    recorded_silently(SAID_WRONGLY[name])
