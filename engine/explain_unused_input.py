"""``torch.autograd.grad(u, X[:, 0])``: an input made on the call's own line, after the output.

"One of the differentiated Tensors appears to not have been used in the graph": ``X[:, 0]``
(or ``x.view(-1, 1)``) written as the input to differentiate with respect to is a new tensor,
made from ``X`` after ``u`` was, so ``u`` does not depend on it. ``allow_unused=True``, which
PyTorch's message suggests, returns ``None`` for it. The derivative asked for is a part of the
gradient with respect to ``X`` itself.
"""

from __future__ import annotations

import ast

__all__ = ["input_made_after_output"]


def input_made_after_output(code: str | None) -> str | None:
    """The hint for a ``torch.autograd.grad`` call on ``code`` whose ``inputs`` is an index or
    a view of a name (``X[:, 0]``, ``x.view(-1, 1)``); ``None`` otherwise."""
    call = _grad_call(code or "")
    if call is None or len(call.args) < 2:
        return None
    output, wanted = call.args[0], call.args[1]
    base, part = _base_and_part(wanted)
    if base is None:
        return None
    out, made = ast.unparse(output), ast.unparse(wanted)
    return (
        f"{made} is a new tensor, made on this line from {base} after {out} was computed, so {out} does not "
        f"depend on it: it has no gradient (allow_unused=True would only give None). Differentiate with "
        f"respect to {base} itself and take the part: torch.autograd.grad({out}, {base})[0]{part}; or make "
        f"{made} first and compute {out} from it."
    )


def _grad_call(code: str) -> ast.Call | None:
    try:
        tree = ast.parse(code.strip().rstrip(":"))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in (
            "torch.autograd.grad",
            "autograd.grad",
            "grad",
        ):
            return node
    return None


def _base_and_part(node: ast.expr) -> tuple[str | None, str]:
    """``("X", "[:, 0]")`` for ``X[:, 0]``, ``("x", ".view(-1, 1)")`` for a view of ``x``."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value.id, ast.unparse(node)[len(node.value.id) :]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.attr in ("view", "reshape", "unsqueeze", "squeeze", "flatten", "t", "select", "narrow")
    ):
        return node.func.value.id, ast.unparse(node)[len(node.func.value.id) :]
    return None, ""
