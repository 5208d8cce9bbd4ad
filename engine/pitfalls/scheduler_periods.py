"""A learning-rate schedule sized in epochs, stepped once per batch (scheduler-stepped-past-its-period).

``sched = CosineAnnealingLR(opt, T_max=epochs)`` with ``sched.step()`` in the batch loop: the
schedule counts its steps, not epochs, so it reaches its end after ``T_max`` batches. A cosine
does not stop there: its period is ``2 * T_max``, so the learning rate climbs back to where it
started, falls again, and the run goes through many half-periods where one was meant. A
``PolynomialLR`` or decaying ``LinearLR`` sized by ``total_iters`` reaches its floor (often 0)
after as many batches and trains there for the rest of the run; a ``StepLR`` or
``ExponentialLR`` decays once per batch and the learning rate is near 0 after the first epoch;
a ``MultiStepLR`` passes all its milestones (``milestones=[30, 60]``, meant as epochs) in the
first batches and trains at its lowest rate from then on. Nothing raises.

Told at the end of the run from each scheduler the snippet holds, by the steps it took (its
``last_epoch``) and the learning-rate course they give, which PyTorch's closed forms replay:

- ``CosineAnnealingLR``: stepped past ``T_max`` far enough to climb back a tenth of the way up;
- ``PolynomialLR``, ``LinearLR`` that decays to a tenth or less: stepped at least twice its
  ``total_iters``, so that more than half the run trained at the floor;
- ``StepLR``, ``ExponentialLR``: stepped in a loop inside another loop (the batch loop), as often
  as its optimizer or half as often, and the learning rate fell below 1e-4 of its start by the
  middle of the run;
- ``MultiStepLR``: stepped in a batch loop as often as its optimizer or half as often, past
  its last milestone by the middle of the run (milestones counted in steps, which a run of
  that many steps reaches late, stay silent), and, where the run tells how many batches the
  loop has (``range(n)``, ``len(loader)``), at a milestone within the epochs it ran (one past
  them, ``total_steps // 2``, is counted in steps).

Where the batch loop runs once per epoch (a loader of one batch), or the scheduler stepped no
more often than the loop around it turned (at each epoch's last batch), it is stepped per
epoch, and ``StepLR``, ``ExponentialLR`` and ``MultiStepLR`` stay silent.

Left alone: a schedule sized in steps that the run does not pass (``T_max`` the number of
batches), one stepped per epoch within its length, ``CosineAnnealingWarmRestarts`` (which restarts
on purpose), ``OneCycleLR`` and ``CyclicLR`` (scheduler-stepped-per-epoch), ``LambdaLR`` and the
rest, a warm-up ``LinearLR`` (which stays at its end on purpose), and the parts of a
``SequentialLR`` or ``ChainedScheduler``, which that one steps.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torch.optim.lr_scheduler import LRScheduler

from ..source import is_a, loops_around, parsed_source, quoted_code
from .diverging import LossCourse
from .kinds import Said
from .schedulers import driven_parts, line_of, name_of, never_stepped_schedulers

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["past_period_schedulers", "scheduler_reports"]

_KINDS = ("CosineAnnealingLR", "PolynomialLR", "LinearLR", "StepLR", "ExponentialLR", "MultiStepLR")
# what the run did to the learning rate, in a title
_SHORT = {
    "CosineAnnealingLR": "past {} the lr climbs back up",
    "PolynomialLR": "past {} the lr stays at its floor",
    "LinearLR": "past {} the lr stays at its floor",
    "MultiStepLR": "{} are all passed early and the lr stays at its lowest",
}
_FLOOR = 1e-4  # a StepLR's or ExponentialLR's rate below this share of its start: ~0


def scheduler_reports(scope: dict[str, Any], rec: Recorder, course: LossCourse) -> list[Said]:
    """Every end-of-run report on the schedulers of ``scope``: those of schedulers.py
    (lr-scheduler-never-stepped, scheduler-stepped-per-epoch), then this module's."""
    return [*never_stepped_schedulers(scope, rec, course), *past_period_schedulers(scope, rec, course)]


