"""Gradients cleared before any step used them (gradients-cleared-unused).

``opt.step()`` indented one level too far out, under the epoch loop while ``zero_grad()``,
the forward and ``loss.backward()`` run once per batch: each batch's gradients are cleared
by the next batch's ``zero_grad()`` before any step sees them, and each step uses the last
batch's alone. Nothing fails; the model trains on one batch in N.

Told by a parameter whose ``.grad`` a backward() wrote, then cleared (set to ``None``,
replaced, or zeroed in place) before the *same* backward() line ran again, with no step of
any optimizer in between, twice or more before the step of an optimizer holding it; judged
at that step, so a parameter no optimizer holds (left to parameter-not-optimized) is never
said. Not flagged: a GAN's discriminator, whose gradients from the generator's loss its own
``zero_grad()`` clears (another optimizer stepped in between, even where one helper's line,
``update(opt, loss)``, runs both backward() calls); gradient accumulation (backward() adds
into the ``.grad`` it left), whose last partial group an epoch's first ``zero_grad()`` drops
once; the backward() calls of an LBFGS closure, which ``step()`` itself makes; and a loop
that reads ``.grad`` after its backward() (per-sample gradients summed, clipped or squared:
DP-SGD's microbatches, EWC's Fisher).
"""

from __future__ import annotations

import ast
import functools
import weakref
from collections.abc import Iterable, Sequence

import torch

from ..source import loops_around, parsed_source

__all__ = ["UnusedGradients", "cleared_unused"]


class UnusedGradients:
    """Follows what each backward() wrote into parameters' ``.grad`` until a step uses it
    (see the module's docstring). Fed only in walks recorded in full."""

    def __init__(self) -> None:
        # id(param) -> (param, its gradient, the gradient's version, the backward's line)
        self._written: dict[int, tuple[weakref.ref[torch.Tensor], weakref.ref[torch.Tensor], int, int]] = {}
        self._lost: dict[int, tuple[int, int]] = {}  # id(param) -> (backward line, times cleared)

    def before_backward(self, line: int | None) -> None:
        """A backward() at ``line`` is about to run: count what was cleared unused since the last
        run of this same line."""
        for key, (param, grad, version, at) in list(self._written.items()):
            p, g = param(), grad()
            if p is None:
                del self._written[key]
                continue
            if g is not None and p.grad is g and (g._version == version or bool(g.any())):
                continue  # still what that backward left (or changed by code, not cleared)
            del self._written[key]
            if at == line:
                self._lost[key] = (at, self._lost.get(key, (at, 0))[1] + 1)

    def after_backward(self, params: Iterable[torch.Tensor], line: int | None) -> None:
        """A backward() at ``line`` returned: note the gradients it left in ``params``."""
        if line is None:
            return
        for p in params:
            g = p.grad
            if g is not None:
                self._written[id(p)] = (weakref.ref(p), weakref.ref(g), g._version, line)

    def stepped(self, params: Sequence[torch.Tensor], source_lines: Sequence[str]) -> tuple[int, int] | None:
        """An optimizer stepped over ``params``: ``(backward line, times)`` where gradients of
        them were cleared unused two or more times since its last step (the most often
        cleared); ``None`` else, and ``None`` where the loop around that backward() reads
        ``.grad`` after it (``source_lines``: per-sample gradients summed or squared by the
        snippet, as DP-SGD's microbatches and EWC's Fisher do, are used, not lost). Whatever
        any backward() left before a step is judged no more: a step came between it and the
        next backward()."""
        lost = [self._lost.pop(id(p)) for p in params if id(p) in self._lost]
        self._written.clear()
        most = max(lost, key=lambda found: found[1]) if lost else None
        if most is None or most[1] < 2 or _grads_read_after("\n".join(source_lines), most[0]):
            return None
        return most


@functools.lru_cache(maxsize=8)
def _grads_read_after(source: str, line: int) -> bool:
    """Whether the innermost loop around ``line`` reads an ``x.grad`` below it: a value used
    (``f += p.grad ** 2``), not a clear (``p.grad = None``, ``p.grad.zero_()``) nor a check
    (``p.grad is not None``)."""
    tree = parsed_source(source)
    if tree is None:
        return False
    loops = loops_around(tree, line, header=True)
    if not loops:
        return False
    loop = loops[-1]  # the innermost
    skipped: set[int] = set()
    for node in ast.walk(loop):
        if isinstance(node, ast.Attribute) and node.attr == "zero_":
            skipped.add(id(node.value))
        elif isinstance(node, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value is None for c in node.comparators
        ):
            skipped.add(id(node.left))
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "grad"
        and isinstance(node.ctx, ast.Load)
        and node.lineno > line
        and id(node) not in skipped
        for node in ast.walk(loop)
    )


def cleared_unused(
    backward_line: int, times: int, step_line: int | None, opt: str, source_lines: Sequence[str]
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for the backward() at ``backward_line`` whose gradients were
    cleared ``times`` times before ``opt``'s step (at ``step_line``) used them."""
    zero = next(
        (n for n in range(backward_line - 1, 0, -1) if ".zero_grad(" in source_lines[n - 1]),
        None,
    )
    cleared = f" by {source_lines[zero - 1].strip()} (line {zero})" if zero else ""
    at_step = f" (line {step_line})" if step_line else ""
    code = source_lines[backward_line - 1].strip() if 0 < backward_line <= len(source_lines) else "backward()"
    return (
        f"{opt}.step() misses most backward() calls: their gradients are cleared before it runs",
        f"{code} at line {backward_line} ran {times + 1} times before {opt}.step(){at_step}, and {times} "
        f"time{'s' if times > 1 else ''} the gradients it left were cleared{cleared} before any step used them: the step "
        f"updates the model with the last batch's gradient alone, and the {times} batches before it "
        "are computed for nothing. A step indented one level too far out (under the epoch loop, not "
        "the batch loop) does this.",
        f"Step after every backward(): put {opt}.step() in the same loop, right after loss.backward() "
        "(zero_grad → forward → loss → backward → step). To sum several batches' gradients on purpose, "
        "call zero_grad() only after the step.",
    )
