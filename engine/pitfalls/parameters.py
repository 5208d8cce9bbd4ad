"""The end-of-run reports about a model's parameters: those that get gradients and no
optimizer (parameter-not-optimized), those an optimizer steps that never get a gradient
(parameter-without-gradient, ungraded.py), and layers whose units stay identical
(symmetric-weights, symmetry.py). Each is said at the line that assigns the layer (or, for
symmetric weights, sets them to a constant).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from .symmetry import symmetric_layers, symmetric_report
from .ungraded import UngradedParams, ungraded_report

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["Said", "parameter_reports"]


class Said(NamedTuple):
    """One pitfall to emit, in the order of ``PitfallWatch._say``'s arguments."""

    kind: str
    line: int | None
    title: str
    message: str
    fix: str
    tensors: list[int]


def parameter_reports(rec: Recorder, scope: dict[str, Any], ungraded: UngradedParams) -> list[Said]:
    """What the run's end shows about the parameters of the modules ``rec`` saw; ``scope``:
    the snippet's globals; ``ungraded``: what the optimizer steps showed."""
    names = {id(p): name for p, name in rec.modules.all_params()}
    return [*_unoptimized(rec, names), *_ungraded(rec, names, ungraded), *_symmetric(rec, scope, names)]


def _tensor_ids(rec: Recorder, params: list[torch.Tensor]) -> list[int]:
    return [tid for p in params if (tid := rec.tensors.known(p)) is not None]


def _unoptimized(rec: Recorder, names: dict[int, str]) -> list[Said]:
    training = rec.training
    if training.total_steps == 0:
        return []
    missed = [
        p for p, _ in rec.modules.all_params() if p.grad is not None and id(p) not in training.stepped_params
    ]
    if not missed:
        return []
    qualified = [names[id(p)] for p in missed]
    shown = ", ".join(qualified[:4]) + (f" and {len(qualified) - 4} more" if len(qualified) > 4 else "")
    return [
        Said(
            "parameter-not-optimized",
            assignment_line(qualified[0], rec.source_lines),
            "Parameters get gradients but never train",
            f"{shown} received gradients in backward(), but no optimizer updates them: they keep their initial "
            "values for the whole run. Layers kept in a plain Python list (or dict) are not registered with "
            "nn.Module, so model.parameters() — and the optimizer built from it — never sees them.",
            "Keep sub-layers in nn.ModuleList / nn.ModuleDict (or as attributes), and build the optimizer from "
            "the model that is actually trained: torch.optim.SGD(model.parameters(), ...).",
            _tensor_ids(rec, missed),
        )
    ]


def _ungraded(rec: Recorder, names: dict[int, str], ungraded: UngradedParams) -> list[Said]:
    said = []
    for found in ungraded.found():
        params = [p for p in found.params if id(p) in names]  # a model's, not a tensor by hand
        if not params:
            continue
        label = (rec.training.label_of(found.optimizer) if found.optimizer else None) or "the optimizer"
        qualified = [names[id(p)] for p in params]
        ran = [ungraded.ran(p) for p in params]
        title, message, fix = ungraded_report(qualified, found.steps, label, ran, ungraded.saw_modules)
        line = assignment_line(qualified[0], rec.source_lines)
        said.append(Said("parameter-without-gradient", line, title, message, fix, _tensor_ids(rec, params)))
    return said


def _symmetric(rec: Recorder, scope: dict[str, Any], names: dict[int, str]) -> list[Said]:
    training = rec.training
    if training.total_steps < 2:
        return []
    said = []
    for layer in symmetric_layers(scope, names, training.stepped_params):
        line, title, message, fix = symmetric_report(layer, training.total_steps, rec.source_lines)
        if line is None:
            line = assignment_line(f"{layer.path}.weight", rec.source_lines)
        said.append(Said("symmetric-weights", line, title, message, fix, _tensor_ids(rec, [layer.weight])))
    return said


def assignment_line(qualified: str, source_lines: list[str]) -> int | None:
    """The line that assigned the attribute holding a parameter (``net.layers[0].weight``)."""
    parts = qualified.split(".")
    for attr in reversed(parts[1:-1]):
        attr = attr.split("[")[0]
        pattern = re.compile(rf"\.{re.escape(attr)}\s*=")
        for i, text in enumerate(source_lines, start=1):
            if pattern.search(text):
                return i
    return None
