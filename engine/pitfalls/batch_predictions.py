"""Predictions read from a softmax over the batch (softmax-over-batch, its prediction form).

``probs = F.softmax(out, dim=0); pred = probs.argmax(1)``: the softmax normalises each class's
column across the samples of the batch, then the argmax picks, for each sample, the class in
which it stands out most among the other samples, not the class it scores highest. A
softmax over dim 1 keeps the logits' own argmax; over dim 0 it does not, and the accuracy
printed is that of other predictions. Nothing raises. (The loss form, a softmax over dim 0
into nll_loss or cross_entropy, is told in loss_inputs.py.)

Told at the softmax (or log_softmax), which is watched already: one over dim 0 of a 2-D
tensor of several rows and columns, whose result the source reads with an argmax or max
over dim 1 (or -1), on its own line or through the name it is bound to; and only where the
run's predictions really differ from the logits' own argmax (with the count). A softmax
over dim 0 read over dim 0 (attention weights over the time steps of a sequence-first
batch, an assignment of items to clusters), a 1-D softmax and one over dim 1 are left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import torch

from ..source import parsed_source
from ..values import has_storage

__all__ = ["BatchPredictions"]

_SOFTMAXES = frozenset({"softmax", "log_softmax"})
_PICKS = frozenset({"argmax", "max"})


class BatchPredictions:
    """The softmax calls of a snippet whose result an argmax over dim 1 reads (found in
    its source once, when first asked), and the report for one that normalised over dim 0."""

    def __init__(self, source_lines: Sequence[str]) -> None:
        self._source_lines = source_lines
        self._read_at: dict[int, int] | None = None  # softmax's line -> the argmax's line

    def check(
        self, op: str, given: Any, result: torch.Tensor, dim: int | None, line: int | None
    ) -> tuple[str, str, str, str] | None:
        """``(kind, title, message, fix)`` for ``op`` (softmax, log_softmax) of ``given`` at
        snippet ``line`` over ``dim``, giving ``result``, when it normalised a batch over dim 0
        and the source takes its argmax over dim 1, changing some predictions; else None."""
        if dim != 0 or line is None or result.dim() != 2 or min(result.shape) < 2:
            return None
        if self._read_at is None:
            self._read_at = _argmax_lines(self._source_lines)
        read = self._read_at.get(line)
        if read is None or not isinstance(given, torch.Tensor) or given.shape != result.shape:
            return None
        if not (has_storage(given) and has_storage(result)):
            return None
        picked, own = result.detach().argmax(1), given.detach().argmax(1)
        changed = int((picked != own).sum())
        if not changed:
            return None
        rows, classes = result.shape
        at = f"line {read}" if read != line else "the same line"
        message = (
            f"{op} at line {line} normalises over dim 0, the {rows} samples of the batch, and {at} takes "
            f"the argmax over dim 1, the {classes} classes. Each class's column sums to 1 across the "
            "samples, so the argmax picks, for each sample, the class in which it stands out most among "
            f"the other samples, not the class it scores highest: here {changed} of the {rows} predictions "
            "differ from the argmax of the scores themselves, and the prediction of a sample depends on "
            "what else is in its batch. Nothing raises."
        )
        fix = (
            f"Normalise over the classes: {op}(…, dim=1) (or dim=-1), which keeps the scores' own argmax; "
            "for the predicted class alone, out.argmax(dim=1) needs no softmax at all."
        )
        title = f"{op} over dim 0, then an argmax over the classes: {changed} of {rows} predictions changed"
        return "softmax-over-batch", title, message, fix


def _argmax_lines(source_lines: Sequence[str]) -> dict[int, int]:
    """Each line of a softmax call whose result an argmax (or max) over dim 1 or -1 reads,
    directly or through the name it is bound to, mapped to that argmax's line."""
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return {}
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    bound: dict[str, list[ast.Call]] = {}  # a name -> the softmax calls bound to it
    found: dict[int, int] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called(node) in _SOFTMAXES):
            continue
        pick = _picked_over_classes(node, parents)
        if pick is not None:
            _mark(found, node, pick)
        stmt = parents.get(node)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            bound.setdefault(stmt.targets[0].id, []).append(node)
    if bound:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in bound:
                pick = _picked_over_classes(node, parents)
                for call in bound[node.id]:
                    if pick is not None and pick > call.lineno:
                        _mark(found, call, pick)
    return found


def _mark(found: dict[int, int], call: ast.Call, pick: int) -> None:
    for line in range(call.lineno, (call.end_lineno or call.lineno) + 1):
        found.setdefault(line, pick)


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _picked_over_classes(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> int | None:
    """The line of ``node.argmax(1)`` / ``node.max(dim=-1)`` / ``torch.argmax(node, 1)`` /
    ``torch.max(node, 1)`` where ``node`` is read so; else None."""
    up = parents.get(node)
    if isinstance(up, ast.Attribute) and up.attr in _PICKS:
        call = parents.get(up)
        if isinstance(call, ast.Call) and call.func is up and _over_classes(call, 0):
            return call.lineno
    if (
        isinstance(up, ast.Call)
        and up.args
        and up.args[0] is node
        and isinstance(up.func, ast.Attribute)  # torch.argmax(p, 1), torch.max(p, 1)
        and up.func.attr in _PICKS
        and _over_classes(up, 1)
    ):
        return up.lineno
    return None


def _over_classes(call: ast.Call, at: int) -> bool:
    """Whether ``call``'s dimension (positional argument ``at``, or ``dim=``) is 1 or -1."""
    dim = (
        call.args[at]
        if len(call.args) > at
        else next((k.value for k in call.keywords if k.arg == "dim"), None)
    )
    if (
        isinstance(dim, ast.UnaryOp)
        and isinstance(dim.op, ast.USub)
        and isinstance(dim.operand, ast.Constant)
    ):
        return dim.operand.value == 1
    return isinstance(dim, ast.Constant) and dim.value == 1 and not isinstance(dim.value, bool)
