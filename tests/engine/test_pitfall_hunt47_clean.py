"""Correct code that came close to six detectors, from a false-alarm hunt over 92 snippets
in the style of tutorials, course notebooks, Kaggle scripts and research code (and 15 with
the mistakes, written unusually): each near miss below was flagged before and must stay
silent; each catch below is one the hunt widened a detector to, or a boundary of a fix that
must still be told. Detectors: schedulers.py, snapshots.py, axis_order.py, late_retain.py,
running_totals.py (custom_backward.py met no false alarm)."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

# a SequentialLR's second part, whose last_epoch is 0 right at the milestone (lr-scheduler-never-stepped)
SEQUENTIAL_AT_MILESTONE = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)

from torch.optim.lr_scheduler import LinearLR, ExponentialLR, SequentialLR
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
warm = LinearLR(opt, start_factor=0.25, total_iters=2)
decay = ExponentialLR(opt, gamma=0.9)
sched = SequentialLR(opt, [warm, decay], milestones=[2])
for epoch in range(2):
    for _ in range(3):
        x, y = torch.randn(16, 8), torch.randn(16, 1)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    sched.step()
print(round(opt.param_groups[0]["lr"], 4))
"""

# a scheduler built after the last step, only to be saved with a checkpoint (lr-scheduler-never-stepped)
BUILT_AFTER_TRAINING = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)

model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
# stage 2 (fine-tuning) is run by another script: save everything it needs to resume
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20)
import io
ckpt = {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict()}
torch.save(ckpt, io.BytesIO())
print(sorted(ckpt))
"""

# a WGAN critic's weights clipped through its state_dict and loaded back at once (snapshot-shares-weights)
CLIP_THROUGH_STATE_DICT = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
critic = nn.Linear(8, 1)
opt = torch.optim.RMSprop(critic.parameters(), lr=5e-4)
for step in range(5):
    real, fake = torch.randn(16, 8) + 1, torch.randn(16, 8)
    loss = critic(fake).mean() - critic(real).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    sd = critic.state_dict()
    for k in sd:
        sd[k].clamp_(-0.01, 0.01)
    critic.load_state_dict(sd)
print(critic.weight.abs().max().item() <= 0.01)
"""

# each fold's own model's state_dict, all held by one ModuleList (snapshot-shares-weights)
KFOLD_MEMBERS = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
folds, states, members = 3, [], nn.ModuleList()
for fold in range(folds):
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        x, y = torch.randn(16, 8), torch.randn(16, 1)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    states.append(model.state_dict())
    members.append(model)
print(len(states), len(members))
"""

# three models' state_dicts averaged into a soup, the models held by one ModuleList (snapshot-shares-weights)
MODEL_SOUP = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
models = [nn.Linear(8, 1) for _ in range(3)]
ensemble = nn.ModuleList(models)
opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in models]
snapshots = []
for m, opt in zip(models, opts):
    for step in range(3):
        x, y = torch.randn(16, 8), torch.randn(16, 1)
        loss = F.mse_loss(m(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    snapshots.append(m.state_dict())
avg = {k: torch.stack([s[k] for s in snapshots]).mean(0) for k in snapshots[0]}
soup = nn.Linear(8, 1); soup.load_state_dict(avg)
print(soup.weight.shape)
"""

