"""Whether a snippet clears the gradients of parameters that no optimizer steps, for what
parameter-not-optimized says of them (parameters.py): their ``.grad`` only grows when
nothing clears it, and that is said only where the source shows nothing that may.

Read from the source, each receiver followed through the snippet's variables as they are at
the run's end (:func:`clears_gradients`). What clears:

- ``X.zero_grad()``, where X is a module holding one of the parameters (``model.zero_grad()``
  of a local model, as an A3C worker does) or an optimizer holding one;
- ``X.grad = None`` (or ``X._grad``, or ``= torch.zeros_like(…)``), ``X.grad.zero_()`` and
  ``X.grad.fill_(…)`` (also through ``.data``), where X is one of the parameters, or the
  variable of a ``for`` over a module (``for p in model.parameters(): p.grad = None``) or a
  list holding one.

A receiver that cannot be followed (a function's local name or argument, ``self``, a loop
over ``zip(…)``) may be one of them, and counts as clearing: what is said never claims more
than the run bears out.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import torch

from ..source import is_a, is_module, parsed_source

__all__ = ["clears_gradients"]

_UNKNOWN = object()  # a receiver that cannot be followed
_IN_PLACE_CLEARS = frozenset({"zero_", "fill_"})
_GRAD_ATTRS = frozenset({"grad", "_grad"})
_PARAMETER_LISTS = frozenset({"parameters", "values"})  # model.parameters(), a dict's values()


def clears_gradients(params: Sequence[torch.Tensor], scope: dict[str, Any], source: str) -> bool:
    """Whether the snippet ``source`` (whose globals at the run's end are ``scope``) may clear
    the ``.grad`` of any of ``params``: True also where it cannot be told (a source that does
    not parse, a receiver that cannot be followed)."""
    tree = parsed_source(source)
    if tree is None:
        return True
    held = {id(p) for p in params}
    loops = _loop_iterables(tree)
    for node in ast.walk(tree):
        receiver = _cleared_receiver(node)
        if receiver is not None and _may_hold(receiver, held, scope, loops):
            return True
    return False


def _cleared_receiver(node: ast.AST) -> ast.expr | None:
    """The X of ``X.zero_grad()``, ``X.grad = None``, ``X.grad.zero_()`` (``X.grad.data.zero_()``)
    when ``node`` is one of them; else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "zero_grad":
            return node.func.value
        if node.func.attr in _IN_PLACE_CLEARS:
            grad = node.func.value
            if isinstance(grad, ast.Attribute) and grad.attr == "data":
                grad = grad.value
            if isinstance(grad, ast.Attribute) and grad.attr in _GRAD_ATTRS:
                return grad.value
    if isinstance(node, ast.Assign) and _a_cleared_value(node.value):
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr in _GRAD_ATTRS:
                return target.value
    return None


def _a_cleared_value(value: ast.expr) -> bool:
    """``None`` or a call of ``zeros``/``zeros_like``: what a cleared ``.grad`` is set to."""
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in ("zeros", "zeros_like")
    return False


def _loop_iterables(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """For each name a ``for`` loop (or comprehension) binds alone, what it iterates over."""
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, []).append(node.iter)
    return found


def _may_hold(
    receiver: ast.expr, held: set[int], scope: dict[str, Any], loops: dict[str, list[ast.expr]]
) -> bool:
    """Whether ``receiver`` (a module, an optimizer, a parameter) may hold one of ``held``."""
    if isinstance(receiver, ast.Name) and receiver.id in loops:
        return any(_holds(_resolved(_iterated(it), scope), held) for it in loops[receiver.id])
    return _holds(_resolved(receiver, scope), held)


def _iterated(iterable: ast.expr) -> ast.expr | None:
    """What a loop over ``iterable`` walks the parameters of: ``model`` for
    ``model.parameters()``; the iterable itself for a name or attribute; None for another
    call (``zip(…)``), which cannot be followed."""
    if isinstance(iterable, ast.Call):
        func = iterable.func
        if isinstance(func, ast.Attribute) and func.attr in _PARAMETER_LISTS and not iterable.args:
            return func.value
        return None
    return iterable


def _resolved(expr: ast.expr | None, scope: dict[str, Any]) -> Any:
    """The object ``expr`` (a name, an attribute, a constant index of one) stands for in
    ``scope``; :data:`_UNKNOWN` where it cannot be followed."""
    if isinstance(expr, ast.Name):
        return scope.get(expr.id, _UNKNOWN)
    if isinstance(expr, ast.Attribute):
        owner = _resolved(expr.value, scope)
        try:
            return _UNKNOWN if owner is _UNKNOWN else getattr(owner, expr.attr, _UNKNOWN)
        except Exception:  # a property of the snippet's that raises
            return _UNKNOWN
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        owner = _resolved(expr.value, scope)
        try:
            return _UNKNOWN if owner is _UNKNOWN else owner[expr.slice.value]
        except Exception:
            return _UNKNOWN
    return _UNKNOWN


def _holds(value: Any, held: set[int]) -> bool:
    """Whether ``value`` is, or holds, one of the parameters ``held`` (True where unknown)."""
    if value is _UNKNOWN:
        return True
    if is_a(value, torch.Tensor):
        return id(value) in held
    if is_module(value):
        return any(id(p) in held for p in value.parameters())
    if is_a(value, torch.optim.Optimizer):
        return any(id(p) in held for group in value.param_groups for p in group["params"])
    if is_a(value, list | tuple):
        return any(_holds(item, held) for item in value if is_a(item, torch.Tensor) or is_module(item))
    return False
