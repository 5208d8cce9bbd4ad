"""What the source says about a ``torch.manual_seed(…)`` run inside a loop (seed-reset-in-loop):
which loop it is in, whether training follows it in the loop's body, whether the loop starts
each run afresh (a sweep), and which random draws come after it.

# NOTE [A seed inside the loop]
# ``torch.manual_seed(0)`` at the top of each iteration puts the generator back where it was:
# every iteration then draws the same "random" batch, the same shuffle, the same dropout
# masks. The run shows the repeats (reseeds.py); the source tells the repeats feed training:
# a ``step()`` or ``backward()`` (or a snippet function that calls one) comes after the seed
# in the loop's body, and a random draw comes after it there too, outside ``torch.no_grad()``
# (``torch.randn``…, a loop over a DataLoader that shuffles, a call of a model with dropout).
# A seed after the training part of the body (a fixed probe set drawn at the end of each
# epoch), a loop whose body builds its own model or optimizer (a sweep of learning rates,
# k folds each reloading the first weights: the same start on purpose), and a seed whose
# draws all run under no_grad (evaluation only) are left alone.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.utils.data import DataLoader, RandomSampler

from ..source import bound_to, parsed_source

__all__ = ["SeedLoop", "SourceLoops"]

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_TRAINING_CALLS = frozenset({"step", "backward"})
_RANDOM_CALLS = frozenset(
    {
        "randn",
        "rand",
        "randint",
        "randperm",
        "normal",
        "bernoulli",
        "multinomial",
        "poisson",
        "rand_like",
        "randn_like",
        "randint_like",
        "dropout",
        "normal_",
        "uniform_",
        "bernoulli_",
        "random_",
        "exponential_",
        "geometric_",
        "cauchy_",
        "log_normal_",
    }
)
_NO_GRAD = frozenset({"no_grad", "inference_mode"})
# methods of random's and NumPy's global generators that draw nothing
_NOT_DRAWS = frozenset({"seed", "getstate", "setstate", "get_state", "set_state"})
# calls that start a run afresh: the same seed before each is a sweep, not a mistake
_FRESH_CALLS = frozenset({"load_state_dict", "reset_parameters", "deepcopy"})
_OPTIMIZERS = frozenset(
    name for name in dir(torch.optim) if name[:1].isupper() and name not in {"Optimizer", "lr_scheduler"}
)
_NO_WEIGHTS = tuple(
    f"torch.nn.modules.{name}"
    for name in ("loss", "activation", "dropout", "flatten", "pooling", "container")
)
_DEPTH = 3  # snippet functions followed through, call within call


class SeedLoop(NamedTuple):
    """A seed call's loop (its first line) and the draws after the seed, as the report says them."""

    loop_line: int
    draws: list[str]


def _called(node: ast.Call) -> str | None:
    """The name a call calls: ``randn`` in ``torch.randn(…)``, ``train`` in ``train(…)``."""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _is_no_grad(node: ast.expr) -> bool:
    """``torch.no_grad()`` / ``torch.inference_mode()`` (called or not, as a decorator too)."""
    target = node.func if isinstance(node, ast.Call) else node
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name in _NO_GRAD


