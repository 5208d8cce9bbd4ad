"""What relu-units-dead says of one layer below a dead ReLU (the detector: dead_relu.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from .kinds import Said

__all__ = ["DeadLayer", "dead_layer_said"]


class DeadLayer(NamedTuple):
    """What the run showed of one layer whose ReLU's units are all 0 (steps count its optimizer's)."""

    line: int | None  # the ReLU's snippet line
    units: int
    since: int  # the first step of the 0 gradients that lasted to the end of the run
    steps: int  # its optimizer's steps in all
    batches: bool  # trained on batches that change from step to step (not the whole set each step)
    alive: int | None  # units above 0 for some sample when first seen (None: not counted)
    seen_at: int  # the optimizer steps taken when it was first seen
    lr_before: Any  # the learning rate of the last step with a gradient
    loss_before: float | None  # that step's loss
    on_data: bool  # its input is the data (nothing below it to starve)


def dead_layer_said(
    layer: DeadLayer, params: Sequence[torch.Tensor], names: Sequence[str], loss: float | None
) -> Said:
    """relu-units-dead for ``layer``, whose ``params`` are named ``names`` (weight first);
    ``loss``: the run's last loss."""
    layer_name = names[0].rsplit(".", 1)[0] if "." in names[0] else "the layer"
    where = f" (run from line {layer.line})" if layer.line is not None else ""
    dead = layer.steps - layer.since + 1
    which = f"all {layer.steps} steps" if dead == layer.steps else f"the last {dead} of {layer.steps} steps"
    samples = "every sample of every batch" if layer.batches else "every sample"
    below = "" if layer.on_data else f", and so did everything below {layer_name} through it"
    message = (
        f"All {layer.units} units of the ReLU after {layer_name}{where} are 0 for {samples} from step "
        f"{layer.since} on: a ReLU passes no gradient back through a unit at 0, so {' and '.join(names)} got "
        f"exactly 0 gradient in {which}{below}. No step "
        "can bring the units back: the layer has stopped learning for good."
    )
    message += _what_killed(layer) + _bias_now(params, names) + _loss_now(loss)
    fix = (
        "Keep the units alive: a lower learning rate, nn.LeakyReLU(0.01) in place of the ReLU, the "
        "layer's default (or He: nn.init.kaiming_normal_) initialisation with no negative bias, and "
        "inputs centred and scaled (x = (x - x.mean(0)) / x.std(0))."
    )
    title = f"Every unit of this ReLU is 0 for every sample: {layer_name} has stopped learning"
    return Said("relu-units-dead", layer.line, title, message, fix, [])


def _what_killed(layer: DeadLayer) -> str:
    """What the run says of how the units died."""
    if layer.since == 1:
        return (
            " They were 0 from the first step on, before any update had changed the layer: its "
            "initial weights and bias put every unit below 0 for these inputs."
        )
    lr = f" (lr {layer.lr_before:g})" if isinstance(layer.lr_before, float | int) else ""
    loss = f", at a loss of {layer.loss_before:.4g}" if layer.loss_before is not None else ""
    alive = (
        f"; at step {layer.seen_at + 1}, {layer.alive} of the {layer.units} units were above 0 for some sample"
        if layer.alive
        else ""
    )
    return f" They died in the update of step {layer.since - 1}{lr}{loss}{alive}."


def _bias_now(params: Sequence[torch.Tensor], names: Sequence[str]) -> str:
    """Where the layer's bias (a 1-D parameter) is now, when every entry of it is below 0."""
    for p, name in zip(params, names, strict=True):
        if p.dim() == 1 and name.endswith("bias") and p.is_floating_point():
            low, high = (float(v) for v in torch.aminmax(p.detach()))
            if high < 0:
                values = (
                    f"is {low:.3g} in every unit" if low == high else f"is between {low:.3g} and {high:.3g}"
                )
                return f" {name} {values}."
    return ""


def _loss_now(loss: float | None) -> str:
    return f" The loss ends at {loss:.4g}." if loss is not None else ""