# a pyramidal LSTM stacking pairs of frames, (3, 8, 4) into (3, 4, 8) (reshape-instead-of-permute)
PYRAMIDAL_LSTM = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class PyramidalLSTM(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lstm = nn.LSTM(2 * d, d, batch_first=True)
    def forward(self, x):
        B, T, D = x.shape
        x = x.contiguous().view(B, T // 2, D * 2)
        out, _ = self.lstm(x)
        return out
layer = PyramidalLSTM(4)
x = torch.randn(3, 8, 4)
out = layer(x)
out.mean().backward()
print(out.shape)
"""

# speech frames stacked by twos, (2, 16, 8) into (2, 8, 16) (reshape-instead-of-permute)
FRAME_STACKING = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
feats = torch.randn(2, 16, 8)
stack = 2
B, T, Fdim = feats.shape
stacked = feats.reshape(B, T // stack, Fdim * stack)
print(stacked.shape)
"""

# neighbouring tokens concatenated in pairs, (2, 8, 4) into (2, 4, 8) (reshape-instead-of-permute)
TOKEN_MERGING = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(2, 8, 4, requires_grad=True)   # (B, N, C)
B, N, C = x.shape
merged = x.reshape(B, N // 2, 2 * C)           # concat each pair of neighbouring tokens
reduce = nn.Linear(2 * C, C)
out = reduce(merged)
out.sum().backward()
print(out.shape, x.grad.shape)
"""

# retain_grad() called again after the backward it was in effect for (retain-grad-after-backward)
RETAIN_REPEATED = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(3, requires_grad=True)
y = x * 2
y.retain_grad()
z = (y ** 2).sum()
z.backward()
print(y.grad)
y.retain_grad()   # harmless: already retained
print(y.grad is not None)
"""

# truncated BPTT: a chunk loss backwarded every 4 steps, its last partial chunk unused (loss-tensor-accumulated)
TBPTT_LEFTOVER = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
cell = nn.RNNCell(3, 6)
head = nn.Linear(6, 3)
opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.01)
seq = torch.randn(12, 1, 3)
h = torch.zeros(1, 6)
chunk_loss = 0
for t in range(11):
    h = cell(seq[t], h)
    chunk_loss = chunk_loss + F.mse_loss(head(h), seq[t + 1])
    if (t + 1) % 4 == 0:
        opt.zero_grad(); chunk_loss.backward(); opt.step()
        h = h.detach(); chunk_loss = 0
print(type(chunk_loss).__name__)
"""

# sum(p.norm() for p in model.parameters()) printed each epoch (loss-tensor-accumulated)
WEIGHT_NORM_LOG = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    wnorm = sum(p.norm() for p in model.parameters())
    print(epoch, round(float(wnorm), 2))
"""

NEAR_MISSES = {
    "SEQUENTIAL_AT_MILESTONE": SEQUENTIAL_AT_MILESTONE,
    "BUILT_AFTER_TRAINING": BUILT_AFTER_TRAINING,
    "CLIP_THROUGH_STATE_DICT": CLIP_THROUGH_STATE_DICT,
    "KFOLD_MEMBERS": KFOLD_MEMBERS,
    "MODEL_SOUP": MODEL_SOUP,
    "PYRAMIDAL_LSTM": PYRAMIDAL_LSTM,
    "FRAME_STACKING": FRAME_STACKING,
    "TOKEN_MERGING": TOKEN_MERGING,
    "RETAIN_REPEATED": RETAIN_REPEATED,
    "TBPTT_LEFTOVER": TBPTT_LEFTOVER,
    "WEIGHT_NORM_LOG": WEIGHT_NORM_LOG,
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])


# --- catches: widened, and the fixes' boundaries --------------------------------------------

# best_state = model.state_dict() loaded into a fresh model after the loop (widened: the model
# loaded into is not the one the snapshot was taken from)
INTO_A_FRESH_MODEL = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
xv, yv = torch.randn(32, 8), torch.randn(32, 1)
best, best_weights = 1e9, None
for epoch in range(6):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    val = F.mse_loss(model(xv), yv).item()
    if val < best:
        best, best_weights = val, model.state_dict()
final = nn.Linear(8, 1)
final.load_state_dict(best_weights)
print(round(best, 3))
"""


def test_a_snapshot_loaded_into_a_fresh_model_is_said_at_the_snapshot() -> None:
    found = the_pitfall(INTO_A_FRESH_MODEL, "snapshot-shares-weights", 13)
    assert "final.load_state_dict(best_weights) (line 15) gives final the weights of model's last step" in (
        found.message
    )


# a SequentialLR never stepped itself is still told, at its own line (its parts are not)
SEQUENTIAL_NEVER_STEPPED = """\
import torch, torch.nn as nn
from torch.optim.lr_scheduler import LinearLR, ExponentialLR, SequentialLR
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
warm = LinearLR(opt, start_factor=0.25, total_iters=2)
decay = ExponentialLR(opt, gamma=0.9)
sched = SequentialLR(opt, [warm, decay], milestones=[2])
for epoch in range(6):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(opt.param_groups[0]["lr"], 4))
"""


def test_a_sequential_lr_never_stepped_is_said_at_its_line() -> None:
    the_pitfall(SEQUENTIAL_NEVER_STEPPED, "lr-scheduler-never-stepped", 8)


# heads split with the sizes written in the wrong order: the division is at a place that
# did not move, so it is no regrouping
HEADS_OUT_OF_ORDER = """\
import torch
torch.manual_seed(0)
B, T, H, C = 2, 5, 4, 12
q = torch.randn(B, T, H, C // H)
heads = q.view(B, H, T, C // H)
print(heads.shape)
"""


def test_a_view_dividing_only_where_nothing_moved_is_still_said() -> None:
    the_pitfall(HEADS_OUT_OF_ORDER, "reshape-instead-of-permute", 5)


# early stopping that reverts to the best weights in a later iteration: taken and loaded in
# different blocks, steps between them
REVERT_IN_THE_LOOP = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
xv, yv = torch.randn(32, 8), torch.randn(32, 1)
best, best_state = float("inf"), None
for epoch in range(6):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    val = F.mse_loss(model(xv), yv).item()
    if val < best:
        best, best_state = val, model.state_dict()
    elif best_state is not None:
        model.load_state_dict(best_state)
print(round(best, 3))
"""


def test_a_revert_to_the_best_weights_in_the_loop_is_still_said() -> None:
    the_pitfall(REVERT_IN_THE_LOOP, "snapshot-shares-weights", 13)


# a running total kept with += in an epoch loop, its line never walked by a backward
EPOCH_TOTAL_TIMES_SIZE = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    epoch_loss = 0.0
    for i in range(4):
        x, y = torch.randn(16, 8), torch.randn(16, 1)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        epoch_loss = epoch_loss + loss * x.size(0)
    print(epoch, round(epoch_loss.item() / 64, 3))
"""


def test_a_total_of_loss_times_batch_size_reset_each_epoch_is_still_said() -> None:
    the_pitfall(EPOCH_TOTAL_TIMES_SIZE, "loss-tensor-accumulated", 11)


_PREVIEW = """import torch

# plot OneCycleLR's rates on a throwaway optimizer before training
dummy = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
preview = torch.optim.lr_scheduler.OneCycleLR(dummy, max_lr=0.1, total_steps=10)
lrs = []
for _ in range(9):
    dummy.step()
    preview.step()
    lrs.append(preview.get_last_lr()[0])
print([round(v, 4) for v in lrs[:3]])
"""


def test_an_optimizer_that_only_drives_a_schedule_preview_is_not_said_to_step_without_gradients() -> None:
    recorded_silently(_PREVIEW)


def test_a_named_parameter_stepped_under_a_scheduler_without_backward_is_still_said() -> None:
    # the same loop over a parameter the snippet names: a training loop missing its backward()
    source = _PREVIEW.replace(
        "dummy = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)",
        "w = torch.zeros(1, requires_grad=True)\ndummy = torch.optim.SGD([w], lr=0.1)\nloss = (w - 3) ** 2",
    )
    the_pitfall(source, "step-without-gradients", 10)
