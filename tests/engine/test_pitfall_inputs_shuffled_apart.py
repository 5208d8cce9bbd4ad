"""inputs-shuffled-apart-from-labels: the inputs shuffled (``X[perm]``, ``np.random.shuffle(X)``,
``random.shuffle(xs)``) while their labels keep their order, or get a permutation of their own.
Said at the shuffle, with the rows that kept their label counted from the run's permutation;
both indexed by one permutation, a DataLoader's shuffle, unlabeled data, a mixup's in-batch
permutation and a contrastive loss's shuffled negatives stay silent."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from tests.engine.snippets import recorded_silently, the_pitfall

_KIND = "inputs-shuffled-apart-from-labels"

_SETUP = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
X = torch.randn(64, 4)
y = (X[:, 0] > 0).long()
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""

_FULL = (
    _SETUP
    + """perm = torch.randperm(len(X))
X = X[perm]
for epoch in range(5):
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""
)


def _kept(seed_source: str) -> tuple[int, int]:
    """The rows of _FULL's shuffle that keep their label, and the rows left in place, run
    without gradwalk (gradwalk seeds torch with 0 as the_pitfall's plain run does)."""
    torch.manual_seed(0)
    scope: dict[str, object] = {}
    exec(seed_source.split("for epoch")[0], scope)
    perm, y = scope["perm"], scope["y"]
    assert isinstance(perm, torch.Tensor) and isinstance(y, torch.Tensor)
    return int((y[perm] == y).sum()), int((perm == torch.arange(len(perm))).sum())


def test_a_full_shuffle_of_the_inputs_alone_is_said_with_the_rows_that_kept_their_label() -> None:
    said = the_pitfall(_FULL, _KIND, 11)
    kept, stayed = _kept(_FULL)
    assert (
        said.title == "X is shuffled at line 11 but y is not: each sample is trained toward another's label"
    )
    assert "Line 11 (X = X[perm]) reorders the 64 rows of X by a random permutation" in said.message
    assert "the loss at line 13 (loss = F.cross_entropy(model(X), y)), keeps its order" in said.message
    assert f"only {kept} of the 64 rows the loss scored keep their own label" in said.message
    assert kept < 64 and (stayed == 0) == ("left in place" not in said.message)
    assert said.fix.startswith("Index y with the same permutation as X: X, y = X[perm], y[perm];")
    assert "DataLoader(TensorDataset(X, y), batch_size=…, shuffle=True)" in said.fix


def test_a_permutation_made_on_the_line_is_named_in_the_fix() -> None:
    source = _FULL.replace("perm = torch.randperm(len(X))\nX = X[perm]\n", "X = X[torch.randperm(len(X))]\n")
    said = the_pitfall(source, _KIND, 10)
    assert "Line 10 (X = X[torch.randperm(len(X))])" in said.message
    assert "perm = torch.randperm(len(X)); X, y = X[perm], y[perm]" in said.fix


def test_two_permutations_are_said_as_such() -> None:
    source = _FULL.replace(
        "perm = torch.randperm(len(X))\nX = X[perm]\n",
        "X = X[torch.randperm(len(X))]\ny = y[torch.randperm(len(y))]\n",
    )
    said = the_pitfall(source, _KIND, 10)
    assert said.title.startswith("X and y are shuffled by different permutations")
    assert "y is shuffled at line 11 by another permutation" in said.message
    assert "drop y's own permutation (y = y[torch.randperm(len(y))])" in said.fix


