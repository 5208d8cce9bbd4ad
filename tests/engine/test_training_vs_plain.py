"""Training metrics checked against the same snippet run with plain PyTorch (no gradwalk).

Each snippet prints what it measures itself, in float64 (how far each parameter moved, the
gradient ``step()`` was given); the test runs it once plainly and once recorded, and every
``optimizer_step`` event must say what the plain run printed.
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import random
import warnings
from typing import Any

import pytest
import torch

from engine import queries as q
from engine import record
from engine.events import Limits


def _plain_lines(source: str) -> list[Any]:
    """Run ``source`` without gradwalk, seeded as ``record`` seeds it; each printed line, parsed."""
    out = io.StringIO()
    torch.manual_seed(0)
    random.seed(0)
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, "snippet.py", "exec"), {"__name__": "__main__"})
    return [ast.literal_eval(line) for line in out.getvalue().splitlines()]


def _recorded_steps(source: str, limits: Limits | None = None) -> list[Any]:
    trace = record(source, limits=limits or Limits(detail_steps=1))
    assert not q.errors(trace)
    return q.optimizer_steps(trace)


SUBCLASS_CALLING_SUPER_STEP = """
import torch, torch.nn as nn
baseline = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)  # SGD.step is now hooked
class Clipped(torch.optim.SGD):
    def step(self, closure=None):
        for group in self.param_groups:
            nn.utils.clip_grad_norm_(group["params"], 0.5)
        return super().step(closure)
torch.manual_seed(0)
model = nn.Linear(3, 2)
opt = Clipped(model.parameters(), lr=0.1, momentum=0.9)
X, y = torch.randn(20, 3) * 4, torch.randn(20, 2)
for i in range(5):
    opt.zero_grad()
    ((model(X) - y) ** 2).mean().backward()
    before = [p.detach().double().clone() for p in model.parameters()]
    given = [p.grad.double().norm().item() for p in model.parameters()]
    opt.step()
    print([given, [(p.detach().double() - b).norm().item() for p, b in zip(model.parameters(), before)]])
"""


def test_a_subclass_step_calling_super_step_is_one_step() -> None:
    """Once any SGD exists (the worker's warm-up makes one), PyTorch runs the step hooks of
    an SGD subclass's ``super().step()`` too: still one step per ``opt.step()``, labelled by
    the snippet's variable, with the gradient it was given and how far it moved."""
    plain = _plain_lines(SUBCLASS_CALLING_SUPER_STEP)
    steps = _recorded_steps(SUBCLASS_CALLING_SUPER_STEP)
    assert [(s.optimizer, s.step) for s in steps] == [("opt (Clipped)", i) for i in range(1, 6)]
    for step, (given, moved) in zip(steps, plain, strict=True):
        assert [p.grad_norm for p in step.params] == pytest.approx(given, rel=1e-5)
        assert [p.update_norm for p in step.params] == pytest.approx(moved, rel=1e-5)


PARAMETER_LISTED_TWICE = """
import torch, warnings
w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
with warnings.catch_warnings():  # PyTorch warns of the repeat, and steps w twice
    warnings.simplefilter("ignore")
    opt = torch.optim.SGD([w, w], lr=0.1{momentum})
for i in range(4):
    opt.zero_grad()
    (w ** 2).sum().backward()
    before = w.detach().double().clone()
    opt.step()
    print((w.detach().double() - before).norm().item())
"""


@pytest.mark.parametrize("momentum", ["", ", momentum=0.9"])
def test_an_sgd_parameter_listed_twice_moves_as_far_as_plain_pytorch_moves_it(momentum: str) -> None:
    source = PARAMETER_LISTED_TWICE.format(momentum=momentum)
    plain = _plain_lines(source)
    steps = _recorded_steps(source)
    assert len(steps) == len(plain) == 4
    for step, moved in zip(steps, plain, strict=True):
        assert [p.update_norm for p in step.params] == pytest.approx([moved, moved], rel=1e-6)


HALF_PRECISION = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 100), nn.Tanh(), nn.Linear(100, 1)).to(torch.{dtype})
opt = {make}
X, y = torch.randn(32, 4).to(torch.{dtype}), torch.randn(32, 1).to(torch.{dtype})
for i in range(8):
    before = [p.detach().double().clone() for p in model.parameters()]
    opt.zero_grad()
    ((model(X) - y) ** 2).mean().backward()
    opt.step()
    print([(p.detach().double() - b).norm().item() for p, b in zip(model.parameters(), before)])
