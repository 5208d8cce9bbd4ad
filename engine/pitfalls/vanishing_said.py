"""What vanishing-gradients says of a deep stack (the detector: vanishing.py)."""

from __future__ import annotations

import collections
from typing import NamedTuple

from .kinds import Said

__all__ = ["Stack", "vanishing_said"]


class Stack(NamedTuple):
    """What the run showed of a deep stack of sigmoids or tanhs."""

    first: str  # the first layer's weight (``fc1.weight``)
    last: str  # the last layer's weight
    between: collections.Counter[str]  # ``sigmoid``/``tanh`` -> how many lie between them
    step: int  # the first step that held both
    grads: tuple[float, float]  # the two weights' gradient norms at that step: first, last
    steps: int  # the steps that held both
    relative: float  # the summed gradients relative to the weights' norms: last over first
    moved: tuple[float, float]  # the updates summed, relative to each weight's norm: first, last


def vanishing_said(stack: Stack, line: int | None, loss: float | None) -> Said:
    """vanishing-gradients for ``stack``, said at ``line`` (where the first weight was made);
    ``loss``: the run's last loss."""
    first, last = _layer(stack.first), _layer(stack.last)
    below, above = stack.grads
    times = f"{above / below:.2g} times smaller" if below > 0 else "0, where it is"
    count = sum(stack.between.values())
    sigmoids, tanhs = stack.between["sigmoid"], stack.between["tanh"]
    if not tanhs:
        through = f"the {count} sigmoids between them (each multiplies it by 0.25 at most)"
    elif not sigmoids:
        through = f"the {count} tanhs between them (each multiplies it by its slope, at most 1 and near 0 where it saturates)"
    else:
        through = (
            f"the {sigmoids} sigmoids and {tanhs} tanhs between them (a sigmoid multiplies it by 0.25 "
            "at most, a tanh by its slope, at most 1)"
        )
    ends = f" (here it ends at {loss:.4g})" if loss is not None else ""
    message = (
        f"At step {stack.step} {stack.first}'s gradient is {below:.2g}, {times} than {stack.last}'s "
        f"({above:.2g}), and summed over the {stack.steps} steps, relative to each weight's size, it is "
        f"{stack.relative:.2g} times smaller: the gradient shrinks through {through}. With one learning "
        f"rate, {first}'s updates moved it {_percent(stack.moved[0])} of its size over the run while "
        f"{last}'s moved it {_percent(stack.moved[1])}: the layers near the input barely learn, and the "
        f"loss falls slowly or stalls{ends}. Nothing raises."
    )
    fix = (
        "Keep the gradient from shrinking: nn.ReLU (or nn.GELU) activations with He init "
        "(nn.init.kaiming_normal_(layer.weight, nonlinearity='relu')), normalization layers "
        "(nn.BatchNorm1d or nn.LayerNorm) between the layers, residual connections (h = h + layer(h)), "
        "or an optimizer that scales each parameter's step, such as torch.optim.Adam. For an RNN, use "
        "nn.LSTM or nn.GRU."
    )
    title = f"Vanishing gradients: {first} barely moves while {last} trains"
    return Said("vanishing-gradients", line, title, message, fix, [])


def _layer(weight: str) -> str:
    """The layer of a weight's name: ``fc1`` of ``fc1.weight``."""
    return weight.rsplit(".", 1)[0] if weight.endswith(".weight") else weight


def _percent(fraction: float) -> str:
    """``fraction`` as a percentage: ``12%``, ``0.0031%``, ``2.5e-07%``."""
    value = fraction * 100
    return f"{value:.0f}%" if value >= 1 else f"{value:.2g}%"
