"""clip-on-other-parameters: a clip of one model's gradients right before another optimizer's
step, which then runs unclipped; and scheduler-stepped-past-its-period: a schedule sized in
epochs stepped once per batch, which runs past its end (a cosine climbs back up, a decay sits
at ~0). Each silent near miss is one edit away from a snippet that is said."""

from __future__ import annotations

import math

import pytest
import torch

from engine.pitfalls.scheduler_periods import _lr
from tests.engine.snippets import recorded_silently, the_pitfall

_GAN = """import torch, torch.nn as nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
optG = torch.optim.Adam(G.parameters(), lr=1e-3)
optD = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for it in range(5):
    real = torch.randn(16, 2) + 2
    fake = G(torch.randn(16, 4))
    optD.zero_grad()
    lossD = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    lossD.backward()
    optD.step()
    optG.zero_grad()
    lossG = bce(D(fake), torch.ones(16, 1))
    lossG.backward()
    torch.nn.utils.clip_grad_norm_(D.parameters(), 1.0)
    optG.step()
print(round(lossG.item(), 4))
"""


def test_a_clip_of_the_other_model_before_a_step_is_said_with_both_names_and_the_norm() -> None:
    said = the_pitfall(_GAN, "clip-on-other-parameters", 18)
    assert said.title == (
        "clip_grad_norm_ clips D.parameters(), but optG.step() comes next: its update is unclipped"
    )
    assert (
        "clip_grad_norm_(D.parameters(), …) changes the gradients of those parameters (optD's)"
        in said.message
    )
    assert "The step that follows it is optG.step() (line 19), over other parameters (G)" in said.message
    assert "a norm of 0.1147, under max_norm=1 at that step" in said.message
    assert "line 18 as torch.nn.utils.clip_grad_norm_(G.parameters(), 1.0)" in said.fix


def test_the_norm_it_gives_is_the_unclipped_one_pytorch_steps_with() -> None:
    # G's gradients at the first optG.step(), as plain PyTorch leaves them: norm 0.1147
    scope: dict[str, object] = {}
    torch.manual_seed(0)
    exec(_GAN.replace("range(5)", "range(1)"), scope)
    G = scope["G"]
    assert isinstance(G, torch.nn.Module)
    norm = torch.linalg.vector_norm(
        torch.stack([p.grad.norm() for p in G.parameters() if p.grad is not None])
    )
    assert math.isclose(float(norm), 0.1147, abs_tol=5e-5)


def test_a_clip_by_value_of_the_other_model_names_clip_value() -> None:
    source = _GAN.replace("clip_grad_norm_(D.parameters(), 1.0)", "clip_grad_value_(D.parameters(), 0.01)")
    said = the_pitfall(source, "clip-on-other-parameters", 18)
    assert "values up to" in said.message and "over clip_value=0.01" in said.message
    assert "clip_grad_value_(G.parameters(), 0.01)" in said.fix


def test_an_optimizer_built_from_a_list_is_given_its_param_groups_in_the_fix() -> None:
    source = _GAN.replace(
        "optG = torch.optim.Adam(G.parameters(), lr=1e-3)",
        "scale = nn.Parameter(torch.ones(2)); optG = torch.optim.Adam([*G.parameters(), scale], lr=1e-3)",
    ).replace("fake = G(torch.randn(16, 4))", "fake = G(torch.randn(16, 4)) * scale")
    said = the_pitfall(source, "clip-on-other-parameters", 18)
    assert "clip_grad_norm_([p for g in optG.param_groups for p in g['params']], 1.0)" in said.fix


