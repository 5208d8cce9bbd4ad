"""Misses of hunt 48, now told: class scores out of a ReLU6, a Softplus, or a ReLU and the
Dropout after it into cross_entropy (relu-into-cross-entropy); an nn.Softmax(dim=0) module
whose output is read with an argmax over the classes (softmax-over-batch); random.seed /
np.random.seed inside the training loop before draws from those generators
(seed-reset-in-loop); a weight penalty computed under torch.no_grad() or read off with .item()
and added to the loss (penalty-without-gradient). Each with the clean twins that must stay
silent."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall


def _edited(source: str, *edits: tuple[str, str]) -> str:
    """``source`` with each ``(old, new)`` replaced in turn; each ``old`` must occur exactly once,
    so that a clean twin never silently equals the snippet it copies."""
    for old, new in edits:
        assert source.count(old) == 1, (old, source.count(old))
        source = source.replace(old, new)
    return source


_R_RELU6_LAST = """import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4), nn.ReLU6())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(64, 10)
y = torch.randint(0, 4, (64,))
for epoch in range(5):
    out = model(x)
    loss = loss_fn(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_R_SOFTPLUS_FORWARD = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return F.softplus(self.fc2(x))

model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, 10)
y = torch.randint(0, 5, (64,))
for epoch in range(5):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_R_RELU_THEN_DROPOUT = """import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(20, 64), nn.ReLU(),
    nn.Linear(64, 3), nn.ReLU(), nn.Dropout(0.5),
)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
x = torch.randn(32, 20)
y = torch.randint(0, 3, (32,))
for step in range(4):
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_R_RELU_THEN_F_DROPOUT = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.dropout(x, 0.3, training=self.training)

model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(50, 16)
y = torch.randint(0, 4, (50,))
for epoch in range(3):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

# the Dropout moved before the last Linear, and no ReLU after that Linear
_R_OK_DROPOUT_BEFORE_LAST = _edited(
    _R_RELU_THEN_DROPOUT,
    ("nn.Linear(20, 64), nn.ReLU(),", "nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.5),"),
    ("nn.Linear(64, 3), nn.ReLU(), nn.Dropout(0.5),", "nn.Linear(64, 3),"),
)

_R_OK_HIDDEN_RELU6_SOFTPLUS = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU6(), nn.Linear(32, 16), nn.Softplus(), nn.Linear(16, 4))
head = nn.Sequential(nn.Linear(10, 1), nn.Softplus())  # a positive regression target
opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)
x = torch.randn(64, 10)
y = torch.randint(0, 4, (64,))
r = torch.randn(64, 1)
for epoch in range(3):
    loss = F.cross_entropy(model(x), y) + F.mse_loss(head(x), r.abs())
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_R_OK_SYMMETRIC_HARDTANH = """import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3), nn.Hardtanh(-3.0, 3.0))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(40, 8)
y = torch.randint(0, 3, (40,))
for step in range(3):
    loss = nn.CrossEntropyLoss()(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
model.eval()
with torch.no_grad():
    acc = (model(x).argmax(1) == y).float().mean()
print(round(acc.item(), 3))
"""

_S_MODULE_BY_NAME = """import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
to_probs = nn.Softmax(dim=0)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 8)
y = torch.randint(0, 4, (32,))
for epoch in range(3):
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    probs = to_probs(logits)
    preds = probs.argmax(dim=1)
    print(epoch, (preds == y).float().mean().item())
"""

_S_MODULE_IN_A_METHOD = """import torch
import torch.nn as nn

torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)
        self.softmax = nn.Softmax(dim=0)

    def forward(self, x):
        return self.fc(x)

    def predict_proba(self, x):
        return self.softmax(self.fc(x))

model = Net()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(20, 6)
y = torch.randint(0, 3, (20,))
for step in range(3):
    loss = nn.CrossEntropyLoss()(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    pred = model.predict_proba(x).argmax(1)
print((pred == y).sum().item())
"""

_S_MODULE_ENDS_A_SEQUENTIAL = """import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 8)
y = torch.randint(0, 4, (32,))
for epoch in range(3):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
predictor = nn.Sequential(model, nn.Softmax(dim=0))
with torch.no_grad():
    _, predicted = torch.max(predictor(x), 1)
