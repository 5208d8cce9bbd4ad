"""penalty-without-gradient: a penalty built from the parameters' values off the graph
(``p.data``, ``p.detach()``, ops on the parameters under ``torch.no_grad()``, a Python
number read with ``.item()``) and added to the loss.

# NOTE [Penalties off the graph]
# ``l2 = sum((p.data ** 2).sum() for p in model.parameters()); loss = ce + lam * l2`` reads
# the weights through ``.data``: ``l2`` has no grad_fn, so to autograd it is a constant. It
# changes the loss's value and contributes nothing to any gradient, and the regularisation
# does nothing. While the tape records in full, op_recorder.py hands every op to
# :meth:`ParameterValues.after_op`, which marks the tensors computed off the graph from the
# values of parameters that train: a ``.data`` read of one (NOTE [Changed through .data] in
# tensors.py) or its ``detach()``, and what ops make of those with no graph. An add (an op of
# ADD_OPS, op_checks.py) of such a tensor to one with a graph is a candidate; it is said once
# a backward() walks the add's node (a loss backpropagated, not a total printed). Constants
# that are not the parameters' values (a target, a label-smoothing term, log 2π), a penalty
# of the parameters themselves, and one whose coefficient only is read off them
# (``p.pow(2).sum() / p.detach().norm()``: a graph) are left alone.
#
# Two more ways to the same constant. Under ``torch.no_grad()`` (a ``with`` block, a decorated
# helper) an op of trained parameters alone (``p.pow(2)``) makes a tensor with no grad_fn: it
# is marked the same way, and what ops make of it with no graph. An op that also takes a
# tensor that is not a parameter's value (a teacher or target network run on a batch under
# no_grad) marks nothing: that is data, not a penalty. And a penalty read off with ``.item()``
# (``l2 = sum(p.pow(2).sum().item() for p in model.parameters())``) is a Python number, which
# no op sees: an add of a tensor with a graph and a Python number is a candidate where the
# source shows the number's name bound, before the add, by an assignment that calls
# ``.item()`` on the parameters (a ``.parameters()`` or ``.named_parameters()`` in it or in
# the ``for`` it runs in, or a ``.weight`` / ``.bias``), and the name holds a number now.
#
# And a penalty on an activation's ``.detach()`` (``loss = recon + lam * h.detach().abs()
# .mean()``, a sparsity penalty): the ``detach`` of a tensor with a graph is marked with that
# tensor, and what ops make of it alone with no graph. Its add is a candidate only where both
# operands are single numbers (a loss and a penalty; a straight-through estimator's
# ``h + (q - h).detach()`` adds element by element) and the term is not 0 (``0 * s.detach()
# .mean()`` keeps a tensor in the graph on purpose).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch import nn

from ..source import parsed_source, snippet_frame, visible_names
from ..tensor_facts import autograd_of
from .hook_calls import guarded

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["ParameterValues"]

_MAX_MARKED = 20_000  # tensors followed, at most (a run recorded in full makes few of these)
_ASSIGNED = re.compile(r"\s*([^\W\d]\w*)\s*(?:[-+*/]?=)(?!=)")
_OFF_GRAPH = re.compile(r"\.data\b(?!\s*\()|\.detach\(\)")
_ITEM = re.compile(r"\.item\(\)")
_PARAMETER_CALLS = frozenset({"parameters", "named_parameters"})
_PARAMETER_ATTRIBUTES = frozenset({"weight", "bias"})


class _Mark(NamedTuple):
    """A tensor computed off the graph from trained parameters' values."""

    params: frozenset[int]  # the tids of the parameters whose values it holds
    read_at: int | None  # the line that read them
    way: str  # "data" (``.data`` / ``.detach()``), "no_grad" or "inference_mode"
    activation: int | None = None  # the tid of the tensor with a graph it is the ``.detach()`` of


def _read_through(code: str) -> str:
    """How a line reads the parameters: ``.data``, ``.detach()`` or both."""
    ways = [
        way
        for way, found in ((".data", re.search(r"\.data\b", code)), (".detach()", ".detach()" in code))
        if found
    ]
    return " and ".join(ways) or ".data"