_BOTH_BACKWARDS = """    lossG.backward()
    torch.nn.utils.clip_grad_norm_(D.parameters(), 1.0)
    optG.step()"""


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # the clip of the model that steps next
        ("clip_grad_norm_(D.parameters(), 1.0)", "clip_grad_norm_(G.parameters(), 1.0)"),
        # a superset: one clip of both models
        ("clip_grad_norm_(D.parameters(), 1.0)", "clip_grad_norm_([*G.parameters(), *D.parameters()], 1.0)"),
        # a norm measured to be logged
        ("clip_grad_norm_(D.parameters(), 1.0)", "clip_grad_norm_(D.parameters(), float('inf'))"),
        # clip D, step D: the usual, then G's step unclipped on purpose
        (_BOTH_BACKWARDS, "    lossG.backward()\n    optG.step()"),
        # clips of both, then both steps with no backward() between
        (
            "    lossD.backward()\n    optD.step()\n    optG.zero_grad()\n    lossG = bce(D(fake), torch.ones(16, 1))\n"
            + _BOTH_BACKWARDS,
            "    optG.zero_grad()\n    lossG = bce(D(fake), torch.ones(16, 1))\n    lossD.backward()\n"
            "    lossG.backward()\n    torch.nn.utils.clip_grad_norm_(G.parameters(), 1.0)\n"
            "    torch.nn.utils.clip_grad_norm_(D.parameters(), 1.0)\n    optD.step()\n    optG.step()",
        ),
        # a clip followed by no step before the next backward()
        (
            "    torch.nn.utils.clip_grad_norm_(D.parameters(), 1.0)\n    optG.step()\nprint(round(lossG.item(), 4))",
            "    optG.step()\nbce(D(real), torch.ones(16, 1)).backward()\n"
            "print(round(float(torch.nn.utils.clip_grad_norm_(D.parameters(), 1.0)), 4))",
        ),
    ],
)
def test_a_clip_meant_for_the_step_that_uses_it_stays_silent(wrong: str, right: str) -> None:
    assert wrong in _GAN
    recorded_silently(_GAN.replace(wrong, right))


_HEAD = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
model[0].requires_grad_(False)
opt = torch.optim.SGD(model[2].parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(4):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    scaler.step(opt)
    scaler.update()
print(round(loss.item(), 4))
"""


def test_a_clip_of_the_whole_model_before_an_optimizer_of_its_head_stays_silent() -> None:
    # a superset, in a GradScaler flow done right; the same flow clipping the frozen layer is said
    recorded_silently(_HEAD)
    source = _HEAD.replace("(model.parameters(), 0.5)", "(model[0].parameters(), 0.5)")
    said = the_pitfall(source, "clip-on-other-parameters", 13)
    assert said.title.startswith("clip_grad_norm_ clips model[0].parameters(), but opt.step() comes next")
    assert "clip_grad_norm_([p for g in opt.param_groups for p in g['params']], 0.5)" in said.fix


_COSINE = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(10, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
epochs = 3
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
for epoch in range(epochs):
    for b in range(8):
        x, y = torch.randn(32, 10), torch.randn(32, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        sched.step()
print(round(opt.param_groups[0]["lr"], 5))
"""


def test_a_cosine_sized_in_epochs_stepped_per_batch_is_said_with_its_course() -> None:
    said = the_pitfall(_COSINE, "scheduler-stepped-past-its-period", 12)
    assert said.title == "sched.step() runs once per batch: past T_max=3 the lr climbs back up"
    assert "sched (CosineAnnealingLR, T_max=3) stepped 24 times at line 12" in said.message
    assert "so T_max=3 lasts 3 batches, not 3 epochs" in said.message
    assert (
        "inside the loop at line 8 within the loop at line 7: once per batch (opt stepped 24 times)"
        in said.message
    )
    assert "the lr fell from 0.1 to 0 at step 3 and climbed back to 0.1 by step 6" in said.message
    assert "over 24 steps it went through 8 cosine half-periods where one was meant" in said.message
    assert "move sched.step() at line 12 out of the loop at line 8" in said.fix
    assert "T_max=epochs * 8" in said.fix


def test_the_course_it_gives_is_what_pytorch_does() -> None:
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)
    lrs = []
    for _ in range(6):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs[2] < 1e-12 and math.isclose(lrs[5], 0.1)