def test_a_batch_taken_by_a_slice_of_the_permutation_beside_labels_taken_in_order() -> None:
    source = (
        _SETUP
        + """for epoch in range(3):
    perm = torch.randperm(len(X))
    for i in range(0, len(X), 16):
        idx = perm[i:i + 16]
        xb = X[idx]
        yb = y[i:i + 16]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
    )
    said = the_pitfall(source, _KIND, 14)
    assert "Line 14 (xb = X[idx]) takes 16 of the 64 rows of X in a random order" in said.message
    assert "of the 16 rows the loss scored" in said.message
    assert "xb, yb = X[idx], y[idx], in place of the line that takes yb from y unshuffled" in said.fix


def test_batches_sliced_from_a_shuffled_copy_beside_the_labels_in_order() -> None:
    source = (
        _SETUP
        + """for epoch in range(3):
    perm = torch.randperm(len(X))
    Xs = X[perm]
    for i in range(0, len(X), 16):
        loss = F.cross_entropy(model(Xs[i:i + 16]), y[i:i + 16])
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
    )
    said = the_pitfall(source, _KIND, 12)
    assert "Line 12 (Xs = X[perm]) reorders the 64 rows of X" in said.message
    assert "Xs, ys = X[perm], y[perm], and give the loss ys (or its rows) in place of y" in said.fix


def test_a_numpy_permutation_indexes_too() -> None:
    source = _FULL.replace(
        "perm = torch.randperm(len(X))",
        "import numpy as np\nnp.random.seed(0)\nperm = np.random.permutation(len(X))",
    )
    said = the_pitfall(source, _KIND, 13)
    assert said.title.startswith("X is shuffled at line 13 but y is not")


_NUMPY = """import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(0)
torch.manual_seed(0)
X = np.random.randn(64, 4).astype(np.float32)
y = (X[:, 0] > 0).astype(np.int64)
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    np.random.shuffle(X)
    for i in range(0, 64, 16):
        xb, yb = torch.from_numpy(X[i:i + 16]), torch.from_numpy(y[i:i + 16])
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
print(X[:2].round(4).tolist(), round(loss.item(), 4))
"""


def test_numpy_shuffle_in_place_is_said_with_the_permutation_it_applied() -> None:
    said = the_pitfall(_NUMPY, _KIND, 13)  # (and prints what plain NumPy's shuffle gives)
    np.random.seed(0)
    X = np.random.randn(64, 4).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    order = np.arange(64)
    np.random.shuffle(order)
    kept = int((y[order] == y).sum())
    assert (
        "Line 13 (np.random.shuffle(X)) reorders the 64 rows of X in place, but y keeps its order"
        in said.message
    )
    assert f"only {kept} of the 64 rows keep their own label" in said.message
    assert "perm = np.random.permutation(len(X)); X, y = X[perm], y[perm]" in said.fix


def test_a_numpy_shuffle_above_the_loop_is_said_with_the_line_that_pairs_them() -> None:
    source = """import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(0)
X = np.random.randn(64, 4).astype(np.float32)
y = (X[:, 0] > 0).astype(np.int64)
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
np.random.shuffle(X)
Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
for epoch in range(3):
    loss = F.cross_entropy(model(Xt), yt)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    said = the_pitfall(source, _KIND, 11)
    assert (
        "line 12 (Xt, yt = torch.from_numpy(X), torch.from_numpy(y)) reads them side by side" in said.message
    )


def test_numpy_shuffles_of_both_by_two_draws_are_said_once() -> None:
    source = _NUMPY.replace(
        "    np.random.shuffle(X)\n", "    np.random.shuffle(X)\n    np.random.shuffle(y)\n"
    )
    said = the_pitfall(source, _KIND, 13)
    assert said.title.startswith("X and y are shuffled by different permutations")
    assert "in place of both shuffles (lines 13 and 14)" in said.fix


_LISTS = """import random
import torch
import torch.nn as nn