class ParameterValues:
    """The tensors computed off the graph from trained parameters' values (NOTE [Penalties off
    the graph]); ``say`` emits a pitfall (``PitfallWatch._say``)."""

    def __init__(self, rec: Recorder, say: Callable[..., None]) -> None:
        self._rec = rec
        self._say = say
        self._marked: dict[int, _Mark] = {}  # tid -> how it was computed off the graph
        self._pending: dict[int, Any] = {}  # add line -> the hook on its node
        self._said: set[int] = set()
        self._numbers_at: dict[int, tuple[str, int] | None] = {}  # add line -> its .item() penalty

    @guarded
    def after_op(
        self,
        short: str,
        inputs: list[torch.Tensor],
        in_ids: list[int],
        outputs: list[torch.Tensor],
        out_ids: list[int],
        line: int | None,
    ) -> None:
        """Look at an op recorded at ``line``: ``short`` its name, ``inputs`` its tensors (ids
        ``in_ids``), ``outputs`` what it made (ids ``out_ids``, in the same order)."""
        tensors = self._rec.tensors
        params: frozenset[int] = frozenset()
        read_at = line
        way = "data"
        gradless: frozenset[int] = frozenset()  # parameters taken as they are, with gradients off
        other = False  # a tensor that is neither a parameter's value nor marked
        activation: int | None = None
        grad_on = torch.is_grad_enabled()
        for t, tid in zip(inputs, in_ids, strict=False):
            known = self._marked.get(tid)
            if known is not None:
                if known.activation is not None:
                    activation, read_at = known.activation, known.read_at
                    continue
                params, read_at = params | known.params, known.read_at if not params else read_at
                way = known.way if way == "data" else way
                continue
            if short == "detach" and not isinstance(t, nn.Parameter) and _grad_fn(t) is not None:
                activation = tid  # an activation (``h.detach()``): NOTE [Penalties off the graph]
                continue
            owner = t if short == "detach" else tensors.data_owner(tid, t)
            # (the cheap tests first: a Parameter's isinstance runs its metaclass's Python)
            if owner is not None and isinstance(owner, nn.Parameter) and owner.requires_grad:
                owner_id = tensors.known(owner)
                if owner_id is not None:
                    params = params | {owner_id}
            elif not grad_on and isinstance(t, nn.Parameter) and t.requires_grad:
                owner_id = tensors.known(t)
                if owner_id is not None:
                    gradless = gradless | {owner_id}
            else:
                other = True
        if gradless and not other:
            params = params | gradless
            way = "inference_mode" if torch.is_inference_mode_enabled() else "no_grad"
        if activation is not None and not params and not other:
            mark = _Mark(frozenset(), read_at, "data", activation)
        elif params:
            mark = _Mark(params, read_at, way)
        else:
            return
        if len(self._marked) >= _MAX_MARKED:
            return
        for t, tid in zip(outputs, out_ids, strict=False):
            facts = autograd_of(t)  # (a view made under no_grad and changed in place refuses to say)
            if facts is not None and facts[0] is None and not t.requires_grad and t.is_floating_point():
                self._marked[tid] = mark

    def on_add(self, args: tuple[Any, ...], result: torch.Tensor, line: int | None) -> None:
        """Look at an add (``loss = ce + lam * l2``) that made ``result`` at ``line``: one
        operand with a graph, the other marked, or a Python number read off the parameters
        with ``.item()``, becomes a candidate (NOTE [Penalties off the graph])."""
        if line is None or line in self._said or _grad_fn(result) is None:
            return
        operands = [a for a in args[:2] if isinstance(a, torch.Tensor)]
        if len(operands) == 1 and len(args) >= 2:
            if line in self._numbers_at and self._numbers_at[line] is None:
                return  # a line whose source shows no .item() penalty (the chain's `h * 1.01 + 0.1`)
            number = next(
                (a for a in args[:2] if isinstance(a, (int, float)) and not isinstance(a, bool)), None
            )
            if number is not None and number != 0 and _grad_fn(operands[0]) is not None:
                self._on_number_add(result, line, float(number))
            return
        if not self._marked or len(operands) != 2:
            return
        tensors = self._rec.tensors
        for term, other in (operands, operands[::-1]):
            tid = tensors.known(term)
            found = self._marked.get(tid) if tid is not None else None
            if found is None or _grad_fn(other) is None or term.requires_grad:
                continue
            value = float(term.sum()) if term.numel() else 0.0
            if found.activation is not None:
                # a penalty added to a loss (not a straight-through estimator's difference, nor a
                # term times 0 that keeps a tensor in the graph on purpose)
                if term.numel() == 1 == other.numel() and value != 0:
                    self._candidate(result, line, self._activation_report(line, found, value))
                return
            names = [self._rec.tensors.names.get(p) or "a parameter" for p in sorted(found.params)]
            self._candidate(result, line, self._report(line, names, found, value))
            return

    def _on_number_add(self, result: torch.Tensor, line: int, value: float) -> None:
        """An add of a Python number ``value`` to a tensor with a graph at ``line``: a candidate
        where the source shows the number read off the parameters with ``.item()``."""
        if line not in self._numbers_at:
            frame, _ = snippet_frame()
            tree, parents = self._parsed
            self._numbers_at[line] = _item_penalty(tree, parents, line, frame) if tree is not None else None
        found = self._numbers_at[line]
        if found is not None:
            self._candidate(result, line, self._number_report(found[0], found[1], value))

    @functools.cached_property
    def _parsed(self) -> tuple[ast.Module | None, dict[ast.AST, ast.AST]]:
        """The snippet's tree and each node's parent, read at the first add of a number."""
        tree = parsed_source("\n".join(self._rec.source_lines))
        nodes = ast.walk(tree) if tree is not None else ()
        return tree, {child: node for node in nodes for child in ast.iter_child_nodes(node)}

    def _candidate(self, result: torch.Tensor, line: int, report: tuple[str, str, str]) -> None:
        """Hook the add's node: the report goes out when a backward() walks it."""
        old = self._pending.pop(line, None)
        if old is not None:
            old.remove()

        def walked(grad_outputs: Any) -> None:
            try:
                handle = self._pending.pop(line, None)
                if handle is not None:
                    handle.remove()
                if line not in self._said:
                    self._said.add(line)
                    self._say("penalty-without-gradient", line, *report)
            except Exception:  # in the snippet's backward(): never raise there
                self._rec.observation_failed()

        node: Any = _grad_fn(result)
        self._pending[line] = node.register_prehook(walked)

    def _report(self, line: int, names: list[str], mark: _Mark, value: float) -> tuple[str, str, str]:
        """The title, message and fix of penalty-without-gradient for a marked tensor."""
        source = self._rec.source_lines
        read_at = mark.read_at
        code = source[read_at - 1].strip() if read_at is not None and 0 < read_at <= len(source) else ""
        assigned = _ASSIGNED.match(code)
        term = assigned.group(1) if assigned else "the penalty"
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        count = f"{len(names)} parameter{'' if len(names) == 1 else 's'}"
        where = f" at line {read_at}" if read_at is not None and read_at != line else ""
        unchanged = (
            "That term has no grad_fn: to autograd it is a constant, so it changes the loss's value and "
            "contributes nothing to backward(). Every gradient is what it would be without it, and the "
            "penalty never pulls a weight towards zero: the regularisation does nothing, and nothing "
            "reports it."
        )
        weight_decay = " (or drop it and pass weight_decay=… to the optimizer, for an L2 penalty)."
        if mark.way != "data":
            mode = f"torch.{mark.way}()"
            block = _gradless_block(source, read_at) if read_at is not None else None
            return (
                f"{term} is computed under {mode}: it adds to the loss and nothing to the gradients",
                f"This line adds a term worth {value:.6g} to the loss, computed{where} from the values of "
                f"{count} ({shown}) with gradients off, under {mode}. {unchanged}",
                (block or f"Compute the penalty with gradients on, outside {mode}") + weight_decay,
            )
        how = _read_through(code)
        fixed = _OFF_GRAPH.sub("", code) if code else ""
        return (
            f"{term} reads the weights through {how}: it adds to the loss and nothing to the gradients",
            f"This line adds a term worth {value:.6g} to the loss, computed{where} from the values of "
            f"{count} ({shown}) read through {how}. {unchanged}",
            (
                f"Compute it from the parameters themselves: {fixed}"
                if fixed and fixed != code
                else "Compute the penalty from the parameters themselves, not their .data or .detach()"
            )
            + weight_decay,
        )

    def _activation_report(self, line: int, mark: _Mark, value: float) -> tuple[str, str, str]:
        """The title, message and fix of penalty-without-gradient for a number computed from an
        activation's ``.detach()`` (``lam * h.detach().abs().mean()``)."""
        source = self._rec.source_lines
        read_at = mark.read_at
        code = source[read_at - 1].strip() if read_at is not None and 0 < read_at <= len(source) else ""
        name = self._rec.tensors.names.get(mark.activation) if mark.activation is not None else None
        named = name or "a tensor of the graph"
        where = f" at line {read_at}" if read_at is not None and read_at != line else ""
        fixed = code.replace(".detach()", "") if ".detach()" in code else ""
        return (
            f"The penalty on {named} reads it through .detach(): it adds to the loss and nothing to the gradients",
            f"This line adds a term worth {value:.6g} to the loss, computed{where} from {named}.detach(). "
            f"The detached copy has no grad_fn: to autograd the term is a constant, so it changes the loss's "
            f"value and contributes nothing to backward(). Every gradient is what it would be without it, and "
            f"the penalty never pulls {named} (nor the weights that make it) towards zero: the regularisation "
            "does nothing, and nothing reports it.",
            f"Compute it from {named} itself: {fixed}"
            if fixed
            else f"Compute the penalty from {named} itself, without .detach()",
        )

    def _number_report(self, term: str, read_at: int, value: float) -> tuple[str, str, str]:
        """The title, message and fix of penalty-without-gradient for a Python number ``term``
        read off the parameters with ``.item()`` at line ``read_at``, adding ``value``."""
        source = self._rec.source_lines
        code = source[read_at - 1].strip() if 0 < read_at <= len(source) else ""
        fixed = _ITEM.sub("", code)
        return (
            f"{term} is a Python number (.item()): it adds to the loss and nothing to the gradients",
            f"This line adds {value:.6g} to the loss, a Python number computed at line {read_at} from the "
            "parameters' values read with .item(). A Python number carries no graph: to autograd it is a "
            "constant, so it changes the loss's value and contributes nothing to backward(). Every "
            "gradient is what it would be without it, and the penalty never pulls a weight towards "
            "zero: the regularisation does nothing, and nothing reports it.",
            (f"Keep it a tensor, without .item(): {fixed}" if fixed and fixed != code else "Keep it a tensor")
            + " (or drop it and pass weight_decay=… to the optimizer, for an L2 penalty).",
        )


