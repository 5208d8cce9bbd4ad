"""A second derivative added into the first (grad-of-grad-accumulated).

``y.backward(create_graph=True)`` leaves the first derivative in ``x.grad`` with a graph of
its own; ``x.grad.backward()`` then differentiates it, and backward() accumulates: the
second derivative is added to the first, in ``x.grad`` itself (x³ at 3: 27 + 18 = 45, not
18). Told by a backward() whose root is the ``.grad`` of a leaf it adds into; not by a penalty
computed from the gradients of several parameters (gradient-norm regularisation), whose sum
with the first derivative is what the optimizer is meant to step on.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence

import torch

__all__ = ["GradOfGrad", "grad_of_grad_added"]


class GradOfGrad:
    """Watches the backward() calls whose root is a gradient with a graph (see the module's
    docstring); fed in walks recorded in full."""

    def __init__(self) -> None:
        self._roots: list[weakref.ref[torch.Tensor]] = []
        # the leaf being added into, and its first derivative as a number (one element)
        self._before: tuple[weakref.ref[torch.Tensor], float | None] | None = None

    def before_backward(self, roots: Sequence[object], params: Iterable[torch.Tensor] = ()) -> None:
        """A backward() from ``roots`` is about to run; ``params``: the model parameters the run
        knows. A root computed from two or more of their gradients is a penalty on the
        gradient (gradient-norm regularisation: loss.backward(create_graph=True), then
        (lam * sum(p.grad.pow(2).sum() …)).backward()), whose sum with the first is the aim."""
        self._roots = [weakref.ref(r) for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
        self._before = None
        graded = [p.grad.grad_fn for p in params if p.grad is not None and p.grad.grad_fn is not None]
        if len(graded) >= 2 and sum(self._reaches(fn) for fn in graded) >= 2:
            self._roots = []

    def before_accumulate(self, leaf: torch.Tensor) -> bool:
        """Whether ``leaf``'s ``.grad`` is this backward()'s root, or what it was computed from
        (``x.grad.sum()``): the walk is about to add a derivative of that gradient into it."""
        grad = leaf.grad
        if grad is None or grad.grad_fn is None or not self._reaches(grad.grad_fn):
            return False
        self._before = (weakref.ref(leaf), float(grad.detach()) if grad.numel() == 1 else None)
        return True

    def _reaches(self, target: object, most: int = 256) -> bool:
        """Whether a root of this backward() is, or was computed from, the node ``target``
        (within ``most`` nodes of the roots)."""
        todo = [r.grad_fn for ref in self._roots if (r := ref()) is not None]
        seen: set[int] = set()
        while todo and len(seen) < most:
            fn = todo.pop()
            if fn is None or id(fn) in seen:
                continue
            if fn is target:
                return True
            seen.add(id(fn))
            todo.extend(next_fn for next_fn, _ in fn.next_functions)
        return False

    def pending(self, leaf: torch.Tensor) -> bool:
        """Whether :meth:`before_accumulate` saw ``leaf``'s gradient be this backward()'s root."""
        return self._before is not None and self._before[0]() is leaf

    def added(self, leaf: torch.Tensor) -> tuple[float, float] | None:
        """``(first derivative, what was added)`` for the leaf :meth:`before_accumulate` saw,
        once backward() added into it, where its gradient is one number; else ``None``."""
        if self._before is None or self._before[0]() is not leaf or self._before[1] is None:
            return None
        first = self._before[1]
        now = leaf.grad
        if now is None or now.numel() != 1:
            return None
        return first, float(now.detach()) - first


def grad_of_grad_added(name: str, numbers: tuple[float, float] | None) -> tuple[str, str, str]:
    """``(title, message, fix)`` for ``name.grad.backward()`` adding into ``name.grad``."""
    worked = ""
    if numbers is not None:
        first, second = numbers
        worked = (
            f" ({first:g} + {second:g} = {first + second:g} here, where the second derivative is {second:g})"
        )
    return (
        f"The second derivative is added to the first, in {name}.grad",
        f"{name}.grad held the first derivative (from backward(create_graph=True)), and this backward() "
        f"differentiates it and adds the result into {name}.grad itself, as every backward() accumulates: "
        f"{name}.grad is now their sum{worked}, not the second derivative.",
        f"Take the first derivative out of .grad before differentiating it: g = {name}.grad; {name}.grad = None; "
        f"g.backward(). Or compute it with torch.autograd.grad(y, {name}, create_graph=True), which leaves "
        f".grad alone, then torch.autograd.grad(g, {name}) for the second.",
    )
