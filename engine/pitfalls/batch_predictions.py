"""Predictions read from a softmax over the batch (softmax-over-batch, its prediction form), and
a policy's rows read from one.

``probs = F.softmax(out, dim=0); pred = probs.argmax(1)``: the softmax normalises each class's
column across the samples of the batch, then the argmax picks, for each sample, the class in
which it stands out most among the other samples, not the class it scores highest. A
softmax over dim 1 keeps the logits' own argmax; over dim 0 it does not, and the accuracy
printed is that of other predictions. Nothing raises. (The loss form, a softmax over dim 0
into nll_loss or cross_entropy, is told in loss_inputs.py.)

Told at the softmax (or log_softmax), which is watched already: one over dim 0 of a 2-D
tensor of several rows and columns, whose result the source reads with an argmax or max
over dim 1 (or -1), on its own line or through the name it is bound to; and only where the
run's predictions really differ from the logits' own argmax (with the count). The softmax
may be ``F.softmax(…)``, a call of an ``nn.Softmax(dim=0)`` bound to a name or attribute
(``sm = nn.Softmax(dim=0)``, ``self.probs = …``) or ending an ``nn.Sequential``, or a snippet
function, method or model whose ``return`` is one of those (``model.predict_proba(x).argmax(1)``):
it runs at the line of that return, which is the line the report names. A softmax
over dim 0 read over dim 0 (attention weights over the time steps of a sequence-first
batch, an assignment of items to clusters), a 1-D softmax and one over dim 1 are left alone.

A policy written for one state (``nn.Softmax(dim=0)`` over its 1-D scores) and then run on a
batch reads each sample's row as its distribution over the actions: ``probs.gather(1, a)``
(or of ``probs.log()``), ``Categorical(probs)``, ``torch.multinomial(probs, 1)``. Told the same
way, at the softmax, where the rows the run made do not sum to 1.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from ..source import parsed_source
from ..values import has_storage

__all__ = ["BatchPredictions"]

_SOFTMAXES = frozenset({"softmax", "log_softmax"})
_PICKS = frozenset({"argmax", "max"})
_SOFTMAX_MODULES = frozenset({"Softmax", "LogSoftmax"})
_DEPTH = 3  # snippet functions followed, a return of a call of one that returns a softmax…


class BatchPredictions:
    """The softmax calls of a snippet whose result an argmax over dim 1 reads (found in
    its source once, when first asked), and the report for one that normalised over dim 0."""

    def __init__(self, source_lines: Sequence[str]) -> None:
        self._source_lines = source_lines
        self._read_at: dict[int, _Read] | None = None  # softmax's line -> where an argmax reads it

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
        if read.rows:
            return _rows_report(op, line, read, result)
        picked, own = result.detach().argmax(1), given.detach().argmax(1)
        changed = int((picked != own).sum())
        if not changed:
            return None
        rows, classes = result.shape
        at = f"line {read.pick}" if read.pick != line else "the same line"
        made = f" (the {read.module} built at line {read.built})" if read.module else ""
        message = (
            f"{op} at line {line}{made} normalises over dim 0, the {rows} samples of the batch, and {at} "
            f"takes the argmax over dim 1, the {classes} classes. Each class's column sums to 1 across the "
            "samples, so the argmax picks, for each sample, the class in which it stands out most among "
            f"the other samples, not the class it scores highest: here {changed} of the {rows} predictions "
            "differ from the argmax of the scores themselves, and the prediction of a sample depends on "
            "what else is in its batch. Nothing raises."
        )
        over = (
            f"{read.module}(dim=1) at line {read.built} (or dim=-1)"
            if read.module
            else f"{op}(…, dim=1) (or dim=-1)"
        )
        fix = (
            f"Normalise over the classes: {over}, which keeps the scores' own argmax; "
            "for the predicted class alone, out.argmax(dim=1) needs no softmax at all."
        )
        title = f"{op} over dim 0, then an argmax over the classes: {changed} of {rows} predictions changed"
        return "softmax-over-batch", title, message, fix


class _Read(NamedTuple):
    """Where the source reads a softmax with an argmax over the classes, or by rows."""

    pick: int  # the argmax's line (or the row read's)
    built: int | None  # the line of the nn.Softmax(dim=…) the softmax ran in, if one did
    module: str  # "nn.Softmax" or "nn.LogSoftmax" for one that did, else ""
    rows: str = ""  # a read of each sample's row as a distribution: "gather", "Categorical", "multinomial"


class _Softmaxes:
    """The calls of a parsed snippet that return a softmax made on the line of some call:
    ``F.softmax(…)`` itself; a call of a name (or attribute) bound to an ``nn.Softmax(…)``, or to
    an ``nn.Sequential(…)`` whose last layer is one; a call of a snippet function, method or
    model class whose ``return`` is such a call (the softmax then runs on the line of that
    return, the innermost line of the snippet on the stack)."""

    def __init__(self, tree: ast.Module) -> None:
        self.modules: dict[str, tuple[int, str]] = {}  # a name -> (the nn.Softmax's line, its class)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                built = _softmax_module(node.value)
                if built is not None:
                    for target in node.targets:
                        name = _target_name(target)
                        if name is not None:
                            self.modules[name] = built
        self.returning: dict[str, list[ast.Call]] = {}  # a function or model name -> its returns
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        forwards = {
            node.name: method
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
            for method in node.body
            if isinstance(method, ast.FunctionDef) and method.name == "forward"
        }
        for _ in range(_DEPTH):  # a function that returns a call of one that returns a softmax…
            for function in functions:
                if function.name != "forward":
                    self._add_returns(function.name, function)
            for model, forward in forwards.items():
                self._add_returns(model, forward)
        for node in ast.walk(tree):  # model = Net(…): model(x) runs Net.forward
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                made = self.returning.get(_called(node.value) or "")
                if made and _called(node.value) in forwards:
                    for target in node.targets:
                        name = _target_name(target)
                        if name is not None and name not in self.returning:
                            self.returning[name] = made

    def _add_returns(self, name: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        returns = [
            r.value
            for r in _own_nodes(function)
            if isinstance(r, ast.Return) and isinstance(r.value, ast.Call) and self.makes(r.value)
        ]
        if returns:
            self.returning[name] = returns

    def makes(self, call: ast.Call) -> bool:
        """Whether ``call`` returns a softmax."""
        name = _called(call)
        return name in _SOFTMAXES or name in self.modules or name in self.returning

    def ran_at(self, call: ast.Call, depth: int = 0) -> list[tuple[ast.Call, tuple[int, str] | None]]:
        """The calls at whose lines the softmax ``call`` returns is made (the return of the
        snippet function it calls, or ``call`` itself), each with the nn.Softmax it ran in."""
        name = _called(call) or ""
        if name in _SOFTMAXES or name in self.modules or depth >= _DEPTH:
            return [(call, self.modules.get(name))]
        return [found for made in self.returning.get(name, []) for found in self.ran_at(made, depth + 1)]


def _softmax_module(call: ast.Call) -> tuple[int, str] | None:
    """``(line, class)`` of ``nn.Softmax(…)`` / ``nn.LogSoftmax(…)``, or of the one that ends an
    ``nn.Sequential(…)``; else None."""
    name = _called(call)
    if name == "Sequential" and call.args and isinstance(call.args[-1], ast.Call):
        return _softmax_module(call.args[-1])
    return (call.lineno, f"nn.{name}") if name in _SOFTMAX_MODULES else None


def _target_name(target: ast.expr) -> str | None:
    """The name an assignment binds: ``sm`` in ``sm = …`` and in ``self.sm = …``."""
    return (
        target.id
        if isinstance(target, ast.Name)
        else target.attr
        if isinstance(target, ast.Attribute)
        else None
    )


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of ``function``'s body, not those of functions or classes defined in it."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _argmax_lines(source_lines: Sequence[str]) -> dict[int, _Read]:
    """Each line a softmax can be made at (:class:`_Softmaxes`) whose result an argmax (or max)
    over dim 1 or -1 reads, directly or through the name it is bound to, mapped to that read."""
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return {}
    softmaxes = _Softmaxes(tree)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    bound: dict[str, list[ast.Call]] = {}  # a name -> the softmax calls bound to it
    found: dict[int, _Read] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and softmaxes.makes(node)):
            continue
        pick = _picked_over_classes(node, parents)
        if pick is not None:
            _mark(found, softmaxes.ran_at(node), pick)
        rows = _read_by_rows(node, parents)
        if rows is not None:
            _mark(found, softmaxes.ran_at(node), *rows)
        stmt = parents.get(node)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            bound.setdefault(stmt.targets[0].id, []).append(node)
    if bound:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in bound:
                pick = _picked_over_classes(node, parents)
                rows = _read_by_rows(node, parents)
                for call in bound[node.id]:
                    if pick is not None and pick > call.lineno:
                        _mark(found, softmaxes.ran_at(call), pick)
                    if rows is not None and rows[0] > call.lineno:
                        _mark(found, softmaxes.ran_at(call), *rows)
    return found


def _mark(
    found: dict[int, _Read], made_at: list[tuple[ast.Call, tuple[int, str] | None]], pick: int, rows: str = ""
) -> None:
    for call, module in made_at:
        read = _Read(pick, module[0], module[1], rows) if module is not None else _Read(pick, None, "", rows)
        for line in range(call.lineno, (call.end_lineno or call.lineno) + 1):
            found.setdefault(line, read)


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


def _read_by_rows(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> tuple[int, str] | None:
    """``(line, how)`` where ``node`` (or its ``.log()``) is read as one distribution per row:
    ``node.gather(1, a)``, ``torch.gather(node, 1, a)``, ``Categorical(node)`` (or
    ``probs=node``), ``torch.multinomial(node, k)``; else None (a policy's actions scored or
    drawn from each state's row)."""
    up = parents.get(node)
    if isinstance(up, ast.Attribute) and up.attr == "log":  # probs.log().gather(1, a)
        call = parents.get(up)
        if isinstance(call, ast.Call) and call.func is up and not call.args:
            node, up = call, parents.get(call)
    if isinstance(up, ast.Attribute) and up.attr in ("gather", "multinomial"):
        call = parents.get(up)
        if (
            isinstance(call, ast.Call)
            and call.func is up
            and (up.attr == "multinomial" or _over_classes(call, 0))
        ):
            return call.lineno, up.attr
    if isinstance(up, ast.Call) and node is not up.func:
        name = _called(up)
        first = up.args[0] if up.args else None
        probs = next((k.value for k in up.keywords if k.arg == "probs"), None)
        if name == "Categorical" and (first is node or probs is node):
            return up.lineno, "Categorical"
        if (
            name in ("gather", "multinomial")
            and first is node
            and (name == "multinomial" or _over_classes(up, 1))
        ):
            return up.lineno, name
    return None


def _rows_report(op: str, line: int, read: _Read, result: torch.Tensor) -> tuple[str, str, str, str] | None:
    """softmax-over-batch where a policy reads each sample's row of a softmax over dim 0 as its
    distribution over the actions (:func:`_read_by_rows`): the rows do not sum to 1."""
    probs = result.detach().float()
    if op == "log_softmax":
        probs = probs.exp()
    sums = probs.sum(1)
    low, high = float(sums.min()), float(sums.max())
    if abs(low - 1) < 1e-3 and abs(high - 1) < 1e-3:
        return None
    rows, actions = result.shape
    at = f"line {read.pick}" if read.pick != line else "the same line"
    made = f" (the {read.module} built at line {read.built})" if read.module else ""
    how = {
        "gather": "gather(1, …) picks each sample's entry of its row",
        "Categorical": "Categorical reads each row as one sample's distribution",
        "multinomial": "multinomial draws from each row",
    }[read.rows]
    over = f"{read.module}(dim=1) at line {read.built}" if read.module else f"{op}(…, dim=1)"
    return (
        "softmax-over-batch",
        f"{op} over dim 0, then each row read as a distribution: the rows sum to {low:.3g} to {high:.3g}",
        f"{op} at line {line}{made} normalises over dim 0, the {rows} samples of the batch, and at {at} "
        f"{how}. Each of the {actions} columns sums to 1 across the batch, so no row is a distribution over "
        f"the {actions} actions (here the rows sum to between {low:.3g} and {high:.3g}), and a sample's "
        "probabilities depend on what else is in its batch. Nothing raises. (dim=0 is right for the 1-D "
        "scores of one sample; a batch of them is 2-D.)",
        f"Normalise each sample's row: {over} (or dim=-1), which works for one sample and for a batch.",
    )
