"""Loss tensors kept in a list, graph and all (loss-tensor-accumulated, its list form).

``losses.append(loss)`` where ``losses.append(loss.item())`` was meant: each entry is the
loss tensor, which holds its whole graph alive for as long as the list lives. What that
costs depends on whether a backward walked the graph:

- Not walked (validation losses computed with gradients on, ``val_losses.append(F.mse_loss(
  model(xv), yv))``): each graph keeps every tensor its forward pass saved for backward, the
  activations, until the list is dropped. Said with the bytes they hold.
- Walked (``loss.backward()`` then ``losses.append(loss)``): backward freed the saved
  tensors, but each graph's autograd nodes stay, a few hundred bytes each: the list grows
  with every batch (over a long run of a deep model, by much). Said with the nodes kept,
  and only where the source appends the very name it calls ``.backward()`` on in that loop.

Told at the end of the run, from the lists of the snippet's globals: two or more one-element
tensors that carry a graph, appended to in a loop. A list whose entries build a loss (deep
supervision's ``sum(losses).backward()``, REINFORCE's ``torch.stack(log_probs)``, gradient
accumulation's last partial chunk) is left alone, as are ``.item()`` and ``.detach()``
entries and losses made under no_grad (no graph). Where graph-built-in-evaluation already
said the forward passes of an evaluation built graphs, a list of their losses is not said
again.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import torch

from ..source import is_a, parsed_source, quoted_code
from ..tensor_facts import autograd_of
from .kinds import Said

__all__ = ["kept_losses"]

_MAX_NODES = 100_000  # the most graph nodes walked for one list


def kept_losses(scope: dict[str, Any], source_lines: Sequence[str], evaluation_said: bool) -> list[Said]:
    """loss-tensor-accumulated for each list of ``scope`` (the snippet's globals) that keeps
    loss tensors with their graphs; ``source_lines``: the snippet's lines;
    ``evaluation_said``: whether graph-built-in-evaluation was said (its lists are not)."""
    lists = [
        (name, value)
        for name, value in list(scope.items())
        if is_a(value, list) and not name.startswith("_") and len(value) >= 2 and _all_losses(value)
    ]
    if not lists:
        return []
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return []
    said: list[Said] = []
    for name, value in lists:
        found = _appended_in_loop(tree, name)
        if found is None or _builds_a_loss(tree, name, found[0]):
            continue
        append, loop = found
        nodes, saved, walked = _graphs(value)
        if walked:
            if _backward_of(append, loop) is not None:
                said.append(_walked_report(name, value, append, nodes, source_lines))
        elif saved and not evaluation_said:
            said.append(_unwalked_report(name, value, append, saved, source_lines))
    return said


def _all_losses(value: list[Any]) -> bool:
    """Whether every entry of ``value`` is a one-element tensor that carries a graph."""
    for entry in value:
        if not is_a(entry, torch.Tensor) or entry.numel() != 1 or not entry.requires_grad:
            return False
        facts = autograd_of(entry)
        if facts is None or facts[0] is None:
            return False
    return True


def _appended_in_loop(tree: ast.AST, name: str) -> tuple[ast.Call, ast.For | ast.While] | None:
    """The first ``name.append(x)`` call inside a loop's body, and that loop."""
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For | ast.While):
            continue
        for node in ast.walk(loop):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
                and len(node.args) == 1
            ):
                return node, loop
    return None


def _backward_of(append: ast.Call, loop: ast.For | ast.While) -> str | None:
    """The name ``append`` appends when ``loop`` (which holds it) calls ``.backward()`` on it."""
    given = append.args[0]
    if not isinstance(given, ast.Name):
        return None
    for node in ast.walk(loop):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "backward"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == given.id
        ):
            return given.id
    return None


def _builds_a_loss(tree: ast.AST, name: str, append: ast.Call) -> bool:
    """Whether a statement other than ``append`` reads ``name`` to build what a backward (or
    ``autograd.grad``) starts from: called on its line, or through a name it assigns."""
    walked = {
        node.func.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "backward"
        and isinstance(node.func.value, ast.Name)
    }
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.stmt) or isinstance(stmt, ast.For | ast.While | ast.If | ast.With):
            continue
        inside = list(ast.walk(stmt))
        if append in inside or not any(isinstance(n, ast.Name) and n.id == name for n in inside):
            continue
        if any(isinstance(n, ast.Attribute) and n.attr in ("backward", "grad") for n in inside):
            return True
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if any(isinstance(n, ast.Name) and n.id in walked for t in targets for n in ast.walk(t)):
            return True
    return False


def _graphs(value: list[torch.Tensor]) -> tuple[int, int, bool]:
    """``(nodes, saved bytes, walked)`` of the graphs of ``value``'s entries: the autograd
    nodes they keep (AccumulateGrad, the parameters' own, left out), the bytes of the
    tensors still saved in them, and whether a backward freed what some node saved."""
    seen: set[int] = set()
    storages: dict[int, int] = {}
    walked = False
    stack: list[Any] = [autograd_of(t)[0] for t in value]  # type: ignore[index]
    while stack and len(seen) < _MAX_NODES:
        node = stack.pop()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(id(node))
        stack.extend(n for n, _ in node.next_functions)
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                saved = getattr(node, attr)
            except RuntimeError as exc:
                walked = walked or "freed" in str(exc)
                continue
            for t in saved if isinstance(saved, tuple | list) else (saved,):
                if isinstance(t, torch.Tensor) and not t.is_leaf and t.layout is torch.strided:
                    storage = t.untyped_storage()
                    storages[storage.data_ptr()] = storage.nbytes()
    return len(seen), sum(storages.values()), walked


def _where(source_lines: Sequence[str], line: int) -> str:
    code = quoted_code(source_lines, line)
    return f"Line {line} ({code})" if code else f"Line {line}"


def _as_number(append: ast.Call, name: str) -> str:
    """``name.append(<what it appends>.item())``."""
    given = ast.unparse(append.args[0])
    return f"{name}.append({given}.item())"


def _walked_report(
    name: str, value: list[torch.Tensor], append: ast.Call, nodes: int, source_lines: Sequence[str]
) -> Said:
    line = append.lineno
    each = nodes / len(value)
    return Said(
        "loss-tensor-accumulated",
        line,
        f"{name} keeps every loss tensor, graph and all",
        f"{_where(source_lines, line)} keeps the loss tensor itself, not its value: {name} holds {len(value)} "
        f"of them. backward() already freed the tensors each graph saved, but each loss still holds its "
        f"graph's autograd nodes ({each:.0f} per loss here, {nodes:,} in all), alive for as long as the "
        "list: memory grows a little with every batch (much more over a long run of a deep model), and "
        "what is computed from the list (a sum, a mean) is one more graph over them all. Nothing raises.",
        f"Keep plain numbers: {_as_number(append, name)} (or .detach()).",
        [],
    )


def _unwalked_report(
    name: str, value: list[torch.Tensor], append: ast.Call, saved: int, source_lines: Sequence[str]
) -> Said:
    line = append.lineno
    return Said(
        "loss-tensor-accumulated",
        line,
        f"{name} keeps {len(value)} graphs no backward used",
        f"{_where(source_lines, line)} keeps loss tensors computed with gradients on, and no backward() "
        f"walked their graphs: each one keeps every tensor its forward pass saved for backward. The "
        f"{len(value)} in {name} hold {saved:,} bytes of them, alive until the list is dropped, on top of "
        "the time spent recording graphs nothing uses. Nothing raises.",
        "Compute losses you only read under `with torch.no_grad():` (an evaluation), and keep numbers: "
        f"{_as_number(append, name)}.",
        [],
    )
