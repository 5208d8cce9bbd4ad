"""Gradient clipping that never reaches an update: after the step it was meant for
(clip-after-step), or given a generator something else has read (clip-got-no-parameters).

``clip_grad_norm_`` (or ``clip_grad_value_``) changes ``.grad`` in place; the step that
follows it uses what it left. Called after ``opt.step()`` with no backward() since, it
clips gradients the step has already used, which the next ``zero_grad()`` clears: the
updates are never clipped, and nothing says so. Told by counting backward() calls: none
since the last optimizer step.
"""

from __future__ import annotations

import re

__all__ = ["clip_after_step", "clip_got_no_parameters"]


def clip_after_step(
    function: str, line: int | None, step: int, step_line: int | None, backward_line: int | None
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for ``function`` called at ``line`` after optimizer step
    ``step`` (at ``step_line``) with no backward() since (the loop's at ``backward_line``)."""
    at_step = f" (line {step_line})" if step_line else ""
    at_backward = f" (line {backward_line})" if backward_line else ""
    if (
        line is not None
        and backward_line is not None
        and step_line is not None
        and line < backward_line < step_line
    ):
        # written above the backward() of its own iteration: it clips the last iteration's gradients
        return (
            f"{function} runs before backward(): it clips nothing the step uses",
            f"{function} changes the gradients in place, and the step after it uses what it left. Here it "
            f"runs before loss.backward(){at_backward}, so what it clips is not this iteration's gradients "
            "(only what an earlier one left, or nothing after zero_grad()): backward() then computes them "
            "afresh, unclipped, for opt.step(). The clipping never reaches an update.",
            f"Move it below loss.backward(){at_backward}, before opt.step(){at_step}: zero_grad → forward → "
            f"loss → backward → {function}(…) → step.",
        )
    return (
        f"{function} runs after step(): it clips nothing the step uses",
        f"{function} changes the gradients in place, and the step after it uses what it left. Here "
        f"it runs after opt.step(){at_step}, with no backward() in between: step {step} has already "
        "updated the parameters with the gradients as backward() left them, unclipped, and the next "
        "zero_grad() clears the clipped ones. The clipping never reaches an update.",
        f"Clip between loss.backward(){at_backward} and opt.step(){at_step}: zero_grad → forward → "
        f"loss → backward → {function}(…) → step.",
    )


def clip_got_no_parameters(
    function: str, name: str | None, line: int | None, source_lines: list[str]
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for ``function`` called at ``line`` with a generator (bound to
    ``name``, when the snippet binds it) that yields nothing: ``params = model.parameters()``,
    read whole by the optimizer built from it, then handed to the clip."""
    given = f"`{name}`" if name else "the generator it was given"
    reader = _first_reader(name, line, source_lines) if name else None
    read = (
        f"line {reader[0]} read it first (`{reader[1]}`)"
        if reader
        else "something read it first (an optimizer built from it reads it all)"
    )
    return (
        f"{function} clipped nothing: its parameters were an empty generator",
        f"{given} is a generator (model.parameters() returns one), and a generator hands out its items "
        f"once: {read}, so here it gives no parameters. PyTorch warns and returns 0; the gradients "
        "stay as backward() left them and every update is unclipped.",
        f"Pass a fresh generator, {function}(model.parameters(), …), or make the parameters a list "
        "once, params = list(model.parameters()), so that every reader gets them all.",
    )


def _first_reader(name: str, line: int | None, source_lines: list[str]) -> tuple[int, str] | None:
    """The first line other than ``line`` that passes ``name`` into a call (``SGD(params, …)``)."""
    passed = re.compile(rf"[(,]\s*{re.escape(name)}\s*[,)]")
    for number, text in enumerate(source_lines, start=1):
        if number != line and passed.search(text):
            return number, text.strip()
    return None