print((predicted == y).float().mean().item())
"""

_S_MODULE_IN_A_FORWARD = """import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(32, 8)
y = torch.randint(0, 4, (32,))
for epoch in range(3):
    loss = nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


class Predictor(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone
        self.probs = nn.Softmax(dim=0)

    def forward(self, x):
        return self.probs(self.backbone(x))


predictor = Predictor(net)
with torch.no_grad():
    out = predictor(x)
    accuracy = (out.argmax(dim=-1) == y).float().mean()
print(round(accuracy.item(), 3))
"""

_S_OK_MODULE_DIM1 = _edited(_S_MODULE_BY_NAME, ("nn.Softmax(dim=0)", "nn.Softmax(dim=1)"))

_S_OK_MODULE_OVER_TIME_STEPS = """import torch
import torch.nn as nn

torch.manual_seed(0)
seq_len, batch, hidden = 7, 4, 8
enc = torch.randn(seq_len, batch, hidden)
score = nn.Linear(hidden, 1)
pool = nn.Softmax(dim=0)
head = nn.Linear(hidden, 2)
opt = torch.optim.SGD([*score.parameters(), *head.parameters()], lr=0.1)
y = torch.randint(0, 2, (batch,))
for step in range(3):
    weights = pool(score(enc).squeeze(-1))          # (seq_len, batch): over the time steps
    ctx = (weights.unsqueeze(-1) * enc).sum(0)
    loss = nn.functional.cross_entropy(head(ctx), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
top_step = weights.argmax(dim=0)
print(top_step.tolist())
"""

_S_OK_MODULE_ONE_SAMPLE_AND_CLUSTERS = """import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Linear(8, 4)
sm = nn.Softmax(dim=0)
sample = torch.randn(8)
probs = sm(net(sample))
print(probs.argmax().item(), round(probs.sum().item(), 3))
batch = torch.randn(5, 8)
cluster = sm(net(batch))          # each of the 4 columns spreads over the 5 items
print(cluster.argmax(dim=0).tolist())
"""

_D_RANDOM_SHUFFLE = """import random
import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(64, 5)
Y = X.sum(1, keepdim=True)
model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(4):
    random.seed(0)
    samples = list(range(64))
    random.shuffle(samples)
    for i in range(0, 64, 16):
        idx = samples[i:i + 16]
        loss = ((model(X[idx]) - Y[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(epoch, samples[:4])
"""

_D_NUMPY_PERMUTATION = """import numpy as np
import torch
import torch.nn as nn

X = np.random.randn(100, 3).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], dtype=np.float32))
model = nn.Linear(3, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.05)
batch_size = 20
for epoch in range(3):
    np.random.seed(42)
    order = np.random.permutation(len(X))
    for start in range(0, len(X), batch_size):
        b = order[start:start + batch_size]
        xb, yb = torch.from_numpy(X[b]), torch.from_numpy(Y[b])
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(epoch, order[:3])
"""

_D_NUMPY_CHOICE_IN_A_HELPER = """import numpy as np
import torch
from torch import nn

data = np.random.RandomState(0).rand(200, 4).astype("float32")
labels = (data.sum(axis=1) > 2).astype("int64")
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def get_batch(n):
    idx = np.random.choice(len(data), n, replace=False)
    return torch.tensor(data[idx]), torch.tensor(labels[idx])

for step in range(5):
    np.random.seed(0)
    xb, yb = get_batch(32)
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_D_SET_SEED_ALL = """import random
import numpy as np
import torch
from torch import nn

def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)

pool = [(torch.randn(6), torch.randn(1)) for _ in range(40)]
model = nn.Linear(6, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    set_seed(1)
    batch = random.sample(pool, 8)
    x = torch.stack([b[0] for b in batch])
    y = torch.stack([b[1] for b in batch])
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_D_SET_SEED_TORCH_AND_RANDOM = """import random
import torch
from torch import nn

def set_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)

pool = list(range(100))
X = torch.randn(100, 6)
Y = X.sum(1, keepdim=True)
model = nn.Linear(6, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    set_seed(1)
    idx = random.sample(pool, 8)
    noise = 0.1 * torch.randn(8, 6)
    loss = nn.functional.mse_loss(model(X[idx] + noise), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_D_NUMPY_RANDN_NOISE = """import numpy as np
import torch
from torch import nn

X = torch.linspace(-1, 1, 50).unsqueeze(1)
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(5):
    np.random.seed(3)
    noise = torch.from_numpy(np.random.randn(50, 1).astype("float32"))
    loss = ((model(X) - (X ** 2 + 0.1 * noise)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_D_OK_RANDOM_SEED_TORCH_DRAWS = """import random
import torch
from torch import nn

model = nn.Linear(10, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
w_true = torch.randn(10, 1)
for step in range(5):
    random.seed(0)          # nothing in the loop draws from random
    x = torch.randn(32, 10)
    loss = ((model(x) - x @ w_true) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_D_OK_SEED_PER_EPOCH = """import numpy as np
import torch
import torch.nn as nn

X = np.random.randn(60, 3).astype(np.float32)
Y = X.sum(1, keepdims=True)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    np.random.seed(epoch)
    order = np.random.permutation(len(X))
    for s in range(0, 60, 20):
        b = order[s:s + 20]
        loss = nn.functional.mse_loss(model(torch.from_numpy(X[b])), torch.from_numpy(Y[b]))
        opt.zero_grad()
        loss.backward()
        opt.step()
print("ok")
"""

_D_OK_OWN_GENERATORS = """import random
import numpy as np
import torch
import torch.nn as nn

X = np.random.randn(60, 3).astype(np.float32)
Y = X.sum(1, keepdims=True)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
rng = np.random.default_rng(0)
picker = random.Random(0)
for epoch in range(3):
    np.random.seed(0)
    random.seed(0)
    order = rng.permutation(len(X))
    first = picker.randrange(20)
    for s in range(first, 60, 20):
        b = order[s:s + 20]
        loss = nn.functional.mse_loss(model(torch.from_numpy(X[b])), torch.from_numpy(Y[b]))
        opt.zero_grad()
        loss.backward()
        opt.step()
print("ok")
"""

_D_OK_SWEEP = """import random
import numpy as np
import torch
import torch.nn as nn

X = np.random.randn(60, 3).astype(np.float32)
Y = X.sum(1, keepdims=True)
results = {}
for lr in [0.1, 0.01]:
    np.random.seed(0)
    random.seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(3):
        order = np.random.permutation(len(X))
        b = order[:20]
        loss = nn.functional.mse_loss(model(torch.from_numpy(X[b])), torch.from_numpy(Y[b]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    results[lr] = loss.item()
print(len(results))
"""

_D_OK_PROBE_AFTER_TRAINING = """import numpy as np
import torch
import torch.nn as nn

X = torch.randn(64, 4)
Y = X.sum(1, keepdim=True)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    loss = ((model(X) - Y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    np.random.seed(123)
    probe = torch.from_numpy(np.random.randn(16, 4).astype(np.float32))
    err = ((model(probe) - probe.sum(1, keepdim=True)) ** 2).mean()
    print(epoch, round(err.item(), 3))
"""

# the list built once, above the loop: each seeded shuffle starts from the last epoch's order
_D_OK_SHUFFLE_IN_PLACE = _edited(
    _D_RANDOM_SHUFFLE,
    ("Y = X.sum(1, keepdim=True)\n", "Y = X.sum(1, keepdim=True)\nsamples = list(range(64))\n"),
    ("    samples = list(range(64))\n", ""),
)

_P_NO_GRAD_BLOCK = """import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 4)
y = torch.randint(0, 3, (32,))
lam = 1e-3
for step in range(3):
    ce = nn.functional.cross_entropy(model(x), y)
    with torch.no_grad():
        l2 = sum(p.pow(2).sum() for p in model.parameters())
    loss = ce + lam * l2
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_P_ITEM_SUM = """import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(6, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
X = torch.randn(40, 6)
Y = torch.randn(40, 1)
for epoch in range(3):
    mse = ((model(X) - Y) ** 2).mean()
    l2 = sum(p.pow(2).sum().item() for p in model.parameters())
    loss = mse + 0.01 * l2
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_P_NO_GRAD_HELPER = """import torch
import torch.nn as nn

@torch.no_grad()
def l1_penalty(net):
    return sum(w.abs().sum() for name, w in net.named_parameters() if "weight" in name)

net = nn.Sequential(nn.Linear(5, 10), nn.Tanh(), nn.Linear(10, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
X = torch.randn(30, 5)
Y = torch.randn(30, 1)
for epoch in range(3):
    loss = nn.functional.mse_loss(net(X), Y)
    loss = loss + 1e-4 * l1_penalty(net)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
"""

_P_ITEM_LOOP = """import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 4)
y = torch.randint(0, 2, (16,))
for step in range(3):
    loss = nn.functional.cross_entropy(model(x), y)
    reg = 0.0
    for p in model.parameters():
        reg += p.norm(2).item() ** 2
    loss = loss + 5e-4 * reg
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_P_OK_NO_GRAD_LOGGING = """import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(20, 4)
y = torch.randn(20, 1)
lam = 1e-3
for step in range(3):
    mse = ((model(x) - y) ** 2).mean()
    loss = mse + lam * sum(p.pow(2).sum() for p in model.parameters())
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        wnorm = sum(p.pow(2).sum() for p in model.parameters())
        total = mse + lam * wnorm
    print(step, round(total.item(), 4), round(wnorm.item(), 4))
"""

_P_OK_TEACHER_NO_GRAD = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
student = nn.Linear(8, 3)
opt = torch.optim.Adam(student.parameters(), lr=1e-2)
x = torch.randn(32, 8)
y = torch.randint(0, 3, (32,))
for step in range(3):
    with torch.no_grad():
        t_logits = teacher(x)
        t_bias = teacher[2].bias.mean()
    s_logits = student(x)
    loss = F.cross_entropy(s_logits, y) + ((s_logits - t_logits) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4), round(t_bias.item(), 4))
"""

_P_OK_ANCHOR_NO_GRAD = """import torch
from torch import nn

model = nn.Linear(3, 2)
with torch.no_grad():
    anchor = [p.clone() for p in model.parameters()]
    scale = sum(p.pow(2).sum() for p in model.parameters())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(12, 3)
y = torch.randn(12, 2)
for step in range(3):
    fit = ((model(x) - y) ** 2).mean()
    drift = sum(((p - a) ** 2).sum() for p, a in zip(model.parameters(), anchor))
    loss = fit + 0.1 * drift / scale
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
"""

_P_OK_ITEM_LOGGING_AND_COEFFICIENT = """import torch
from torch import nn

model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X = torch.randn(40, 5)
Y = torch.randn(40, 1)
base_decay = 1e-3
running = 0.0
for epoch in range(3):
    for i in range(0, 40, 10):
        lam = base_decay / (1.0 + model.weight.norm().item())
        fit = ((model(X[i:i + 10]) - Y[i:i + 10]) ** 2).mean()
        loss = fit + lam * model.weight.pow(2).sum()
        loss = loss + 0.5 * base_decay
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
        wsum = sum(p.abs().sum().item() for p in model.parameters())
        shown = fit + wsum
    print(epoch, round(running, 3), round(shown.item(), 3))
"""


# relu-into-cross-entropy


def test_a_relu6_as_the_last_layer_is_said_with_the_floor_it_puts_under_the_loss() -> None:
    said = the_pitfall(_R_RELU6_LAST, "relu-into-cross-entropy", 12)
    assert said.title == "ReLU6 output fed to cross-entropy: no score can go below 0"
    assert "come straight out of a ReLU6, so none of the 4 classes' scores can go below 0 (nor above 6)" in (
        said.message
    )
    assert "132 of 256 (52%) are exactly 0, and for 35 of the 64 samples" in said.message
    assert "the loss cannot fall below log(1 + 3·e^-6) = 0.007409" in said.message
    assert said.fix.startswith(
        "Remove the ReLU6 after the last layer (a final nn.ReLU6() in the nn.Sequential"
    )


def test_softplus_scores_are_said_never_below_0_and_short_of_gradient_near_it() -> None:
    said = the_pitfall(_R_SOFTPLUS_FORWARD, "relu-into-cross-entropy", 22)
    assert said.title == "Softplus output fed to cross-entropy: no score can go below 0"
    assert "Softplus passes back only 1 - exp(-score) of the gradient" in said.message
    assert "140 of 320 (44%) are below 0.693, among them the score of the right class for 38 of the 64" in (
        said.message
    )
    assert "exactly 0" not in said.message  # a Softplus cuts nothing off
    assert "F.softplus around the last layer's output in forward" in said.fix


def test_a_relu_then_a_dropout_as_the_last_layers_is_said_and_the_dropout_moved() -> None:
    said = the_pitfall(_R_RELU_THEN_DROPOUT, "relu-into-cross-entropy", 14)
    assert "come straight out of a ReLU and the dropout after it" in said.message
    assert "68 of 96 (71%) are exactly 0" in said.message
    assert said.fix.startswith("Remove the ReLU after the last layer")
    assert "Put the Dropout before the last Linear instead" in said.fix
    said = the_pitfall(_R_RELU_THEN_F_DROPOUT, "relu-into-cross-entropy", 23)
    assert "a ReLU and the dropout after it, so none of the 4 classes' scores" in said.message


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(_R_OK_DROPOUT_BEFORE_LAST, id="dropout_before_the_last_linear"),
        pytest.param(_R_OK_HIDDEN_RELU6_SOFTPLUS, id="relu6_softplus_hidden_softplus_regression"),
        pytest.param(_R_OK_SYMMETRIC_HARDTANH, id="hardtanh_of_both_signs"),
    ],
)
def test_activations_that_leave_the_scores_of_any_sign_are_silent(source: str) -> None:
    recorded_silently(source)


# softmax-over-batch


def test_an_nn_softmax_dim0_bound_to_a_name_is_said_with_where_it_was_built() -> None:
    said = the_pitfall(_S_MODULE_BY_NAME, "softmax-over-batch", 16)
    assert said.title == "softmax over dim 0, then an argmax over the classes: 19 of 32 predictions changed"
    assert said.message.startswith(
        "softmax at line 16 (the nn.Softmax built at line 6) normalises over dim 0"
    )
    assert "line 17 takes the argmax over dim 1, the 4 classes" in said.message
    assert said.fix.startswith("Normalise over the classes: nn.Softmax(dim=1) at line 6 (or dim=-1)")


def test_an_nn_softmax_dim0_in_a_method_read_by_its_caller_is_said_at_the_return() -> None:
    said = the_pitfall(_S_MODULE_IN_A_METHOD, "softmax-over-batch", 16)
    assert "(the nn.Softmax built at line 10)" in said.message
    assert "line 28 takes the argmax over dim 1, the 3 classes" in said.message
    assert "5 of the 20 predictions differ" in said.message


def test_an_nn_softmax_dim0_ending_a_sequential_or_a_forward_is_said() -> None:
    said = the_pitfall(_S_MODULE_ENDS_A_SEQUENTIAL, "softmax-over-batch", 16)
    assert "(the nn.Softmax built at line 14)" in said.message
    assert "the same line takes the argmax over dim 1" in said.message
    said = the_pitfall(_S_MODULE_IN_A_FORWARD, "softmax-over-batch", 23)
    assert "(the nn.Softmax built at line 20)" in said.message
    assert "line 29 takes the argmax over dim 1, the 4 classes" in said.message


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(_S_OK_MODULE_DIM1, id="softmax_module_over_dim1"),
        pytest.param(_S_OK_MODULE_OVER_TIME_STEPS, id="softmax_module_over_time_steps"),
        pytest.param(_S_OK_MODULE_ONE_SAMPLE_AND_CLUSTERS, id="softmax_module_one_sample_and_clusters"),
    ],
)
def test_softmax_modules_read_over_the_dim_they_normalise_are_silent(source: str) -> None:
    recorded_silently(source)


# seed-reset-in-loop


def test_random_seed_before_a_shuffle_of_a_fresh_list_is_said() -> None:
    said = the_pitfall(_D_RANDOM_SHUFFLE, "seed-reset-in-loop", 11)
    assert said.message.startswith("random.seed(0) ran 4 times, once per iteration of the loop at line 10")
    assert "Each call puts Python's random generator back to the state of seed 0" in said.message
    assert "random.shuffle at line 13" in said.message
    assert said.fix.startswith("Seed once, above the loop: move random.seed(0) before line 10.")
    assert "rng = random.Random(0); rng.shuffle(…)" in said.fix


def test_np_random_seed_before_numpy_draws_is_said() -> None:
    said = the_pitfall(_D_NUMPY_PERMUTATION, "seed-reset-in-loop", 11)
    assert "np.random.seed(42) ran 3 times" in said.message
    assert "NumPy's random generator back to the state of seed 42" in said.message
    assert "np.random.permutation at line 12" in said.message
    assert "rng = np.random.default_rng(42); rng.permutation(…)" in said.fix
    said = the_pitfall(_D_NUMPY_CHOICE_IN_A_HELPER, "seed-reset-in-loop", 15)
    assert "np.random.choice at line 11" in said.message
    said = the_pitfall(_D_NUMPY_RANDN_NOISE, "seed-reset-in-loop", 9)
    assert "np.random.randn at line 10" in said.message
    assert "rng.standard_normal(…)" in said.fix


def test_a_set_seed_helper_is_said_once_naming_each_generator_whose_draws_repeat() -> None:
    said = the_pitfall(_D_SET_SEED_ALL, "seed-reset-in-loop", 15)
    assert said.message.startswith("set_seed(1) ran 3 times")
    assert "Each call puts Python's random generator back" in said.message
    assert "random.sample at line 16" in said.message
    said = the_pitfall(_D_SET_SEED_TORCH_AND_RANDOM, "seed-reset-in-loop", 15)
    assert "Each call puts torch's and Python's random generators back to the state of seed 1" in said.message
    assert "torch.randn at line 17; random.sample at line 16" in said.message
    assert "torch.randn(…, generator=g); rng = random.Random(1); rng.sample(…)" in said.fix


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(_D_OK_RANDOM_SEED_TORCH_DRAWS, id="random_seed_but_only_torch_draws"),
        pytest.param(_D_OK_SEED_PER_EPOCH, id="numpy_seed_per_epoch"),
        pytest.param(_D_OK_OWN_GENERATORS, id="draws_from_generators_of_their_own"),
        pytest.param(_D_OK_SWEEP, id="seeds_before_each_run_of_a_sweep"),
        pytest.param(_D_OK_PROBE_AFTER_TRAINING, id="numpy_probe_drawn_after_training"),
        pytest.param(_D_OK_SHUFFLE_IN_PLACE, id="shuffle_in_place_of_a_list_kept_across_epochs"),
    ],
)
def test_python_and_numpy_seeds_that_repeat_nothing_the_loop_uses_are_silent(source: str) -> None:
    recorded_silently(source)


