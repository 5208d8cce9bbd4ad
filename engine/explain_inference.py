"""Explain ``Inference tensors cannot be saved for backward``: a tensor made under
``torch.inference_mode()`` met an operation autograd records. The hint names the tensor on
the failing line that is one, and the line that made it, where both are known."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import FrameType

import torch

from .source import bound_to

__all__ = ["inference_tensor_hint"]

_NAMES = re.compile(r"(?<![\w.])[^\W\d]\w*(?:\.[^\W\d]\w*)*")


def inference_tensor_hint(
    text: str, code: str | None, frame: FrameType | None, made_at: Callable[[torch.Tensor], int | None]
) -> str | None:
    """The hint for an inference tensor saved for backward, raised at a line reading
    ``code`` in ``frame`` (``made_at`` gives the snippet line that made a tensor, where the
    run saw it); ``None`` for any other error."""
    if "Inference tensors cannot be saved for backward" not in text:
        return None
    name, tensor = _inference_tensor_on(code, frame)
    if name is None or tensor is None:
        return (
            "A tensor made under torch.inference_mode() reached a computation autograd records: inference "
            "tensors can never enter a graph. Make data that will meet a model's parameters under "
            "torch.no_grad() instead (or without either), or copy it outside the block: X = X.clone()."
        )
    line = made_at(tensor)
    where = f" (line {line})" if line is not None else ""
    return (
        f"{name} was made under torch.inference_mode(){where}, so it is an inference tensor, and "
        "autograd can never save one for backward: an operation here needs it saved to compute a "
        f"gradient. Make {name} under torch.no_grad() instead (or outside either block), or copy "
        f"it after the block: {name} = {name}.clone()."
    )


def _inference_tensor_on(code: str | None, frame: FrameType | None) -> tuple[str | None, torch.Tensor | None]:
    """The first (dotted) name ``code`` reads that ``frame`` binds to an inference tensor."""
    for name in dict.fromkeys(_NAMES.findall(code or "")):
        value = bound_to(name, frame)
        if isinstance(value, torch.Tensor) and value.is_inference():
            return name, value
    return None, None
