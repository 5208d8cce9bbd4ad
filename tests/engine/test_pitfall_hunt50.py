"""A false-alarm hunt over 205 correct snippets in areas earlier hunts skipped (transfer
learning that unfreezes into a new param group, k-fold and sweeps that rebuild and re-seed per
run, LR range tests, early stopping, distillation, DQN/DDPG/SAC/PPO/REINFORCE, WGAN-GP and R1,
PINNs, MAML and Reptile, SimCLR/MoCo/BYOL, truncated BPTT, seq2seq, VAEs and flows, Bayes by
backprop, LoRA, EMA/SWA, SAM and Lookahead, gradient accumulation, bf16 autocast, mixup and
CutMix, parametrizations, by-hand SGD) and 38 buggy variants.

False alarms found, each now silent, its bug still told:

- missing-zero-grad, of gradients cleared in place through ``.data`` (``p.grad.data.zero_()``,
  how Module.zero_grad() once cleared): stale_grads.py, hand_updates.py;
- inputs-shuffled-apart-from-labels, of arrays shuffled in place whose inputs and labels are
  then made anew from them (a table of features and label; data and labels shuffled with the
  saved-state trick), the previous epoch's ``X`` and ``y`` taken for partners left behind:
  in_place_shuffles.py;
- snapshot-shares-weights, of a sweep's best run kept as ``model.state_dict()``, each run's
  model built anew in the loop with no step after the snapshot: snapshots.py;
- loss-diverging, of a learning-rate range test that raises the rate each step and stops
  once the loss is no longer finite: diverging.py.

Widened: custom-backward-ignores-gradient tells a backward that reads only its gradient's
shape (``return -torch.ones_like(grad_output)``, a broken gradient reversal). The rest are
guards: the correct snippets closest to a detector, and their buggy variants."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

# the old Module.zero_grad(), written out: zeroes each .grad in place through .data, which
# leaves the gradient's version as it was (missing-zero-grad, optimizer steps)
ZERO_THROUGH_DATA = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(32, 5), torch.randn(32, 1)
def zero_grads(params):
    # the old Module.zero_grad(): clear in place through .data
    for p in params:
        if p.grad is not None:
            p.grad.data.zero_()
for step in range(6):
    zero_grads(model.parameters())
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

# by-hand SGD in the old .data style, the gradient zeroed before each backward (missing-zero-grad,
# updates by hand)
HAND_ZERO_THROUGH_DATA = """\
import torch, torch.nn.functional as F
torch.manual_seed(0)
W = torch.randn(4, 2, requires_grad=True)
x, t = torch.randn(30, 4), torch.randint(0, 2, (30,))
for it in range(15):
    logits = x @ W
    loss = F.cross_entropy(logits, t)
    if W.grad is not None:
        W.grad.data.zero_()
    loss.backward()
    W.data -= 0.5 * W.grad.data