def _walk_grad(nodes: list[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``nodes``, except what runs under ``with torch.no_grad():``."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.With | ast.AsyncWith) and any(
            _is_no_grad(i.context_expr) for i in node.items
        ):
            continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    """The names an assignment binds, those in a tuple on its left included."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [n for t in targets for n in ([t] if not isinstance(t, ast.Tuple | ast.List) else t.elts)]


def _draws_from(call: ast.Call, frame: FrameType | None) -> str | None:
    """``"random"`` for a call that draws from Python's global generator (``random.shuffle``,
    ``from random import sample``), ``"numpy"`` for one from NumPy's global generator
    (``np.random.permutation``); None for any other, a generator of the snippet's own
    (``random.Random(0)``, ``np.random.default_rng(0)``) included."""
    if _called(call) in _NOT_DRAWS:
        return None
    try:
        function = bound_to(ast.unparse(call.func), frame)
    except Exception:
        return None
    owner = getattr(function, "__self__", None)
    if owner is not None and owner is getattr(sys.modules.get("random"), "_inst", None):
        return "random"
    numpy_random = getattr(sys.modules.get("numpy"), "random", None)
    if owner is not None and owner is getattr(getattr(numpy_random, "mtrand", None), "_rand", None):
        return "numpy"
    return None


class SourceLoops:
    """The snippet's source, parsed once (``source_lines``): :meth:`seed_loop` reads it."""

    def __init__(self, source_lines: list[str]) -> None:
        self._lines = source_lines
        self._loop_at: dict[int, tuple[ast.stmt, Any] | None] = {}

    @functools.cached_property
    def _tree(self) -> ast.Module | None:
        return parsed_source("\n".join(self._lines))

    @functools.cached_property
    def _functions(self) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        """The snippet's functions (and methods) by name; a name defined twice is dropped."""
        found: dict[str, Any] = {}
        for node in ast.walk(self._tree) if self._tree is not None else ():
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found[node.name] = None if node.name in found else node
        return {name: node for name, node in found.items() if node is not None}

    @functools.cached_property
    def _loops(self) -> list[tuple[ast.stmt, ast.For | ast.AsyncFor | ast.While]]:
        """Each statement inside a loop's body with the innermost such loop of its own scope."""
        pairs: list[tuple[ast.stmt, Any]] = []

        def visit(node: ast.AST, loop: Any) -> None:
            for field, value in ast.iter_fields(node):
                children = value if isinstance(value, list) else [value]
                for child in children:
                    if not isinstance(child, ast.AST):
                        continue
                    inner = loop
                    if isinstance(child, _SCOPES):
                        inner = None
                    elif isinstance(node, _LOOPS) and field == "body":
                        inner = node
                    if isinstance(child, ast.stmt) and inner is not None:
                        pairs.append((child, inner))
                    visit(child, inner)

        if self._tree is not None:
            visit(self._tree, None)
        return pairs

    def loop_of(self, line: int) -> tuple[ast.stmt, Any] | None:
        """The innermost statement at ``line`` that is inside a loop's body, and that loop."""
        if line in self._loop_at:
            return self._loop_at[line]
        best = None
        for stmt, loop in self._loops:
            end = stmt.end_lineno or stmt.lineno
            if stmt.lineno <= line <= end and (best is None or stmt.lineno >= best[0].lineno):
                best = (stmt, loop)
        self._loop_at[line] = best
        return best

    def seed_loop(self, line: int, frame: FrameType | None, generator: str = "torch") -> SeedLoop | None:
        """What NOTE [A seed inside the loop] needs of a call at ``line`` (run in ``frame``) that
        seeds ``generator`` (``"torch"``, ``"random"``: Python's, ``"numpy"``: NumPy's global
        one): its loop and the draws from that generator after it, or ``None`` where the source
        does not show training after it, shows a loop that starts afresh, or no such draw."""
        found = self.loop_of(line)
        if found is None:
            return None
        stmt, loop = found
        end = stmt.end_lineno or stmt.lineno
        after = [n for n in _walk_grad(loop.body) if isinstance(n, ast.stmt) and n.lineno > end]
        after_all = [n for n in ast.walk(loop) if isinstance(n, ast.stmt) and n.lineno > end]
        if not any(_called(c) in _TRAINING_CALLS for c in self._calls(after_all, grad_only=False)):
            return None
        if any(self._starts_afresh(c, frame) for c in self._calls(list(loop.body), grad_only=False)):
            return None
        draws: list[str] = []
        if generator != "torch":
            for call in self._calls(after, grad_only=True):
                if _draws_from(call, frame) == generator and self._repeats(call, loop):
                    draws.append(f"{ast.unparse(call.func)} at line {call.lineno}")
            unique = list(dict.fromkeys(draws))
            return SeedLoop(loop.lineno, unique) if unique else None
        for node in after:
            if isinstance(node, ast.For | ast.AsyncFor):
                self._shuffled(node.iter, frame, draws)
        for call in self._calls(after, grad_only=True):
            name = _called(call)
            if name in _RANDOM_CALLS and not any(k.arg == "generator" for k in call.keywords):
                draws.append(f"{ast.unparse(call.func)} at line {call.lineno}")
            elif name == "iter" and call.args:
                self._shuffled(call.args[0], frame, draws)
            elif isinstance(call.func, ast.Name):
                model = bound_to(call.func.id, frame)
                if isinstance(model, nn.Module) and any(
                    isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules()
                ):
                    draws.append(f"the dropout masks of {call.func.id} (line {call.lineno})")
        unique = list(dict.fromkeys(draws))
        return SeedLoop(loop.lineno, unique) if unique else None

    def _repeats(self, call: ast.Call, loop: ast.stmt) -> bool:
        """Whether a draw from a reseeded generator gives the same each iteration: any does but
        a shuffle in place, which permutes what the list holds: only one of a list (or array)
        made afresh in each iteration, in the loop (``idx = list(range(n)); random.shuffle(idx)``)
        or in the snippet function that shuffles it, starts from the same order each time."""
        if _called(call) != "shuffle":
            return True
        shuffled = call.args[0] if call.args else None
        if not isinstance(shuffled, ast.Name):
            return False
        loop_end = loop.end_lineno or loop.lineno
        helper = next(
            (
                f
                for f in self._functions.values()
                if f.lineno <= call.lineno <= (f.end_lineno or f.lineno)
                and not f.lineno <= loop.lineno <= (f.end_lineno or f.lineno)
            ),
            None,
        )
        for node in ast.walk(self._tree) if self._tree is not None else ():
            if not (
                isinstance(node, ast.Assign | ast.AnnAssign)
                and node.lineno < call.lineno
                and any(isinstance(t, ast.Name) and t.id == shuffled.id for t in _targets(node))
            ):
                continue
            if loop.lineno < node.lineno <= loop_end:  # made afresh in each iteration
                return True
            if helper is not None and helper.lineno < node.lineno <= (helper.end_lineno or helper.lineno):
                return True
        return False

    def _calls(self, nodes: list[ast.stmt], *, grad_only: bool) -> Iterator[ast.Call]:
        """The calls in ``nodes`` (outside no_grad blocks with ``grad_only``) and in the
        snippet functions they call, ``_DEPTH`` calls deep (a function under a no_grad
        decorator left out with ``grad_only``)."""
        seen: set[str] = set()
        todo: list[tuple[list[Any], int]] = [(list(nodes), 0)]
        while todo:
            body, depth = todo.pop()
            walk = _walk_grad(body) if grad_only else (n for b in body for n in ast.walk(b))
            for node in walk:
                if not isinstance(node, ast.Call):
                    continue
                yield node
                name = _called(node)
                function = self._functions.get(name) if name is not None else None
                if function is None or name in seen or depth >= _DEPTH:
                    continue
                seen.add(name or "")
                if grad_only and any(_is_no_grad(d) for d in function.decorator_list):
                    continue
                todo.append((list(function.body), depth + 1))

    def _starts_afresh(self, call: ast.Call, frame: FrameType | None) -> bool:
        """A call that builds a model or optimizer, or reloads or copies weights."""
        name = _called(call)
        if name in _FRESH_CALLS or name in _OPTIMIZERS:
            return True
        try:
            made = bound_to(ast.unparse(call.func), frame)
        except Exception:
            return False
        if not isinstance(made, type):
            return False
        if issubclass(made, torch.optim.Optimizer):
            return True
        # a model built anew; not a loss or a layer of no weights (nn.MSELoss()(out, y), nn.ReLU())
        return issubclass(made, nn.Module) and not made.__module__.startswith(_NO_WEIGHTS)

    def _shuffled(self, node: ast.AST, frame: FrameType | None, draws: list[str]) -> None:
        """Add the shuffle of a DataLoader ``node`` names, when it shuffles."""
        if not isinstance(node, ast.Name):
            return
        loader = bound_to(node.id, frame)
        sampler = getattr(loader.batch_sampler, "sampler", None) if isinstance(loader, DataLoader) else None
        # (one with a generator of its own draws nothing from the one torch.manual_seed resets)
        if isinstance(sampler, RandomSampler) and sampler.generator is None:
            draws.append(f"the shuffled order of {node.id} (line {node.lineno})")