torch.manual_seed(0)
random.seed(0)
xs = [torch.randn(3) for _ in range(32)]
ys = [x.sum().reshape(1) for x in xs]
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    random.shuffle(xs)
    for x, t in zip(xs, ys):
        loss = ((model(x) - t) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
print(round(loss.item(), 4), random.random())
"""


def test_random_shuffle_of_a_list_of_inputs_beside_a_list_of_labels() -> None:
    said = the_pitfall(_LISTS, _KIND, 12)  # (random's state after it is plain Python's)
    random.seed(0)
    order = list(range(32))
    random.shuffle(order)
    stayed = sum(1 for i, j in enumerate(order) if i == j)
    assert (
        said.title == "xs is shuffled at line 12 but ys is not: each sample is trained toward another's label"
    )
    assert "line 13 (for x, t in zip(xs, ys):) reads them side by side" in said.message
    assert f"only {stayed} of the 32 rows" in said.message or (
        stayed == 0 and "none of the 32" in said.message
    )
    assert "pairs = list(zip(xs, ys)); random.shuffle(pairs); xs, ys = map(list, zip(*pairs))" in said.fix


_BOTH = _FULL.replace("X = X[perm]\n", "X, y = X[perm], y[perm]\n")
_TWO_LINES = _FULL.replace("X = X[perm]\n", "X = X[perm]\ny = y[perm]\n")
_BATCH_BOTH = (
    _SETUP
    + """for epoch in range(3):
    perm = torch.randperm(len(X))
    for i in range(0, len(X), 16):
        idx = perm[i:i + 16]
        loss = F.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
)
_SUBSET = (
    _SETUP
    + """idx = torch.randperm(len(X))[:32]
Xs, ys = X[idx], y[idx]
for epoch in range(5):
    loss = F.cross_entropy(model(Xs), ys)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
)
_RESEEDED = _FULL.replace(
    "perm = torch.randperm(len(X))\nX = X[perm]\n",
    "torch.manual_seed(1)\nX = X[torch.randperm(len(X))]\ntorch.manual_seed(1)\ny = y[torch.randperm(len(y))]\n",
)
_MIXUP = (
    _SETUP
    + """for epoch in range(2):
    for i in range(0, 64, 16):
        xb, yb = X[i:i + 16], y[i:i + 16]
        perm = torch.randperm(len(xb))
        mixed = 0.7 * xb + 0.3 * xb[perm]
        out = model(mixed)
        loss = 0.7 * F.cross_entropy(out, yb) + 0.3 * F.cross_entropy(out, yb[perm])
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
)
_SAME_LABELS = _FULL.replace("y = (X[:, 0] > 0).long()", "y = torch.ones(64, dtype=torch.long)")


@pytest.mark.parametrize(
    ("source", "twin", "line"),
    [
        # one permutation for both: on one line, on two, per batch (each beside its buggy twin)
        (_BOTH, _FULL, 11),
        (_TWO_LINES, _TWO_LINES.replace("y = y[perm]\n", ""), 11),
        (_BATCH_BOTH, _BATCH_BOTH.replace("y[idx])", "y[i:i + 16])"), 14),
        # a random subset of pairs
        (_SUBSET, _SUBSET.replace("y[idx]", "y[:32]"), 11),
        # two draws that are one permutation (the generator reseeded alike before each)
        (_RESEEDED, _RESEEDED.replace("torch.manual_seed(1)\ny", "torch.manual_seed(2)\ny"), 11),
        # mixup: the batch's permutation indexes the labels too, later in the same loss
        (_MIXUP, _FULL, 11),
        # labels all the same: nothing can be misplaced
        (_SAME_LABELS, _FULL, 11),
        # evaluated only, never trained
        (_FULL.replace("    opt.zero_grad()\n    loss.backward()\n    opt.step()\n", ""), _FULL, 11),
    ],
)
def test_labels_that_go_with_their_inputs_stay_silent(source: str, twin: str, line: int) -> None:
    recorded_silently(source)
    the_pitfall(twin, _KIND, line)  # the same snippet with the bug is said


