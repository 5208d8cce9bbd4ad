"""Units of a layer that stay copies of each other (symmetric-weights).

A layer whose units start equal (every row of its weight the same, every bias the same:
``nn.init.zeros_`` or ``constant_`` over the whole model) computes the same output in each
unit, and, when the layers after it are just as uniform, each unit receives the same
gradient: they stay equal however long the run trains, and the layer works as a single unit.
Nothing raises; the loss falls a little and stalls. Told at the end of the run, from the
weights themselves: a ``Linear`` or convolution stepped by an optimizer at least twice whose
rows (the units' incoming weights) and biases are still all identical. A layer that merely
started symmetric and was pulled apart by different gradients is not flagged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from torch import nn

from ..source import is_module, line_matching, submodules

__all__ = ["SymmetricLayer", "symmetric_layers", "symmetric_report"]

_LAYERS = (nn.Linear, nn.modules.conv._ConvNd)
_CONSTANT_INIT = re.compile(r"\b(?:zeros_|ones_|constant_|fill_|zero_)\(")


class SymmetricLayer(NamedTuple):
    """A layer whose ``units`` units are identical at the end of the run."""

    path: str  # qualified name of the layer (model.0)
    units: int
    weight: torch.Tensor
    value: float | None  # the one value every weight holds, if it is one


def symmetric_layers(scope: dict[str, Any], names: dict[int, str], stepped: set[int]) -> list[SymmetricLayer]:
    """The layers of the modules in ``scope`` (the snippet's globals) whose weights an
    optimizer stepped (ids in ``stepped``) and whose units are all identical; ``names``:
    parameter ids to their qualified names."""
    found: list[SymmetricLayer] = []
    seen: set[int] = set()
    for value in list(scope.values()):
        if not is_module(value):
            continue
        for _, layer in submodules(value):
            if id(layer) in seen or not isinstance(layer, _LAYERS):
                continue
            seen.add(id(layer))
            weight = layer.weight
            if (
                not weight.requires_grad
                or id(weight) not in stepped
                or id(weight) not in names
                or weight.shape[0] < 2
            ):
                continue
            with torch.no_grad():
                rows = weight.detach().reshape(weight.shape[0], -1)
                if not torch.equal(rows, rows[:1].expand_as(rows)):
                    continue
                bias = layer.bias
                if bias is not None and not torch.equal(bias.detach(), bias.detach()[:1].expand_as(bias)):
                    continue
                low, high = torch.aminmax(rows)
            one = float(low) if float(low) == float(high) else None
            found.append(SymmetricLayer(names[id(weight)].rsplit(".", 1)[0], weight.shape[0], weight, one))
    return found


def symmetric_report(
    layer: SymmetricLayer, steps: int, source_lines: Sequence[str]
) -> tuple[int | None, str, str, str]:
    """``(line, title, message, fix)`` for ``layer``, identical after ``steps`` optimizer steps;
    the line is the first that sets weights to a constant (``nn.init.zeros_``), if any."""
    found = line_matching(source_lines, _CONSTANT_INIT)
    line = found[0] if found else None
    held = f" (every weight is {layer.value:g})" if layer.value is not None else ""
    started = f" Line {line} sets weights to one constant." if line is not None else ""
    return (
        line,
        f"The {layer.units} units of {layer.path} are identical: the layer works as one unit",
        f"After {steps} optimizer steps all {layer.units} rows of {layer.path}.weight are still equal{held}, and "
        f"so are its biases: every unit computes the same output and receives the same gradient, so no step "
        f"can make them differ.{started} Nothing raises; the loss falls a little and stalls, as for a layer "
        "one unit wide.",
        "Break the symmetry: keep PyTorch's default (random) initialisation of weights, or use a random one "
        "(nn.init.kaiming_uniform_, xavier_uniform_); a constant is safe for biases, not for the weights of "
        "a layer whose units must learn different things.",
    )
