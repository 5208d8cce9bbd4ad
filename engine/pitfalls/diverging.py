"""A loss that climbs while it trains, without reaching NaN or Inf (loss-diverging).

A learning rate a little too high makes each update overshoot further than the last: the
loss grows step after step. A long run ends in Inf or NaN (non-finite-loss says so); a short
one just ends with a loss thousands of times its best, and the charts are the only sign. Told
at the end of the run, per optimizer, from the losses its steps used: at least five steps,
positive losses, and the run ending at its highest loss, at least ten times the first and a
hundred times the lowest. A loss that rises and falls (a GAN's discriminator) does not end
at its peak that far above where it began, and is not flagged; nor is a learning-rate range
test, whose divergence is its purpose: the learning rate grew tenfold or more over the
course, and the loop that steps breaks out under an ``if`` (the test's stop on the loss).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import NamedTuple

from ..source import loops_around, parsed_source
from .kinds import Said
from .rebuilt import construction_line

__all__ = ["Diverged", "LossCourse", "diverged_reports"]

_FEWEST_STEPS = 5
_ABOVE_FIRST = 10.0
_ABOVE_LOWEST = 100.0
_SWEPT = 10.0  # a learning rate raised this much over the course: a range test's sweep


class _Course:
    __slots__ = ("first", "first_lr", "highest", "last", "line", "lowest", "lr", "steps")

    def __init__(self, step: int, loss: float, lr: float | None, line: int | None) -> None:
        self.first = self.last = self.lowest = self.highest = (step, loss)
        self.steps = 1
        self.lr = self.first_lr = lr
        self.line = line


class Diverged(NamedTuple):
    """One optimizer's losses: the first, the lowest and the last, as ``(step, loss)``."""

    label: str
    first: tuple[int, float]
    lowest: tuple[int, float]
    last: tuple[int, float]
    lr: float | None
    line: int | None  # the step's snippet line
    first_lr: float | None = None  # the learning rate of the course's first step


class LossCourse:
    """The course of the loss under each optimizer (by its label in the charts)."""

    def __init__(self) -> None:
        self._courses: dict[str, _Course] = {}
        self._broken: set[str] = set()  # a loss that was not a positive number: no ratio to read
        self._steps: dict[str, int] = {}  # the latest step of each, whatever its loss

    def note(self, label: str, step: int, loss: float | None, lr: float | None, line: int | None) -> None:
        """Take the loss optimizer ``label``'s ``step`` (at snippet line ``line``, with
        learning rate ``lr``) used; ``None`` where it has none to judge (an optimizer with
        ``maximize=True``, whose loss is meant to climb), which ends its course."""
        self._steps[label] = step
        if label in self._broken:
            return
        if loss is None or not (math.isfinite(loss) and loss > 0):
            self._broken.add(label)
            return
        course = self._courses.get(label)
        if course is None:
            self._courses[label] = _Course(step, loss, lr, line)
            return
        course.steps += 1
        course.last = (step, loss)
        course.lr = lr
        if loss < course.lowest[1]:
            course.lowest = (step, loss)
        if loss >= course.highest[1]:
            course.highest = (step, loss)

    def steps_of(self, label: str) -> int:
        """How many steps optimizer ``label`` took (0 for one never seen)."""
        return self._steps.get(label, 0)

    def diverged(self) -> list[Diverged]:
        """The optimizers whose loss climbed to its highest at the end (see the module docstring)."""
        found = []
        for label, course in self._courses.items():
            if label in self._broken or course.steps < _FEWEST_STEPS:
                continue
            last = course.last[1]
            if (
                course.highest == course.last
                and last >= _ABOVE_FIRST * course.first[1]
                and last >= _ABOVE_LOWEST * course.lowest[1]
            ):
                found.append(
                    Diverged(
                        label,
                        course.first,
                        course.lowest,
                        course.last,
                        course.lr,
                        course.line,
                        course.first_lr,
                    )
                )
        return found


def diverged_reports(found: list[Diverged], source_lines: list[str]) -> list[Said]:
    """loss-diverging for each optimizer in ``found``, at the line that builds it (else its step's);
    not for a learning-rate range test (see the module's docstring)."""
    found = [course for course in found if not _range_test(course, source_lines)]
    return [
        Said(
            "loss-diverging",
            construction_line(course.label.split(" (")[0], course.line, source_lines) or course.line,
            *diverged_report(course),
            [],
        )
        for course in found
    ]


def _range_test(course: Diverged, source_lines: Sequence[str]) -> bool:
    """Whether ``course`` is a learning-rate range test's: its learning rate raised tenfold or
    more, and the loop around its step holds a ``break`` under an ``if``."""
    if course.first_lr is None or course.lr is None or course.line is None:
        return False
    if not 0 < _SWEPT * course.first_lr <= course.lr:
        return False
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return False
    loops = loops_around(tree, course.line)
    if not loops:
        return False
    loop = loops[-1]  # the innermost
    return any(
        isinstance(branch, ast.If) and any(isinstance(n, ast.Break) for n in ast.walk(branch))
        for branch in ast.walk(loop)
    )


def diverged_report(found: Diverged) -> tuple[str, str, str]:
    """``(title, message, fix)`` for a loss that climbed under optimizer ``found.label``."""
    (first_step, first), (low_step, low), (last_step, last) = found.first, found.lowest, found.last
    lowest = f", its lowest {low:.4g} at step {low_step}" if low_step != first_step else ""
    lr = f" (here {found.lr:g})" if found.lr is not None else ""
    smaller = f" (try {found.lr / 10:g})" if found.lr is not None else " (try 10× smaller)"
    return (
        "The loss climbs: training diverges",
        f"Under {found.label} the loss went from {first:.4g} at step {first_step} to {last:.4g} at step "
        f"{last_step}{lowest}, and ends at its highest: each update overshoots the minimum further than the "
        f"last. Nothing raises, and a longer run would end in Inf or NaN. The usual cause is a learning rate "
        f"that is too high{lr} for this loss and these inputs.",
        f"Lower the learning rate{smaller}, or normalise the inputs and targets (large values make the same "
        "learning rate too large); clipping gradients (torch.nn.utils.clip_grad_norm_) also bounds each step.",
    )
