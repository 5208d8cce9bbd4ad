"""Reading the line a hint is about, and writing its fix: the line's code as a syntax tree
(:func:`parsed`, :func:`syntax_tree`) and the calls on it (:func:`calls`, :func:`find_call`,
:func:`first_argument`), a call written
again with one argument replaced (:func:`with_arg`), a value written there or held by a
name (:func:`literal`), a shape as Python prints it (:func:`shape`), and whether a fix
would run (:func:`meta_shape`, on the meta device, without the tensors' data). Shared by
the explain_*.py modules that quote the snippet's own call in their fix."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

import torch

from .source import bound_to

__all__ = [
    "call_name",
    "calls",
    "find_call",
    "first_argument",
    "literal",
    "meta_shape",
    "number",
    "parsed",
    "shape",
    "syntax_tree",
    "with_arg",
    "wrapped",
]

_FUNCTION_OWNERS = frozenset({"torch", "F", "nn.functional", "torch.nn.functional", "functional"})


def syntax_tree(text: str | None) -> ast.AST | None:
    """``text`` (a whole statement) as a syntax tree, or ``None`` where it does not parse."""
    try:
        return ast.parse((text or "").strip())
    except SyntaxError:
        return None


def calls(code: str | None) -> list[ast.Call]:
    """The calls written on ``code``, a whole statement (none where it does not parse)."""
    tree = syntax_tree(code)
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)] if tree else []


def call_name(call: ast.Call) -> str:
    """The last part of the name a call calls: ``step`` for ``opt.step(…)``; ``""`` for ``f()(x)``."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def parsed(code: str | None) -> ast.AST | None:
    """The line's code as a syntax tree (a ``for …:`` header given an empty body), or ``None``."""
    return syntax_tree(code) or syntax_tree(f"{code} pass")


def find_call(code: str | None, names: Sequence[str], params: Sequence[str]) -> dict[str, Any] | None:
    """The first call on the line to one of ``names``, ``x.gather(1, i)`` or ``torch.gather(x,
    1, i)``: its arguments' source by parameter (``self``, then ``params``), with ``call`` (the
    node), ``name`` (the name called) and ``rest`` (the arguments after self); ``None`` where
    the line has none."""
    for node in ast.walk(parsed(code) or ast.Module([], [])):
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        func, name = node.func, call_name(node)
        if name not in names:
            continue
        got: dict[str, Any] = {"call": node, "name": name, "rest": node.args[1:]}
        if isinstance(func, ast.Attribute) and ast.unparse(func.value) not in _FUNCTION_OWNERS:
            got.update(self=ast.unparse(func.value), rest=node.args)
        got.update(
            zip(params if "self" in got else ["self", *params], map(ast.unparse, node.args), strict=False)
        )
        got.update(
            {"self" if k.arg == "input" else k.arg: ast.unparse(k.value) for k in node.keywords if k.arg}
        )
        return got
    return None


def first_argument(code: str | None, called: str, frame: FrameType | None) -> tuple[str, str] | None:
    """``(name, sizes)`` for the first call to ``called`` on ``code`` given an argument: that
    argument as written, and ``", and {name} is (8, 4)"`` where it holds a tensor in ``frame``
    (``""`` where it does not); ``None`` where the line makes no such call."""
    found = next((c for c in calls(code) if call_name(c) == called and c.args), None)
    if found is None:
        return None
    name = ast.unparse(found.args[0])
    value = bound_to(name, frame)
    return name, f", and {name} is {tuple(value.shape)}" if isinstance(value, torch.Tensor) else ""


def with_arg(found: dict[str, Any], param: str, source: str) -> str:
    """The call :func:`find_call` found, written with its argument ``param`` replaced by ``source``."""
    call: ast.Call = found["call"]
    new = ast.parse(source, mode="eval").body
    args = [new if ast.unparse(a) == found[param] else a for a in call.args]
    named = [
        ast.keyword(k.arg, new if ast.unparse(k.value) == found[param] else k.value) for k in call.keywords
    ]
    return ast.unparse(ast.Call(func=call.func, args=args, keywords=named))


def literal(expression: str | None, frame: FrameType | None) -> Any:
    """A value written on the line (``1``, ``[[1, 2], [3]]``) or held by the name written there."""
    try:
        return ast.literal_eval(expression or "")
    except (ValueError, SyntaxError):
        return bound_to(expression, frame)


def number(expression: str | None, frame: FrameType | None) -> int | None:
    value = literal(expression, frame)
    return value if type(value) is int else None


def shape(sizes: Sequence[object]) -> str:
    """A shape as Python prints a tuple: ``(8,)``, ``(8, 4)``."""
    return f"({sizes[0]},)" if len(sizes) == 1 else f"({', '.join(map(str, sizes))})"


def wrapped(source: str) -> str:
    """``source`` ready for a method call after it: ``(a + b)`` for an expression with an operator."""
    return source if re.fullmatch(r"[\w.]+(?:\[[^\[\]]*\]|\([^()]*\))?", source) else f"({source})"


def meta_shape(op: Callable[..., torch.Tensor], *tensors: torch.Tensor) -> tuple[int, ...] | None:
    """The shape ``op`` gives for tensors of these shapes and dtypes (run on the meta device,
    without their data), or ``None`` where it raises: whether a fix would run."""
    try:
        return tuple(op(*(torch.empty(t.shape, dtype=t.dtype, device="meta") for t in tensors)).shape)
    except Exception:  # the fix would fail too
        return None
