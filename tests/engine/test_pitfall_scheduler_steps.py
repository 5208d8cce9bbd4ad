"""scheduler-stepped-per-epoch: a OneCycleLR (or CyclicLR), which counts its schedule in
optimizer steps, stepped once per epoch covers a fraction of its cycle. Said at the
scheduler's step with both counts; stepped after every optimizer step, or a per-epoch
scheduler stepped per epoch, stays silent."""

from __future__ import annotations

import pytest
import torch

from tests.engine.snippets import recorded_silently, the_pitfall

_PER_EPOCH = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(10, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps_per_epoch, epochs = 6, 3
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps_per_epoch * epochs)
for epoch in range(epochs):
    for b in range(steps_per_epoch):
        x, y = torch.randn(16, 10), torch.randn(16, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    sched.step()
print(round(opt.param_groups[0]["lr"], 5))
"""


def test_a_one_cycle_schedule_stepped_per_epoch_is_said_with_both_counts() -> None:
    said = the_pitfall(_PER_EPOCH, "scheduler-stepped-per-epoch", 12)
    assert said.title == "sched.step() runs once per epoch: OneCycleLR counts optimizer steps"
    assert "sched (OneCycleLR) stepped 3 times (line 12), while opt stepped 18 times" in said.message
    assert "it has taken 3 steps of the 18 its cycle has (total_steps=18)" in said.message
    assert "Move sched.step() into the batch loop, right after opt.step() (line 11)" in said.fix


def test_what_the_message_says_is_what_pytorch_does() -> None:
    # three steps of an 18-step cycle: still warming up, far above the rate it ends at
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=18)
    for _ in range(3):
        opt.step()
        sched.step()
    assert 0.05 < opt.param_groups[0]["lr"] < 0.1


def test_a_cyclic_schedule_stepped_per_epoch_is_said_too() -> None:
    source = _PER_EPOCH.replace(
        "torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps_per_epoch * epochs)",
        "torch.optim.lr_scheduler.CyclicLR(opt, base_lr=0.001, max_lr=0.1, step_size_up=4)",
    )
    said = the_pitfall(source, "scheduler-stepped-per-epoch", 12)
    assert "sched (CyclicLR) stepped 3 times (line 12), while opt stepped 18 times" in said.message


@pytest.mark.parametrize(
    "edit",
    [
        # the fix: one scheduler step after every optimizer step
        ("opt.step()\n    sched.step()", "opt.step(); sched.step()"),
        # a per-epoch scheduler stepped per epoch
        (
            "torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps_per_epoch * epochs)",
            "torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)",
        ),
    ],
)
def test_schedulers_stepped_as_they_count_are_silent(edit: tuple[str, str]) -> None:
    assert edit[0] in _PER_EPOCH
    recorded_silently(_PER_EPOCH.replace(*edit))
