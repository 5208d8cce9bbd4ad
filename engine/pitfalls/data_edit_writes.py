"""Which in-place writes to memory a graph saved change nothing it saved
(data-edit-hidden-from-autograd: the detector is data_edit.py, which notes the others).

Four things are read of a write, none of them on a clean run's path: the bytes of the storage
it wrote (``buf.data[n] = x`` writes one row, a saved ``buf[:n]`` holds others); a clamp after
which no value sits at a bound (a clamp puts each value it changes there); a multiplication or
division by exactly 1, or an addition of exactly 0, everywhere; and whether the
last write to that memory was the very same op, one that changes nothing made twice (a clamp,
a fill, a 0/1 mask, a copy of an unchanged tensor), with no optimizer step between: a cell that
clips its weight at each call, run at each time step, clips it once.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from ..values import dispatches_to_python

__all__ = [
    "CLAMPS",
    "IDEMPOTENT",
    "RepeatedWrites",
    "byte_span",
    "clamped_nothing",
    "identity_write",
    "overlap",
    "written_span",
]

CLAMPS = frozenset({"clamp_", "clip_", "clamp_min_", "clamp_max_"})
_MULTIPLIES = frozenset({"mul_", "__imul__"})
_SCALES = frozenset({"mul_", "__imul__", "div_", "__itruediv__"})
_SHIFTS = frozenset({"add_", "__iadd__", "sub_", "__isub__"})
_ROUNDING_ULPS = 4  # a shift or scale within this many ulps (of the tensor's largest value) is rounding
# in-place ops that change nothing when made twice with the same arguments
IDEMPOTENT = (
    CLAMPS
    | _MULTIPLIES
    | {"fill_", "zero_", "masked_fill_", "copy_", "__setitem__", "relu_", "abs_", "sign_", "floor_", "ceil_"}
    | {"round_", "trunc_"}
)


class RepeatedWrites:
    """The last write to each memory, by address, where it changes nothing made twice (any
    other write to that memory drops it)."""

    def __init__(self) -> None:
        self._repeats: dict[int, tuple[_Write, StorageWeakRef]] = {}

    def __bool__(self) -> bool:
        return bool(self._repeats)

    def forget(self) -> None:
        """Forget every write: others were made where they were not seen."""
        self._repeats.clear()

    def repeats(
        self, name: str, target: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any], steps: int
    ) -> bool:
        """Whether op ``name`` writes ``target`` as the last write to its memory did: the same
        op that changes nothing when made twice (a clamp, a fill, a 0/1 mask, a copy of an
        unchanged tensor), with the same arguments, over at least these elements, with no
        optimizer step since (``steps``: those taken so far). It changes no value (a cell that
        clips its weight at each call, run at each time step). Notes the write as the last one
        to that memory, where autograd does not record it (``w.data``, a buffer): a write it
        records moves the version of what a graph saved, and backward() checks it."""
        recorded = _has_history(target)
        if not self._repeats and recorded:
            return False  # (an activation changed in place: ReLU(inplace=True))
        try:
            storage = target.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return False
        last = self._repeats.pop(storage.data_ptr(), None) if self._repeats else None
        signature = None if recorded else _signature(name, args, kwargs)
        if signature is None:
            return False
        view = (int(target.storage_offset()), tuple(target.shape), target.stride(), target.is_contiguous())
        write = _Write(signature, view, written_span(name, target, args), steps)
        self._repeats[storage.data_ptr()] = (write, StorageWeakRef(storage))
        if last is None or last[1].expired():
            return False
        before = last[0]
        covered = before.view[:3] == view[:3] or (before.view[3] and _covers(before.span, write.span))
        return before.steps == write.steps and covered and _same_signature(before.signature, signature)


def _has_history(t: torch.Tensor) -> bool:
    """Whether autograd records ``t``'s changes (it has a grad_fn); True where PyTorch will not
    say (a view made under no_grad and changed in place since)."""
    try:
        return t.grad_fn is not None
    except RuntimeError:
        return True


class _Write(NamedTuple):
    """A write the snippet made that changes nothing made twice: its op and arguments, the
    view it wrote (storage offset, shape, strides, contiguous), the bytes that view covers,
    and the optimizer steps taken then."""

    signature: tuple[Any, ...]
    view: tuple[int, tuple[int, ...], tuple[int, ...], bool]
    span: tuple[int, int] | None
    steps: int


def _signature(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """``name`` and its arguments after the target, tensors by identity and version, where
    ``name`` changes nothing when made twice with them; None where it may."""
    if name not in IDEMPOTENT:
        return None
    given = (*args[1:], *(v for k, v in sorted(kwargs.items())))
    if name in _MULTIPLIES and not all(_zeros_and_ones(a) for a in given):
        return None  # x * m * m is x * m only where m holds 0s and 1s
    parts: list[Any] = [name, *sorted(kwargs)]
    for a in given:
        part = _argument(a)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def _argument(a: Any) -> Any:
    """``a`` as a signature holds it: a tensor as ``(tensor, version)``, an index as its parts;
    None where it is no number, tensor or index."""
    if isinstance(a, torch.Tensor):
        return (a, a._version)
    if a is None or a is Ellipsis or isinstance(a, int | float | bool):
        return (a,)
    if isinstance(a, slice):
        return ("slice", a.start, a.stop, a.step)
    if isinstance(a, tuple):
        parts = [_argument(x) for x in a]
        return None if any(p is None for p in parts) else ("tuple", *parts)
    return None


def _same_signature(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two signatures are equal, their tensors the very same objects."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple) and isinstance(y, tuple):
            if not _same_signature(x, y):
                return False
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            if x is not y:
                return False
        elif x != y:
            return False
    return True


def _zeros_and_ones(a: Any) -> bool:
    """Whether the factor ``a`` holds only 0s and 1s."""
    if isinstance(a, torch.Tensor):
        with torch.no_grad():
            return bool(((a == 0) | (a == 1)).all())
    return isinstance(a, int | float) and a in (0, 1)


def _clamp_bounds(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[float | None, ...] | None:
    """The bounds of a clamp, where they are numbers (None where one is a tensor)."""
    bounds = (*args[1:], *(kwargs.get(k) for k in ("min", "max") if k in kwargs))
    if not all(b is None or (isinstance(b, int | float) and not isinstance(b, bool)) for b in bounds):
        return None
    return bounds


def identity_write(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``name``, which has just written ``args[0]``, multiplies or divides by 1, or adds
    or subtracts 0, everywhere, to within float rounding: it changed no value by more than a few
    ulps of the tensor's largest (``w.data.div_(w.data.norm(dim=1, keepdim=True).clamp(min=1))``
    of rows already of norm 1 at most; ``w.data.sub_(w.data.mean(dim=1, keepdim=True))`` of rows
    centred already, whose means only rounding keeps from 0). What the write added or scaled by
    is its own operand, so the values before it are not needed."""
    other = args[1] if len(args) > 1 else kwargs.get("other")
    if name in _SCALES and not kwargs.get("rounding_mode"):
        neutral = 1
    elif name in _SHIFTS:
        if kwargs.get("alpha", 1) == 0:
            return True
        neutral = 0
    else:
        return False
    if isinstance(other, bool) or not isinstance(other, torch.Tensor | int | float) or len(args) > 2:
        return False  # (``add_(-lr, grad)``, the old order, adds ``-lr * grad``)
    target = args[0] if args else None
    with torch.no_grad():
        if isinstance(target, torch.Tensor) and _rounds(target) and _rounds(other):
            return _off_by_rounding(target, other, neutral, abs(kwargs.get("alpha", 1)))
        if isinstance(other, torch.Tensor):
            return bool((other == neutral).all())
    return other == neutral