def past_period_schedulers(scope: dict[str, Any], rec: Recorder, course: LossCourse) -> list[Said]:
    """scheduler-stepped-past-its-period for each scheduler held by a variable of ``scope``
    (the snippet's globals) whose schedule the run stepped past its end (see the module's
    docstring); ``course`` counts its optimizer's steps."""
    found = [
        (name, value)
        for name, value in list(scope.items())
        if not name.startswith("_")
        and type(value).__name__ in _KINDS
        and is_a(value, LRScheduler)
        and isinstance(getattr(value, "last_epoch", None), int)
        and value.last_epoch >= 2
    ]
    if not found:
        return []
    parts = driven_parts(scope)
    source_lines = rec.statement_lines
    said = []
    for name, scheduler in found:
        if id(scheduler) in parts or not scheduler.base_lrs or scheduler.base_lrs[0] <= 0:
            continue
        stepped = line_of(source_lines, re.compile(rf"\b{re.escape(name)}\.step\("))
        tree = parsed_source("\n".join(rec.source_lines))
        loops = loops_around(tree, stepped) if tree is not None else []
        optimizer = scheduler.optimizer
        steps = course.steps_of(rec.training.label_of(optimizer) or type(optimizer).__name__)
        batches = _batches_per_epoch(loops[-1], scope) if len(loops) >= 2 else None
        course_told = _course(scheduler, len(loops) >= 2, steps, batches)
        if course_told is None:
            continue
        opt_name = name_of(optimizer, scope)
        said.append(_report(name, scheduler, opt_name, steps, stepped, loops, course_told, source_lines))
    return said