def _gradless_block(source_lines: list[str], line: int) -> str | None:
    """How to take line ``line`` out of gradients off: the ``with torch.no_grad():`` block
    or the ``@torch.no_grad()`` function it is in; None where the source shows neither."""
    tree = parsed_source("\n".join(source_lines))
    inner: tuple[int, str] | None = None
    for node in ast.walk(tree) if tree is not None else ():
        if not (
            isinstance(node, ast.With | ast.FunctionDef)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
            and (inner is None or node.lineno > inner[0])
        ):
            continue
        if isinstance(node, ast.With) and any(_is_gradless(i.context_expr) for i in node.items):
            inner = (
                node.lineno,
                f"Compute it with gradients on: take line {line} out of the with block at line {node.lineno}",
            )
        elif isinstance(node, ast.FunctionDef) and any(_is_gradless(d) for d in node.decorator_list):
            inner = (
                node.lineno,
                f"Compute it with gradients on: remove the no_grad decorator of {node.name} (line {node.lineno})",
            )
    return inner[1] if inner is not None else None


def _is_gradless(node: ast.expr) -> bool:
    """``torch.no_grad()`` / ``torch.inference_mode()``, called or not."""
    target = node.func if isinstance(node, ast.Call) else node
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name in {"no_grad", "inference_mode"}


