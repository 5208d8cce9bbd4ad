"""Parameters that get gradients and no optimizer step on purpose (parameter-not-optimized's
near misses; the detector is parameters.py).

Two are left alone:

- A layer taken out of its model by surgery (``model[2] = new_head``, ``model.fc = …``): the
  place it held in the model now holds another parameter. Its ``.grad`` is from a backward()
  before the surgery, and nothing uses the layer any more (the snippet may still hold it, as
  ``old = model[2]``, to copy its weights into the new head). A model assigned again after
  its optimizer was built is another matter: its new parameters are the model's, and said.
- A worker's local model whose gradients are handed to a shared model's parameters, which an
  optimizer steps (A3C, Hogwild: ``shared_p._grad = local_p.grad`` or ``shared_p.grad =
  local_p.grad.clone()``, then ``optimizer.step()``): the source assigns a ``.grad`` from
  another tensor's ``.grad``, and a model the snippet holds has, parameter for parameter, the
  local model's shapes, is stepped and had gradients at its steps (read right after each:
  the shared optimizer's ``zero_grad()`` may come before the backward or after the step).
  Without the hand-off (the shared model has no gradient at any step) the local model is said.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..source import is_module, line_matching

__all__ = ["unoptimized_on_purpose"]

# ``shared_p._grad = p.grad``, ``sp.grad = lp.grad.clone()``, ``sp.grad.copy_(lp.grad)``
_HANDED_OVER = re.compile(r"\._?grad\s*=\s*[\w.\[\]]+\.grad\b|\.grad\.copy_\(\s*[\w.\[\]]+\.grad\b")


def unoptimized_on_purpose(
    missed: list[tuple[torch.Tensor, str]],
    scope: dict[str, Any],
    stepped: set[int],
    had_gradient: Callable[[torch.Tensor], bool],
    source_lines: Sequence[str],
) -> set[int]:
    """The ids of the parameters of ``missed`` (each with its qualified name, ``model.2.weight``)
    that get gradients and no optimizer step on purpose: a layer surgery took out of its model,
    or a local model whose gradients are handed to a stepped model's parameters; ``scope``: the
    snippet's globals; ``stepped``: the ids of the parameters optimizers stepped;
    ``had_gradient(p)``: whether stepped parameter ``p`` had a gradient at its steps."""
    spared = {id(p) for p, name in missed if _replaced(p, name, scope)}
    if line_matching(source_lines, _HANDED_OVER) is not None:
        roots = {name.split(".")[0] for p, name in missed if id(p) not in spared}
        for root in roots:
            local = scope.get(root)
            if is_module(local) and _has_stepped_twin(local, scope, stepped, had_gradient):
                spared.update(id(p) for p, name in missed if name.split(".")[0] == root)
    return spared


def _replaced(param: torch.Tensor, name: str, scope: dict[str, Any]) -> bool:
    """Whether the place ``name`` (``model.2.weight``) names in the snippet's model now holds a
    parameter other than ``param``: the layer that held it was swapped out."""
    root, *path, attr = name.split(".")
    model = scope.get(root)
    if not path or not is_module(model):
        return False
    try:
        layer = model.get_submodule(".".join(path))
    except AttributeError:
        return False
    now = getattr(layer, attr, None)
    return isinstance(now, torch.Tensor) and now is not param


def _has_stepped_twin(
    local: torch.nn.Module,
    scope: dict[str, Any],
    stepped: set[int],
    had_gradient: Callable[[torch.Tensor], bool],
) -> bool:
    """Whether another model of ``scope`` has, parameter for parameter, ``local``'s shapes, an
    optimizer stepped all of them, and each had a gradient at its steps (the shared model of
    A3C: the gradients handed to it)."""
    shapes = [tuple(p.shape) for p in local.parameters()]
    for other in list(scope.values()):
        if other is local or not is_module(other):
            continue
        params = list(other.parameters())
        if (
            params
            and [tuple(p.shape) for p in params] == shapes
            and all(id(p) in stepped and had_gradient(p) for p in params)
        ):
            return True
    return False