# penalty-without-gradient


def test_a_penalty_computed_under_no_grad_is_said_with_the_block_to_leave() -> None:
    said = the_pitfall(_P_NO_GRAD_BLOCK, "penalty-without-gradient", 14)
    assert (
        said.title == "l2 is computed under torch.no_grad(): it adds to the loss and nothing to the gradients"
    )
    assert "computed at line 13 from the values of 4 parameters (model.0.weight" in said.message
    assert "with gradients off, under torch.no_grad(). That term has no grad_fn" in said.message
    assert said.fix.startswith("Compute it with gradients on: take line 13 out of the with block at line 12")


def test_a_penalty_from_a_no_grad_decorated_helper_is_said() -> None:
    said = the_pitfall(_P_NO_GRAD_HELPER, "penalty-without-gradient", 14)
    assert "computed at line 6 from the values of 2 parameters (net.0.weight, net.2.weight)" in said.message
    assert said.fix.startswith("Compute it with gradients on: remove the no_grad decorator of l1_penalty")


def test_a_penalty_read_off_with_item_is_said_with_the_line_that_read_it() -> None:
    said = the_pitfall(_P_ITEM_SUM, "penalty-without-gradient", 12)
    assert said.title == "l2 is a Python number (.item()): it adds to the loss and nothing to the gradients"
    assert "a Python number computed at line 11 from the parameters' values read with .item()" in said.message
    assert said.fix.startswith(
        "Keep it a tensor, without .item(): l2 = sum(p.pow(2).sum() for p in model.parameters())"
    )
    said = the_pitfall(_P_ITEM_LOOP, "penalty-without-gradient", 13)
    assert said.title.startswith("reg is a Python number (.item())")
    assert "computed at line 12" in said.message
    assert "reg += p.norm(2) ** 2" in said.fix


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(_P_OK_NO_GRAD_LOGGING, id="weight_norm_logged_under_no_grad"),
        pytest.param(_P_OK_TEACHER_NO_GRAD, id="teacher_run_on_the_batch_under_no_grad"),
        pytest.param(_P_OK_ANCHOR_NO_GRAD, id="anchor_and_scale_taken_under_no_grad"),
        pytest.param(_P_OK_ITEM_LOGGING_AND_COEFFICIENT, id="item_for_logs_and_a_coefficient"),
    ],
)
def test_no_grad_and_item_reads_that_add_no_penalty_are_silent(source: str) -> None:
    recorded_silently(source)
