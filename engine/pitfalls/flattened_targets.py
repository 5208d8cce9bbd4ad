"""A classification loss whose scores and targets were flattened from their two leading axes
in opposite orders (targets-flattened-in-other-order).

A sequence model's scores ``(T, N, V)`` (a time-first ``nn.LSTM``, GRU or transformer) and
batch-first targets ``(N, T)``, each flattened for ``cross_entropy``:
``F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))``. Both give ``T * N`` rows, so
nothing raises, but row ``i`` of the scores is (step ``i // N``, sequence ``i % N``) while
target ``i`` is (sequence ``i // T``, step ``i % T``): almost every row is scored against
another sequence's token at another step, and the model learns from shuffled labels.

Told at the loss: a ``cross_entropy`` or ``nll_loss`` whose input is a remembered ``view`` /
``reshape`` that merged two leading axes ``(A, B)`` into one (the class axis kept) and whose
target is one that merged ``(B, A)``, with ``A != B``. Scores and targets flattened from the
same order (``logits.transpose(0, 1).reshape(-1, V)``, or a batch-first layer), square
leading axes, and tensors flattened by ``flatten`` or made any other way stay silent.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Sequence
from typing import Any

import torch

from ..source import quoted_code

__all__ = ["FlattenedAxes"]

_KEPT = 64  # flattened tensors remembered at once (a loop makes some every iteration)


class FlattenedAxes:
    """The results of ``view`` / ``reshape`` calls that merged two leading axes (held weakly,
    by identity), and the report of a loss given scores and targets merged in opposite orders."""

    def __init__(self, source_lines: Sequence[str]) -> None:
        self._source_lines = source_lines
        self._merged: dict[int, tuple[weakref.ref[torch.Tensor], tuple[int, int], int | None]] = {}

    def reshaped(self, args: tuple[Any, ...], result: torch.Tensor, line: int | None) -> None:
        """Remember ``result`` of a ``view``/``reshape`` of ``args[0]`` at ``line`` when it merged
        the input's first two axes into its first and kept the rest."""
        given = args[0] if args else None
        if not isinstance(given, torch.Tensor) or given.dim() < 2 or result.dim() != given.dim() - 1:
            return
        a, b = int(given.shape[0]), int(given.shape[1])
        if a < 2 or b < 2 or a == b or result.shape[1:] != given.shape[2:] or result.shape[0] != a * b:
            return
        if len(self._merged) >= _KEPT:
            self._merged.pop(next(iter(self._merged)))
        self._merged[id(result)] = (weakref.ref(result), (a, b), line)

    def _lead(self, t: object) -> tuple[tuple[int, int], int | None] | None:
        entry = self._merged.get(id(t))
        if entry is None or entry[0]() is not t:
            return None
        return entry[1], entry[2]

    def check(self, loss: str, args: tuple[Any, ...], line: int | None) -> tuple[str, str, str, str] | None:
        """``(kind, title, message, fix)`` for ``loss`` (``cross_entropy`` or ``nll_loss``) at
        ``line`` given positional ``args`` (scores, targets) flattened from leading axes in
        opposite orders."""
        if len(args) < 2:
            return None
        scores, targets = self._lead(args[0]), self._lead(args[1])
        if scores is None or targets is None:
            return None
        (a, b), scores_line = scores
        (c, d), targets_line = targets
        if (c, d) != (b, a):
            return None
        said = _report(loss, args[0], (a, b), scores_line, targets_line, self._source_lines)
        return ("targets-flattened-in-other-order", *said)


def _aligned(a: int, b: int) -> int:
    """How many rows ``i`` of ``a * b`` name the same (first, second) pair in an ``(a, b)``
    flattening and in a ``(b, a)`` one read back as ``(a, b)``."""
    return sum(1 for i in range(a * b) if i // b == i % a and i % b == i // a)


def _report(
    loss: str,
    scores: torch.Tensor,
    lead: tuple[int, int],
    scores_line: int | None,
    targets_line: int | None,
    source_lines: Sequence[str],
) -> tuple[str, str, str]:
    a, b = lead
    rows = a * b
    rest = [int(n) for n in scores.shape[1:]]
    before = ", ".join(map(str, (a, b, *rest)))
    flat = f"reshape(-1, {', '.join(map(str, rest))})" if rest else "reshape(-1)"
    right = _aligned(a, b)

    def at(where: int | None, quoted: bool = True) -> str:
        code = quoted_code(source_lines, where, sys.maxsize) if quoted else None
        return f" at line {where}" + (f" ({code})" if code else "") if where is not None else ""

    return (
        f"{loss}'s scores and targets are flattened from ({a}, {b}) and ({b}, {a}): rows mismatched",
        f"The scores given to {loss} were flattened from shape ({before}){at(scores_line)} and "
        f"the targets from shape ({b}, {a}){at(targets_line, targets_line != scores_line)}: the same {rows} rows, so nothing raises, but "
        f"score row i is position (i // {b}, i % {b}) of its ({a}, {b}) axes while target i is position "
        f"(i % {a}, i // {a}) of them. Only {right} of the {rows} targets sit on their own row: every other "
        f"score is compared with another sequence's label at another step (a time-first model's output "
        f"(T, N, …) flattened against batch-first targets (N, T)), and the loss trains on shuffled labels.",
        f"Bring both to the same order before flattening: logits.transpose(0, 1).{flat} to "
        "match targets (N, T), or targets.t().reshape(-1) to match time-first scores (or build the layer "
        "with batch_first=True).",
    )
