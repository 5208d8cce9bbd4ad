"""A regression loss whose target is built from the same parameters as its prediction and
still carries their gradient (bootstrap-target-not-detached).

Q-learning's ``target = r + gamma * q(s2).max(1).values`` (a TD target of a critic,
``r + gamma * V(s2)``) fed to ``F.mse_loss(q_sa, target)`` without ``.detach()`` or
``torch.no_grad()``: backward() then also differentiates the target, so each step moves the
network to bring the bootstrapped target toward the prediction as much as the prediction
toward the target. The target is meant to be a constant for this step (the semi-gradient
update every DQN and actor-critic uses); with its gradient the values drift and learning is
slow or unstable, and nothing raises.

Told at the loss: an ``mse_loss``, ``l1_loss``, ``smooth_l1_loss`` or ``huber_loss`` whose
input and target both require grad, whose target was made by an add or subtract of a
prediction and something without gradient (a reward plus a discounted prediction, past any
view, squeeze or expand), and whose two graphs reach at least one parameter in common. A target network's output (other parameters), a detached
or ``no_grad`` target, and two predictions compared with no such add on top (a siamese or
consistency loss, even of a model whose output is a residual sum) stay silent.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..source import quoted_code
from ..tensor_facts import autograd_of

__all__ = ["TARGET_LOSS_OPS", "bootstrap_target_report"]

TARGET_LOSS_OPS = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"})
_PASSED = ("View", "Reshape", "Squeeze", "Unsqueeze", "Expand", "Alias", "Clone", "ToCopy")
_BUILT = ("AddBackward", "SubBackward", "RsubBackward")
_MOST_NODES = 20_000  # a graph walked no further (a long unrolled one is not a TD target)


def _top(fn: Any) -> Any:
    """``fn`` past the nodes that only reshape or copy."""
    while fn is not None and type(fn).__name__.startswith(_PASSED):
        nexts = [n for n, _ in fn.next_functions if n is not None]
        if len(nexts) != 1:
            return fn
        fn = nexts[0]
    return fn


def _leaves(fn: Any) -> dict[int, torch.Tensor]:
    """The leaves requiring grad that ``fn``'s graph reaches, by identity."""
    found: dict[int, torch.Tensor] = {}
    seen: set[int] = set()
    stack = [fn]
    while stack and len(seen) < _MOST_NODES:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            found[id(variable)] = variable
        stack.extend(n for n, _ in node.next_functions)
    return found


def bootstrap_target_report(
    op: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    line: int | None,
    source_lines: Sequence[str],
    name_of: Callable[[torch.Tensor], str | None],
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` when ``op`` (one of :data:`TARGET_LOSS_OPS`), called at
    ``line`` with ``args`` and ``kwargs``, compares a prediction with a target built by an add
    from the same parameters and not detached; ``None`` otherwise. ``name_of`` names a
    parameter as the snippet knows it."""
    given = args[0] if args else kwargs.get("input")
    target = args[1] if len(args) > 1 else kwargs.get("target")
    if not (isinstance(given, torch.Tensor) and isinstance(target, torch.Tensor) and given.requires_grad):
        return None
    # (read through autograd_of: a view made under no_grad and changed in place refuses to say)
    given_facts, target_facts = autograd_of(given), autograd_of(target)
    given_node = given_facts[0] if given_facts is not None else None
    target_node = target_facts[0] if target_facts is not None else None
    if given_node is None or target_node is None:
        return None
    top = _top(target_node)
    if (
        top is None
        or not type(top).__name__.startswith(_BUILT)
        or sum(n is not None for n, _ in top.next_functions) != 1
    ):
        return None  # (an add of two predictions, a residual block's output, is no bootstrap)
    target_leaves = _leaves(target_node)
    if not target_leaves:
        return None
    shared = [p for i, p in _leaves(given_node).items() if i in target_leaves]
    if not shared:
        return None
    names = sorted(n for n in map(name_of, shared) if n)
    named = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    count = sum(p.numel() for p in shared)
    code = quoted_code(source_lines, line, sys.maxsize)
    at = f"Line {line} ({code})" if line is not None and code else "This loss"
    return (
        f"The target of {op} carries gradient: it is built from the same parameters",
        f"{at} compares a prediction with a target that was made by adding to (or subtracting from) the "
        f"output of the same network, and never detached: {len(shared)} parameter tensors "
        f"({count:,} numbers{': ' + named if named else ''}) feed both sides. backward() differentiates "
        "the target too, so each step also moves the network to pull the bootstrapped target toward its "
        "own prediction, not only the prediction toward the target (a TD or Q-learning target, "
        "r + gamma * max Q(s', a'), is meant to be a constant for the step). Nothing raises; the values "
        "drift and learning is slow or unstable.",
        "Compute the target without gradient: with torch.no_grad(): target = r + gamma * "
        "q(s2).max(1).values (or add .detach() to it), or read it from a separate target network.",
    )
