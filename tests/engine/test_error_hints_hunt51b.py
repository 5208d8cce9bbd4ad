"""Hints hunt 51 (see test_error_hints_hunt51.py) found missing or wrong for the pieces of a training
step used out of turn or half-written: a model's method named without its call, an optimizer's
state or a checkpoint of parts loaded into a model, non-finite gradients clipped, GradScaler
given a number, stepped twice or without scale(), OneCycleLR past its total, a scheduler period
of 0, checkpoint(m(x)), milestones=10, .to('gpu'), norm_type='l2', a beta of 1, a sample part the
default collate cannot batch, a sampler beside shuffle=True, a negative sampling weight,
random_split fractions past 1 (told to subtract a fraction from len(ds)), kl_div, cosine
similarity and triplets of shapes that differ, np.exp of a tensor that requires grad (told to
take t.detach(), a name the snippet lacks), a pooling's (output, indices) used as a tensor (told
it came from torch.autograd.grad), a view of a leaf written in place, a float index tensor
(called idx whatever its name), and a model holding a lambda saved whole. Each snippet raises as
it does without gradwalk, at the line given, the hint names the snippet's own variables, and the
fix it gives runs."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import fixed_runs, hinted

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
LOADER = H + "from torch.utils.data import DataLoader, Dataset\n"

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    "clip_grad_norm_ of m.parameters uncalled": (
        H
        + "m = nn.Linear(3, 1)\nm(torch.randn(2, 3)).sum().backward()\ntorch.nn.utils.clip_grad_norm_(m.parameters, 1.0)\n",
        6,
        ["m.parameters is a method", "Call it: m.parameters()."],
        [("m.parameters,", "m.parameters(),")],
    ),
    "load_state_dict of m.state_dict uncalled": (
        H + "m = nn.Linear(3, 1)\nn = nn.Linear(3, 1)\nn.load_state_dict(m.state_dict)\n",
        6,
        ["m.state_dict is a method", "m.state_dict()"],
        [("(m.state_dict)", "(m.state_dict())")],
    ),
    "an optimizer's state loaded into a model": (
        H
        + "m = nn.Linear(3, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\nm.load_state_dict(opt.state_dict())\n",
        6,
        ["opt.state_dict() is an optimizer's state", "m is a model"],
        [("m.load_state_dict(opt.state_dict())", "opt.load_state_dict(opt.state_dict())")],
    ),
    "non-finite gradients clipped": (
        H
        + "m = nn.Linear(3, 1)\nx = torch.randn(4, 3)\nloss = (m(x) / 0).mean()\nloss.backward()\n"
        + "torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0, error_if_nonfinite=True)\n",
        8,
        [
            "m.weight.grad and m.bias.grad hold inf or NaN",
            "They came from loss, which is nan",
            "a division by 0",
        ],
        [("/ 0)", "/ 2)")],
    ),
    "GradScaler stepped without scale()": (
        H
        + "m = nn.Linear(3, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\nscaler = torch.amp.GradScaler('cpu')\n"
        + "loss = m(torch.randn(4, 3)).mean()\nloss.backward()\nscaler.step(opt)\nscaler.update()\n",
        9,
        ["scaler.step() follows scaler.scale()", "scaler.scale(loss).backward()"],
        [("loss.backward()", "scaler.scale(loss).backward()")],
    ),
    "OneCycleLR stepped past its total": (
        H
        + "m = nn.Linear(3, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        + "sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)\n"
        + "for _ in range(5):\n    opt.step()\n    sched.step()\n",
        9,
        ["total_steps=3", "this was call 4", "steps_per_epoch=len(loader)"],
        [("total_steps=3", "total_steps=5")],
    ),
    "a sample part that is None": (
        LOADER
        + "class D(Dataset):\n    def __len__(self):\n        return 4\n    def __getitem__(self, i):\n"
        + "        return torch.randn(3), None\nfor xb, yb in DataLoader(D(), batch_size=2):\n    print(xb.shape)\n",
        10,
        ["one part is None", "Put a value in its place"],
        [("torch.randn(3), None", "torch.randn(3), 0")],
    ),
    "a sample part of a class of one's own": (
        LOADER
        + "class Item:\n    pass\nclass D(Dataset):\n    def __len__(self):\n        return 4\n    def __getitem__(self, i):\n"
        + "        return Item(), 1\nfor xb, yb in DataLoader(D(), batch_size=2):\n    print(yb)\n",
        12,
        ["an object of class Item", "collate_fn"],
        [("return Item(), 1", "return torch.zeros(2), 1")],
    ),
    "a pooling's (output, indices) used as a tensor": (
        H
        + "pool = nn.MaxPool2d(2, return_indices=True)\nx = torch.randn(1, 3, 8, 8)\ny = pool(x)\nz = y.flatten(1)\n",
        7,
        ["y is what pool, built with return_indices=True, returns", "y, indices = pool(x)"],
        [("y = pool(x)", "y, indices = pool(x)")],
    ),
    "return_indices inside nn.Sequential": (
        H
        + "model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.MaxPool2d(2, return_indices=True), nn.Flatten())\n"
        + "y = model(torch.randn(1, 3, 8, 8))\n",
        5,
        ["model[1], MaxPool2d(…, return_indices=True), returns a pair", "Leave return_indices out"],
        [(", return_indices=True", "")],
    ),
    "a view of a leaf written in place": (
        H + "w = torch.randn(4, requires_grad=True)\nv = w[:2]\nv += 1\nprint(v)\n",
        6,
        ["v is a view of w", "v = v + 1"],
        [("v += 1", "v = v + 1")],
    ),
    "a float index tensor named as the line names it": (
        H + "x = torch.randn(10)\nmid = torch.tensor(len(x) / 2)\ny = x[mid]\nprint(y)\n",
        6,
        ["mid holds float32 numbers", "mid.long()"],
        [("x[mid]", "x[mid.long()]")],
    ),
    "checkpoint given the function's output": (
        H
        + "from torch.utils.checkpoint import checkpoint\nm = nn.Linear(3, 3)\nx = torch.randn(4, 3)\n"
        + "y = checkpoint(m(x), use_reentrant=False)\n",
        7,
        ["m(x) runs it at once", "checkpoint(m, x, use_reentrant=False)"],
        [("checkpoint(m(x),", "checkpoint(m, x,")],
    ),
    "MultiStepLR given one milestone as a number": (
        H
        + "m = nn.Linear(3, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        + "sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=10)\n",
        6,
        ["was given one number: write it as a list, milestones=[…]"],
        [("milestones=10", "milestones=[10]")],
    ),
    "the GPU called 'gpu'": (
        H + "x = torch.randn(3).to('gpu')\n",
        4,
        ["'gpu' is not a device name", "'cuda'", ".to(device)"],
        [("'gpu'", "'cuda' if torch.cuda.is_available() else 'cpu'")],
    ),
    "a checkpoint of parts loaded whole from torch.load": (
        H
        + "import io\nm = nn.Linear(3, 2)\nbuf = io.BytesIO()\ntorch.save({'state_dict': m.state_dict(), 'epoch': 1}, buf)\n"
        + "buf.seek(0)\nm.load_state_dict(torch.load(buf))\n",
        9,
        [
            "torch.load(buf) is a checkpoint of several parts",
            "m.load_state_dict(torch.load(buf)['state_dict'])",
        ],
        [("torch.load(buf))", "torch.load(buf)['state_dict'])")],
    ),
    "np.exp of a tensor that requires grad": (
        H + "import numpy as np\nx = torch.randn(3, requires_grad=True)\ny = np.exp(x)\n",
        6,
        ["np.exp turns x into a NumPy array", "Use torch.exp", "x.detach()"],
        [("np.exp(x)", "torch.exp(x)")],
    ),
    "random_split given fractions past 1": (
        H
        + "from torch.utils.data import TensorDataset, random_split\nds = TensorDataset(torch.randn(10, 3))\n"
        + "tr, va = random_split(ds, [0.8, 0.3])\nprint(len(tr), len(va))\n",
        6,
        ["reads [0.8, 0.3] as fractions of ds's 10 samples", "these add up to 1.1", "[0.8, 0.2]"],
        [("[0.8, 0.3]", "[0.8, 0.2]")],
    ),
    "kl_div of a student and teacher over other classes": (
        H
        + "crit = nn.KLDivLoss(reduction='batchmean')\nstudent = torch.randn(4, 3).log_softmax(1)\n"
        + "teacher = torch.randn(4, 5).softmax(1)\nloss = crit(student, teacher)\n",
        7,
        [
            "F.kl_div compares two distributions over the same classes",
            "student is (4, 3), teacher is (4, 5)",
            "dim 1",
        ],
        [("torch.randn(4, 5)", "torch.randn(4, 3)")],
    ),
    "cosine_similarity of vectors of two lengths": (
        H + "a = torch.randn(4, 8)\nb = torch.randn(4, 6)\ns = F.cosine_similarity(a, b)\n",
        6,
        ["a is (4, 8), b is (4, 6): they differ at dim 1"],
        [("torch.randn(4, 6)", "torch.randn(4, 8)")],
    ),
    "triplets of other counts": (
        H
        + "anchor = torch.randn(4, 8)\npos = torch.randn(4, 8)\nneg = torch.randn(3, 8)\n"
        + "loss = F.triplet_margin_loss(anchor, pos, neg)\n",
        7,
        ["neg is (3, 8): they differ at dim 0", "the same number of rows in all three"],
        [("torch.randn(3, 8)", "torch.randn(4, 8)")],
    ),
    "StepLR with a step_size of 0": (
        H
        + "m = nn.Linear(3, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\nepochs = 5\n"
        + "sched = torch.optim.lr_scheduler.StepLR(opt, step_size=epochs // 10)\n"
        + "for _ in range(epochs):\n    opt.step()\n    sched.step()\n",
        10,
        ["sched (StepLR) was built with step_size=0", "step_size=max(1, epochs // 10)"],
        [("step_size=epochs // 10", "step_size=max(1, epochs // 10)")],
    ),
    "a sampler beside shuffle=True": (
        H
        + "from torch.utils.data import DataLoader, TensorDataset, RandomSampler\nds = TensorDataset(torch.randn(8, 3))\n"
        + "loader = DataLoader(ds, shuffle=True, sampler=RandomSampler(ds))\n",
        6,
        ["A sampler decides the order", "leave shuffle out"],
        [("shuffle=True, ", "")],
    ),
    "a batch_sampler beside batch_size": (
        H
        + "from torch.utils.data import DataLoader, TensorDataset, BatchSampler, SequentialSampler\n"
        + "ds = TensorDataset(torch.randn(8, 3))\nbs = BatchSampler(SequentialSampler(ds), 4, False)\n"
        + "loader = DataLoader(ds, batch_size=4, batch_sampler=bs)\n",
        7,
        ["A batch_sampler hands the DataLoader whole batches", "DataLoader(dataset, batch_sampler=…)"],
        [("batch_size=4, ", "")],
    ),
    "a WeightedRandomSampler of a negative weight": (
        H
        + "from torch.utils.data import WeightedRandomSampler\nsampler = WeightedRandomSampler([0.5, -0.1, 0.6], 3)\n"
        + "print(len(list(sampler)))\n",
        6,
        ["the weights must be 0 or more, and the lowest is -0.1"],
        [("-0.1", "0.1")],
    ),
    "GradScaler given loss.item()": (
        H
        + "scaler = torch.amp.GradScaler('cpu')\nm = nn.Linear(3, 1)\nloss = m(torch.randn(4, 3)).mean()\n"
        + "scaler.scale(loss.item()).backward()\n",
        7,
        ["loss.item() is a Python number", "scaler.scale(loss).backward()"],
        [("scaler.scale(loss.item())", "scaler.scale(loss)")],
    ),
    "GradScaler stepped twice before update()": (
        H
        + "m = nn.Linear(3, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\nscaler = torch.amp.GradScaler('cpu')\n"
        + "loss = m(torch.randn(4, 3)).mean()\nscaler.scale(loss).backward()\nscaler.step(opt)\nscaler.step(opt)\n",
        10,
        ["scaler.step(opt) may run once per optimizer between scaler.update() calls", "call scaler.update()"],
        [("scaler.step(opt)\nscaler.step(opt)", "scaler.step(opt)\nscaler.update()")],
    ),
    "clip_grad_norm_ given norm_type='l2'": (
        H
        + "m = nn.Linear(3, 1)\nm(torch.randn(2, 3)).sum().backward()\n"
        + "torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0, norm_type='l2')\n",
        6,
        ["'l2' is a name", "clip_grad_norm_(m.parameters(), 1.0, norm_type=2.0)"],
        [("norm_type='l2'", "norm_type=2.0")],
    ),
    "Adam given a beta of 1": (
        H + "m = nn.Linear(3, 1)\nopt = torch.optim.Adam(m.parameters(), betas=(0.9, 1.0))\n",
        5,
        ["each from 0 up to, not including, 1, and beta2 is 1.0", "betas=(0.9, 0.999)"],
        [("betas=(0.9, 1.0)", "betas=(0.9, 0.999)")],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_hint_names_the_cause_and_the_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)


def test_a_model_holding_a_lambda_saved_whole() -> None:
    """PicklingError names the lambda's address, which differs from run to run: checked apart."""
    source = (
        H
        + "import io\nm = nn.Sequential(nn.Linear(3, 1))\nm.act = lambda x: x\nbuf = io.BytesIO()\ntorch.save(m, buf)\n"
    )
    err = q.errors(record(source))[0]
    assert (err.exc_type, err.line) == ("PicklingError", 8), err
    assert err.hint is not None and "m holds a lambda" in err.hint, err.hint
    assert "torch.save(m.state_dict(), buf)" in err.hint, err.hint
    fixed_runs(source, [("torch.save(m, buf)", "torch.save(m.state_dict(), buf)")])
