"""Gradient clipping after the step it was meant for (clip-after-step).

``clip_grad_norm_`` (or ``clip_grad_value_``) changes ``.grad`` in place; the step that
follows it uses what it left. Called after ``opt.step()`` with no backward() since, it
clips gradients the step has already used, which the next ``zero_grad()`` clears: the
updates are never clipped, and nothing says so. Told by counting backward() calls: none
since the last optimizer step.
"""

from __future__ import annotations

__all__ = ["clip_after_step"]


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
