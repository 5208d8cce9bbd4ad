"""The first layers' gradients vanish through a deep stack of sigmoids or tanhs (vanishing-gradients).

The derivative of a sigmoid is at most 0.25, so the gradient reaching ``fc1`` through the nine
``nn.Sigmoid()`` of a 10-layer MLP is multiplied by 0.25 nine times or more (tanh's slope is at
most 1, and near 0 where it saturates): with default init it is millions of times smaller than
the last layer's, and with one learning rate ``fc1`` barely moves while the top layers train.
The loss falls slowly or stalls, and nothing says why.

NOTE [Vanishing gradients, cheaply]: a snippet whose source names no sigmoid or tanh costs
nothing. Otherwise, at the first backward() calls recorded in full (:data:`_WALKS` at most,
until one finds a stack), the graph is walked once from the loss, counting the fewest
``SigmoidBackward0``/``TanhBackward0`` nodes on any path from the loss to each weight (a
parameter of 2 dimensions or more): the weight reached through the most (the first layer) and
the one reached through the fewest (the last layer) are followed when at least
:data:`_FEWEST_SATURATING` lie between them; a residual connection makes a path around them,
so its first layer is reached through few. From then on each optimizer step that holds both
hands this detector the norms the engine measured for the charts (training.py): no norm is
taken twice. At the end of the run it is said when, over :data:`_FEWEST_STEPS` steps or more,
the first layer's gradient, relative to its weight's norm and summed over the steps, is
:data:`_GRADIENT_RATIO` times smaller than the last layer's or more, and the first layer's
updates summed are at most :data:`_MOVED_AT_MOST` of its norm and :data:`_GRADIENT_RATIO`
times smaller, relatively, than the last layer's.

The thresholds come from measured runs (a seeded 2-class problem, batch 256, 50 steps of
SGD, lr 0.1, width 64): the sums of relative gradients, last over first, are 5.5e6 for a
10-layer sigmoid MLP (its first layer moved 2.5e-9 of its norm) and 1.2e4 for 8 layers, but
400 with ReLU, 17 with BatchNorm, 1.2e3 with LayerNorm (its first layer moved 4e-5), 790 with
residual connections, 15 for 3 layers. The gradients are compared relative to the weights'
norms (the step moves a weight by lr times its gradient: what matters is that update against
the weight's size), and summed over the steps, not step by step: once the last layer has
fitted the mean (the loss plateaus, as the lesson shows) its own gradient falls near the
first layer's, so a step-by-step ratio stops at the plateau while the sums keep what the run
did. With Adam, which scales each parameter's step, the first layer moves (7.8e-3 of its norm
in the same run), so the update condition keeps it silent; so does any run with a frozen
parameter (``requires_grad=False``: a deliberate choice of what trains) or a first layer no
optimizer steps, and a step at which the first layer's param group has lr 0 (held still on
purpose, as a frozen parameter is) is not counted. Only the weights' parameter norms are
compared, so an RNN whose one weight matrix is shared across the unrolled steps is not judged.
"""

from __future__ import annotations

import collections
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .kinds import Said
from .vanishing_said import Stack, vanishing_said

__all__ = ["VanishingGradients"]

_SATURATING = {"SigmoidBackward0": "sigmoid", "TanhBackward0": "tanh"}
_FEWEST_SATURATING = 4  # sigmoids or tanhs between the first layer and the last
_FEWEST_STEPS = 5  # optimizer steps holding both before it is said
_GRADIENT_RATIO = 1e4  # last over first: summed relative gradients, and relative updates
_MOVED_AT_MOST = 1e-5  # the first layer's updates summed, relative to its norm
_WALKS = 3  # backward() calls recorded in full whose graphs are walked, at most
_MOST_NODES = 20_000  # nodes one walk visits, at most


