"""Hints for functions that compare tensors position by position, given tensors of shapes that
do not line up (PyTorch says only that "the size of tensor a must match the size of tensor b"):

- ``F.kl_div(log_p, q)``: two distributions over the same classes;
- ``F.cosine_similarity(a, b)``, ``F.pairwise_distance(a, b)``: vectors of one length;
- ``F.triplet_margin_loss(anchor, positive, negative)``: one row of each per triplet.

Each names the snippet's tensors, their shapes and the dimension that differs; ``None`` for any
other error."""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import FrameType

import torch

from .source import find_name

__all__ = ["paired_input_hint"]

_MISMATCH = re.compile(
    r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (\d+)"
)
_WHAT = {
    "kl_div": "two distributions over the same classes, position by position: the log-probabilities first, the "
    "target probabilities second",
    "cosine_similarity": "two sets of vectors, each of the first with the one of the second at its place, along dim 1",
    "pairwise_distance": "two sets of vectors, each of the first with the one of the second at its place",
    "triplet_margin_loss": "triplets, one row of anchor, positive and negative each, of one length",
}


def paired_input_hint(
    text: str, frame: FrameType | None, failed: tuple[str, Sequence[torch.Tensor]] | None
) -> str | None:
    """The hint for error ``text`` raised by the op the tape saw fail (``failed``: its name and
    tensors) that the module's docstring lists, naming them as ``frame`` does; ``None`` for any
    other."""
    found = _MISMATCH.search(text)
    if found is None or failed is None or failed[0] not in _WHAT or len(failed[1]) < 2:
        return None
    op, tensors = failed
    names = [find_name(t, frame) or f"argument {i + 1}" for i, t in enumerate(tensors)]
    shapes = ", ".join(f"{n} is {tuple(t.shape)}" for n, t in zip(names, tensors, strict=False))
    differ = [
        d
        for d in range(max(t.dim() for t in tensors))
        if len({t.shape[d] for t in tensors if d < t.dim()}) > 1
    ]
    where = f"dim {differ[0]}" if differ else "one dimension"
    fix = (
        "Give both the same classes (the same layer or vocabulary made them)"
        if op == "kl_div"
        else "Make them of one length (the same layer's output, or a projection, nn.Linear, of one to the other)"
        if op != "triplet_margin_loss" or not differ or differ[0] != 0
        else "Give each anchor its positive and its negative: the same number of rows in all three"
    )
    return f"F.{op} compares {_WHAT[op]}, so their shapes must agree, and {shapes}: they differ at {where}. {fix}."
