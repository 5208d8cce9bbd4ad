"""What step-without-gradients says: why a step found no gradient, and the fix.

A step none of whose parameters has a ``.grad`` changes nothing: no backward() ran before it
(or ``loss.backward`` was named without its parentheses), or one ran and a ``zero_grad()``
between it and the step cleared what it computed. That ``zero_grad()`` is found in the
snippet's source, between the backward() line and the step's.
"""

from __future__ import annotations

import re
import sys

from ..source import quoted_code

__all__ = ["no_gradients_explained"]

_ZERO_GRAD_CALL = re.compile(r"\bzero_grad\(")


def no_gradients_explained(
    backward_calls: int,
    backward_line: int | None,
    step_line: int | None,
    source_lines: list[str],
    uncalled_backward: list[tuple[int, str]],
) -> tuple[str, str]:
    """``(why, fix)`` for a step at ``step_line`` that found no gradients, after
    ``backward_calls`` backward() calls (the first at ``backward_line``);
    ``uncalled_backward``: the lines that name a ``backward`` without calling it, with the
    name as written."""
    clearing = None
    if backward_calls == 0:
        why = (
            "No backward() ran before this step, so none of the optimizer's parameters has a "
            "gradient, and step() skips every parameter whose .grad is None: the parameters keep "
            "their initial values, and the loss never falls."
        )
    else:
        where = f" (line {backward_line})" if backward_line else ""
        clearing = _zero_grad_between(backward_line, step_line, source_lines)
        cleared = (
            f"line {clearing[0]} ({clearing[1]}) cleared the gradients between it and this step "
            "(zero_grad() sets .grad to None)"
            if clearing
            else "the gradients were cleared between it and this step (zero_grad() sets .grad to "
            "None), or the loss it started from does not depend on these parameters"
        )
        why = (
            "None of the optimizer's parameters had a gradient at this step, so step() skipped them "
            f"all and they kept their values. backward() did run{where}: {cleared}."
        )
    if uncalled_backward:
        at, name = uncalled_backward[0]
        fix = f"Line {at} names {name} without calling it, which does nothing: add the parentheses, {name}()."
    elif clearing:
        fix = (
            f"Move {clearing[1]} (line {clearing[0]}) to the start of the iteration, before the forward "
            "pass: zero_grad → forward → loss → backward → step."
        )
    else:
        fix = (
            "Call loss.backward() after opt.zero_grad() and before opt.step(), every iteration: "
            "zero_grad → forward → loss → backward → step."
        )
    return why, fix


def _zero_grad_between(
    backward_line: int | None, step_line: int | None, source_lines: list[str]
) -> tuple[int, str] | None:
    """The first line strictly between a backward() and the step after it that calls
    ``zero_grad()``, and its code; ``None`` when none does (or the lines are unknown)."""
    if backward_line is None or step_line is None:
        return None
    for at in range(backward_line + 1, step_line):
        code = quoted_code(source_lines, at, sys.maxsize)
        if code is not None and _ZERO_GRAD_CALL.search(code):
            return at, code
    return None
