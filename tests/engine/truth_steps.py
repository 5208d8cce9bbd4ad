"""The optimizer steps of a plain run, and a trace's against them (tests/engine/truth.py).

Each step's per-parameter norms: the gradient's before the step, the distance the parameter
moved and the parameter's after it, measured with PyTorch's own ``norm`` (in float32 past
1.8e19 an element it reads inf, as the trace does) and compared to the trace's
``optimizer_step`` params within float rounding.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from engine.events import Trace

__all__ = ["Step", "step_differences", "steps_watched"]


@dataclass
class Step:
    """One optimizer step: each parameter's gradient norm (None without one) before it, the
    norm of what it moved and its norm after, in param_groups order."""

    grad: list[float | None] = field(default_factory=list)
    update: list[float] = field(default_factory=list)
    param: list[float] = field(default_factory=list)
    # step(closure) computes the gradients inside the step (LBFGS): which of them is "the
    # step's" is a view (a trace reads the last), so they are not compared
    closure: bool = False


def _params(opt: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in opt.param_groups for p in group["params"]]


def _norm(t: torch.Tensor) -> float:
    """PyTorch's own norm, in float32 (or float64): past 1.8e19 per element it is inf."""
    t = t.detach()
    return float(t.norm() if t.dtype in (torch.float32, torch.float64) else t.float().norm())


@contextlib.contextmanager
def steps_watched(steps: list[Step]) -> Iterator[None]:
    """Every optimizer step while the block runs (PyTorch's global step hooks)."""
    before: list[list[torch.Tensor]] = []

    def pre(opt: Any, args: Any, kwargs: Any) -> None:
        params = _params(opt)
        before.append([p.detach().clone() for p in params])
        grads = [None if p.grad is None else _norm(p.grad) for p in params]
        steps.append(Step(grad=grads, closure=bool(args) or kwargs.get("closure") is not None))

    def post(opt: Any, args: Any, kwargs: Any) -> None:
        step, old = steps[-1], before.pop()
        for p, was in zip(_params(opt), old, strict=True):
            step.update.append(_norm(p.detach() - was))
            step.param.append(_norm(p))

    handles = [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def step_differences(trace: Trace, steps: list[Step]) -> list[str]:
    """Each optimizer step's norms, parameter by parameter, against PyTorch's ``steps``."""
    shown = [e for e in trace.events if e.type == "optimizer_step"]
    if len(shown) != len(steps):
        return [f"{len(shown)} optimizer steps vs {len(steps)}"]
    out = []
    for k, (e, step) in enumerate(zip(shown, steps, strict=True)):
        if len(e.params) != len(step.param):
            out.append(f"step {k}: {len(e.params)} parameters vs {len(step.param)}")
            continue
        for i, stat in enumerate(e.params):
            size = step.param[i]  # an update read off is within rounding of the parameter's size
            for label, got, want, tol in (
                ("grad_norm", stat.grad_norm, step.grad[i], 0.0),
                ("update_norm", stat.update_norm, step.update[i], 1e-6 * size),
                ("param_norm", stat.param_norm, step.param[i], 0.0),
            ):
                if label == "grad_norm" and step.closure:
                    continue
                if (got is None) != (want is None):
                    out.append(f"step {k} param {stat.name}: {label} {got} vs {want}")
                elif want is None or not (math.isfinite(got) or math.isfinite(want)):
                    continue  # (an exploded run: inf and nan both say it, whichever comes)
                elif not abs(got - want) <= 1e-5 * abs(want) + tol:
                    out.append(f"step {k} param {stat.name}: {label} {got} vs {want}")
    return out