"""


@pytest.mark.parametrize(
    ("dtype", "make"),
    [
        ("bfloat16", "torch.optim.AdamW(model.parameters(), lr=0.01)"),
        ("bfloat16", "torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)"),
        # (float16 AdamW's eps=1e-8 is 0 in float16: its steps are inf)
        ("float16", "torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)"),
    ],
)
def test_a_half_precision_update_is_how_far_each_parameter_moved_to_float32_precision(
    dtype: str, make: str
) -> None:
    """Large steps change signs and halve elements: the difference ``before - after`` of a
    bfloat16 parameter does not fit its 8 bits, and must not be rounded to them."""
    source = HALF_PRECISION.format(dtype=dtype, make=make)
    plain = _plain_lines(source)
    steps = _recorded_steps(source, Limits(detail_steps=2, detail_every=3))
    assert len(steps) == len(plain) == 8
    for step, moved in zip(steps, plain, strict=True):
        assert [p.update_norm for p in step.params] == pytest.approx(moved, rel=1e-6)
        assert step.update_norm == pytest.approx(math.sqrt(sum(m * m for m in moved)), rel=1e-6)


SGD_WITH_HOOKS_OF_ITS_OWN = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
{hook}
X, y = torch.randn(20, 3) * 4, torch.randn(20, 2)
for i in range(4):
    opt.zero_grad()
    ((model(X) - y) ** 2).mean().backward()
    before = [p.detach().double().clone() for p in model.parameters()]
    {given}
    opt.step()
    print([given, [(p.detach().double() - b).norm().item() for p, b in zip(model.parameters(), before)]])
"""

HOOKS_OF_ITS_OWN = {
    # a pre-hook of the optimizer's own runs after gradwalk's and halves .grad in place: the
    # step uses the halved gradient, which is what .grad holds after the step
    "a pre-hook halving .grad": (
        "opt.register_step_pre_hook(lambda o, a, k: [p.grad.mul_(0.5) for p in model.parameters()] and None)",
        "given = [p.grad.double().norm().item() * 0.5 for p in model.parameters()]",
    ),
    # a post-hook of its own runs before gradwalk's and clears .grad: the gradient the step
    # was given must still be the one reported
    "a post-hook clearing .grad": (
        "opt.register_step_post_hook(lambda o, a, k: o.zero_grad())",
        "given = [p.grad.double().norm().item() for p in model.parameters()]",
    ),
}


@pytest.mark.parametrize("case", sorted(HOOKS_OF_ITS_OWN))
def test_an_sgd_steps_gradient_norm_is_the_one_it_used_whatever_its_own_hooks_do(case: str) -> None:
    """SGD's gradient norms are read after its step (NOTE [Gradient norms after an SGD step]),
    as the step leaves ``.grad`` as it is; hooks of the optimizer's own may not."""
    hook, given = HOOKS_OF_ITS_OWN[case]
    source = SGD_WITH_HOOKS_OF_ITS_OWN.format(hook=hook, given=given)
    plain = _plain_lines(source)
    steps = _recorded_steps(source, Limits(detail_steps=0))
    assert len(steps) == len(plain) == 4
    for step, (used, moved) in zip(steps, plain, strict=True):
        assert [p.grad_norm for p in step.params] == pytest.approx(used, rel=1e-5)
        assert [p.update_norm for p in step.params] == pytest.approx(moved, rel=1e-5)
