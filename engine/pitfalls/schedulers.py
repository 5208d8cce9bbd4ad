"""A learning-rate scheduler built and never stepped (lr-scheduler-never-stepped).

``sched = StepLR(opt, step_size=5, gamma=0.1)`` above the loop, and no ``sched.step()`` in
it: a scheduler changes the learning rate only when its ``step()`` is called, so the whole
run trains at the rate it started with, the decay (or warm-up, or cycle) never happens, and
nothing raises. Told at the end of the run, at the line that builds it: a scheduler the
snippet holds that never stepped (its ``last_epoch`` still 0) while its optimizer stepped at
least twice, where the source names no ``step`` of it (a ``sched.step()`` that exists but did
not run, under an ``if`` never true, is another story). Left alone: a scheduler that another
one the snippet holds steps for it (a ``SequentialLR``'s or ``ChainedScheduler``'s part, whose
``last_epoch`` is 0 right at a milestone), and one built after its optimizer's last step (a
scheduler made only to be saved with a checkpoint, for the next stage).

Also scheduler-stepped-per-epoch: a ``OneCycleLR`` or ``CyclicLR``, which count their
schedule in optimizer steps, stepped once per epoch (``sched.step()`` under the epoch loop):
it stepped at most half as often as its optimizer, so the cycle covers a fraction of the run
(a OneCycleLR of ``total_steps=18`` stepped 3 times has only begun its warm-up).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau

from ..source import is_a, line_matching, name_in
from .diverging import LossCourse
from .kinds import Said

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["driven_parts", "line_of", "name_of", "never_stepped_schedulers"]

# a scheduler's settings worth naming, in this order
_SETTINGS = ("step_size", "milestones", "gamma", "T_max", "total_steps", "factor", "patience")
# schedulers meant to step once per batch: their schedule is counted in optimizer steps
_PER_BATCH = ("OneCycleLR", "CyclicLR")


def never_stepped_schedulers(scope: dict[str, Any], rec: Recorder, course: LossCourse) -> list[Said]:
    """lr-scheduler-never-stepped for each scheduler held by a variable of ``scope`` (the
    snippet's globals) that never stepped while its optimizer took two or more steps (as
    ``course`` counted them, by the label ``rec`` gives each optimizer), and whose ``step``
    the source does not name; and scheduler-stepped-per-epoch for each per-batch scheduler
    stepped at most half as often as its optimizer."""
    idle = [
        (name, value)
        for name, value in list(scope.items())
        if not name.startswith("_")
        and is_a(value, LRScheduler | ReduceLROnPlateau)
        and getattr(value, "last_epoch", None) == 0
        and is_a(getattr(value, "optimizer", None), torch.optim.Optimizer)
    ]
    parts = driven_parts(scope)
    idle = [(name, value) for name, value in idle if id(value) not in parts and not _built_after_steps(value)]
    if not idle and not any(type(value).__name__ in _PER_BATCH for value in list(scope.values())):
        return []  # (the source's lines are read only for a scheduler to report)
    source_lines = rec.statement_lines
    said = _stepped_per_epoch(scope, rec, course, source_lines)
    for name, value in idle:
        optimizer = value.optimizer
        steps = course.steps_of(rec.training.label_of(optimizer) or type(optimizer).__name__)
        if steps < 2 or line_of(source_lines, re.compile(rf"\b{re.escape(name)}\.step\b")) is not None:
            continue
        opt_name = name_of(optimizer, scope)
        said.append(_report(name, value, optimizer, opt_name, steps, source_lines))
    return said


def driven_parts(scope: dict[str, Any]) -> set[int]:
    """The ids of the schedulers that another one of ``scope`` steps for them (the parts of a
    ``SequentialLR`` or ``ChainedScheduler``)."""
    return {
        id(part)
        for value in list(scope.values())
        if is_a(value, LRScheduler)
        for part in getattr(value, "_schedulers", None) or ()
    }


def name_of(value: Any, scope: dict[str, Any], default: str = "opt") -> str:
    """The name ``scope`` binds ``value`` to (not a ``_`` one), or ``default``."""
    # a copy: at the end of a run the snippet's threads may still bind names
    return name_in(value, dict(scope)) or default


def _built_after_steps(scheduler: Any) -> bool:
    """Whether no step of ``scheduler``'s optimizer ran since it was built: an ``LRScheduler``
    wraps its optimizer's ``step`` to set ``_opt_called`` on each call (PyTorch's own check
    that ``optimizer.step()`` comes first), so the flag still unset means none did."""
    optimizer = scheduler.optimizer
    wrapped = getattr(optimizer.step, "_wrapped_by_lr_sched", False)
    return bool(wrapped) and not getattr(optimizer, "_opt_called", False)


def _report(
    name: str,
    scheduler: Any,
    optimizer: torch.optim.Optimizer,
    opt_name: str,
    steps: int,
    source_lines: Sequence[str],
) -> Said:
    kind = type(scheduler).__name__
    built = line_of(source_lines, re.compile(rf"^{re.escape(name)}\s*=[^=]"))
    stepped = line_of(source_lines, re.compile(rf"\b{re.escape(opt_name)}\.step\("))
    lr = optimizer.param_groups[0].get("lr") if optimizer.param_groups else None
    rate = f" at {lr:.4g}" if isinstance(lr, float | int) else ""
    where = f" at line {built}" if built else ""
    after = f"{opt_name}.step() (line {stepped})" if stepped else f"{opt_name}.step()"
    if is_a(scheduler, ReduceLROnPlateau):
        fix = (
            f"Call {name}.step(val_loss) once per epoch, after that epoch's {after} calls, with the metric it "
            "watches (a validation loss)."
        )
    elif kind in _PER_BATCH:
        fix = f"Call {name}.step() right after every {after}: {kind} counts its schedule in optimizer steps."
    else:
        fix = (
            f"Call {name}.step() once per epoch, after that epoch's {after} calls (or after every step, if "
            "its settings count batches)."
        )
    return Said(
        "lr-scheduler-never-stepped",
        built,
        f"{name} is never stepped: the learning rate never changes",
        f"{name} ({kind}{_settings(scheduler)}) is built{where} and never steps: {opt_name} stepped {steps} "
        f"times, all{rate}, the rate it started with. A scheduler changes the learning rate only when its "
        f"step() is called, and nothing calls {name}.step(), so the schedule never happens. Nothing raises.",
        fix,
        [],
    )


def _settings(scheduler: Any) -> str:
    """`` with step_size=5, gamma=0.1``: the settings of ``scheduler`` among :data:`_SETTINGS`."""
    shown = []
    for setting in _SETTINGS:
        value = getattr(scheduler, setting, None)
        if setting == "milestones" and value is not None:
            value = sorted(value)
        if isinstance(value, int | float | list) and not isinstance(value, bool):
            shown.append(f"{setting}={value:g}" if isinstance(value, float) else f"{setting}={value}")
    return f" with {', '.join(shown)}" if shown else ""


def line_of(source_lines: Sequence[str], pattern: re.Pattern[str]) -> int | None:
    """The first line (from 1) of ``source_lines`` (the run's ``statement_lines``) whose code
    ``pattern`` finds: :func:`source.line_matching`'s line."""
    found = line_matching(source_lines, pattern)
    return found[0] if found is not None else None


def _stepped_per_epoch(
    scope: dict[str, Any], rec: Recorder, course: LossCourse, source_lines: Sequence[str]
) -> list[Said]:
    """scheduler-stepped-per-epoch for each ``OneCycleLR``/``CyclicLR`` of ``scope`` that
    stepped, yet at most half as often as its optimizer (before its cycle's end)."""
    said = []
    for name, value in list(scope.items()):
        if name.startswith("_") or type(value).__name__ not in _PER_BATCH or not is_a(value, LRScheduler):
            continue
        taken, optimizer = getattr(value, "last_epoch", 0), value.optimizer
        steps = course.steps_of(rec.training.label_of(optimizer) or type(optimizer).__name__)
        total = getattr(value, "total_steps", None)
        if not (isinstance(taken, int) and taken >= 1 and 2 * taken <= steps) or (
            isinstance(total, int) and taken >= total
        ):
            continue
        kind = type(value).__name__
        opt_name = name_of(optimizer, scope)
        stepped = line_of(source_lines, re.compile(rf"\b{re.escape(name)}\.step\("))
        after = line_of(source_lines, re.compile(rf"\b{re.escape(opt_name)}\.step\("))
        lr = optimizer.param_groups[0].get("lr") if optimizer.param_groups else None
        rate = f" The learning rate ends at {lr:.4g}." if isinstance(lr, float | int) else ""
        cycle = f" of the {total} its cycle has (total_steps={total})" if isinstance(total, int) else ""
        where = f" (line {stepped})" if stepped else ""
        said.append(
            Said(
                "scheduler-stepped-per-epoch",
                stepped,
                f"{name}.step() runs once per epoch: {kind} counts optimizer steps",
                f"{name} ({kind}) stepped {taken} times{where}, while {opt_name} stepped {steps} times. {kind} "
                "counts its schedule in optimizer steps (batches), so it expects one step() after every "
                f"{opt_name}.step(): by the end of the run it has taken {taken} steps{cycle}, and the learning rate "
                f"followed only the start of its curve.{rate} Nothing raises.",
                f"Move {name}.step() into the batch loop, right after {opt_name}.step()"
                + (f" (line {after})" if after else "")
                + "; a schedule meant per epoch is another scheduler's (StepLR, CosineAnnealingLR).",
                [],
            )
        )
    return said
