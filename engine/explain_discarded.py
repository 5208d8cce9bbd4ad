"""A tensor conversion whose result is thrown away: ``x.float()`` on a line of its own.

A tensor's ``.float()``, ``.to(…)``, ``.cuda()`` return a new tensor and leave the tensor as
it was; a module's convert the module in place, which is where the habit comes from. The
dtype (or device) error that follows names the unconverted tensor, and a hint that says
"convert it with x.float()" repeats what the line already wrote.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import FrameType

import torch

from .source import is_a, visible_names, without_comment

__all__ = ["discarded_conversion"]

_CONVERSION = re.compile(
    r"^([^\W\d]\w*(?:\.[^\W\d]\w*)*)\.(float|double|half|bfloat16|long|int|to|cuda|cpu|type)\((.*)\)$"
)


# what a conversion gives: .float() float32; .to(torch.float64) float64
_DTYPES = {
    "float": torch.float32,
    "float32": torch.float32,
    "double": torch.float64,
    "float64": torch.float64,
    "half": torch.float16,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "long": torch.int64,
    "int64": torch.int64,
    "int": torch.int32,
    "int32": torch.int32,
}


def discarded_conversion(
    source_lines: Sequence[str], line: int | None, frame: FrameType | None, operands: Sequence[torch.Tensor]
) -> str | None:
    """The last line before ``line`` that is a conversion of one of ``operands`` (the tensors
    of the op that failed) and nothing else (``x.float()``, ``xb.to(device)``), said with the
    assignment that keeps it; ``None`` where there is none (``model.double()`` converts the
    model in place, and is no tensor's)."""
    if line is None or frame is None or not operands:
        return None
    scope = visible_names(frame)
    for number in range(min(line, len(source_lines) + 1) - 1, 0, -1):
        code = without_comment(source_lines[number - 1]).strip()
        found = _CONVERSION.match(code)
        if found is None:
            continue
        name, method = found.group(1), found.group(2)
        value: object = scope.get(name.split(".")[0])
        for attribute in name.split(".")[1:]:
            value = getattr(value, attribute, None)
        if not is_a(value, torch.Tensor) or not any(value is t for t in operands):
            continue
        wanted = _DTYPES.get(method) or _DTYPES.get(found.group(3).strip().removeprefix("torch."))
        if wanted is not None and value.dtype == wanted:
            continue  # it is that dtype already: the conversion changed nothing, and is no cause
        return (
            f"Line {number} ({code}) makes a converted copy of {name} and throws it away: a tensor's "
            f".{method}() returns a new tensor and leaves {name} as it was (a module's converts the "
            f"module in place). Keep what it returns: {name} = {code}."
        )
    return None