def _lr(scheduler: Any, t: int) -> float:
    """The first group's learning rate after ``t`` steps of ``scheduler``, by its closed form."""
    base = float(scheduler.base_lrs[0])
    kind = type(scheduler).__name__
    if kind == "CosineAnnealingLR":
        low = float(scheduler.eta_min)
        return low + (base - low) * (1 + math.cos(math.pi * t / scheduler.T_max)) / 2
    if kind == "PolynomialLR":
        left = 1 - min(t, scheduler.total_iters) / scheduler.total_iters
        return base * left**scheduler.power
    if kind == "LinearLR":
        start, end = scheduler.start_factor, scheduler.end_factor
        return base * (start + (end - start) * min(t, scheduler.total_iters) / scheduler.total_iters)
    if kind == "StepLR":
        return base * scheduler.gamma ** (t // scheduler.step_size)
    if kind == "MultiStepLR":  # (milestones: a Counter; a milestone given twice decays twice)
        return base * scheduler.gamma ** sum(n for m, n in scheduler.milestones.items() if m <= t)
    return base * scheduler.gamma**t  # ExponentialLR


def _course(scheduler: Any, inner: bool, steps: int, batches: int | None = None) -> str | None:
    """What the learning rate did over the run, in words, where it ran past the schedule's
    end (``inner``: stepped in a loop inside another loop, which runs ``batches`` times per
    turn of the loop around it where the run tells; ``steps``: its optimizer's), or ``None``
    where it did not."""
    kind = type(scheduler).__name__
    taken: int = scheduler.last_epoch
    base = float(scheduler.base_lrs[0])
    if kind == "CosineAnnealingLR":
        period = scheduler.T_max
        if not isinstance(period, int) or not 1 <= period < taken or base <= scheduler.eta_min:
            return None
        top = max(_lr(scheduler, t) for t in range(period, min(taken, 2 * period) + 1))
        if top - scheduler.eta_min < (base - scheduler.eta_min) / 10:
            return None  # (a step or two past its end: barely back up)
        back = min(taken, 2 * period)
        halves = taken / period
        return (
            f"the lr fell from {base:.4g} to {_lr(scheduler, period):.4g} at step {period} and climbed back to "
            f"{_lr(scheduler, back):.4g} by step {back}; over {taken} steps it went through "
            f"{halves:.3g} cosine half-periods where one was meant"
        )
    if kind in ("PolynomialLR", "LinearLR"):
        end = scheduler.total_iters
        if not isinstance(end, int) or end < 1 or taken < 2 * end or _lr(scheduler, end) > base / 10:
            return None
        if _lr(scheduler, end) >= _lr(scheduler, 0):
            return None  # a warm-up, which stays at its end on purpose
        return (
            f"the lr fell from {_lr(scheduler, 0):.4g} to {_lr(scheduler, end):.4g} at step {end} (total_iters="
            f"{end}) and stayed there for the other {taken - end} of its {taken} steps"
        )
    if not inner or 2 * taken < steps or batches == 1:
        return None  # (one batch an epoch: stepped per batch is stepped per epoch)
    if batches is not None and taken * batches <= steps:
        return None  # once per turn of the outer loop (at an epoch's last batch): per epoch
    if kind == "MultiStepLR":
        last = max(scheduler.milestones, default=0)
        if last < 1 or 2 * last > taken or _lr(scheduler, taken) >= base:
            return None
        if batches is not None and last * batches > taken:
            return None  # more milestones than epochs: counted in batches (total_steps // 2)
        return (
            f"the lr fell from {base:.4g} to {_lr(scheduler, last):.4g} at step {last}, its last milestone, and "
            f"stayed there for the other {taken - last} of its {taken} steps"
        )
    floor = next((t for t in range(taken + 1) if _lr(scheduler, t) < base * _FLOOR), None)
    if floor is None or 2 * floor > taken:
        return None
    return (
        f"the lr fell from {base:.4g} below {base * _FLOOR:.2g} by step {floor} and ended at "
        f"{_lr(scheduler, taken):.3g} after {taken} steps: most of the run trained at a learning rate of about 0"
    )


def _batches_per_epoch(loop: ast.For | ast.AsyncFor | ast.While, scope: dict[str, Any]) -> int | None:
    """How many times ``loop`` (the batch loop) runs per turn of the loop around it, read from
    what it iterates and the snippet's globals ``scope`` at the end of the run: ``range(n)``,
    ``len(loader)`` for ``loader``, ``enumerate(loader)`` or ``tqdm(loader)``; ``None`` where
    that is not known."""
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return None
    over = loop.iter
    if isinstance(over, ast.Call) and isinstance(over.func, ast.Name) and over.args:
        called, args = over.func.id, over.args
        if called in ("enumerate", "tqdm"):
            over = args[0]
        elif called == "range" and len(args) <= 2:
            bounds = [_count(a, scope) for a in args]
            start, end = ([0, *bounds] if len(bounds) == 1 else bounds)[:2]
            return None if start is None or end is None else end - start
    if not isinstance(over, ast.Name):
        return None
    return _length(scope.get(over.id))


def _length(value: object) -> int | None:
    """``len(value)`` where it has one (a list of batches, a DataLoader over a sized dataset)."""
    try:
        return len(value) if value is not None and hasattr(value, "__len__") else None
    except TypeError:
        return None


def _count(node: ast.expr, scope: dict[str, Any]) -> int | None:
    """The int ``node`` gives: a number, a global name holding one, ``len(name)``, or ``+``, ``-``,
    ``*``, ``//`` of those; ``None`` for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        value = scope.get(node.id)
        return value if type(value) is int else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        return _length(scope.get(node.args[0].id)) if isinstance(node.args[0], ast.Name) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv):
        left, right = _count(node.left, scope), _count(node.right, scope)
        if left is None or right is None or (isinstance(node.op, ast.FloorDiv) and right == 0):
            return None
        return _OPERATIONS[type(node.op)](left, right)
    return None


_OPERATIONS = {
    ast.Add: int.__add__,
    ast.Sub: int.__sub__,
    ast.Mult: int.__mul__,
    ast.FloorDiv: int.__floordiv__,
}


def _per_epoch(loop: ast.For | ast.AsyncFor | ast.While) -> str:
    """How many batches ``loop`` (the batch loop) runs per epoch, as code: ``len(loader)``."""
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return "the number of batches per epoch"
    over = loop.iter
    if (
        isinstance(over, ast.Call)
        and isinstance(over.func, ast.Name)
        and over.func.id == "range"
        and len(over.args) == 1
    ):
        return ast.unparse(over.args[0])
    if isinstance(over, ast.Call) and isinstance(over.func, ast.Name) and over.func.id == "enumerate":
        over = over.args[0] if over.args else over
    return f"len({ast.unparse(over)})"


def _report(
    name: str,
    scheduler: Any,
    opt_name: str,
    steps: int,
    stepped: int | None,
    loops: list[ast.For | ast.AsyncFor | ast.While],
    course: str,
    source_lines: Sequence[str],
) -> Said:
    kind = type(scheduler).__name__
    setting = {"CosineAnnealingLR": "T_max", "StepLR": "step_size", "MultiStepLR": "milestones"}.get(
        kind, "total_iters"
    )
    sized = (
        sorted(scheduler.milestones.elements())
        if kind == "MultiStepLR"
        else getattr(scheduler, setting, None)
    )
    taken = scheduler.last_epoch
    built = line_of(source_lines, re.compile(rf"^{re.escape(name)}\s*=[^=]"))
    where = f" at line {stepped}" if stepped else ""
    settings = f"{setting}={sized}" if kind != "ExponentialLR" else f"gamma={scheduler.gamma:g}"
    cosine = (
        " A cosine's period is 2 * T_max: past T_max the rate climbs back up." if setting == "T_max" else ""
    )
    if len(loops) >= 2:
        inner, outer = loops[-1], loops[-2]
        lasts = (
            f"{settings} applies per batch, not per epoch"
            if kind == "ExponentialLR"
            else f"{settings} count batches, not epochs"
            if kind == "MultiStepLR"
            else f"{settings} lasts {sized} batch{'es' * (sized != 1)}, not {sized} epoch{'s' * (sized != 1)}"
        )
        message = (
            f"{name} ({kind}, {settings}) stepped {taken} times{where}, inside the loop at line {inner.lineno} "
            f"within the loop at line {outer.lineno}: once per batch ({opt_name} stepped {steps} times). A scheduler "
            f"counts the calls of its step(), so {lasts}: {course}."
        )
        fix = f"Step it once per epoch: move {name}.step(){where} out of the loop at line {inner.lineno}, below it"
        if kind == "ExponentialLR":
            fix += "."
        else:
            written = _argument(quoted_code(source_lines, built, sys.maxsize) or "", setting, str(sized))
            per_epoch = _per_epoch(inner)
            in_batches = (
                f"[m * {per_epoch} for m in {written}]"
                if kind == "MultiStepLR"
                else f"{written} * {per_epoch}"
            )
            fix += f"; or, to step it per batch, count its schedule in batches: {setting}={in_batches}."
    else:
        message = (
            f"{name} ({kind}, {settings}) stepped {taken} times{where} ({opt_name} stepped {steps} times), past "
            f"the {sized} steps its schedule has: {course}."
        )
        fix = f"Size its schedule to the steps it takes: {setting}={taken}, the number of times {name}.step() runs"
        fix += (
            " (or CosineAnnealingWarmRestarts, to restart on purpose)."
            if kind == "CosineAnnealingLR"
            else "."
        )
    return Said(
        "scheduler-stepped-past-its-period",
        stepped,
        (f"{name}.step() runs once per batch: " if len(loops) >= 2 else f"{name} stepped {taken} times: ")
        + _SHORT.get(kind, "the lr falls to about 0 early in the run").format(settings),
        message + cosine + " Nothing raises.",
        fix,
        [],
    )


def _argument(code: str, setting: str, value: str) -> str:
    """How ``code`` (the line that builds the scheduler) writes ``setting=…`` (``epochs``),
    else ``value``."""
    found = re.search(rf"\b{setting}\s*=\s*([\w.]+(?:\([^()]*\))?)", code)
    return found.group(1) if found else value
