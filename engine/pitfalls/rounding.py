"""A loss computed through ``round`` (``floor``, ``ceil``, ``trunc``, ``sign``), whose slope
is 0 everywhere: no parameter learns (loss-through-rounding).

``pred = torch.round(torch.sigmoid(model(X)))`` then ``loss = ((pred - y) ** 2).mean()``:
rounding the predictions to 0/1 so that the loss "counts mistakes". Autograd does run
through ``round``, but its derivative is 0 wherever it is defined, so ``RoundBackward0``
sends back zeros whatever it receives, and every parameter behind it gets a gradient of
exactly 0. Nothing raises; the loss stays where it started.

Told at the rounding op's line, after a recorded backward() in which such a node received a
gradient that was not all zeros, sent only zeros, and no leaf's ``.grad`` came out with a
number other than 0 (another path to the parameters, a rounded term added to a loss that
also reads the raw output, leaves it alone; so does a straight-through estimator, ``x +
(x.round() - x).detach()``, which keeps no rounding node in the graph).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from ..source import quoted_code

__all__ = ["RoundingCuts"]

# a backward node -> the op as the snippet calls it
_FLAT = {
    "RoundBackward0": "round",
    "RoundBackward1": "round",
    "FloorBackward0": "floor",
    "CeilBackward0": "ceil",
    "TruncBackward0": "trunc",
    "SignBackward0": "sign",
    "SgnBackward0": "sgn",
}


class _Cut(NamedTuple):
    """A rounding node that received a gradient and sent zeros."""

    node: int
    op: str
    line: int | None


class RoundingCuts:
    """The rounding nodes of the current recorded backward walk that turned a gradient into
    zeros, and whether any leaf got a gradient other than 0 in that walk."""

    def __init__(self) -> None:
        self._cut: _Cut | None = None
        self._moved = False
        self._leaves = 0  # the leaves the walk accumulated into

    def before_backward(self) -> None:
        """A backward() starts: forget the last walk."""
        self._cut, self._moved, self._leaves = None, False, 0

    def ran(
        self,
        nid: int,
        name: str,
        line: int | None,
        received: Sequence[torch.Tensor | None],
        sent: Sequence[torch.Tensor | None],
    ) -> None:
        """Look at node ``nid`` (class ``name``, made at snippet ``line``) that received
        ``received`` and sent ``sent`` in a recorded walk."""
        op = _FLAT.get(name)
        if op is None or self._cut is not None:
            return
        given = any(isinstance(g, torch.Tensor) and bool(g.any()) for g in received)
        if given and all(s is None or not bool(s.any()) for s in sent):
            self._cut = _Cut(nid, op, line)

    def accumulated(self, leaf: torch.Tensor) -> None:
        """Look at ``leaf`` right after AccumulateGrad added into its ``.grad``."""
        self._leaves += 1
        if not self._moved and self._cut is not None:
            grad = leaf.grad
            self._moved = grad is not None and bool(grad.any())

    def after_backward(
        self, source_lines: Sequence[str]
    ) -> tuple[int | None, str, str, str, list[int]] | None:
        """``(line, title, message, fix, nodes)`` when the walk that just returned went through a
        rounding node that sent zeros and no leaf got a gradient other than 0; else None."""
        cut, self._cut = self._cut, None
        if cut is None or self._moved or not self._leaves:
            return None
        reached = "the one leaf" if self._leaves == 1 else f"all {self._leaves} leaves"
        code = quoted_code(source_lines, cut.line)
        where = f" at line {cut.line}" + (f" ({code})" if code else "") if cut.line is not None else ""
        title = f"{cut.op} in the loss's path: its slope is 0, no parameter learns"
        message = (
            f"The loss is computed through {cut.op}{where}. {cut.op}'s derivative is 0 wherever it is "
            f"defined (a staircase is flat between its steps), so in this backward() its node received a "
            f"gradient and sent back only zeros: {reached} the walk reached got a gradient of exactly 0. "
            "Nothing raises: an update with these gradients changes nothing, and the loss stays where it started."
        )
        fix = (
            f"Compute the loss from the values before {cut.op}: for a classifier, the logits with "
            "nn.BCEWithLogitsLoss (or nn.CrossEntropyLoss), for a regression, the raw output with "
            f"nn.MSELoss. Use {cut.op} only to measure (an accuracy, under torch.no_grad()); where the "
            f"rounding itself must be trained through, a straight-through estimator passes the gradient "
            f"by: x + (x.{cut.op}() - x).detach()."
        )
        return cut.line, title, message, fix, [cut.node]
