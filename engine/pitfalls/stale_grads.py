"""Which parameters' ``.grad`` still hold gradients an optimizer step used, and what
missing-zero-grad says when a later step uses them again.

NOTE [Stale gradients]: ``.grad`` accumulates, so what a step used is still there until
zero_grad() sets it to ``None`` or zeroes it in place, or the snippet replaces it; seen at
the next backward call, a different tensor in ``.grad`` or a new version of the same one
(changed in place outside a backward) counts as cleared, and so does one that holds only
zeros: ``p.grad.data.zero_()`` (how Module.zero_grad() once cleared) leaves the version as it
was, and adding into zeros uses nothing left over. A backward that adds into what is left is
not yet a mistake: a GAN's generator loss adds into the discriminator's gradients, which the
discriminator's zero_grad() clears before its next step. The mistake is a step
that uses them, so a backward only marks the gradient (``added``, at its line) and the next
step over the parameter judges: is its ``.grad`` still that tensor (clipping it in place in
between does not clear it)? Everything is held weakly, the gradient too: a snippet may keep
an old ``.grad`` (``g = w.grad``), which is then no longer the parameter's.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch

from ..values import dispatches_to_python

__all__ = ["LeftInGrad", "StaleGradients", "stale_used_explained", "zeroed"]


class LeftInGrad:
    """What one parameter's ``.grad`` holds since an optimizer step used it."""

    __slots__ = ("added", "added_at", "grad", "param", "step", "version")

    def __init__(self, param: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        self.param = weakref.ref(param)
        self.grad = weakref.ref(grad)
        self.version = grad._version
        self.step = step  # the optimizer step that used it
        self.added = False  # whether a backward has added into it since
        self.added_at: int | None = None  # that backward's line

    def holds(self) -> bool:
        """Whether the parameter's ``.grad`` is still this gradient, untouched since seen
        and not zeroed through ``.data``."""
        p, g = self.param(), self.grad()
        return (
            p is not None and g is not None and p.grad is g and g._version == self.version and not zeroed(g)
        )


class StaleGradients:
    """Follow the gradients each step used through the backward calls after it
    (NOTE [Stale gradients]).

    ``line_of(line)`` turns the line a backward hook was given into the snippet line (it may
    walk the stack: called only when a backward adds into used gradients, once per call).
    """

    def __init__(self, line_of: Callable[[Any], int | None]) -> None:
        self._line_of = line_of
        self._left: dict[int, LeftInGrad] = {}  # by id(param)
        self._watched: list[LeftInGrad] = []  # what the backward in progress may add into

    def before_backward(self) -> None:
        """Forget the gradients cleared or replaced since their step; watch the others."""
        if not self._left:
            self._watched = []
            return
        watched = []
        for key, entry in list(self._left.items()):
            if entry.holds():
                watched.append(entry)
            else:
                del self._left[key]
        self._watched = watched

    def after_backward(self, line: Any) -> None:
        """Mark the used gradients this backward added into, at its line ``line``."""
        watched, self._watched = self._watched, []
        for entry in watched:
            p = entry.param()
            now = p.grad if p is not None else None
            if now is None or (now is entry.grad() and now._version == entry.version):
                continue  # this backward did not reach it
            if not entry.added:
                line = self._line_of(line)  # the stack walk only when needed, once
                entry.added, entry.added_at = True, line
            entry.grad, entry.version = weakref.ref(now), now._version

    def used_by(self, params: list[torch.Tensor], step: int) -> tuple[LeftInGrad, torch.Tensor] | None:
        """The stale gradient a step over ``params`` (its ``step``-th) just used, with the
        parameter's ``.grad``; else ``None``, and what each ``.grad`` holds is remembered."""
        left = self._left
        for p in params:
            entry = left.get(id(p))
            g = p.grad
            if (
                entry is not None
                and entry.added
                and g is not None
                and g is entry.grad()
                and entry.param() is p
            ):
                left.clear()
                return entry, g
            if g is None:
                left.pop(id(p), None)
            else:
                left[id(p)] = LeftInGrad(p, g, step)
        return None


def zeroed(grad: torch.Tensor) -> bool:
    """Whether ``grad`` holds only zeros (cleared in place through ``.data``, which keeps its
    version); ``False`` where it cannot be read (a meta tensor) or must not be (its ops run the
    snippet's ``__torch_dispatch__``). Asked only of a gradient that is otherwise left over."""
    if dispatches_to_python(grad):
        return False
    try:
        return not bool(grad.detach().any())
    except (RuntimeError, NotImplementedError):
        return False


def stale_used_explained(
    entry: LeftInGrad, grad: torch.Tensor, step: int, uncalled: list[tuple[int, str, str]]
) -> tuple[str, str, str]:
    """``(title, message, fix)`` of missing-zero-grad for optimizer step ``step``, which used
    ``grad``, the stale gradient :meth:`StaleGradients.used_by` returned with ``entry``;
    ``uncalled``: the snippet's methods named without parentheses (uncalled.py)."""
    norm = float(grad.detach().norm())
    return (
        "Gradients from the previous step are still in .grad",
        f"This backward() added its gradients to the ones left over from optimizer step {entry.step}, "
        f"and step {step} used the sum (‖grad‖ is now {norm:.4g}): .grad accumulates with +=, it is "
        "never reset by backward() or step(). Every step then follows the sum of all past gradients, and "
        "the loss grows or oscillates instead of falling.",
        _zero_grad_fix(uncalled),
    )


def _zero_grad_fix(uncalled_methods: list[tuple[int, str, str]]) -> str:
    """The fix of missing-zero-grad: add the parentheses where the snippet names
    ``opt.zero_grad`` without calling it, else call it once per step."""
    uncalled = [(line, name) for line, name, method in uncalled_methods if method == "zero_grad"]
    if uncalled:
        line, name = uncalled[0]
        return (
            f"Line {line} names {name} without calling it, which does nothing: Python reads the "
            f"method and drops it. Add the parentheses: {name}()."
        )
    return (
        "Call opt.zero_grad() once per step, before loss.backward() (the usual order: zero_grad → "
        "forward → loss → backward → step)."
    )