class VanishingGradients:
    """The first and last layer of a deep stack of sigmoids or tanhs, and their numbers per step.

    ``source`` is the snippet's code; ``name_of(p)`` a parameter's qualified name (``fc1.weight``)
    or None; ``line_of(p)`` the snippet line that made or last used ``p``, as the run saw it
    (read when the stack is found, in the backward() of a training step).
    """

    def __init__(
        self,
        source: Sequence[str],
        name_of: Callable[[torch.Tensor], str | None],
        line_of: Callable[[torch.Tensor], int | None],
    ) -> None:
        text = "\n".join(source).lower()
        self._walks = _WALKS if "sigmoid" in text or "tanh" in text else 0
        self._name_of = name_of
        self._line_of = line_of
        self._pair: tuple[weakref.ref[torch.Tensor], weakref.ref[torch.Tensor]] | None = None
        self._between: collections.Counter[str] = collections.Counter()
        self._line: int | None = None  # where the first weight was used when the stack was found
        self._places: dict[int, tuple[int, int] | None] = {}  # id(opt) -> where the pair lies in its params
        self._groups: dict[int, int] = {}  # id(opt) -> the param group that holds the first weight
        self._sizes_of: dict[int, int] = {}  # id(opt) -> how many parameters it held then
        self._steps = 0
        self._first_step: tuple[int, float, float] | None = None  # (step, first's gradient, last's)
        self._sizes: tuple[float, float] = (0.0, 0.0)  # the weights' norms at the first step
        self._relative = [0.0, 0.0]  # gradient / weight norm, summed over the steps: first, last
        self._moved = [0.0, 0.0]  # update norms summed over the steps: first, last

    def before_backward(self, roots: Sequence[Any]) -> None:
        """Walk the graph of a backward() recorded in full, until one shows a deep stack."""
        if self._walks <= 0 or self._pair is not None:
            return
        self._walks -= 1
        nodes = [r.grad_fn for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
        found = _stack_in(nodes) if nodes else None
        if found is not None:
            first, last, between = found
            self._pair = (weakref.ref(first), weakref.ref(last))
            self._between = between
            # the training forward's line: the run goes on to use the weight elsewhere (an
            # evaluation after the loop), and the line said is where the stack was trained
            self._line = self._line_of(first)

    def stepped(self, opt: torch.optim.Optimizer, params: list[torch.Tensor], stats: Any, step: int) -> None:
        """Note an optimizer step of ``params``, whose norms the engine measured as ``stats``
        (training.py's per-parameter entries, in the order of ``params``)."""
        if self._pair is None or not stats or len(stats) != len(params):
            return
        first, last = self._pair[0](), self._pair[1]()
        if first is None or last is None:
            return
        place = self._place(opt, params, first, last)
        if place is None or not _learning_rate(opt, self._groups.get(id(opt))):
            return  # (a first layer at lr 0 is held still on purpose: no step of it is vanishing)
        lower, upper = stats[place[0]], stats[place[1]]
        grads = (lower["grad_norm"], upper["grad_norm"])
        sizes = (lower["param_norm"], upper["param_norm"])
        if grads[0] is None or grads[1] is None or not sizes[0] or not sizes[1]:
            return
        if self._first_step is None:
            self._first_step, self._sizes = (step, grads[0], grads[1]), sizes
        self._steps += 1
        self._relative[0] += grads[0] / sizes[0]
        self._relative[1] += grads[1] / sizes[1]
        self._moved[0] += lower["update_norm"]
        self._moved[1] += upper["update_norm"]

    def _place(
        self, opt: torch.optim.Optimizer, params: list[torch.Tensor], first: torch.Tensor, last: torch.Tensor
    ) -> tuple[int, int] | None:
        """Where ``first`` and ``last`` lie in ``params`` (``opt``'s), or None where it holds
        either not: looked up once per optimizer, and again when its parameters change."""
        key = id(opt)
        known = self._places.get(key)
        if (
            known is not None
            and max(known) < len(params)
            and params[known[0]] is first
            and params[known[1]] is last
        ):
            return known
        if key in self._places and known is None and self._sizes_of.get(key) == len(params):
            return None
        at = {id(p): i for i, p in enumerate(params)}
        place = (at[id(first)], at[id(last)]) if id(first) in at and id(last) in at else None
        self._places[key], self._sizes_of[key] = place, len(params)
        groups = opt.param_groups
        self._groups[key] = next(
            (g for g, group in enumerate(groups) if any(p is first for p in group["params"])), -1
        )
        return place

    def reports(
        self, all_params: Sequence[torch.Tensor], loss: float | None, fallback_line: int | None
    ) -> list[Said]:
        """vanishing-gradients at the end of the run, when its numbers show it (see the module
        docstring); ``all_params``: the parameters of the modules seen, ``loss`` the last loss,
        ``fallback_line`` where to say it when the run did not see the first weight made."""
        if self._pair is None or self._first_step is None or self._steps < _FEWEST_STEPS:
            return []
        first, last = self._pair[0](), self._pair[1]()
        if first is None or last is None or any(not p.requires_grad for p in all_params):
            return []
        relative = self._relative[1] / self._relative[0] if self._relative[0] > 0 else 0.0
        moved = (self._moved[0] / self._sizes[0], self._moved[1] / self._sizes[1])
        if relative < _GRADIENT_RATIO or moved[0] > _MOVED_AT_MOST or moved[1] < _GRADIENT_RATIO * moved[0]:
            return []
        stack = Stack(
            first=self._name_of(first) or "the first layer's weight",
            last=self._name_of(last) or "the last layer's weight",
            between=self._between,
            step=self._first_step[0],
            grads=self._first_step[1:],
            steps=self._steps,
            relative=relative,
            moved=moved,
        )
        return [vanishing_said(stack, self._line if self._line is not None else fallback_line, loss)]


def _learning_rate(opt: torch.optim.Optimizer, group: int | None) -> float:
    """The learning rate ``opt`` steps param group ``group`` with now (1.0 where unknown)."""
    if group is None or not 0 <= group < len(opt.param_groups):
        return 1.0
    lr = opt.param_groups[group].get("lr", 1.0)
    try:
        return float(lr)
    except (TypeError, ValueError):
        return 1.0


def _stack_in(
    roots: list[Any],
) -> tuple[torch.Tensor, torch.Tensor, collections.Counter[str]] | None:
    """``(first weight, last weight, the sigmoids and tanhs between them)`` of the graph from
    ``roots``, where at least :data:`_FEWEST_SATURATING` lie on every path between them."""
    # 0-1 breadth-first: a node's cost is the fewest saturating nodes on a path from a root
    costs: dict[Any, int] = {}
    kinds: dict[Any, collections.Counter[str]] = {}
    queue: collections.deque[tuple[Any, int, collections.Counter[str]]] = collections.deque(
        (root, 0, collections.Counter()) for root in roots
    )
    weights: list[tuple[int, torch.Tensor, collections.Counter[str]]] = []  # in the order reached
    while queue and len(costs) < _MOST_NODES:
        node, cost, passed = queue.popleft()
        if node in costs:
            continue
        costs[node] = cost
        saturating = _SATURATING.get(type(node).__name__)
        if saturating is not None:
            passed = passed + collections.Counter({saturating: 1})
        kinds[node] = passed
        variable = getattr(node, "variable", None) if type(node).__name__ == "AccumulateGrad" else None
        if isinstance(variable, torch.Tensor) and variable.dim() >= 2:
            weights.append((cost, variable, passed))
        for child, _ in node.next_functions:
            if child is None or child in costs:
                continue
            if _SATURATING.get(type(child).__name__) is None:
                queue.appendleft((child, cost, passed))
            else:
                queue.append((child, cost + 1, passed))
    if len(weights) < 2:
        return None
    last = min(weights, key=lambda w: w[0])  # (the first reached of the fewest)
    first = max(reversed(weights), key=lambda w: w[0])  # (the last reached of the most)
    if first[0] - last[0] < _FEWEST_SATURATING:
        return None
    return first[1], last[1], first[2] - last[2]