print(round(loss.item(), 4))
"""

# features and label in the columns of one array, shuffled in place, both made anew from it
# (inputs-shuffled-apart-from-labels: the X of the epoch before was taken for labels left behind)
TABLE_SHUFFLED = """\
import torch, torch.nn as nn, torch.nn.functional as F
import numpy as np
torch.manual_seed(0)
rng = np.random.default_rng(0)
table = np.concatenate([rng.normal(size=(50, 3)), rng.integers(0, 2, size=(50, 1))], axis=1).astype("float32")
model = nn.Linear(3, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(3):
    np.random.shuffle(table)                 # rows move with their label column
    X = torch.from_numpy(table[:, :3]); y = torch.from_numpy(table[:, 3:])
    loss = F.binary_cross_entropy_with_logits(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# a list of rows (features, then the label) shuffled with random.shuffle, then split anew
ROWS_SHUFFLED = """\
import torch, torch.nn as nn, torch.nn.functional as F
import random
torch.manual_seed(0)
random.seed(1)
rows = [[float(v) for v in torch.randn(4)] + [float(i % 3)] for i in range(36)]
model = nn.Linear(4, 3)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(3):
    random.shuffle(rows)
    feats = torch.tensor([r[:4] for r in rows])
    labels = torch.tensor([int(r[4]) for r in rows])
    for i in range(0, 36, 12):
        loss = F.cross_entropy(model(feats[i:i+12]), labels[i:i+12])
        opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


# inputs and labels shuffled by one permutation with the saved-state trick, both then made
# anew: the X and y of the epoch before were taken for partners left behind
SAVED_STATE_SHUFFLE = """\
import torch, torch.nn as nn, torch.nn.functional as F
import numpy as np
torch.manual_seed(0)
np.random.seed(0)
data = np.random.randn(60, 4).astype("float32")
labels = (data[:, 0] + data[:, 1] > 0).astype("int64")
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    state = np.random.get_state()
    np.random.shuffle(data)
    np.random.set_state(state)
    np.random.shuffle(labels)
    X, y = torch.from_numpy(data), torch.from_numpy(labels)
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


# a sweep keeping the state_dict of its best run, each run's model built anew, its last run the
# best (snapshot-shares-weights: no step of that model follows the snapshot)
SWEEP_BEST_STATE = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
X, y = torch.randn(48, 4), torch.randn(48, 1)
best_loss, best_state, best_lr = float("inf"), None, None
for lr in (0.01, 0.05, 0.2):
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(10):
        loss = F.mse_loss(model(X), y)
        opt.zero_grad(); loss.backward(); opt.step()
    if loss.item() < best_loss:
        best_loss, best_state, best_lr = loss.item(), model.state_dict(), lr
final = nn.Linear(4, 1)
final.load_state_dict(best_state)
print(best_lr, round(best_loss, 4))
"""


# a learning-rate range test: the rate tripled each step until the loss is no longer finite
# (loss-diverging: the divergence is what the test looks for, and it stops itself there)
LR_RANGE_TEST = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
X = torch.randn(64, 4); y = X.sum(1, keepdim=True) * 3
lr, lrs, losses = 1e-4, [], []
for it in range(80):
    for g in opt.param_groups:
        g["lr"] = lr
    loss = F.mse_loss(model(X), y)
    if not torch.isfinite(loss):
        print("stop at", it, "lr", round(lr, 2))
        break
    lrs.append(lr); losses.append(loss.item())
    opt.zero_grad(); loss.backward(); opt.step()
    lr *= 3.0
print(round(lrs[losses.index(min(losses))], 5))
"""


@pytest.mark.parametrize(
    "source",
    [
        ZERO_THROUGH_DATA,
        HAND_ZERO_THROUGH_DATA,
        TABLE_SHUFFLED,
        ROWS_SHUFFLED,
        SAVED_STATE_SHUFFLE,
        SWEEP_BEST_STATE,
        LR_RANGE_TEST,
    ],
)
def test_the_false_alarms_found_stay_silent(source: str) -> None:
    recorded_silently(source)


def test_a_gradient_scaled_through_data_but_not_cleared_is_still_said() -> None:
    # .data changes the gradient without a new version, as zero_() does: not a clear
    source = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(32, 5), torch.randn(32, 1)
for step in range(4):
    loss = F.mse_loss(model(X), y)
    loss.backward()
    opt.step()
    for p in model.parameters():
        p.grad.data.mul_(0.5)
print(round(loss.item(), 4))
"""
    the_pitfall(source, "missing-zero-grad", 8)


def test_a_hand_update_through_data_with_no_clear_is_still_said() -> None:
    source = HAND_ZERO_THROUGH_DATA.replace("    if W.grad is not None:\n        W.grad.data.zero_()\n", "")
    said = the_pitfall(source, "missing-zero-grad", 8)
    assert "W.grad.zero_()" in said.fix


def test_labels_carried_over_beside_an_array_shuffled_in_place_are_still_said() -> None:
    # the line after the shuffle makes yt from y, not from the shuffled X
    source = """\
import torch, torch.nn as nn, torch.nn.functional as F
import numpy as np
torch.manual_seed(0)
np.random.seed(0)
X = np.random.randn(50, 3).astype("float32"); y = (X[:, 0] > 0).astype("float32")
model = nn.Linear(3, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(3):
    np.random.shuffle(X)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    loss = F.binary_cross_entropy_with_logits(model(Xt).squeeze(1), yt)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""
    said = the_pitfall(source, "inputs-shuffled-apart-from-labels", 9)
    assert "X is shuffled at line 9 but y is not" in said.title


def test_inputs_and_labels_shuffled_by_two_draws_are_still_said() -> None:
    source = SAVED_STATE_SHUFFLE.replace("    np.random.set_state(state)\n", "")
    said = the_pitfall(source, "inputs-shuffled-apart-from-labels", 11)
    assert "data and labels are shuffled by different permutations" in said.title


@pytest.mark.parametrize(
    ("source", "line"),
    [
        # one model for all the runs: later runs step the snapshot of an earlier one
        (
            SWEEP_BEST_STATE.replace("    model = nn.Linear(4, 1)\n", "").replace(
                "for lr in (0.01", "model = nn.Linear(4, 1)\nfor lr in (0.01"
            ),
            13,
        ),
        # the snapshot taken right after the model is built: the run's own steps follow it
        (
            SWEEP_BEST_STATE.replace(
                "    for step in range(10):",
                "    if lr == 0.2:\n        best_state = model.state_dict()\n    for step in range(10):",
            ).replace(
                "best_loss, best_state, best_lr = loss.item(), model.state_dict(), lr",
                "best_loss, best_lr = loss.item(), lr",
            ),
            10,
        ),
        # the snapshot taken in the loop that steps
        (
            SWEEP_BEST_STATE.replace(
                "    if loss.item() < best_loss:\n        best_loss,",
                "        if loss.item() < best_loss:\n            best_loss,",
            ),
            13,
        ),
    ],
)
def test_a_sweeps_snapshot_that_later_steps_change_is_still_said(source: str, line: int) -> None:
    the_pitfall(source, "snapshot-shares-weights", line)


def test_a_loop_that_stops_on_its_loss_at_a_constant_rate_is_still_said_to_diverge() -> None:
    # the same loop with a learning rate too high from the start and never raised: not a sweep
    source = LR_RANGE_TEST.replace("lr, lrs, losses = 1e-4", "lr, lrs, losses = 0.25").replace(
        "    lr *= 3.0\n", ""
    )
    source = source.replace("if not torch.isfinite(loss):", "if loss.item() > 1e6:")
    the_pitfall(source, "loss-diverging", 4)


# domain adaptation's gradient reversal layer, its backward to be filled in
GRADIENT_REVERSAL = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)
    @staticmethod
    def backward(ctx, grad_output):
        return -grad_output
feat = nn.Linear(4, 8); dom = nn.Linear(8, 2)
opt = torch.optim.SGD([*feat.parameters(), *dom.parameters()], lr=0.1)
x, d = torch.randn(16, 4), torch.randint(0, 2, (16,))
for step in range(4):
    loss = F.cross_entropy(dom(GradReverse.apply(feat(x))), d)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


@pytest.mark.parametrize(
    "returned",
    [
        "-torch.ones_like(grad_output)",  # the reversal's sign, without the gradient
        "grad_output.new_ones(grad_output.size()) * -0.5",  # read only for its dtype and size
    ],
)
def test_a_backward_that_reads_only_its_gradients_shape_is_said(returned: str) -> None:
    said = the_pitfall(
        GRADIENT_REVERSAL.replace("return -grad_output", f"return {returned}"),
        "custom-backward-ignores-gradient",
        9,
    )
    assert "never reads grad_output" in said.message
    assert "(it reads only its shape)" in said.message


@pytest.mark.parametrize(
    "returned",
    [
        "-grad_output",  # the reversal itself
        "grad_output.neg() * torch.ones_like(grad_output)",  # its values read beside its shape
        "torch.zeros_like(grad_output)",  # a gradient stop: sends zeros
    ],
)
def test_a_backward_that_reads_its_gradient_or_stops_it_stays_silent(returned: str) -> None:
    recorded_silently(GRADIENT_REVERSAL.replace("return -grad_output", f"return {returned}"))


# mixup: inputs and both label sets come from one permutation (inputs-shuffled-apart-from-labels)
MIXUP = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Linear(8, 4)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
X, y = torch.randn(64, 8), torch.randint(0, 4, (64,))
beta = torch.distributions.Beta(torch.tensor(0.2), torch.tensor(0.2))
for epoch in range(5):
    y1h = F.one_hot(y, 4).float()
    lam = beta.sample()
    perm = torch.randperm(X.size(0))
    xm = lam * X + (1 - lam) * X[perm]
    ym = lam * y1h + (1 - lam) * y1h[perm]
    loss = torch.sum(-ym * F.log_softmax(model(xm), dim=1), dim=1).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# SAM: weights moved along the gradient, a second backward there, moved back, then the step
# (missing-zero-grad: the perturbation changes the weights between two backward calls)
SAM = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X, y = torch.randn(48, 5), torch.randn(48, 1)
for step in range(6):
    F.mse_loss(model(X), y).backward()
    with torch.no_grad():
        norm = torch.norm(torch.stack([p.grad.norm() for p in model.parameters()]))
        eps = [p.grad * 0.05 / (norm + 1e-12) for p in model.parameters()]
        for p, e in zip(model.parameters(), eps):
            p.add_(e)
    opt.zero_grad()
    loss = F.mse_loss(model(X), y)
    loss.backward()
    with torch.no_grad():
        for p, e in zip(model.parameters(), eps):
            p.sub_(e)
    opt.step()
    opt.zero_grad()
print(round(loss.item(), 4))
"""

# the backbone's BatchNorm kept in eval mode by the model's own train() (eval-mode-in-training)
FROZEN_BN = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(5, 16), nn.BatchNorm1d(16), nn.ReLU())
        self.head = nn.Linear(16, 2)
    def train(self, mode=True):
        super().train(mode)
        self.backbone.eval()   # pretrained BN statistics stay frozen while the head trains
        return self
    def forward(self, x):
        return self.head(self.backbone(x))
model = Net()
model.backbone.requires_grad_(False)
opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
X, y = torch.randn(32, 5), torch.randint(0, 2, (32,))
for epoch in range(4):
    model.train()
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4), model.backbone.training)
"""

# attention pooling over the time steps of a sequence-first GRU output (softmax-over-batch)
SEQUENCE_FIRST_POOL = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class AttnPool(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.score = nn.Linear(d, 1)
    def forward(self, h):
        w = F.softmax(self.score(h).squeeze(-1), dim=0)   # over time, per sequence
        return (w.unsqueeze(-1) * h).sum(0)
rnn = nn.GRU(3, 8); pool = AttnPool(8); out = nn.Linear(8, 2)
opt = torch.optim.Adam([*rnn.parameters(), *pool.parameters(), *out.parameters()], lr=1e-2)
x = torch.randn(12, 16, 3); y = torch.randint(0, 2, (16,))
for step in range(6):
    h, _ = rnn(x)
    loss = F.cross_entropy(out(pool(h)), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# a VQ-VAE's straight-through codebook lookup (loss-through-rounding, bootstrap targets)
VQ_STRAIGHT_THROUGH = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
codebook = nn.Embedding(8, 4)
enc, dec = nn.Linear(10, 4), nn.Linear(4, 10)
opt = torch.optim.Adam([*enc.parameters(), *codebook.parameters(), *dec.parameters()], lr=1e-2)
x = torch.randn(64, 10)
for step in range(10):
    z = enc(x)
    idx = torch.cdist(z, codebook.weight).argmin(1)
    z_q = codebook(idx)
    vq_loss = F.mse_loss(z_q, z.detach()) + 0.25 * F.mse_loss(z, z_q.detach())
    z_q = z + (z_q - z).detach()
    loss = F.mse_loss(dec(z_q), x) + vq_loss
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# a mixture of experts whose output is already probabilities: log of it into nll_loss
MIXTURE_NLL = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
gate = nn.Linear(6, 4)
experts = nn.ModuleList([nn.Linear(6, 3) for _ in range(4)])
opt = torch.optim.Adam([*gate.parameters(), *experts.parameters()], lr=1e-2)
X, y = torch.randn(64, 6), torch.randint(0, 3, (64,))
for step in range(8):
    g = F.softmax(gate(X), dim=1)
    p = torch.stack([F.softmax(e(X), dim=1) for e in experts], 1)
    probs = (g.unsqueeze(-1) * p).sum(1)
    loss = F.nll_loss(torch.log(probs + 1e-9), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# DQN's target network: a deepcopy, its target under no_grad, Polyak-averaged in place
POLYAK_TARGET = """\
import torch, torch.nn as nn, torch.nn.functional as F
import copy
torch.manual_seed(0)
q_net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
target_net = copy.deepcopy(q_net)
opt = torch.optim.Adam(q_net.parameters(), lr=1e-3)
for step in range(10):
    s, s2 = torch.randn(32, 4), torch.randn(32, 4)
    a, r, d = torch.randint(0, 2, (32,)), torch.randn(32), (torch.rand(32) < 0.1).float()
    q = q_net(s).gather(1, a.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        target = r + 0.99 * (1 - d) * target_net(s2).max(1).values
    loss = F.smooth_l1_loss(q, target)
    opt.zero_grad(); loss.backward(); opt.step()
    with torch.no_grad():
        for p, tp in zip(q_net.parameters(), target_net.parameters()):
            tp.mul_(0.95).add_(0.05 * p)
print(round(loss.item(), 4))
"""


@pytest.mark.parametrize(
    "source",
    [MIXUP, SAM, FROZEN_BN, SEQUENCE_FIRST_POOL, VQ_STRAIGHT_THROUGH, MIXTURE_NLL, POLYAK_TARGET],
)
def test_correct_snippets_close_to_a_detector_stay_silent(source: str) -> None:
    recorded_silently(source)


_MIXED_INPUTS_ONLY = MIXUP.replace("ym = lam * y1h + (1 - lam) * y1h[perm]", "ym = y1h").replace(
    "loss = torch.sum(-ym * F.log_softmax(model(xm), dim=1), dim=1).mean()",
    "loss = F.cross_entropy(model(xm), ym)",
)
_TARGET_ALIAS = POLYAK_TARGET.replace("copy.deepcopy(q_net)", "q_net")
_TARGET_FROM_ONLINE = POLYAK_TARGET.replace(
    "    with torch.no_grad():\n        target = r + 0.99 * (1 - d) * target_net(s2)",
    "    if True:\n        target = r + 0.99 * (1 - d) * q_net(s2)",
)


@pytest.mark.parametrize(
    ("source", "kind", "line"),
    [
        # mixup that permutes only the inputs, its one-hot targets given to cross_entropy
        (_MIXED_INPUTS_ONLY, "inputs-shuffled-apart-from-labels", 11),
        # the target network a second name for the online one, walked beside it by the Polyak update
        (_TARGET_ALIAS, "snapshot-shares-weights", 5),
        # the target read from the online network, with gradients on
        (_TARGET_FROM_ONLINE, "bootstrap-target-not-detached", 13),
    ],
)
def test_their_buggy_variants_are_said(source: str, kind: str, line: int) -> None:
    the_pitfall(source, kind, line)
