"""Training hunt 62: some 45 training snippets recorded and run plain, every optimizer step's
loss, learning rates and norms compared. All agreed but these, each fixed:

- a fused SGD step that a GradScaler skipped (an inf in the gradients) was reported as having
  moved: its update was read off as ``lr * grad`` (NaN) or, with momentum, as the momentum
  buffer's last move, where the parameters had not moved at all;
- an optimizer with a post-hook of its own that clears the gradients (``zero_grad()`` there)
  drew a false step-without-gradients: the pitfall looked at ``.grad`` after that hook;
- a scheduler stepped from the optimizer's own post-hook charted each step's learning rate
  one step ahead (read after that hook);
- one step taken under ``torch.inference_mode()`` made the copy later steps are measured
  against an inference tensor: every later step had no norms at all.
"""

from __future__ import annotations

from engine import queries as q
from tests.engine.snippets import run_plain
from tests.engine.truth import assert_truthful

FUSED_SGD_SKIPPED_STEP = """
import torch, torch.nn as nn
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum={momentum}, fused=True)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
X = torch.randn(16, 4); y = torch.randn(16, 1)
for i in range(6):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(X), y)
    if i == 3:
        loss = loss * float("inf")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def test_a_fused_sgd_step_a_grad_scaler_skipped_moved_nothing() -> None:
    for momentum in (0.0, 0.9):
        trace = assert_truthful(FUSED_SGD_SKIPPED_STEP.format(momentum=momentum))
        steps = q.optimizer_steps(trace)
        assert len(steps) == 6
        assert steps[3].update_norm == 0.0  # was NaN (no momentum) or 0.16 (momentum's last move)
        assert steps[3].param_norm == steps[2].param_norm
        assert all(s.update_norm > 0 for i, s in enumerate(steps) if i != 3)


POST_HOOK_CLEARS_GRADS = """
import torch, torch.nn as nn
model = nn.Linear(3, 1)
opt = torch.optim.{kind}(model.parameters(), lr=0.1)
opt.register_step_post_hook(lambda o, args, kwargs: o.zero_grad())
X = torch.randn(8, 3); y = torch.randn(8, 1)
for i in range(5):
    loss = ((model(X) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def test_gradients_cleared_by_the_optimizers_own_post_hook_are_no_step_without_gradients() -> None:
    for kind in ("Adam", "SGD"):
        trace = assert_truthful(POST_HOOK_CLEARS_GRADS.format(kind=kind))
        assert q.pitfalls(trace) == []  # was step-without-gradients at line 10
        assert all(s.grad_norm is not None and s.grad_norm > 0 for s in q.optimizer_steps(trace))


SCHEDULER_IN_POST_HOOK = """
import torch, torch.nn as nn
model = nn.Linear(3, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
used = []
opt.register_step_pre_hook(lambda o, a, k: used.append(o.param_groups[0]["lr"]))
opt.register_step_post_hook(lambda o, a, k: sched.step())
X = torch.randn(8, 3); y = torch.randn(8, 1)
for i in range(5):
    opt.zero_grad(); loss = ((model(X) - y) ** 2).mean(); loss.backward(); opt.step()
print(used)
"""


def test_the_learning_rate_is_the_one_the_step_used_when_a_post_hook_steps_the_scheduler() -> None:
    printed, error, _ = run_plain(SCHEDULER_IN_POST_HOOK)
    assert error is None
    trace = assert_truthful(SCHEDULER_IN_POST_HOOK)
    lrs = [s.lr[0] for s in q.optimizer_steps(trace)]
    assert lrs == [0.1, 0.05, 0.025, 0.0125, 0.00625]  # were 0.05 ... 0.003125
    assert str(lrs) == printed.strip()


STEP_UNDER_INFERENCE_MODE = """
import torch, torch.nn as nn
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.01)
X = torch.randn(8, 3)
for i in range(5):
    opt.zero_grad()
    model(X).pow(2).mean().backward()
    if i == 0:
        with torch.inference_mode():
            opt.step()
    else:
        opt.step()
"""


def test_a_step_under_inference_mode_leaves_later_steps_measured() -> None:
    trace = assert_truthful(STEP_UNDER_INFERENCE_MODE)
    steps = q.optimizer_steps(trace)
    assert len(steps) == 5
    assert all(len(s.params) == 2 and s.grad_norm and s.update_norm > 0 for s in steps)  # 2-5 had none
    assert trace.events[-1].counts.unrecorded == 0
