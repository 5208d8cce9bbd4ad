"""False alarms and misses found by a hunt over realistic training snippets (GANs, RL,
VAEs, flows, data pipelines) for the kinds gradient-leaked-from-other-loss,
inputs-shuffled-apart-from-labels and sample-instead-of-rsample: the correct snippets stay
silent, the buggy ones are said at the shuffle's line."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

_KIND = "inputs-shuffled-apart-from-labels"

# the targets are the next tokens of the shuffled sequences, made after the shuffle
_TOKENS_NEXT = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
vocab = 12
tokens = torch.randint(0, vocab, (48, 10))
emb = nn.Embedding(vocab, 16); head = nn.Linear(16, vocab)
opt = torch.optim.Adam([*emb.parameters(), *head.parameters()], lr=1e-2)
for epoch in range(3):
    tokens = tokens[torch.randperm(tokens.size(0))]
    x, y = tokens[:, :-1], tokens[:, 1:]
    logits = head(emb(x))
    loss = F.cross_entropy(logits.transpose(1, 2), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

# a teacher's outputs on the shuffled inputs
_TEACHER = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 3)).eval()
student = nn.Linear(5, 3)
opt = torch.optim.SGD(student.parameters(), lr=0.1)
X = torch.randn(64, 5)
for epoch in range(3):
    Xs = X[torch.randperm(len(X))]
    with torch.no_grad():
        soft = teacher(Xs)
    loss = F.mse_loss(student(Xs), soft)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

# targets computed from the shuffled inputs
_TARGET_AFTER = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
w_true = torch.tensor([[2.0], [-1.0]])
X = torch.randn(50, 2)
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    X = X[torch.randperm(50)]
    y = X @ w_true + 0.5
    loss = F.mse_loss(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

# labels gathered from a list by the same permutation
_LABEL_LIST = """import torch
import torch.nn as nn
torch.manual_seed(0)
X = torch.randn(40, 3)
labels = [int(v > 0) for v in X[:, 0]]
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    perm = torch.randperm(40)
    xb = X[perm]
    yb = torch.tensor([labels[i] for i in perm])
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

# labels reordered by index_select with the same permutation
_INDEX_SELECT = """import torch
import torch.nn as nn
torch.manual_seed(0)
X = torch.randn(40, 3)
y = (X[:, 1] > 0).float()
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    perm = torch.randperm(40)
    xb = X[perm]
    yb = torch.index_select(y, 0, perm)
    loss = nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

# a probe classifier on sample() of a distribution the VAE trains through with rsample()
_PROBE = """import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal
torch.manual_seed(0)
enc = nn.Linear(8, 4); dec = nn.Linear(2, 8); clf = nn.Linear(2, 2)
vae_opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-3)
clf_opt = torch.optim.Adam(clf.parameters(), lr=1e-3)
x = torch.randn(32, 8); y = torch.randint(0, 2, (32,))
for step in range(3):
    mu, log_std = enc(x).chunk(2, -1)
    q = Normal(mu, log_std.exp())
    loss = ((dec(q.rsample()) - x) ** 2).sum(-1).mean()
    vae_opt.zero_grad(); loss.backward(); vae_opt.step()
    # a probe classifier on frozen latents: the draw is meant to be a constant input
    z = q.sample()
    clf_loss = F.cross_entropy(clf(z), y)
    clf_opt.zero_grad(); clf_loss.backward(); clf_opt.step()
print(round(clf_loss.item(), 3))
"""

# an identity target beside indices
_EYE = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
enc = nn.Linear(6, 8)
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
X = torch.randn(64, 6)
ids = torch.arange(64)
for epoch in range(2):
    perm = torch.randperm(64)
    for i in range(0, 64, 16):
        xb = X[perm[i:i + 16]]
        z1 = F.normalize(enc(xb + 0.1 * torch.randn_like(xb)), dim=1)
        z2 = F.normalize(enc(xb + 0.1 * torch.randn_like(xb)), dim=1)
        target = torch.eye(16)
        loss = F.mse_loss(torch.softmax(z1 @ z2.t() / 0.1, 1), target)
        opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

# random.shuffle(order) indexing inputs and labels
_ORDER_BOTH = """import random
import torch
import torch.nn as nn
random.seed(0)
torch.manual_seed(0)
X = torch.randn(80, 3)
Y = (X[:, 0] > 0).long()
order = list(range(len(X)))
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    random.shuffle(order)
    for i in range(0, len(order), 16):
        batch = order[i:i + 16]
        loss = nn.functional.cross_entropy(model(X[batch]), Y[batch])
        opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