def test_a_dataloaders_shuffle_keeps_the_pairs() -> None:
    recorded_silently(
        _SETUP
        + """from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
for epoch in range(2):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
    )


@pytest.mark.parametrize(
    "source",
    [
        # an autoencoder: the target is the shuffled input itself, labels unused
        """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
X = torch.randn(64, 8)
labels = torch.randint(0, 3, (64,))
ae = nn.Sequential(nn.Linear(8, 2), nn.Linear(2, 8))
opt = torch.optim.Adam(ae.parameters(), lr=1e-2)
for epoch in range(3):
    X = X[torch.randperm(len(X))]
    for i in range(0, 64, 16):
        xb = X[i:i + 16]
        loss = F.mse_loss(ae(xb), xb)
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
        # a GAN's real samples: a random subset, targets made per batch
        """import torch
import torch.nn as nn
torch.manual_seed(0)
data = torch.randn(256, 2) + 3
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
optG = torch.optim.Adam(G.parameters(), lr=1e-3)
optD = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for i in range(4):
    real = data[torch.randperm(len(data))[:32]]
    fake = G(torch.randn(32, 4))
    optD.zero_grad()
    lossD = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    lossD.backward()
    optD.step()
    optG.zero_grad()
    lossG = bce(D(fake), torch.ones(32, 1))
    lossG.backward()
    optG.step()
""",
        # a contrastive loss: shuffled embeddings (they require grad) as negatives
        """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
X = torch.randn(32, 8)
enc = nn.Linear(8, 4)
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
for step in range(3):
    z1 = enc(X + 0.1 * torch.randn_like(X))
    z2 = enc(X + 0.1 * torch.randn_like(X))
    neg = z2[torch.randperm(len(z2))]
    logits = torch.cat([(z1 * z2).sum(1, keepdim=True), (z1 * neg).sum(1, keepdim=True)], 1)
    loss = F.cross_entropy(logits, torch.zeros(len(X), dtype=torch.long))
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
        # a shuffled list of indices, both indexed by it
        """import random
import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(64, 5)
Y = X.sum(1, keepdim=True)
order = list(range(64))
model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    random.shuffle(order)
    for i in range(0, 64, 16):
        idx = order[i:i + 16]
        loss = ((model(X[idx]) - Y[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
        # unlabeled data shuffled in place, the labels named beside it only after training
        """import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(0)
X = np.random.randn(64, 4).astype(np.float32)
labels = (X[:, 0] > 0).astype(np.int64)
ae = nn.Sequential(nn.Linear(4, 2), nn.Linear(2, 4))
opt = torch.optim.SGD(ae.parameters(), lr=0.1)
np.random.shuffle(X)
for epoch in range(2):
    for i in range(0, 64, 16):
        xb = torch.from_numpy(X[i:i + 16])
        loss = F.mse_loss(ae(xb), xb)
        opt.zero_grad()
        loss.backward()
        opt.step()
codes = ae[0](torch.from_numpy(X))
print(codes.shape, X.shape, labels.shape)
""",
        # unlabeled data shuffled in place
        """import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(0)
X = np.random.randn(64, 4).astype(np.float32)
ae = nn.Sequential(nn.Linear(4, 2), nn.Linear(2, 4))
opt = torch.optim.SGD(ae.parameters(), lr=0.1)
for epoch in range(2):
    np.random.shuffle(X)
    for i in range(0, 64, 16):
        xb = torch.from_numpy(X[i:i + 16])
        loss = F.mse_loss(ae(xb), xb)
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
    ],
)
def test_unlabeled_data_and_shuffles_that_keep_pairs_stay_silent(source: str) -> None:
    recorded_silently(source)


@pytest.mark.parametrize(
    ("source", "twin", "line"),
    [
        # NumPy's saved-state trick: both shuffled by one permutation
        (
            _NUMPY.replace(
                "    np.random.shuffle(X)\n",
                "    state = np.random.get_state()\n    np.random.shuffle(X)\n    np.random.set_state(state)\n"
                "    np.random.shuffle(y)\n",
            ),
            _NUMPY,
            13,
        ),
        # a list of pairs shuffled together
        (
            _LISTS.replace("model = nn.Linear", "pairs = list(zip(xs, ys))\nmodel = nn.Linear")
            .replace("random.shuffle(xs)", "random.shuffle(pairs)")
            .replace("zip(xs, ys):", "pairs:"),
            _LISTS,
            12,
        ),
    ],
)
def test_pairs_shuffled_in_place_together_stay_silent(source: str, twin: str, line: int) -> None:
    recorded_silently(source)
    the_pitfall(twin, _KIND, line)  # the same snippet shuffling the inputs alone is said
