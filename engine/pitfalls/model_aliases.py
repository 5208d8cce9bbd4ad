"""Second names and shallow copies of a trained model kept as if they were other models
(snapshot-shares-weights, with snapshots.py, which reads state_dicts).

``ema = model`` walked beside ``model`` (``zip(ema.parameters(), model.parameters())``: an EMA
or a DQN's soft update that pairs each parameter with itself), and ``best_model =
copy.copy(model)`` (a new module object holding the same parameter tensors): each changes with
every later optimizer step. Read from the source, confirmed on the snippet's objects.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Sequence
from typing import Any

from ..source import is_module, quoted_code
from .kinds import Said

__all__ = ["inside", "paired_aliases", "quoted", "shallow_copies"]


def inside(line: int, loops: list[tuple[int, int]]) -> bool:
    """Whether snippet ``line`` lies in one of ``loops`` (``(first, last)`` line spans)."""
    return any(start <= line <= end for start, end in loops)


def quoted(source_lines: Sequence[str], line: int) -> str:
    """``Line 7 (code)``, or ``Line 7`` where the code is too long to quote."""
    code = quoted_code(source_lines, line)
    return f"Line {line} ({code})" if code else f"Line {line}"


def _root(node: ast.expr) -> str | None:
    """``ema`` for ``ema.parameters()`` or ``ema.state_dict().values()``: the name a chain of
    attributes and calls starts from."""
    while isinstance(node, ast.Call | ast.Attribute):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _trained(module: object, stepped: set[int]) -> bool:
    return is_module(module) and any(id(p) in stepped for p in module.parameters())


def paired_aliases(
    scope: dict[str, Any], training: tuple[set[int], int], tree: ast.AST, source_lines: Sequence[str]
) -> list[Said]:
    """snapshot-shares-weights for ``ema = model`` (a second name for a trained model) whose
    two names the snippet then walks side by side as two models: ``zip(ema.parameters(),
    model.parameters())``, an EMA or "shadow" update that pairs each parameter with itself."""
    stepped, steps = training
    zips = [
        (node.lineno, {_root(arg) for arg in node.args})
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "zip"
    ]
    said: list[Said] = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name)
        ):
            continue
        alias, model = node.targets[0].id, node.value.id
        if (
            alias == model
            or scope.get(alias) is not scope.get(model)
            or not _trained(scope.get(model), stepped)
        ):
            continue
        paired = next((line for line, names in zips if {alias, model} <= names), None)
        if paired is None:
            continue
        walk = quoted_code(source_lines, paired) or f"the zip of {alias}'s and {model}'s parameters"
        said.append(
            Said(
                "snapshot-shares-weights",
                node.lineno,
                f"{alias} is {model}: one model under two names",
                f"{quoted(source_lines, node.lineno)} binds a second name to the same model, not a copy: "
                f"{alias} and {model} are one module, so every optimizer step ({steps} ran) changes both, and "
                f"line {paired} ({walk}) pairs each of {model}'s parameters with itself. {alias} never holds "
                f"an average or an earlier state of {model}: it is {model}, step by step. Nothing raises.",
                f"Make {alias} a copy: {alias} = copy.deepcopy({model}) (import copy); line {paired} then "
                f"moves {alias} toward {model} instead of editing {model} itself.",
                [],
            )
        )
    return said


def _bindings(node: ast.Assign) -> list[tuple[str, ast.expr]]:
    """``(name, value)`` for each plain name ``node`` binds to an expression of its
    own: ``best`` and ``best_model`` in ``best, best_model = loss.item(), copy.copy(model)``."""
    found: list[tuple[str, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Name):
            found.append((target.id, node.value))
        elif (
            isinstance(target, ast.Tuple)
            and isinstance(node.value, ast.Tuple)
            and len(target.elts) == len(node.value.elts)
        ):
            found += [
                (t.id, v)
                for t, v in zip(target.elts, node.value.elts, strict=True)
                if isinstance(t, ast.Name)
            ]
    return found


def _copied(value: ast.expr, scope: dict[str, Any]) -> str | None:
    """``model`` for ``copy.copy(model)`` (or ``copy(model)`` after ``from copy import copy``)."""
    if not (isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Name)):
        return None
    func = value.func
    shallow = (
        isinstance(func, ast.Attribute)
        and func.attr == "copy"
        and isinstance(func.value, ast.Name)
        and scope.get(func.value.id) is copy
    ) or (isinstance(func, ast.Name) and scope.get(func.id) is copy.copy)
    return value.args[0].id if shallow else None


def shallow_copies(
    scope: dict[str, Any],
    training: tuple[set[int], int],
    tree: ast.AST,
    loops: list[tuple[int, int]],
    source_lines: Sequence[str],
) -> list[Said]:
    """snapshot-shares-weights for ``best_model = copy.copy(model)`` taken with a step after
    it (in the loop that steps, or above one): a shallow copy of a module is a new object
    holding the same parameter tensors, changed by every later step."""
    stepped, steps = training
    said: list[Said] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for name, value in _bindings(node):
            model_name = _copied(value, scope)
            model, kept = scope.get(model_name or ""), scope.get(name)
            if model_name is None or not is_module(model) or not is_module(kept) or kept is model:
                continue
            if not _trained(model, stepped):
                continue
            own, held = list(model.named_parameters()), list(kept.parameters())
            if len(own) != len(held) or not all(a is b for (_, a), b in zip(own, held, strict=True)):
                continue
            if not (inside(node.lineno, loops) or any(node.lineno < start for start, _ in loops)):
                continue
            code = quoted_code(source_lines, node.lineno, 10_000) or ""
            deep = code.replace(f"copy.copy({model_name})", f"copy.deepcopy({model_name})", 1)
            first = own[0][0]
            said.append(
                Said(
                    "snapshot-shares-weights",
                    node.lineno,
                    f"{name} is a shallow copy: it shares {model_name}'s live weights",
                    f"{quoted(source_lines, node.lineno)} keeps a copy of {model_name} in {name}, but "
                    f"copy.copy copies only the module object, not its tensors ({name}.{first} is "
                    f"{model_name}.{first} itself), so every optimizer step after it changes {name} too "
                    f"({steps} steps ran in all). By the end {name} holds the weights of the last step, not "
                    "those of the step it was taken at. Nothing raises.",
                    "Copy the tensors too: "
                    + (deep if deep != code else f"{name} = copy.deepcopy({model_name})")
                    + " (copy.deepcopy copies every parameter and buffer).",
                    [],
                )
            )
    return said