def _item_penalty(
    tree: ast.Module, parents: dict[ast.AST, ast.AST], line: int, frame: FrameType | None
) -> tuple[str, int] | None:
    """``(name, line)`` of the Python number the statement at ``line`` of the snippet's
    ``tree`` adds, bound by an assignment that reads the parameters with ``.item()`` (NOTE
    [Penalties off the graph]), where ``frame`` shows the name holding a number; else None."""
    statements = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign | ast.AugAssign | ast.Expr | ast.Return)
        and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    if not statements:
        return None
    adding = max(statements, key=lambda n: n.lineno)
    if _reads_parameters_with_item(adding, parents):
        target = adding.targets[0] if isinstance(adding, ast.Assign) else getattr(adding, "target", None)
        return (target.id if isinstance(target, ast.Name) else "the penalty"), adding.lineno
    value = adding.value if adding.value is not None else None
    names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} if value is not None else set()
    if isinstance(adding, ast.AugAssign) and isinstance(adding.target, ast.Name):
        names.discard(adding.target.id)  # loss += lam * reg: the loss is the tensor
    seen = visible_names(frame)
    best: tuple[str, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign | ast.AugAssign) or node.lineno >= adding.lineno:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if not (isinstance(target, ast.Name) and target.id in names):
                continue
            held = seen.get(target.id)
            if (
                isinstance(held, int | float)
                and not isinstance(held, bool)
                and _reads_parameters_with_item(node, parents)
                and (best is None or node.lineno > best[1])
            ):
                best = (target.id, node.lineno)
    return best


def _reads_parameters_with_item(statement: ast.stmt, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``statement`` calls ``.item()`` on something that reads parameters: a
    ``.parameters()`` / ``.named_parameters()`` in it or in the ``for`` it runs in, or a
    ``.weight`` / ``.bias``."""
    items = [
        n
        for n in ast.walk(statement)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "item"
        and not n.args
    ]
    if not items:
        return False
    scopes: list[ast.AST] = [statement]
    up = parents.get(statement)
    while up is not None and not isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
        if isinstance(up, ast.For | ast.AsyncFor):
            scopes.append(up.iter)
        up = parents.get(up)
    for scope in scopes:
        for n in ast.walk(scope):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in _PARAMETER_CALLS
            ):
                return True
    return any(
        isinstance(n, ast.Attribute) and n.attr in _PARAMETER_ATTRIBUTES
        for item in items
        if isinstance(item.func, ast.Attribute)
        for n in ast.walk(item.func.value)
    )


def _grad_fn(t: torch.Tensor) -> Any:
    """``t.grad_fn``, or None where PyTorch refuses to say (:func:`~engine.tensors.autograd_of`)."""
    facts = autograd_of(t)
    return facts[0] if facts is not None else None