def _rounds(t: Any) -> bool:
    """Whether ``t`` is a number or a real strided tensor of floats (whose writes round) that
    holds values to read (not meta) and runs none of the snippet's ``__torch_dispatch__``."""
    if isinstance(t, torch.Tensor):
        return (
            t.is_floating_point()
            and t.layout is torch.strided
            and not t.is_meta
            and not dispatches_to_python(t)
        )
    return isinstance(t, int | float)


def _off_by_rounding(target: torch.Tensor, other: torch.Tensor | float, neutral: int, alpha: float) -> bool:
    """Whether scaling ``target`` by ``other`` (``neutral`` 1) or shifting it by ``alpha *
    other`` (``neutral`` 0) moved no value by more than :data:`_ROUNDING_ULPS` ulps of the
    largest value of ``target`` (a factor: more than that many ulps from 1)."""
    if isinstance(other, torch.Tensor):
        if not other.numel():
            return True
        off = float((other.detach() - neutral).abs().max())
    else:
        off = abs(float(other) - neutral)
    eps = torch.finfo(target.dtype).eps
    if not math.isfinite(off):
        return False
    if neutral == 1:
        return off <= _ROUNDING_ULPS * eps
    largest = float(target.detach().abs().max()) if target.numel() else 0.0
    return off * float(alpha) <= _ROUNDING_ULPS * eps * largest


def clamped_nothing(name: str, target: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the clamp ``name`` that has just run on ``target`` changed no value: none of
    them is at a bound, where a clamp puts every value it changes (``p.data.clamp_(1e-7,
    1 - 1e-7)`` of probabilities none of which reached either)."""
    bounds = _clamp_bounds(args, kwargs)
    if bounds is None or not target.is_floating_point() or target.layout is not torch.strided:
        return False
    with torch.no_grad():
        return not any(bool((target == b).any()) for b in bounds if b is not None)


def _covers(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    """Whether span ``a`` holds all of span ``b``."""
    return a is not None and b is not None and a[0] <= b[0] and b[1] <= a[1]


def written_span(name: str, target: torch.Tensor, args: tuple[Any, ...]) -> tuple[int, int] | None:
    """The bytes of its storage the op ``name`` wrote in ``target``: for ``target[index] = …``
    the part ``index`` picks out, where that is a view (a slice, an int), else all of it."""
    if name == "__setitem__" and len(args) > 1:
        try:
            with torch._C.DisableTorchFunction():
                part = target[args[1]]
        except (IndexError, TypeError, RuntimeError):
            return byte_span(target)
        if part.untyped_storage().data_ptr() == target.untyped_storage().data_ptr():
            return byte_span(part)
    return byte_span(target)


def byte_span(t: torch.Tensor) -> tuple[int, int] | None:
    """The bytes of its storage a strided tensor covers, ``[start, end)`` (a column's span
    takes in the other columns between its elements); None where that is not known."""
    if t.layout is not torch.strided or not t.numel():
        return None
    size = t.element_size()
    start = int(t.storage_offset())
    extent = sum((int(n) - 1) * abs(stride) for n, stride in zip(t.shape, t.stride(), strict=True))
    return start * size, (start + extent + 1) * size


def overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    """Whether two spans of one storage share a byte (True where either is not known)."""
    return a is None or b is None or (a[0] < b[1] and b[0] < a[1])
