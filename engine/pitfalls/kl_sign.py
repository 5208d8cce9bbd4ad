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
``backward()`` is called on; each function's names are its own, and tuples returned and
unpacked (``loss, rec, kl = vae.loss(x)``) and method calls (``self.kl_loss(…)``) are followed.
Told where minus the KL divergence reaches a backward root with a ``+``: at the line that
defines it, with the line that adds it and the run's own numbers.
Silent: the textbook ``-0.5 * …``; minus the KL subtracted (``loss = rec - kl``); an ELBO
that adds it and is negated before backward (``loss = -elbo``); ``kl = -kl`` below it; an
optimizer built with ``maximize=True`` (gradient ascent on the ELBO); and a term the run shows
is not negative (the reading was wrong).
"""

from __future__ import annotations

import ast
import functools
from typing import TYPE_CHECKING, Any, NamedTuple

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
    if any(_maximizes(value) for value in list(scope.values())):
        return []  # gradient ascent: the ELBO, minus the KL in it, is what the step raises
    found = _flipped("\n".join(rec.source_lines))
    if found is None:
        return []
    defined, key, added, term = found
    name = key.rpartition(".")[2] if key else None
    value = scope.get(key) if key else None  # (a function's own name is not in the globals)
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
        written = f"return {negated}" if "(" in name else f"{name} = {negated}"
        fix = f"Make it the KL divergence with a minus: {written}; or subtract it at line {added}."
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


def _maximizes(value: object) -> bool:
    """Whether ``value`` is an optimizer built with ``maximize=True``."""
    return is_a(value, torch.optim.Optimizer) and bool(getattr(value, "defaults", {}).get("maximize"))


@functools.lru_cache(maxsize=4)
def _flipped(source: str) -> tuple[int, str | None, int, str] | None:
    """``(line of the term, the name holding it alone (``f.kl`` for function ``f``'s) or None,
    line that adds it, its code: the name's value, else the sum itself)`` where minus the KL
    divergence reaches a backward root with a plus sign; ``None`` otherwise. A name assigned
    inside a function is that function's own (an ``elbo()`` beside a ``loss_function()`` may
    hold minus the KL in a ``kl`` of its own); ``kl = -kl`` turns the sign a name holds."""
    tree = parsed_source(source)
    if tree is None:
        return None
    scopes = _Scopes(tree)
    statements = [binding for s in ast.walk(tree) for binding in _bindings(s, scopes)]
    signs: dict[str, _Held] = {}  # a name -> how it holds the KL term
    codes: dict[int, str] = {}  # the term's line -> its code
    for statement, target, value in statements:
        for node, sign in _signed_terms(value, _start(statement)):
            form = _kl_form(node)
            if form is not None:
                alone = _additions(value) == _additions(node)
                codes[statement.lineno] = ast.unparse(value if alone else node)
                joined = statement.lineno if not alone and form * sign > 0 else None
                signs[target] = _Held(form * sign, statement.lineno, target if alone else None, joined)
                break  # (the sum, not the four terms inside it)
    turned: set[int] = set()  # the statements that turned the sign their own target holds
    for _ in range(_ROUNDS):
        grown = len(signs) + len(turned)
        for statement, target, value in statements:
            if target in signs:
                _turn(statement, value, target, signs, scopes, turned)
                continue
            for node, sign in _signed_terms(value, _start(statement)):
                known = signs.get(scopes.key(_name_of(node), statement))
                if known is not None:
                    joined = known.joined or (statement.lineno if known.sign * sign > 0 else None)
                    signs[target] = known._replace(sign=known.sign * sign, joined=joined)
                    break
        if len(signs) + len(turned) == grown:
            break
    for call in ast.walk(tree):
        root = _backward_root(call)
        if root is None:
            continue
        for term, sign in _signed_terms(root, 1):
            known = signs.get(scopes.key(_name_of(term), call))
            if known is not None and known.sign * sign > 0:
                return known.line, known.alone, known.joined or root.lineno, codes[known.line]
    return None


class _Held(NamedTuple):
    """How a name holds the KL term."""

    sign: int  # 1 where it holds minus the KL divergence with a plus sign, -1 the other way
    line: int  # the term's line
    alone: str | None  # the name that holds the term alone (``kl = 0.5 * …``), else None
    joined: int | None  # the line where the term joined other terms with a plus, if it has


def _turn(
    statement: ast.stmt,
    value: ast.expr,
    target: str,
    signs: dict[str, _Held],
    scopes: _Scopes,
    turned: set[int],
) -> None:
    """Turn the sign ``target`` holds where ``statement``, below the line that gave it that
    sign, rebinds it from itself with a minus (``kl = -kl``, ``kl *= -1``); once per statement."""
    known = signs[target]
    if id(statement) in turned or statement.lineno <= known.line or isinstance(statement, ast.Return):
        return
    if isinstance(statement, ast.AugAssign):
        factor = _constant(value)
        flip = isinstance(statement.op, ast.Mult | ast.Div) and factor is not None and factor < 0
    else:
        own = [
            sign for node, sign in _signed_terms(value, 1) if scopes.key(_name_of(node), statement) == target
        ]
        flip = bool(own) and own[0] < 0
    if flip:
        turned.add(id(statement))
        signs[target] = known._replace(sign=-known.sign)


class _Scopes:
    """Which function each statement of a snippet's tree sits in, and the names each function
    assigns (its locals)."""

    def __init__(self, tree: ast.Module) -> None:
        self._function: dict[int, str] = {}
        self._locals: dict[str, set[str]] = {}
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                assigned = self._locals.setdefault(function.name, set())
                for node in ast.walk(function):
                    self._function[id(node)] = function.name  # (inner functions, walked later, win)
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        assigned.add(node.id)

    def function_of(self, node: ast.AST) -> str | None:
        """The name of the function ``node`` sits in; ``None`` at module level."""
        return self._function.get(id(node))

    def key(self, name: str | None, at: ast.AST) -> str:
        """What ``name``, read at ``at``, is known as: ``f.kl`` for a ``kl`` function ``f``
        assigns, else ``kl`` (a module-level name, or ``f()`` for a call)."""
        function = self.function_of(at)
        if name is None:
            return ""
        if function is not None and name in self._locals.get(function, set()):
            return f"{function}.{name}"
        return name


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
    """``1`` where ``node`` sums or averages ``1 + logvar - mu**2 - exp(logvar)``, or is that sum of
    four terms itself (minus the KL divergence, up to its factor, per dimension or summed), ``-1``
    for the negation, ``None`` for anything else."""
    inner = _reduced(node)
    if inner is None and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        inner = node  # per dimension, summed later: kl_el = 0.5 * (1 + logvar - …)
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
    """The name a term reads: ``kl`` for ``kl``, ``loss_fn()`` for a call of ``loss_fn`` (or of
    a method ``self.loss_fn``: a function the snippet defines, where it holds a KL term)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
        return f"{node.func.id if isinstance(node.func, ast.Name) else node.func.attr}()"
    return None


def _bindings(statement: ast.AST, scopes: _Scopes) -> list[tuple[ast.stmt, str, ast.expr]]:
    """``(statement, what it binds, the value bound)`` for an assignment or ``return``: ``loss``
    of ``loss = …`` or ``loss += …`` (``f.loss`` inside function ``f``), ``f()`` for a ``return`` in
    function ``f``; and each item of a tuple returned (``f()[0]`` of ``return rec + kl, rec, kl``)
    or unpacked from a call (``loss`` of ``loss, rec, kl = model.loss(x)``, bound to ``loss()[0]``)."""
    if not isinstance(statement, ast.Assign | ast.AugAssign | ast.Return) or statement.value is None:
        return []
    value = statement.value
    if isinstance(statement, ast.Return):
        function = scopes.function_of(statement)
        if function is None:
            return []
        if isinstance(value, ast.Tuple):
            return [(statement, f"{function}()[{i}]", item) for i, item in enumerate(value.elts)]
        return [(statement, f"{function}()", value)]
    target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
    if isinstance(statement, ast.Assign) and len(statement.targets) != 1:
        return []
    if isinstance(target, ast.Name):
        return [(statement, scopes.key(target.id, statement), value)]
    called = _name_of(value) if isinstance(value, ast.Call) else None
    if not isinstance(target, ast.Tuple) or called is None:
        return []
    return [
        (statement, scopes.key(item.id, statement), ast.Name(id=f"{called}[{i}]", ctx=ast.Load()))
        for i, item in enumerate(target.elts)
        if isinstance(item, ast.Name)
    ]


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
