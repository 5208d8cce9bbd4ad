"""What non-finite-loss says: a loss (or a step's gradient norm) that became NaN or Inf."""

from __future__ import annotations

__all__ = ["NON_FINITE_TITLE", "non_finite_after_updates", "non_finite_before_updates", "non_finite_said"]

NON_FINITE_TITLE = "The loss became NaN/Inf"


def non_finite_before_updates(where: str, what: str) -> tuple[str, str]:
    """``(message, fix)`` for ``what`` (``the loss is nan``) at ``where``, before any
    parameter was updated: the computation itself made it, no learning rate can have."""
    return (
        f"{where} {what}, before any parameter was updated: an op of this computation produced a NaN "
        "or Inf, typically log() of a negative number (nan) or of 0 (-inf), sqrt() of a negative "
        "number, a division by zero, or exp() of a large number (inf); in backward, an op whose slope "
        "is infinite where it ran, such as sqrt() at 0. Every gradient computed from a NaN or Inf is "
        "NaN or Inf too.",
        "Find the first op whose output holds nan or inf (click its node in the graph: the inspector "
        "shows its output and the gradients it passed on) and keep its "
        "input in range: clamp before log or sqrt (x.clamp_min(1e-8)), add a small epsilon to "
        "denominators, or use a numerically stable form (F.log_softmax, "
        "F.binary_cross_entropy_with_logits).",
    )


def non_finite_after_updates(when: str, what: str, lr: str) -> tuple[str, str]:
    """``(message, fix)`` for ``what`` ``when`` (``After 19 optimizer steps``), after updates:
    most often a learning rate too high (``lr``: `` (here 0.5)``, or empty)."""
    return (
        f"{when} {what}. Once a NaN or Inf appears it spreads through every "
        f"parameter and training cannot recover. The usual cause is a learning rate that is too high{lr}: "
        "each update overshoots, the weights grow without bound and overflow.",
        "Lower the learning rate (try 10× smaller), normalise the inputs, or clip gradients with "
        "torch.nn.utils.clip_grad_norm_.",
    )


def non_finite_said(
    what: str, line: int | None, *, updates: int, step: int | None, taken: int, lr: object
) -> tuple[str, int | None, str, str, str]:
    """``(kind, line, title, message, fix)`` for ``what`` gone non-finite at snippet ``line``:
    ``updates``, the optimizer steps taken before it was computed (with none, no learning rate
    can be the cause); ``step``, the step that found it, if one did; ``taken``, the steps taken
    so far; ``lr``, an optimizer's learning rate (``None`` where the run has no optimizer)."""
    if updates == 0:
        where = "At this backward()" if step is None else f"At optimizer step {step}"
        return ("non-finite-loss", line, NON_FINITE_TITLE, *non_finite_before_updates(where, what))
    # a loss is seen before the step it leads to: after 19 updates it is the loss the charts
    # show at step 20 ("at optimizer step 19" read as the step before the one charted); a
    # gradient norm is read at its own step
    if step is None:
        when = f"After {taken} optimizer step{'' if taken == 1 else 's'}"
    else:
        when = f"At optimizer step {step}"
    said = f" (here {lr})" if lr is not None else ""
    return ("non-finite-loss", line, NON_FINITE_TITLE, *non_finite_after_updates(when, what, said))
