"""A VAE's KL term added with the wrong sign (kl-term-sign-flipped).

The KL divergence of a diagonal Gaussian from the standard normal prior is
``-0.5 * sum(1 + logvar - mu**2 - exp(logvar))``, which is never negative. Written without the
leading minus, ``0.5 * sum(1 + logvar - mu**2 - exp(logvar))`` is minus the KL divergence; added
to the reconstruction loss as it is, it makes every step *raise* the KL: the encoder's
distributions move away from the prior, the KL term falls without bound, and the loss with it,
which looks like training going well. Nothing raises.

Read from the snippet's source once, at the end of a run with optimizer steps: the sum (or mean)
of those four terms in either sign, the constants that multiply it, and, through the
assignments, function returns and ``+``/``-`` that carry it, the sign it has in each tensor
``backward()`` is called on. Told where minus the KL divergence reaches a backward root with a
``+``: at the line that defines it, with the line that adds it and the run's own numbers.
Silent: the textbook ``-0.5 * …``; minus the KL subtracted (``loss = rec - kl``); an ELBO
that adds it and is negated before backward (``loss = -elbo``); and a term the run shows is
not negative (the reading was wrong).
"""

from __future__ import annotations

import ast
import functools
from typing import TYPE_CHECKING, Any

import torch

from ..source import is_a, parsed_source, quoted_code
from .kinds import Said

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["kl_sign_reports"]

_REDUCTIONS = frozenset({"sum", "mean"})
_ROUNDS = 6  # assignments followed from the KL term to a backward root


def kl_sign_reports(rec: Recorder, scope: dict[str, Any]) -> list[Said]:
    """kl-term-sign-flipped for the snippet of ``rec`` (its globals ``scope``), once per run
    that stepped an optimizer (see the module docstring)."""
    if not rec.training.total_steps or "exp" not in "".join(rec.source_lines):
        return []
    found = _flipped("\n".join(rec.source_lines))
    if found is None:
        return []
    defined, name, added, term = found
    value = scope.get(name) if name else None
    held = ""
    if is_a(value, torch.Tensor) and value.numel() == 1:
        number = float(value.detach().float())
        if number > 0:
            return []  # the run says it is the KL divergence itself
        held = f"; {name} is {number:.4g} at the end of this run"
    loss = rec.backward.last_loss
    ends = f" (here the loss ends at {loss:.4g})" if loss is not None else ""
    if name:
        code = quoted_code(rec.source_lines, defined, 100)
        what = f"{name} at line {defined}" + (f" ({code})" if code else "")
        negated = term[1:].lstrip() if term.startswith("-") else f"-{term}"
        fix = f"Make it the KL divergence with a minus: {name} = {negated}; or subtract it at line {added}."
    else:
        what = f"The KL term at line {defined}, {term} in the sign the loss gives it,"
        fix = f"Subtract it at line {added}: the KL divergence is -0.5 * sum(1 + logvar - mu² - exp(logvar))."
    return [
        Said(
            "kl-term-sign-flipped",
            defined,
            "The KL term is minus the KL divergence, and the loss adds it",
            f"{what} is minus the KL divergence of the encoder's distribution from the prior, never positive"
            f"{held}. Line {added} adds it into the loss backward() runs on, so every step makes the KL "
            "divergence larger: the encoder moves away from the prior, the KL term falls without bound and "
            f"the loss falls with it{ends}, which looks like training going well. Nothing raises.",
            fix,
            [],
        )
    ]


@functools.lru_cache(maxsize=4)
def _flipped(source: str) -> tuple[int, str | None, int, str] | None:
    """``(line of the term, the name holding it alone or None, line that adds it, its code: the
    name's value, else the sum itself)`` where minus the KL divergence reaches a backward root
    with a plus sign; ``None`` otherwise."""
    tree = parsed_source(source)
    if tree is None:
        return None
    statements = [
        (s, target, s.value)
        for s in ast.walk(tree)
        if isinstance(s, ast.Assign | ast.AugAssign | ast.Return)
        and s.value is not None
        and (target := _target(s, tree)) is not None
    ]
    # name -> (its sign: 1 where it holds minus the KL with a plus, the term's line, the name
    # that holds the term alone or None, the line where the term joined other terms with a plus)
    signs: dict[str, tuple[int, int, str | None, int | None]] = {}
    codes: dict[int, str] = {}  # the term's line -> its code
    for statement, target, value in statements:
        for node, sign in _signed_terms(value, _start(statement)):
            form = _kl_form(node)
            if form is not None:
                alone = _additions(value) == _additions(node)
                codes[statement.lineno] = ast.unparse(value if alone else node)
                signs[target] = (form * sign, statement.lineno, target if alone else None, None)
                if not alone and form * sign > 0:
                    signs[target] = (*signs[target][:3], statement.lineno)
    for _ in range(_ROUNDS):
        grown = len(signs)
        for statement, target, value in statements:
            if target in signs:
                continue
            for node, sign in _signed_terms(value, _start(statement)):
                known = signs.get(_name_of(node) or "")
                if known is not None:
                    joined = known[3] or (statement.lineno if known[0] * sign > 0 else None)
                    signs[target] = (known[0] * sign, known[1], known[2], joined)
                    break
        if len(signs) == grown:
            break
    for call in ast.walk(tree):
        root = _backward_root(call)
        if root is None:
            continue
        for term, sign in _signed_terms(root, 1):
            known = signs.get(_name_of(term) or "")
            if known is not None and known[0] * sign > 0:
                return known[1], known[2], known[3] or root.lineno, codes[known[1]]
    return None


def _start(statement: ast.stmt) -> int:
    """The sign of a statement's value in what it binds: -1 for ``loss -= …``."""
    return -1 if isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Sub) else 1


