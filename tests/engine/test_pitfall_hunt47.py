"""Silent mistakes a hunt over 62 learner snippets found unsaid, and their correct twins:
a learning-rate scheduler never stepped (lr-scheduler-never-stepped, schedulers.py); a
``view``/``reshape`` that gives a tensor its own sizes in another order, where ``permute``
was meant (reshape-instead-of-permute, axis_order.py); a "snapshot" of a model's weights that
is the weights themselves, ``best_state = model.state_dict()`` or ``target_net =
policy_net`` (snapshot-shares-weights, snapshots.py); and a running total of loss tensors
started again each epoch, whose chain past the steps recorded in full leads back to no add
seen (loss-tensor-accumulated, running_totals.py)."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

# --- lr-scheduler-never-stepped ------------------------------------------------------------

STEP_LR = """\
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(10, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.1)
for epoch in range(15):
    x, y = torch.randn(32, 10), torch.randn(32, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
{after}print(opt.param_groups[0]["lr"])
"""

PLATEAU = """\
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(10, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
for epoch in range(8):
    x, y = torch.randn(32, 10), torch.randn(32, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
{after}print(opt.param_groups[0]["lr"])
"""

ONE_CYCLE = """\
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
steps_per_epoch, epochs = 6, 3
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=steps_per_epoch * epochs)
for epoch in range(epochs):
    for b in range(steps_per_epoch):
        x, y = torch.randn(16, 10), torch.randn(16, 1)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad(); loss.backward(); optimizer.step()
{after}print(optimizer.param_groups[0]["lr"])
"""


def test_a_step_lr_never_stepped_is_said_at_its_line() -> None:
    p = the_pitfall(STEP_LR.format(after=""), "lr-scheduler-never-stepped", 5)
    assert p.title == "sched is never stepped: the learning rate never changes"
    assert p.message.startswith(
        "sched (StepLR with step_size=5, gamma=0.1) is built at line 5 and never steps: opt stepped 15 times, "
        "all at 0.1, the rate it started with."
    )
    assert p.fix.startswith("Call sched.step() once per epoch, after that epoch's opt.step() (line 9) calls")


def test_reduce_lr_on_plateau_never_stepped_is_told_to_step_with_its_metric() -> None:
    p = the_pitfall(PLATEAU.format(after=""), "lr-scheduler-never-stepped", 5)
    assert "ReduceLROnPlateau with factor=0.1, patience=1" in p.message
    assert "opt stepped 8 times" in p.message
    assert p.fix.startswith("Call sched.step(val_loss) once per epoch")


def test_a_one_cycle_schedule_never_stepped_is_told_to_step_every_batch() -> None:
    p = the_pitfall(ONE_CYCLE.format(after=""), "lr-scheduler-never-stepped", 6)
    assert "optimizer stepped 18 times" in p.message
    assert p.fix.startswith("Call scheduler.step() right after every optimizer.step() (line 11)")


SCHEDULERS_STEPPED = {
    "StepLR stepped once per epoch": STEP_LR.format(after="    sched.step()\n"),
    "ReduceLROnPlateau stepped with the loss": PLATEAU.format(after="    sched.step(loss.item())\n"),
    "OneCycleLR stepped every batch": ONE_CYCLE.format(after="        scheduler.step()\n"),
    "a scheduler whose step() is written but never runs": STEP_LR.format(
        after="    if epoch > 100:\n        sched.step()\n"
    ),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS_STEPPED))
def test_a_scheduler_that_steps_stays_silent(name: str) -> None:
    recorded_silently(SCHEDULERS_STEPPED[name])


# --- reshape-instead-of-permute ------------------------------------------------------------

NHWC = """\
import torch, torch.nn as nn
torch.manual_seed(0)
conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
opt = torch.optim.Adam(conv.parameters(), lr=1e-3)
for step in range(4):
    imgs = torch.rand(4, 12, 12, 3)               # NHWC, as loaded from numpy
    y = torch.randint(0, 2, (4,))
    x = {made}
    loss = nn.functional.cross_entropy(conv(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""

TIME_FIRST = """\
import torch, torch.nn as nn
torch.manual_seed(0)
rnn = nn.GRU(5, 8)                     # expects (T, N, F)
head = nn.Linear(8, 1)
opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()), lr=1e-3)
for step in range(4):
    x = torch.randn(6, 10, 5)           # (N=6, T=10, F)
    y = torch.randn(6, 1)
    seq = {made}
    out, h = rnn(seq)
    loss = nn.functional.mse_loss(head(h[-1]), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""

HEADS = """\
import torch, torch.nn as nn
torch.manual_seed(0)
B, T, H, D = 2, 5, 4, 8
qkv = nn.Linear(H * D, 3 * H * D)
x = torch.randn(B, T, H * D)
q, k, v = qkv(x).chunk(3, dim=-1)
q, k, v = ({split} for t in (q, k, v))
att = (q @ k.transpose(-2, -1) / D ** 0.5).softmax(-1)
out = (att @ v).transpose(1, 2).reshape(B, T, H * D)
out.sum().backward()
print(out.shape)
"""


def test_channels_last_images_viewed_as_channels_first_are_said_at_the_view() -> None:
    p = the_pitfall(NHWC.format(made="imgs.view(4, 3, 12, 12)"), "reshape-instead-of-permute", 8)
    assert p.title == "view reorders no axis: (4, 12, 12, 3) cut into (4, 3, 12, 12)"
    assert p.message.startswith(
        "Line 8 (x = imgs.view(4, 3, 12, 12)) makes imgs of shape (4, 12, 12, 3) into (4, 3, 12, 12): the "
        "same sizes in another order."
    )
    assert "x[0, 1, 0, 0] is imgs[0, 4, 0, 0], where moving the axes would give imgs[0, 0, 0, 1]" in p.message
    assert p.fix.startswith("Move the axes with .permute(0, 3, 1, 2): x = imgs.permute(0, 3, 1, 2)")


def test_a_batch_first_sequence_reshaped_time_first_is_told_to_transpose() -> None:
    p = the_pitfall(TIME_FIRST.format(made="x.reshape(10, 6, 5)"), "reshape-instead-of-permute", 9)
    assert "seq[1, 0, 0] is x[0, 6, 0], where moving the axes would give x[0, 1, 0]" in p.message
    assert p.fix.startswith("Move the axes with .transpose(0, 1): seq = x.transpose(0, 1)")


NUMPY_IMAGES = """\
import numpy as np, torch, torch.nn as nn
torch.manual_seed(0)
data = np.random.default_rng(0).random((8, 10, 10, 3)).astype("float32")     # N, H, W, C
x = torch.from_numpy(data).reshape(8, 3, 10, 10)
model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
y = torch.randint(0, 2, (8,))
for step in range(3):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""


def test_an_unnamed_input_is_named_by_its_expression() -> None:
    p = the_pitfall(NUMPY_IMAGES, "reshape-instead-of-permute", 4)
    assert "makes torch.from_numpy(data) of shape (8, 10, 10, 3) into (8, 3, 10, 10)" in p.message
    assert p.fix.startswith(
        "Move the axes with .permute(0, 3, 1, 2): x = torch.from_numpy(data).permute(0, 3, 1, 2)"
    )


AXES_MOVED = {
    "images permuted": NHWC.format(made="imgs.permute(0, 3, 1, 2)"),
    "one channel viewed in front": NHWC.format(
        made="imgs[..., :1].reshape(4, 1, 12, 12).expand(4, 3, 12, 12)"
    ),
    "a sequence transposed": TIME_FIRST.format(made="x.transpose(0, 1)"),
    "heads split, then transposed": HEADS.format(split="t.view(B, T, H, D).transpose(1, 2)"),
    "an integer tensor viewed": NHWC.format(
        made="imgs.permute(0, 3, 1, 2) + torch.arange(8).view(2, 4)[0, 0] * 0"
    ),
}


@pytest.mark.parametrize("name", sorted(AXES_MOVED))
def test_a_reshape_that_moves_no_axis_it_should_stays_silent(name: str) -> None:
    recorded_silently(AXES_MOVED[name])


# --- snapshot-shares-weights ---------------------------------------------------------------

BEST_STATE = """\
import copy, torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
Xv, yv = torch.randn(40, 10), torch.randn(40, 1)
best_loss, best_state = float("inf"), None
for epoch in range(10):
    x, y = torch.randn(32, 10), torch.randn(32, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    with torch.no_grad():
        val = nn.functional.mse_loss(model(Xv), yv).item()
    if val < best_loss:
        best_loss, best_state = val, {taken}
model.load_state_dict(best_state)
print(best_loss)
"""

TARGET_NET = """\
import copy, torch, torch.nn as nn
torch.manual_seed(0)
policy_net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
target_net = {made}
opt = torch.optim.Adam(policy_net.parameters(), lr=1e-3)
for step in range(20):
    s, a, r, s2 = torch.randn(16, 4), torch.randint(0, 2, (16, 1)), torch.randn(16), torch.randn(16, 4)
    q = policy_net(s).gather(1, a).squeeze(1)
    with torch.no_grad():
        target = r + 0.99 * target_net(s2).max(1).values
    loss = nn.functional.smooth_l1_loss(q, target)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 10 == 0:
        target_net.load_state_dict(policy_net.state_dict())
print(loss.item())
"""

SNAPSHOTS = """\
import copy, torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(6, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
snapshots = []
for step in range(6):
    x, y = torch.randn(16, 6), torch.randn(16, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 2 == 0:
        snapshots.append({taken})
print([round(s["weight"][0, 0].item(), 6) for s in snapshots])
"""

SURGERY = """\
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(6, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    x, y = torch.randn(16, 6), torch.randn(16, 1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
sd = model.state_dict()
sd["bias"].zero_()
model.load_state_dict(sd)
print(model.bias.item())
"""


def test_a_best_state_kept_as_the_state_dict_itself_is_said_where_it_is_taken() -> None:
    p = the_pitfall(BEST_STATE.format(taken="model.state_dict()"), "snapshot-shares-weights", 14)
    assert p.title == "best_state is model's live weights, not a copy"
    assert "best_state['0.weight'] is model.0.weight itself" in p.message
    assert "(10 steps ran in all)" in p.message
    assert "model.load_state_dict(best_state) (line 15) loads model into itself" in p.message
    assert p.fix.startswith(
        "Copy the tensors when you take the snapshot: best_loss, best_state = val, "
        "copy.deepcopy(model.state_dict()) (import copy)"
    )


def test_a_shallow_copy_of_the_state_dict_is_still_the_model_s_tensors() -> None:
    the_pitfall(BEST_STATE.format(taken="model.state_dict().copy()"), "snapshot-shares-weights", 14)


def test_a_target_network_bound_to_the_policy_network_is_said_at_the_alias() -> None:
    p = the_pitfall(TARGET_NET.format(made="policy_net"), "snapshot-shares-weights", 4)
    assert p.title == "target_net is policy_net: one model under two names"
    assert (
        "target_net.load_state_dict(policy_net.state_dict()) (line 14) copies the model into itself"
        in p.message
    )
    assert p.fix.startswith("Make target_net a copy: target_net = copy.deepcopy(policy_net)")


def test_a_list_of_state_dicts_taken_along_the_run_is_said_at_the_append() -> None:
    p = the_pitfall(SNAPSHOTS.format(taken="model.state_dict()"), "snapshot-shares-weights", 11)
    assert p.title == "The 3 state_dicts in snapshots are all model's live weights"
    assert p.fix.startswith("Copy the tensors when you take each snapshot: snapshots.append(copy.deepcopy(")


COPIES = {
    "best_state deep-copied": BEST_STATE.format(taken="copy.deepcopy(model.state_dict())"),
    "best_state cloned tensor by tensor": BEST_STATE.format(
        taken="{k: v.detach().clone() for k, v in model.state_dict().items()}"
    ),
    "target_net deep-copied": TARGET_NET.format(made="copy.deepcopy(policy_net)"),
    "snapshots deep-copied": SNAPSHOTS.format(taken="copy.deepcopy(model.state_dict())"),
    "a state_dict edited and loaded back after training": SURGERY,
}


@pytest.mark.parametrize("name", sorted(COPIES))
def test_a_snapshot_that_copies_stays_silent(name: str) -> None:
    recorded_silently(COPIES[name])


# --- loss-tensor-accumulated: a total started again each epoch ---------------------------

EPOCH_TOTAL = """\
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(10, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range({epochs}):
    running_loss = 0.0
    for b in range({batches}):
        x, y = torch.randn(16, 10), torch.randn(16, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        {added}
    print(epoch, float(running_loss) / {batches})
"""


@pytest.mark.parametrize(
    ("epochs", "batches", "added"),
    [
        (3, 6, "running_loss += loss"),
        (3, 6, "running_loss = running_loss + loss"),
        (8, 2, "running_loss += loss"),
    ],
)
def test_a_running_loss_started_again_each_epoch_is_said(epochs: int, batches: int, added: str) -> None:
    p = the_pitfall(
        EPOCH_TOTAL.format(epochs=epochs, batches=batches, added=added), "loss-tensor-accumulated", 11
    )
    assert "2 times in the iterations recorded in full, on both sides of an optimizer step" in p.message
    assert p.fix.startswith("Accumulate a plain number: total += loss.item()")


SEQUENCE_LOSS = """\
import torch, torch.nn as nn
torch.manual_seed(0)
rnn = nn.RNNCell(3, 4)
opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
for step in range(4):
    xs, ys = torch.randn(2, 8, 3), torch.randn(2, 8, 4)
    h = torch.zeros(8, 4)
    loss = 0
    for t in range(2):
        h = rnn(xs[t], h)
        loss = loss + nn.functional.mse_loss(h, ys[t])
    opt.zero_grad(); loss.backward(); opt.step()
print(loss.item())
"""

PLAIN_NUMBERS = {
    "running_loss += loss.item()": EPOCH_TOTAL.format(
        epochs=3, batches=6, added="running_loss += loss.item()"
    ),
    "running_loss += loss.detach()": EPOCH_TOTAL.format(
        epochs=3, batches=6, added="running_loss += loss.detach()"
    ),
    "a sequence loss summed within each step, then backpropagated": SEQUENCE_LOSS,
}


@pytest.mark.parametrize("name", sorted(PLAIN_NUMBERS))
def test_a_total_of_numbers_or_one_step_s_loss_stays_silent(name: str) -> None:
    recorded_silently(PLAIN_NUMBERS[name])
