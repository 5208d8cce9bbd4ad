"""Loop variables rebound to a parameter's update (loop-variable-rebound).

``for p in model.parameters(): p = p - lr * p.grad`` computes each update and binds it to
the loop variable, which the next iteration binds to the next parameter: the parameters
themselves never change, nothing raises, and the loss stays where it was. The snippet's
source is read once, at the end of the run, for such assignments.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..source import parsed_source

__all__ = ["rebound_updates"]


def rebound_updates(source_lines: list[str]) -> list[tuple[int, str, str]]:
    """Each assignment in a ``for`` loop's body that rebinds the loop variable to an
    expression reading that variable's ``.grad`` (``p = p - lr * p.grad``), where the rest of
    the body does not use the new value (``updated.append(p)`` would): its line, the
    variable, and the expression's part after ``p -`` as an in-place update would write it
    (``lr * p.grad``; the whole expression where it is not ``p - …``). In line order; empty
    when the source does not parse."""
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return []
    found = []
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For | ast.AsyncFor) or not isinstance(loop.target, ast.Name):
            continue
        name = loop.target.id
        body = list(_statements(loop.body))
        for i, stmt in enumerate(body):
            if not (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == name
                and _reads_grad_of(stmt.value, name)
            ):
                continue
            if any(_loads(later, name) for later in body[i + 1 :]):
                continue  # the new value is used: a functional update, not a lost one
            value = stmt.value
            step = (
                ast.unparse(value.right)
                if isinstance(value, ast.BinOp)
                and isinstance(value.op, ast.Sub)
                and isinstance(value.left, ast.Name)
                and value.left.id == name
                else None
            )
            found.append((stmt.lineno, name, step or ast.unparse(value)))
    return sorted(found)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a loop body in order, those inside ``with`` and ``if`` blocks too
    (``with torch.no_grad():``), not those of nested loops or functions."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.With | ast.AsyncWith):
            yield from _statements(stmt.body)
        elif isinstance(stmt, ast.If):
            yield from _statements(stmt.body)
            yield from _statements(stmt.orelse)


def _reads_grad_of(expr: ast.expr, name: str) -> bool:
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == "grad"
        and isinstance(n.value, ast.Name)
        and n.value.id == name
        for n in ast.walk(expr)
    )


def _loads(stmt: ast.stmt, name: str) -> bool:
    """Whether ``stmt`` reads ``name`` (a ``with`` or ``if`` block's own statements are read
    on their own, by :func:`_statements`: only its header counts here)."""
    if isinstance(stmt, ast.With | ast.AsyncWith):
        parts: list[ast.AST] = list(stmt.items)
    elif isinstance(stmt, ast.If):
        parts = [stmt.test]
    else:
        parts = [stmt]
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        for part in parts
        for n in ast.walk(part)
    )