_ORDER_SLICE = """import random
import torch
import torch.nn as nn
random.seed(0)
torch.manual_seed(0)
X = torch.randn(80, 3); Y = (X[:, 0] > 0).long()
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
order = list(range(len(X)))
for epoch in range(3):
    random.shuffle(order)
    for i in range(0, len(X), 16):
        xb = X[order[i:i + 16]]
        yb = Y[i:i + 16]
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

_FLOAT_COPY = """import torch
import torch.nn as nn
torch.manual_seed(0)
X = torch.randint(0, 255, (64, 4), dtype=torch.uint8); y = torch.randint(0, 2, (64,))
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(3):
    perm = torch.randperm(64)
    Xs = X[perm].float() / 255
    loss = nn.functional.cross_entropy(model(Xs), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

_ONE_HOT = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
X = torch.randn(90, 4); y = torch.randint(0, 3, (90,))
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    perm = torch.randperm(90)
    for i in range(0, 90, 30):
        xb = X[perm[i:i + 30]]
        target = F.one_hot(y[i:i + 30], 3).float()
        loss = F.mse_loss(torch.softmax(model(xb), 1), target)
        opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

_SPLIT = """import torch
import torch.nn as nn
torch.manual_seed(0)
X = torch.randn(100, 3); y = (X[:, 0] > 0).float().unsqueeze(1)
idx = torch.randperm(100)
X = X[idx]
X_train, y_train = X[:80], y[:80]
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    loss = nn.functional.binary_cross_entropy_with_logits(model(X_train), y_train)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

# a shuffled list of indices indexing both, then split
_LIST_BOTH = """import random
import torch
import torch.nn as nn
random.seed(0)
torch.manual_seed(0)
X = torch.randn(50, 3); y = (X[:, 2] > 0).long()
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
idx = list(range(len(X)))
for epoch in range(3):
    random.shuffle(idx)
    X, y = X[idx], y[idx]
    split = 40
    train = idx[:split]
    loss = nn.functional.cross_entropy(model(X[:split]), y[:split])
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""
_LIST_X_ONLY = """import random
import torch
import torch.nn as nn
random.seed(0)
torch.manual_seed(0)
X = torch.randn(50, 3); y = (X[:, 2] > 0).long()
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
idx = list(range(len(X)))
for epoch in range(3):
    random.shuffle(idx)
    X = X[idx]
    loss = nn.functional.cross_entropy(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

_DICT = """import torch
import torch.nn as nn
torch.manual_seed(0)
data = {"x": torch.randn(40, 3), "y": torch.randint(0, 2, (40,))}
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    perm = torch.randperm(40)
    xb = data["x"][perm]
    loss = nn.functional.cross_entropy(model(xb), data["y"])
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""


@pytest.mark.parametrize(
    "source",
    [
        _TOKENS_NEXT,
        _TEACHER,
        _TARGET_AFTER,
        _LABEL_LIST,
        _INDEX_SELECT,
        _PROBE,
        _EYE,
        _ORDER_BOTH,
        _LIST_BOTH,
    ],
)
def test_correct_snippets_stay_silent(source: str) -> None:
    recorded_silently(source)


@pytest.mark.parametrize(
    ("source", "line", "phrase"),
    [
        # random.shuffle(order), then X[order[i:i + bs]] beside Y[i:i + bs]
        (_ORDER_SLICE, 13, "perm = order[i:i + 16]; xb, yb = X[perm], Y[perm]"),
        # random.shuffle(idx), then X = X[idx] with y left as it was
        (_LIST_X_ONLY, 12, "X, y = X[idx], y[idx]"),
        # inputs and labels kept in a dict: named as the snippet reaches them
        (_DICT, 9, 'data["x"] is shuffled at line 9 but data["y"] is not'),
        # the shuffled inputs copied before the loss: X[perm].float() / 255
        (_FLOAT_COPY, 9, "but y is not"),
        # a one-hot target made from an unshuffled slice of the labels
        (_ONE_HOT, 11, "xb, y_xb = X[idx], y[idx]"),
        # a train split of the shuffled inputs beside one of the labels, y made y.unsqueeze(1)
        (_SPLIT, 6, "X, y = X[idx], y[idx]"),
    ],
)
def test_shuffles_apart_are_said(source: str, line: int, phrase: str) -> None:
    said = the_pitfall(source, _KIND, line)
    assert phrase in said.title + said.fix, (said.title, said.fix)


def test_a_shuffle_of_indices_goes_along_when_it_indexes_the_labels_too() -> None:
    recorded_silently(_ORDER_SLICE.replace("yb = Y[i:i + 16]", "yb = Y[order[i:i + 16]]"))
    recorded_silently(_ONE_HOT.replace("F.one_hot(y[i:i + 30], 3)", "F.one_hot(y[perm[i:i + 30]], 3)"))
