"""Hints for tensors shaped by the wrong tool: ``torch.tensor`` of a list of tensors (which
reads numbers, where ``torch.stack`` joins tensors and keeps their graph), ``expand`` of a
dimension that is not 1 (it only stretches size-1 dimensions; ``repeat`` copies), a
recurrent layer given an input of 4 or more dimensions, and ``*`` between two matrices whose
shapes are a matrix product's (``@`` was meant)."""

from __future__ import annotations

import re

import torch

__all__ = ["shaping_hint"]

_EXPANDED = re.compile(
    r"The expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\) at non-singleton "
    r"dimension (\d+)\.\s+Target sizes: \[([-\d, ]*)\]\.\s+Tensor sizes: \[([\d, ]*)\]"
)
_RNN_DIMS = re.compile(r"(LSTM|GRU|RNN): Expected input to be 2D or 3D, got (\d)D instead")
_MADE_FROM_LIST = re.compile(r"torch\.(?:tensor|Tensor|FloatTensor|LongTensor|as_tensor)\(")


def shaping_hint(
    text: str, code: str | None, failed: tuple[str, list[torch.Tensor]] | None = None
) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (see the module
    docstring), ``failed`` the op it came from where the tape saw it; ``None`` for any other
    error."""
    product = _star_for_product(text, code, failed)
    if product:
        return product
    if "only one element tensors can be converted to Python scalars" in text and _MADE_FROM_LIST.search(
        code or ""
    ):
        return (
            "torch.tensor() reads a (nested) list of numbers, and this list holds tensors of several "
            "elements. Join tensors with torch.stack(xs) (along a new first dimension) or torch.cat(xs) "
            "(end to end); both keep the graph, which torch.tensor() would cut."
        )
    expanded = _EXPANDED.search(text)
    if expanded and "expand" in (code or ""):
        return _expand_hint(*expanded.groups())
    rnn = _RNN_DIMS.search(text)
    if rnn:
        kind, dims = rnn.groups()
        return (
            f"An nn.{kind} reads a batch of sequences as 3 dimensions, (batch, sequence, features) with "
            f"batch_first=True, (sequence, batch, features) without, or one sequence as 2, and this "
            f"input has {dims}. Drop what is extra: an unsqueeze too many (x.squeeze(1)), or, for images "
            "(N, C, H, W) read row by row, x.flatten(1, 2) gives (N, C·H, W), a sequence of C·H rows."
        )
    return None


def _expand_hint(target_size: str, size: str, dim: str, target: str, shape: str) -> str:
    wanted = [int(n) for n in target.replace(" ", "").split(",") if n]
    have = [int(n) for n in shape.replace(" ", "").split(",") if n]
    start = (
        f"expand() stretches only dimensions of size 1 (without copying): dimension {dim} has {size}, "
        f"which it cannot make {target_size}."
    )
    new = len(wanted) - len(have)
    aligned = list(zip(wanted[new:], have, strict=True)) if new >= 0 else []
    if aligned and all(w == -1 or (h and w % h == 0) for w, h in aligned):
        times = [*wanted[:new], *(1 if w == -1 else w // h for w, h in aligned)]
        return (
            f"{start} To copy the data that many times, use .repeat({', '.join(map(str, times))}), which "
            f"makes [{', '.join(map(str, wanted))}] from [{', '.join(map(str, have))}]."
        )
    return (
        f"{start} Add a size-1 dimension where the new one goes and expand that (x.unsqueeze(0).expand(…)), "
        "or use .repeat(…) to copy along a dimension that has more than one element."
    )


def _star_for_product(
    text: str, code: str | None, failed: tuple[str, list[torch.Tensor]] | None
) -> str | None:
    """``X * W`` of an (n, k) and a (k, m) matrix: ``*`` multiplies element by element, and
    the shapes are those of a matrix product."""
    if "must match the size of tensor b" not in text or failed is None or failed[0] not in ("mul", "mul_"):
        return None
    operands = failed[1]
    if len(operands) < 2 or "*" not in (code or ""):
        return None
    a, b = operands[0], operands[1]
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or a.shape == b.shape:
        return None
    n, k = a.shape
    m = b.shape[1]
    return (
        f"* multiplies element by element, so both operands must have one shape (or broadcast), and these "
        f"are ({n}, {k}) and ({k}, {m}): the shapes of a matrix product, whose inner sizes ({k}) agree. For "
        f"the matrix product use @ (torch.matmul), which gives ({n}, {m})."
    )
