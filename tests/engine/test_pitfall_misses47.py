"""Misses of hunt 47, now told: a ReLU as a classifier's last layer before cross_entropy
(relu-into-cross-entropy), a dict of state_dict snapshots (snapshot-shares-weights), loss
tensors kept in a list (loss-tensor-accumulated) and a softmax over dim 0 read with an argmax
over the classes (softmax-over-batch). Each with the clean twins that must stay silent."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

_D_BAD1_DICT_BY_EPOCH = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
checkpoints, vals = {}, {}
for epoch in range(5):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    vals[epoch] = loss.item()
    checkpoints[epoch] = model.state_dict()
best_epoch = min(vals, key=vals.get)
model.load_state_dict(checkpoints[best_epoch])
print(best_epoch)
"""
_D_BAD2_HISTORY_NO_LOAD = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.05)
history = {}
for epoch in range(6):
    x = torch.randn(32, 4); y = x.sum(1, keepdim=True)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    history[f"epoch_{epoch}"] = model.state_dict()
drift = (history["epoch_5"]["0.weight"] - history["epoch_0"]["0.weight"]).norm()
print("weight drift", drift.item())
"""
_D_BAD3_BEST_IN_DICT = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.2)
xv, yv = torch.randn(64, 6), torch.randint(0, 3, (64,))
best = {"loss": float("inf"), "state": None}
for epoch in range(8):
    x, y = torch.randn(64, 6), torch.randint(0, 3, (64,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    with torch.no_grad():
        val = F.cross_entropy(model(xv), yv).item()
    if val < best["loss"]:
        best["loss"] = val
        best["state"] = model.state_dict()
model.load_state_dict(best["state"])
print(round(best["loss"], 4))
"""
_D_OK1_DEEPCOPY = """import copy
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
checkpoints, vals = {}, {}
for epoch in range(5):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    vals[epoch] = loss.item()
    checkpoints[epoch] = copy.deepcopy(model.state_dict())
best_epoch = min(vals, key=vals.get)
model.load_state_dict(checkpoints[best_epoch])
print(best_epoch)
"""
_D_OK2_CLONE = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
checkpoints = {}
for epoch in range(5):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    checkpoints[epoch] = {k: v.detach().clone() for k, v in model.state_dict().items()}
model.load_state_dict(checkpoints[2])
print(len(checkpoints))
"""
_D_OK3_KFOLD = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
X, Y = torch.randn(60, 5), torch.randn(60, 1)
fold_states = {}
for fold in range(3):
    model = nn.Linear(5, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        loss = F.mse_loss(model(X), Y)
        opt.zero_grad(); loss.backward(); opt.step()
    fold_states[fold] = model.state_dict()
final = nn.Linear(5, 1)
final.load_state_dict(fold_states[1])
print(sorted(fold_states))
"""
_D_OK4_CKPT_DICT_SAVE = """import io
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 2)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(4):
    x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch}
    buf = io.BytesIO()
    torch.save(ckpt, buf)
buf.seek(0)
state = torch.load(buf)
model.load_state_dict(state["model"])
print(state["epoch"])
"""
_D_OK5_TWO_MODELS = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
student, teacher = nn.Linear(8, 3), nn.Linear(8, 3)
opt = torch.optim.SGD(list(student.parameters()) + list(teacher.parameters()), lr=0.1)
states = {}
for step in range(5):
    x = torch.randn(16, 8)
    loss = F.mse_loss(student(x), teacher(x).detach()) + teacher(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
states["student"] = student.state_dict()
states["teacher"] = teacher.state_dict()
student.load_state_dict(states["teacher"])
print(sorted(states))
"""
_D_OK6_EDIT_AND_LOAD = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
masks = {"weight": (torch.rand(4, 8) > 0.5).float()}
for step in range(5):
    x, y = torch.randn(16, 8), torch.randn(16, 4)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    sd = {}
    sd["cur"] = model.state_dict()
    sd["cur"]["weight"].mul_(masks["weight"])
    model.load_state_dict(sd["cur"])
print(model.weight.eq(0).sum().item())
"""
_L_BAD1_VAL_LOSSES_GRAD_ON = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for _ in range(3):
        x, y = torch.randn(16, 10), torch.randn(16, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    val_losses = []
    for _ in range(4):
        xv, yv = torch.randn(16, 10), torch.randn(16, 1)
        val_losses.append(nn.functional.mse_loss(model(xv), yv))
    print(epoch, sum(val_losses) / len(val_losses))
"""
_L_BAD2_LOSSES_APPEND_RUN = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for step in range(30):
    x, y = torch.randn(16, 10), torch.randn(16, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss)
print(torch.stack(losses).mean())
"""
_L_BAD3_BATCH_LOSSES_EPOCH = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    batch_losses = []
    for i in range(4):
        x, y = torch.randn(16, 8), torch.randn(16, 1)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        batch_losses.append(loss)
    print(epoch, round((sum(batch_losses) / len(batch_losses)).item(), 3))
"""
_L_BAD4_VAL_LIST_EVAL_STACK = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
val_set = [(torch.randn(64, 20), torch.randint(0, 4, (64,))) for _ in range(5)]
for epoch in range(3):
    model.train()
    for _ in range(4):
        x, y = torch.randn(64, 20), torch.randint(0, 4, (64,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    model.eval()
    val_losses = []
    for xv, yv in val_set:
        out = model(xv)
        val_losses.append(F.cross_entropy(out, yv))
    print(epoch, torch.stack(val_losses).mean().item())
"""
_L_OK1_ITEM = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for step in range(30):
    x, y = torch.randn(16, 10), torch.randn(16, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
print(sum(losses) / len(losses))
"""
_L_OK2_DEEP_SUPERVISION = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
blocks = nn.ModuleList([nn.Linear(16, 16) for _ in range(3)])
heads = nn.ModuleList([nn.Linear(16, 4) for _ in range(3)])
opt = torch.optim.SGD(list(blocks.parameters()) + list(heads.parameters()), lr=0.1)
for step in range(5):
    h, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    losses = []
    for block, head in zip(blocks, heads):
        h = torch.relu(block(h))
        losses.append(F.cross_entropy(head(h), y))
    total = sum(losses)
    opt.zero_grad(); total.backward(); opt.step()
print([round(l.item(), 3) for l in losses])
"""
_L_OK3_REINFORCE = """import torch, torch.nn as nn
torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(5):
    log_probs, rewards = [], []
    state = torch.randn(4)
    for t in range(10):
        dist = torch.distributions.Categorical(logits=policy(state))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        rewards.append(float(action) - 0.5)
        state = torch.randn(4)
    returns = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
    loss = -(torch.stack(log_probs) * returns).sum()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""
_L_OK4_GRAD_ACCUM_PARTIAL = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
losses = []
for i in range(10):
    x, y = torch.randn(8, 8), torch.randint(0, 2, (8,))
    losses.append(F.cross_entropy(model(x), y))
    if len(losses) == accum:
        loss = torch.stack(losses).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        losses = []
print(len(losses))
"""
_L_OK5_VAL_NO_GRAD = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for _ in range(3):
        x, y = torch.randn(16, 10), torch.randn(16, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    val_losses = []
    with torch.no_grad():
        for _ in range(4):
            xv, yv = torch.randn(16, 10), torch.randn(16, 1)
            val_losses.append(nn.functional.mse_loss(model(xv), yv))
    print(epoch, sum(val_losses) / len(val_losses))
"""
_L_OK6_DETACH = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for step in range(30):
    x, y = torch.randn(16, 10), torch.randn(16, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.detach())
print(torch.stack(losses).mean())
"""
_L_OK7_MULTITASK_SUM = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
trunk = nn.Linear(10, 16)
heads = nn.ModuleDict({"a": nn.Linear(16, 1), "b": nn.Linear(16, 1)})
opt = torch.optim.Adam(list(trunk.parameters()) + list(heads.parameters()), lr=1e-2)
for step in range(5):
    x = torch.randn(8, 10)
    h = torch.relu(trunk(x))
    task_losses = [F.mse_loss(heads[k](h), torch.randn(8, 1)) for k in heads]
    loss = torch.stack(task_losses).sum()
    opt.zero_grad(); loss.backward(); opt.step()
print([round(t.item(), 3) for t in task_losses])
"""
_R_BAD1_SEQ_RELU_CE = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4), nn.ReLU())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x, y = torch.randn(32, 10), torch.randint(0, 4, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""
_R_BAD2_FORWARD_RELU_CELOSS = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.fc2 = nn.Linear(64, 5)
    def forward(self, x):
        x = F.relu(self.fc1(x))
        return F.relu(self.fc2(x))
net = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
for epoch in range(5):
    inputs, labels = torch.randn(64, 20), torch.randint(0, 5, (64,))
    optimizer.zero_grad()
    outputs = net(inputs)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    print(epoch, round(loss.item(), 4))
"""
_R_BAD3_INPLACE_RELU_CNN = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
    nn.Linear(8, 10), nn.ReLU(inplace=True),
)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for it in range(8):
    imgs, labels = torch.randn(16, 1, 12, 12), torch.randint(0, 10, (16,))
    loss = criterion(model(imgs), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
"""
_R_OK1_RELU_HIDDEN = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x, y = torch.randn(32, 10), torch.randint(0, 4, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""
_R_OK2_RELU_REGRESSION = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), nn.ReLU())  # counts are >= 0
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(10):
    x = torch.randn(32, 10)
    y = x[:, :1].abs() * 3
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""
_R_OK3_LEAKY_LAST = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4), nn.LeakyReLU(0.1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x, y = torch.randn(32, 10), torch.randint(0, 4, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""
_R_OK4_RELU_FEATURES_THEN_HEAD = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 5)
    def forward(self, x):
        return self.head(self.body(x))
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for epoch in range(5):
    x, y = torch.randn(64, 20), torch.randint(0, 5, (64,))
    feats = net.body(x)
    loss = F.cross_entropy(net.head(feats), y) + 1e-3 * feats.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""
_S_BAD1_SOFTMAX_DIM0_PRED = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(6, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
with torch.no_grad():
    probs = torch.softmax(model(x), dim=0)
    pred = probs.argmax(dim=1)
print((pred == y).float().mean().item())
"""
_S_BAD2_INLINE_MAX = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
X, Y = torch.randn(100, 4), torch.randint(0, 5, (100,))
model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 5))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(30):
    loss = F.cross_entropy(model(X), Y)
    opt.zero_grad(); loss.backward(); opt.step()
model.eval()
with torch.no_grad():
    conf, pred = torch.max(F.softmax(model(X), dim=0), 1)
print("acc", (pred == Y).float().mean().item(), "mean conf", conf.mean().item())
"""
_S_OK1_SOFTMAX_DIM1 = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(6, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
with torch.no_grad():
    probs = torch.softmax(model(x), dim=1)
    pred = probs.argmax(dim=1)
print((pred == y).float().mean().item())
"""
_S_OK2_ATTENTION_SEQ_FIRST = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
T, B, H = 7, 4, 16
enc = torch.randn(T, B, H)
attn = nn.Linear(H, 1)
opt = torch.optim.SGD(attn.parameters(), lr=0.1)
for step in range(5):
    scores = attn(enc).squeeze(-1)          # (T, B)
    weights = F.softmax(scores, dim=0)      # over the time steps
    context = (weights.unsqueeze(-1) * enc).sum(0)
    loss = context.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(weights.argmax(dim=0).tolist())
"""
_S_OK3_SINGLE_SAMPLE = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(6, 3)
with torch.no_grad():
    logits = model(torch.randn(6))
    probs = torch.softmax(logits, dim=0)
    print(probs.argmax().item(), round(probs.max().item(), 3))
"""
_S_OK4_COLUMN_NORM_THEN_DIM0 = """import torch
torch.manual_seed(0)
sim = torch.randn(5, 8)
assign = torch.softmax(sim, dim=0)   # each column (cluster) spreads over the 5 items
best_item = assign.argmax(dim=0)
print(best_item.tolist())
"""

_SAID = [
    pytest.param(
        _R_BAD1_SEQ_RELU_CE,
        "relu-into-cross-entropy",
        7,
        ["out of a ReLU", "are exactly 0"],
        "Remove the ReLU after the last layer",
        id="r_bad1_seq_relu_ce",
    ),
    pytest.param(
        _R_BAD2_FORWARD_RELU_CELOSS,
        "relu-into-cross-entropy",
        18,
        ["149 of 320 (47%) are exactly 0", "for 28 of the 64 samples the score of the right class is 0"],
        "nn.CrossEntropyLoss",
        id="r_bad2_forward_relu_celoss",
    ),
    pytest.param(
        _R_BAD3_INPLACE_RELU_CNN,
        "relu-into-cross-entropy",
        11,
        ["none of the 10 classes' scores can go below 0"],
        "Remove the ReLU",
        id="r_bad3_inplace_relu_cnn",
    ),
    pytest.param(
        _D_BAD1_DICT_BY_EPOCH,
        "snapshot-shares-weights",
        11,
        ["model.load_state_dict(checkpoints[best_epoch]) (line 13) loads model into itself"],
        "checkpoints[epoch] = copy.deepcopy(model.state_dict())",
        id="d_bad1_dict_by_epoch",
    ),
    pytest.param(
        _D_BAD2_HISTORY_NO_LOAD,
        "snapshot-shares-weights",
        10,
        ["All 6 entries are the same tensors"],
        'history[f"epoch_{epoch}"] = copy.deepcopy(model.state_dict())',
        id="d_bad2_history_no_load",
    ),
    pytest.param(
        _D_BAD3_BEST_IN_DICT,
        "snapshot-shares-weights",
        15,
        ["model.load_state_dict(best['state']) (line 16)"],
        'best["state"] = copy.deepcopy(model.state_dict())',
        id="d_bad3_best_in_dict",
    ),
    pytest.param(
        _L_BAD1_VAL_LOSSES_GRAD_ON,
        "loss-tensor-accumulated",
        13,
        ["no backward() walked their graphs", "The 4 in val_losses hold 4,416 bytes"],
        "val_losses.append(nn.functional.mse_loss(model(xv), yv).item())",
        id="l_bad1_val_losses_grad_on",
    ),
    pytest.param(
        _L_BAD2_LOSSES_APPEND_RUN,
        "loss-tensor-accumulated",
        12,
        [
            "losses holds 30 of them",
            "6 per loss here, 180 in all",
            "backward() already freed the tensors each graph saved",
        ],
        "losses.append(loss.item())",
        id="l_bad2_losses_append_run",
    ),
    pytest.param(
        _L_BAD3_BATCH_LOSSES_EPOCH,
        "loss-tensor-accumulated",
        11,
        ["batch_losses holds 4 of them"],
        "batch_losses.append(loss.item())",
        id="l_bad3_batch_losses_epoch",
    ),
    pytest.param(
        _S_BAD1_SOFTMAX_DIM0_PRED,
        "softmax-over-batch",
        10,
        [
            "the 32 samples of the batch, and line 11 takes the argmax over dim 1",
            "5 of the 32 predictions differ",
        ],
        "dim=1",
        id="s_bad1_softmax_dim0_pred",
    ),
    pytest.param(
        _S_BAD2_INLINE_MAX,
        "softmax-over-batch",
        11,
        ["17 of the 100 predictions differ"],
        "dim=1",
        id="s_bad2_inline_max",
    ),
]


@pytest.mark.parametrize(("source", "kind", "line", "said", "fix"), _SAID)
def test_each_miss_is_said_at_its_line_with_this_runs_numbers(
    source: str, kind: str, line: int, said: list[str], fix: str
) -> None:
    found = the_pitfall(source, kind, line)
    for part in said:
        assert part in found.message, found.message
    assert fix in found.fix, found.fix


_SILENT = [
    pytest.param(_D_OK1_DEEPCOPY, id="d_ok1_deepcopy"),
    pytest.param(_D_OK2_CLONE, id="d_ok2_clone"),
    pytest.param(_D_OK3_KFOLD, id="d_ok3_kfold"),
    pytest.param(_D_OK4_CKPT_DICT_SAVE, id="d_ok4_ckpt_dict_save"),
    pytest.param(_D_OK5_TWO_MODELS, id="d_ok5_two_models"),
    pytest.param(_D_OK6_EDIT_AND_LOAD, id="d_ok6_edit_and_load"),
    pytest.param(_L_OK1_ITEM, id="l_ok1_item"),
    pytest.param(_L_OK2_DEEP_SUPERVISION, id="l_ok2_deep_supervision"),
    pytest.param(_L_OK3_REINFORCE, id="l_ok3_reinforce"),
    pytest.param(_L_OK4_GRAD_ACCUM_PARTIAL, id="l_ok4_grad_accum_partial"),
    pytest.param(_L_OK5_VAL_NO_GRAD, id="l_ok5_val_no_grad"),
    pytest.param(_L_OK6_DETACH, id="l_ok6_detach"),
    pytest.param(_L_OK7_MULTITASK_SUM, id="l_ok7_multitask_sum"),
    pytest.param(_R_OK1_RELU_HIDDEN, id="r_ok1_relu_hidden"),
    pytest.param(_R_OK2_RELU_REGRESSION, id="r_ok2_relu_regression"),
    pytest.param(_R_OK3_LEAKY_LAST, id="r_ok3_leaky_last"),
    pytest.param(_R_OK4_RELU_FEATURES_THEN_HEAD, id="r_ok4_relu_features_then_head"),
    pytest.param(_S_OK1_SOFTMAX_DIM1, id="s_ok1_softmax_dim1"),
    pytest.param(_S_OK2_ATTENTION_SEQ_FIRST, id="s_ok2_attention_seq_first"),
    pytest.param(_S_OK3_SINGLE_SAMPLE, id="s_ok3_single_sample"),
    pytest.param(_S_OK4_COLUMN_NORM_THEN_DIM0, id="s_ok4_column_norm_then_dim0"),
]


@pytest.mark.parametrize("source", _SILENT)
def test_the_clean_twins_stay_silent(source: str) -> None:
    recorded_silently(source)