def _additions(node: ast.expr) -> int:
    """How many ``+`` and ``-`` ``node`` holds."""
    return sum(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add | ast.Sub) for n in ast.walk(node))


def _signed_terms(node: ast.expr, sign: int) -> list[tuple[ast.expr, int]]:
    """The terms of ``node`` read through ``+``, ``-``, unary minus, multiplication or
    division by a constant (its sign taken) or by anything else (taken as positive: a weight
    ``beta``), and ``.sum()``/``.mean()``, each with its sign in ``node``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        right = -sign if isinstance(node.op, ast.Sub) else sign
        return [(node, sign), *_signed_terms(node.left, sign), *_signed_terms(node.right, right)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return [(node, sign), *_signed_terms(node.operand, -sign if isinstance(node.op, ast.USub) else sign)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Div):
        found: list[tuple[ast.expr, int]] = [(node, sign)]
        sides = (
            ((node.left, node.right),)
            if isinstance(node.op, ast.Div)
            else (
                (node.left, node.right),
                (node.right, node.left),
            )
        )
        for side, other in sides:  # (a denominator is not a term)
            factor = _constant(other)
            found += _signed_terms(side, -sign if factor is not None and factor < 0 else sign)
        return found
    reduced = _reduced(node)
    if reduced is not None and not isinstance(reduced, list):
        return [(node, sign), *_signed_terms(reduced, sign)]
    return [(node, sign)]


def _reduced(node: ast.expr) -> ast.expr | list[ast.expr] | None:
    """What ``node`` sums or averages: ``x`` of ``x.sum(…)``, ``torch.sum(x, …)``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    if node.func.attr not in _REDUCTIONS:
        return None
    owner = node.func.value
    if isinstance(owner, ast.Name) and owner.id == "torch":
        return node.args[0] if node.args else None
    return owner


def _kl_form(node: ast.expr) -> int | None:
    """``1`` where ``node`` sums or averages ``1 + logvar - mu**2 - exp(logvar)`` (minus the KL
    divergence, up to its factor), ``-1`` for the negation, ``None`` for anything else."""
    inner = _reduced(node)
    if not isinstance(inner, ast.BinOp):
        return None
    terms = [(sign, term) for term, sign in _leaves(inner, 1)]
    if len(terms) != 4:
        return None
    kinds = {_kind(term): sign for sign, term in terms}
    one, square = kinds.get(("one", "")), next((s for k, s in kinds.items() if k[0] == "square"), None)
    logs = [(k[1], s) for k, s in kinds.items() if k[0] == "plain"]
    exps = [(k[1], s) for k, s in kinds.items() if k[0] == "exp"]
    if one is None or square is None or len(logs) != 1 or len(exps) != 1 or logs[0][0] != exps[0][0]:
        return None
    signs = (one, logs[0][1], -square, -exps[0][1])
    return signs[0] if len(set(signs)) == 1 else None


def _leaves(node: ast.expr, sign: int) -> list[tuple[ast.expr, int]]:
    """The additive leaves of ``node`` with their signs."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        right = -sign if isinstance(node.op, ast.Sub) else sign
        return [*_leaves(node.left, sign), *_leaves(node.right, right)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _leaves(node.operand, -sign)
    return [(node, sign)]


def _kind(term: ast.expr) -> tuple[str, str]:
    """``("one", "")``, ``("square", x)`` for ``x**2``/``x.pow(2)``/``torch.square(x)``,
    ``("exp", x)`` for ``x.exp()``/``torch.exp(x)``, else ``("plain", the code)``."""
    if isinstance(term, ast.Constant) and term.value in (1, 1.0) and not isinstance(term.value, bool):
        return "one", ""
    if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Pow) and _constant(term.right) == 2:
        return "square", ast.unparse(term.left)
    if isinstance(term, ast.Call) and isinstance(term.func, ast.Attribute):
        attr, owner = term.func.attr, term.func.value
        from_torch = isinstance(owner, ast.Name) and owner.id == "torch"
        operand = (term.args[0] if term.args else None) if from_torch else owner
        if operand is not None and attr == "exp" and len(term.args) == int(from_torch):
            return "exp", ast.unparse(operand)
        if operand is not None and attr == "square":
            return "square", ast.unparse(operand)
        if operand is not None and attr == "pow" and term.args and _constant(term.args[-1]) == 2:
            return "square", ast.unparse(operand)
    return "plain", ast.unparse(term)


def _constant(node: ast.expr) -> float | None:
    """The number ``node`` writes (``0.5``, ``-0.5``), else ``None``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant(node.operand)
        return None if inner is None else -inner
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    return None


def _name_of(node: ast.expr) -> str | None:
    """The name a term reads: ``kl`` for ``kl``, ``loss_fn()`` for a call of ``loss_fn``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"{node.func.id}()"
    return None


def _target(statement: ast.stmt, tree: ast.Module) -> str | None:
    """The name ``statement`` binds (``loss`` of ``loss = …`` or ``loss += …``), or
    ``f()`` for a ``return`` in function ``f``."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id
    if isinstance(statement, ast.Return):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(s is statement for s in ast.walk(node)):
                return f"{node.name}()"
    return None


def _backward_root(node: ast.AST) -> ast.expr | None:
    """``x`` of ``x.backward(…)`` or ``torch.autograd.backward(x)``; ``None`` otherwise."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    if node.func.attr != "backward":
        return None
    owner = node.func.value
    if ast.unparse(owner) in ("torch.autograd", "autograd"):
        return node.args[0] if node.args else None
    if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute) and owner.func.attr == "scale":
        return owner.args[0] if owner.args else None  # scaler.scale(loss).backward()
    return owner
