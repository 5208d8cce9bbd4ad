"""The end-of-run reports read from what the run left and from the source: running totals
and lists of loss tensors that keep graphs (loss-tensor-accumulated), forward passes in eval
mode no backward used (graph-built-in-evaluation), a method named without its parentheses
(method-not-called), a loop variable rebound to an update (loop-variable-rebound) and a seed
reset inside the training loop (seed-reset-in-loop).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .kinds import Said
from .loss_lists import kept_losses
from .rebound import rebound_updates
from .running_totals import AccumulatedTotal
from .uncalled import WHAT_IT_SKIPS

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["loop_reports", "memory_reports", "rebound_reports", "uncalled_reports"]


def memory_reports(
    rec: Recorder,
    scope: dict[str, Any],
    totals: Iterable[AccumulatedTotal],
    forwards: Sequence[tuple[int | None, int]],
) -> list[Said]:
    """What the run left holding graphs: running totals and lists of loss tensors
    (loss-tensor-accumulated, loss_lists.py), and forward passes in eval mode no backward
    used (graph-built-in-evaluation). ``scope``: the snippet's globals; ``forwards``: each
    eval-mode pass's line and the backward() calls by then."""
    evaluations = eval_forward_reports(forwards, rec.backward.calls)
    return [*total_reports(totals), *evaluations, *kept_losses(scope, rec.source_lines, bool(evaluations))]


def total_reports(totals: Iterable[AccumulatedTotal]) -> list[Said]:
    """loss-tensor-accumulated for each running total of graphs the run left."""
    said = []
    for line, length, start, end, across_a_step in totals:
        grew = (
            f" The tensors saved for backward grew from {start:,} to {end:,} bytes meanwhile."
            if end > start
            else ""
        )
        added = (
            f"{length} times in the iterations recorded in full, on both sides of an optimizer step: the total "
            "outlives the iteration (one started again each epoch still keeps a whole epoch's graphs)"
            if across_a_step
            else f"{length} times"
        )
        said.append(
            Said(
                "loss-tensor-accumulated",
                line,
                "A running total keeps every iteration's graph alive",
                f"This line adds a tensor that carries a graph into a running total {added}. The total "
                f"is itself part of a graph that now links every iteration's forward pass, so none of them can "
                f"be freed and memory grows with every batch.{grew}",
                "Accumulate a plain number: total += loss.item() (or loss.detach()).",
                [],
            )
        )
    return said


def eval_forward_reports(forwards: Sequence[tuple[int | None, int]], backward_calls: int) -> list[Said]:
    """graph-built-in-evaluation when forward passes ran in eval mode with gradients on and no
    backward() came after them; ``forwards``: each one's line and the backward() calls by then."""
    unused = [line for line, calls in forwards if calls == backward_calls]
    if not unused:
        return []
    return [
        Said(
            "graph-built-in-evaluation",
            unused[0],
            "eval() mode with gradients on: graphs built and never used",
            f"{len(unused)} forward pass(es) ran with the model in eval() mode but with gradient recording on, "
            "and no backward() used them. model.eval() only changes how layers such as dropout and batch norm "
            "behave; it does not stop autograd from recording a graph and keeping its saved tensors.",
            "Wrap evaluation in `with torch.no_grad():` (or torch.inference_mode()) as well as calling "
            "model.eval().",
            [],
        )
    ]


def uncalled_reports(uncalled: Iterable[tuple[int, str, str]]) -> list[Said]:
    """method-not-called for each ``(line, name, method)`` named without its parentheses."""
    return [
        Said(
            "method-not-called",
            line,
            f"{name} is named, not called",
            f"Without parentheses, Python reads the method {name} and drops it: this line does nothing "
            f"and raises nothing, so {WHAT_IT_SKIPS[method]}.",
            f"Add the parentheses: {name}().",
            [],
        )
        for line, name, method in uncalled
    ]


def loop_reports(rec: Recorder) -> list[Said]:
    """What the source and the run say of the snippet's loops: loop-variable-rebound, and
    seed-reset-in-loop (reseeds.py, from the ``torch.manual_seed`` calls library_calls.py
    showed it)."""
    return [*rebound_reports(rec.source_lines), *rec.library_calls.seeds.reports()]


def rebound_reports(source_lines: list[str]) -> list[Said]:
    """loop-variable-rebound for each step by hand that rebinds its loop variable."""
    return [
        Said(
            "loop-variable-rebound",
            line,
            f"{name} = … makes a new tensor: the parameter never changes",
            f"This line computes the update and binds it to the loop variable {name}, which the loop "
            f"then binds to the next item: the tensor {name} held (the parameter) is never changed, "
            "nothing raises, and the loss stays where it was.",
            f"Change the parameter in place, outside the graph: with torch.no_grad(): {name} -= {step} "
            "(or let an optimizer do it: torch.optim.SGD(model.parameters(), lr=…)).",
            [],
        )
        for line, name, step in rebound_updates(source_lines)
    ]
