"""A snapshot of a model's weights that is the weights themselves (snapshot-shares-weights).

``best_state = model.state_dict()`` when the validation loss is lowest, and
``model.load_state_dict(best_state)`` after the loop: a state_dict holds the model's own
tensors, not copies, so every later step changes the "snapshot" too; the load puts the last
step's weights back into the model they came from, and the best ones are lost. So is a
list of ``model.state_dict()`` taken along the run (every entry the same tensors), and a
DQN's ``target_net = policy_net`` (a second name for one model: the target network moves
with every step, and ``target_net.load_state_dict(policy_net.state_dict())`` copies the model
into itself). Nothing raises. Told at the end of the run, from the source (which names the
snapshot and where it is taken and loaded) and from the tensors the snapshot holds: each
one shares its memory with a parameter or buffer of the model.

Only where an optimizer step runs between the snapshot and its use (the snapshot taken in
the loop that steps, or above it and loaded below): a state_dict edited and loaded back
before or after training (model surgery), or in the same block with no step between the two
(a pruning mask or a weight clip applied through it after each step), is not a snapshot; nor
is a list of the state_dicts of several models (k-fold or ensemble members, each trained
from scratch), even where one module holds them all.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

import torch

from ..source import is_a, is_module, loops_around, parsed_source, quoted_code
from ..values import has_storage
from .kinds import Said
from .model_aliases import inside, paired_aliases, quoted, shallow_copies

__all__ = ["shared_snapshots"]

_STATE_DICT = re.compile(r"([^\W\d][\w.]*)\.state_dict\(\)(?:\.copy\(\))?")


def shared_snapshots(
    scope: dict[str, Any],
    stepped: set[int],
    steps: int,
    raw_lines: Sequence[str],
    source_lines: Sequence[str],
) -> list[Said]:
    """snapshot-shares-weights for the snapshots of ``scope`` (the snippet's globals) that
    are a model's own tensors; ``stepped``: the ids of the parameters an optimizer stepped,
    ``steps`` steps in all; ``raw_lines``: the snippet's lines as written, ``source_lines``
    the same with each statement whole on its lines (quoted)."""
    source = "\n".join(raw_lines)
    if not any(word in source for word in ("state_dict", "copy", "zip(")):
        return []
    tree = parsed_source(source)
    if tree is None:
        return []
    loops = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.For | ast.While) and _steps(node)
    ]
    if not loops:
        return []
    said: list[Said] = [*shallow_copies(scope, (stepped, steps), tree, loops, source_lines)]
    for call in ast.walk(tree) if "state_dict" in source else ():
        if not (isinstance(call, ast.Call) and _method(call) == "load_state_dict" and call.args):
            continue
        target = _name(call.func)
        model = scope.get(target) if target else None
        if not is_module(model):
            continue
        trained = any(id(p) in stepped for p in model.parameters())
        given = call.args[0]
        if isinstance(given, ast.Call) and _method(given) == "state_dict":
            other = _name(given.func)
            if trained and other and other != target and scope.get(other) is model:
                said.append(_same_model(target or "", other, call.lineno, tree, steps, source_lines))
        elif isinstance(given, ast.Name | ast.Subscript):
            # best_state, or an entry of a dict of snapshots: checkpoints[best_epoch]
            name, held = (
                (given.id, scope.get(given.id)) if isinstance(given, ast.Name) else _entry(given, scope)
            )
            owner = target if trained and _holds_only(held, model) else None
            owner = owner or _owner(scope, held, stepped, model)
            kept = given.id if isinstance(given, ast.Name) else _container(given)
            taken = _taken_at(tree, kept, loops, call.lineno) if owner and kept else None
            if owner and taken is not None and is_a(held, dict):
                key = next(k for k, v in held.items() if isinstance(v, torch.Tensor))
                example = f"{name}[{key!r}] is {owner}.{key} itself"
                said.append(
                    _dict_shared(
                        name, (owner, target or ""), taken, (call.lineno, steps), example, source_lines
                    )
                )
    told = {one.line for one in said}
    said += [
        one for one in paired_aliases(scope, (stepped, steps), tree, source_lines) if one.line not in told
    ]
    for name, value in list(scope.items()):
        if "state_dict" in source and is_a(value, list | dict) and not name.startswith("_"):
            shared = _list_shared(name, value, scope, (stepped, steps), tree, loops, source_lines)
            if shared is not None:
                said.append(shared)
    return said


def _owner(scope: dict[str, Any], value: object, stepped: set[int], loaded: object) -> str | None:
    """The name of the module of ``scope`` other than ``loaded`` (the one the snapshot is loaded
    into) whose own tensors ``value`` holds, and that an optimizer stepped: the snapshot of
    ``best_state = model.state_dict()`` loaded into a fresh ``final`` model. The smallest such
    module (not one that wraps it)."""
    owners = [
        (sum(1 for _ in module.parameters()), name)
        for name, module in list(scope.items())
        if not name.startswith("_")
        and is_module(module)
        and module is not loaded
        and any(id(p) in stepped for p in module.parameters())
        and _holds_only(value, module)
    ]
    return min(owners)[1] if owners else None


def _container(given: ast.Subscript) -> str | None:
    """``checkpoints`` for ``checkpoints[…]``: the plain name subscripted."""
    return given.value.id if isinstance(given.value, ast.Name) else None


def _entry(given: ast.Subscript, scope: dict[str, Any]) -> tuple[str, object]:
    """The source of ``given`` (``checkpoints[best_epoch]``) and the entry of a dict of
    ``scope`` it reads, where its key is a constant or a name of ``scope`` (never evaluated
    otherwise: a key may call a function); ``None`` as the entry when it cannot be read."""
    container = scope.get(_container(given) or "")
    key = given.slice
    if isinstance(key, ast.Constant):
        found = key.value
    elif isinstance(key, ast.Name) and key.id in scope:
        found = scope[key.id]
    else:
        return ast.unparse(given), None
    try:
        return ast.unparse(given), container.get(found) if is_a(container, dict) else None
    except TypeError:  # a key that cannot be hashed
        return ast.unparse(given), None


def _sets_entry(target: ast.expr, name: str) -> bool:
    """Whether assignment ``target`` sets an entry of ``name``: ``name[…] = …``."""
    return (
        isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name
    )


def _steps(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """Whether ``loop``'s body calls a ``step()`` (an optimizer's, or a scheduler's)."""
    return any(isinstance(n, ast.Call) and _method(n) == "step" for n in ast.walk(loop))


def _method(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def _name(func: ast.expr) -> str | None:
    """``model`` for ``model.load_state_dict``: the plain name a method is called on."""
    owner = func.value if isinstance(func, ast.Attribute) else None
    return owner.id if isinstance(owner, ast.Name) else None


def _own_tensors(model: torch.nn.Module) -> set[tuple[int, tuple[int, ...]]]:
    """Where ``model``'s parameters and buffers live: ``(data_ptr, shape)`` of each."""
    return {
        (t.data_ptr(), tuple(t.shape))
        for t in (*model.parameters(), *model.buffers())
        if has_storage(t) and t.numel()
    }


def _holds_only(value: object, model: torch.nn.Module) -> bool:
    """Whether ``value`` is a dict of tensors, every one of them a tensor of ``model``'s own."""
    if not is_a(value, dict):
        return False
    tensors = [t for t in value.values() if isinstance(t, torch.Tensor)]
    own = _own_tensors(model)
    return bool(tensors) and all(
        has_storage(t) and t.numel() and (t.data_ptr(), tuple(t.shape)) in own for t in tensors
    )


def _tensors_of(state: dict[str, Any]) -> set[tuple[int, tuple[int, ...]]]:
    """Where the tensors of ``state`` (a dict of them) live: ``(data_ptr, shape)`` of each."""
    return {
        (t.data_ptr(), tuple(t.shape))
        for t in state.values()
        if isinstance(t, torch.Tensor) and has_storage(t)
    }


def _taken_at(tree: ast.AST, name: str, loops: list[tuple[int, int]], loaded: int) -> int | None:
    """The line that binds ``name`` to a ``state_dict()`` with a step between it and the
    load at line ``loaded``: inside a loop that steps, or above one that starts by then."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or not any(
            isinstance(n, ast.Call) and _method(n) == "state_dict" for n in ast.walk(node.value)
        ):
            continue
        # a name bound, or a dict entry set: checkpoints[epoch] = model.state_dict()
        bound = {n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name)}
        if name not in bound:
            continue
        if _edited_in_place(tree, node, loaded):
            continue
        stepped_after = inside(node.lineno, loops) and not _of_a_model_rebuilt_per_iteration(tree, node)
        if stepped_after or any(node.lineno < start <= loaded for start, _ in loops):
            return node.lineno
    return None


def _of_a_model_rebuilt_per_iteration(tree: ast.AST, taken: ast.Assign) -> bool:
    """Whether ``taken`` (``best = model.state_dict()``) snapshots, in the innermost loop
    around it that steps, a model that loop builds anew (``model = …``) above it, with no
    ``step()`` after it in the loop: a sweep or k-fold keeping its best run's weights. The
    steps of later iterations train other models, so the snapshot is never stepped again."""
    owners = {
        _name(n.func) for n in ast.walk(taken.value) if isinstance(n, ast.Call) and _method(n) == "state_dict"
    }
    if len(owners) != 1 or None in owners:
        return False
    owner = owners.pop()
    around = [loop for loop in loops_around(tree, taken.lineno) if _steps(loop)]
    if not around:
        return False
    loop = around[-1]  # the innermost
    built = any(
        isinstance(n, ast.Assign)
        and n.lineno < taken.lineno
        and any(isinstance(t, ast.Name) and t.id == owner for t in n.targets)
        for n in ast.walk(loop)
    )
    stepped_after = any(
        isinstance(n, ast.Call) and _method(n) == "step" and n.lineno > taken.lineno for n in ast.walk(loop)
    )
    return built and not stepped_after


def _edited_in_place(tree: ast.AST, taken: ast.stmt, loaded: int) -> bool:
    """Whether the statement ``taken`` is followed in its own block by the statement that
    holds the load at line ``loaded``, with no ``step()`` called between them: the state_dict
    is edited and loaded back at once (a mask, a clip), never a snapshot of an earlier step."""
    for block in _blocks(tree):
        if taken not in block:
            continue
        after = block[block.index(taken) + 1 :]
        holder = next(
            (i for i, stmt in enumerate(after) if stmt.lineno <= loaded <= (stmt.end_lineno or stmt.lineno)),
            None,
        )
        if holder is None:
            return False
        return not any(
            isinstance(n, ast.Call) and _method(n) == "step" and n.lineno < loaded
            for stmt in after[: holder + 1]
            for n in ast.walk(stmt)
        )
    return False


def _blocks(tree: ast.AST) -> list[list[ast.stmt]]:
    """Every list of statements in ``tree``: bodies, ``else`` and ``finally`` blocks."""
    found: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                found.append(block)
    return found


def _as_copy(code: str | None) -> str | None:
    """``code`` with its ``model.state_dict()`` (or ``.state_dict().copy()``) deep-copied."""
    if code is None or not _STATE_DICT.search(code):
        return None
    return _STATE_DICT.sub(lambda m: f"copy.deepcopy({m.group(1)}.state_dict())", code, count=1)


_SHARES = (
    "a state_dict holds the model's own tensors, not copies of them ({example}), so every optimizer step "
    "after it changes the snapshot too ({steps} steps ran in all)"
)


def _dict_shared(
    name: str,
    models: tuple[str, str],
    taken: int,
    loaded_after: tuple[int, int],
    example: str,
    source_lines: Sequence[str],
) -> Said:
    """The report for dict ``name`` taken at line ``taken`` from the state_dict of the first
    of ``models`` and loaded into the second at the line ``loaded_after`` gives, after the
    steps it gives in all; ``example``: one of its tensors that is the model's own."""
    (model, into), (loaded, steps) = models, loaded_after
    copied = _as_copy(quoted_code(source_lines, taken, 10_000))
    shares = _SHARES.format(example=example, steps=steps)
    load = f"{into}.load_state_dict({name}) (line {loaded})"
    outcome = (
        f"{load} loads {model} into itself: nothing is restored"
        if into == model
        else f"{load} gives {into} the weights of {model}'s last step, not those of the step it was taken at"
    )
    return Said(
        "snapshot-shares-weights",
        taken,
        f"{name} is {model}'s live weights, not a copy",
        f"{quoted(source_lines, taken)} keeps {model}'s weights in {name}, but {shares}. By the end {name} "
        f"holds the weights of the last step, whatever step it was taken at, and {outcome}. Nothing raises.",
        "Copy the tensors when you take the snapshot"
        + (f": {copied} (import copy)" if copied else ": copy.deepcopy(model.state_dict()) (import copy)")
        + f", or {{k: v.detach().clone() for k, v in {model}.state_dict().items()}}.",
        [],
    )


def _same_model(
    target: str, other: str, loaded: int, tree: ast.AST, steps: int, source_lines: Sequence[str]
) -> Said:
    alias = next(
        (
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and {node.value.id} | {t.id for t in node.targets if isinstance(t, ast.Name)} == {target, other}
        ),
        None,
    )
    line = alias if alias is not None else loaded
    bound = f"{quoted(source_lines, alias)} binds" if alias is not None else "The run binds"
    return Said(
        "snapshot-shares-weights",
        line,
        f"{target} is {other}: one model under two names",
        f"{bound} a second name to the same model, not a copy: {target} and {other} are one module, so every "
        f"optimizer step ({steps} ran) changes both, and {target}.load_state_dict({other}.state_dict()) (line "
        f"{loaded}) copies the model into itself. What {target} computes (a target network's values, a "
        "teacher's outputs) moves with every step instead of staying fixed between copies. Nothing raises.",
        f"Make {target} a copy: {target} = copy.deepcopy({other}) (import copy); load_state_dict then "
        "refreshes it when you mean to.",
        [],
    )


def _list_shared(
    name: str,
    kept: list[Any] | dict[Any, Any],
    scope: dict[str, Any],
    training: tuple[set[int], int],
    tree: ast.AST,
    loops: list[tuple[int, int]],
    source_lines: Sequence[str],
) -> Said | None:
    """snapshot-shares-weights for a list of two or more state_dicts of one model that a
    stepping loop appends to (or a dict whose entries it sets: ``checkpoints[epoch] =
    model.state_dict()``), each of them the model's own tensors; ``None`` otherwise.
    ``training``: the ids of the parameters an optimizer stepped, and the steps in all."""
    stepped, steps = training
    value = list(kept.values()) if is_a(kept, dict) else kept
    if len(value) < 2 or not all(is_a(v, dict) for v in value):
        return None
    model_name, model = next(
        (
            (n, m)
            for n, m in scope.items()
            if is_module(m) and any(id(p) in stepped for p in m.parameters()) and _holds_only(value[0], m)
        ),
        (None, None),
    )
    first = _tensors_of(value[0])
    if model is None or not all(_holds_only(v, model) and _tensors_of(v) == first for v in value[1:]):
        return None  # several models' state_dicts (k-fold, ensemble members): each its own
    appended = next(
        (
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call | ast.Assign)
            and inside(node.lineno, loops)
            and (
                (isinstance(node, ast.Call) and _method(node) == "append" and _name(node.func) == name)
                or (isinstance(node, ast.Assign) and any(_sets_entry(t, name) for t in node.targets))
            )
        ),
        None,
    )
    if appended is None:
        return None
    copied = _as_copy(quoted_code(source_lines, appended, 10_000))
    shares = _SHARES.format(
        example=f"each entry's tensors are {model_name}'s weights themselves", steps=steps
    )
    return Said(
        "snapshot-shares-weights",
        appended,
        f"The {len(value)} state_dicts in {name} are all {model_name}'s live weights",
        f"{quoted(source_lines, appended)} keeps {model_name}'s weights in {name} as the run goes, but "
        f"{shares}. All {len(value)} entries are the same tensors, holding the weights of the last step. "
        "Nothing raises.",
        "Copy the tensors when you take each snapshot"
        + (f": {copied} (import copy)" if copied else ": copy.deepcopy(model.state_dict()) (import copy)")
        + ".",
        [],
    )