@pytest.mark.parametrize(
    ("built", "phrase"),
    [
        ("StepLR(opt, step_size=1, gamma=0.1)", "the lr fell from 0.1 below 1e-05 by step 5"),
        ("ExponentialLR(opt, gamma=0.3)", "below 1e-05 by step 8"),
        (
            "PolynomialLR(opt, total_iters=epochs)",
            "to 0 at step 3 (total_iters=3) and stayed there for the other 21",
        ),
        (
            "LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=epochs)",
            "to 0 at step 3 (total_iters=3)",
        ),
        (
            "MultiStepLR(opt, milestones=[1, 2], gamma=0.1)",
            "the lr fell from 0.1 to 0.001 at step 2, its last milestone, and stayed there for the other 22",
        ),
    ],
)
def test_a_decay_sized_in_epochs_stepped_per_batch_is_said(built: str, phrase: str) -> None:
    source = _COSINE.replace("CosineAnnealingLR(opt, T_max=epochs)", built)
    said = the_pitfall(source, "scheduler-stepped-past-its-period", 12)
    assert phrase in said.message, said.message
    assert "move sched.step() at line 12 out of the loop at line 8" in said.fix


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # sized in batches
        ("T_max=epochs)", "T_max=epochs * 8)"),
        # a run that stops before its end
        ("T_max=epochs)", "T_max=30)"),
        # restarting on purpose
        ("CosineAnnealingLR(opt, T_max=epochs)", "CosineAnnealingWarmRestarts(opt, T_0=epochs)"),
        # stepped per epoch
        ("        sched.step()\n", "    sched.step()\n"),
        # other schedules, and a warm-up
        ("CosineAnnealingLR(opt, T_max=epochs)", "LambdaLR(opt, lambda s: 0.9**s)"),
        ("CosineAnnealingLR(opt, T_max=epochs)", "OneCycleLR(opt, max_lr=0.1, total_steps=24)"),
        ("CosineAnnealingLR(opt, T_max=epochs)", "LinearLR(opt, start_factor=0.1, total_iters=epochs)"),
        ("CosineAnnealingLR(opt, T_max=epochs)", "ExponentialLR(opt, gamma=0.9)"),
        # milestones counted in batches, the last reached late in the run
        ("CosineAnnealingLR(opt, T_max=epochs)", "MultiStepLR(opt, milestones=[12, 20])"),
    ],
)
def test_a_schedule_that_ends_where_the_run_does_stays_silent(wrong: str, right: str) -> None:
    assert wrong in _COSINE
    recorded_silently(_COSINE.replace(wrong, right))


def test_a_cosine_in_a_single_loop_past_t_max_is_told_to_size_it_in_steps() -> None:
    source = _COSINE.replace(
        "for epoch in range(epochs):\n    for b in range(8):\n", "for b in range(24):\n    if True:\n"
    )
    said = the_pitfall(source, "scheduler-stepped-past-its-period", 12)
    assert said.title == "sched stepped 24 times: past T_max=3 the lr climbs back up"
    assert "past the 3 steps its schedule has" in said.message
    assert "T_max=24, the number of times sched.step() runs" in said.fix


def test_milestones_counted_in_epochs_stepped_per_batch_are_told_in_batches() -> None:
    source = _COSINE.replace("CosineAnnealingLR(opt, T_max=epochs)", "MultiStepLR(opt, milestones=[1, 2])")
    said = the_pitfall(source, "scheduler-stepped-past-its-period", 12)
    assert said.title == (
        "sched.step() runs once per batch: milestones=[1, 2] are all passed early and the lr stays at its lowest"
    )
    assert "so milestones=[1, 2] count batches, not epochs" in said.message
    assert said.fix.endswith("count its schedule in batches: milestones=[m * 8 for m in [1, 2]].")


def test_the_milestone_course_it_gives_is_what_pytorch_does() -> None:
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 2, 5], gamma=0.5)
    for t in range(1, 8):
        opt.step()
        sched.step()
        assert math.isclose(_lr(sched, t), opt.param_groups[0]["lr"]), t
