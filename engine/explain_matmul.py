"""Explain the shape errors of matrix products (``a @ b``, torch.matmul, mm, bmm, mv, dot,
inner and their add- forms) in the snippet's terms: the operands by the names the snippet
gives them, with their shapes, the sizes that must agree, and what to change.

PyTorch words these errors in terms of what the product became inside (``batch2``,
``mat1``, a vector turned into a ``1x5`` matrix, batch sizes multiplied together), so
the hint is worked out again from the operands' own shapes (``rec.failed_op``, set by the
tape when a recorded op raises), not read from the message.
"""

from __future__ import annotations

import re
from types import FrameType
from typing import TYPE_CHECKING, NamedTuple

import torch

from .source import find_name

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["matmul_hint"]


class _Operand(NamedTuple):
    """One factor of the product: what to call it, its shape, and its name in the snippet
    (``None`` where it has none: the hint then says what to do in words)."""

    label: str
    shape: tuple[int, ...]
    name: str | None


def matmul_hint(exc: BaseException, rec: Recorder, frame: FrameType | None, code: str | None) -> str | None:
    """Explain a matrix product whose operands' shapes do not fit, or return ``None``.

    ``frame`` is the snippet's innermost frame and ``code`` the failing line (both to name
    the operands). ``None`` for any other error, and where the tape did not see a product
    fail or the operands it saw fit (the error came from elsewhere). For ``x = torch.randn(3)``
    and ``w = torch.randn(4)``, ``x @ w`` gets: ``x @ w needs x's length (3) to equal w's
    length (4); x has shape (3,) and w has shape (4,). …``
    """
    if not _SHAPE_ERRORS.search(str(exc)) or rec.failed_op is None:
        return None
    raw, tensors = rec.failed_op
    op = raw.strip("_")
    if op == "rmatmul":  # `b.__rmatmul__(a)` is a @ b
        op, tensors = "matmul", tensors[::-1]
    if op not in _RULES:
        return None
    if op in _WITH_ADDEND:
        tensors = tensors[1:]
    if len(tensors) != 2:  # not a product of two tensors as the rules know it
        return None
    # `a @ b` reaches the tape as matmul: the line tells the two apart
    line = code or ""
    infix = raw in ("__matmul__", "__rmatmul__") or (op == "matmul" and "@" in line and "matmul(" not in line)
    roles = ("the left operand", "the right operand") if infix else ("the first tensor", "the second tensor")
    written = _written(op, infix, line)
    a, b = (
        _operand(rec, t, frame, line, role, text)
        for t, role, text in zip(tensors, roles, written, strict=True)
    )
    rank = _rank_problem(op, a, b, infix, line)
    if rank is not None:
        return rank
    needs = _size_problems(op, a, b)
    if not needs:
        return None
    call = _call(op, a, b, infix, line)
    shapes = f"{a.label} has shape {a.shape} and {b.label} has shape {b.shape}"
    return f"{call} needs {' and '.join(needs)}; {shapes}. {_size_fix(op, a, b, infix, line)}"


def _operand(
    rec: Recorder, t: torch.Tensor, frame: FrameType | None, code: str, role: str, written: str | None
) -> _Operand:
    """Name ``t`` as the failing line writes it: by a name of it that the line uses (``p`` in
    ``return p @ q``), else by the line's text for it (``self.W``, ``k.transpose(1, 2)``),
    else by the name the recorder gave it, else by its ``role``."""
    tid = rec.tensors.known(t)
    recorded = rec.tensors.names.get(tid) if tid is not None else None
    bound = find_name(t, frame)
    on_line = [n for n in (bound, recorded) if n and re.search(rf"(?<![\w.]){re.escape(n)}\b", code)]
    name = on_line[0] if on_line else written or recorded or bound
    return _Operand(name or role, tuple(t.shape), name)


def _written(op: str, infix: bool, code: str) -> tuple[str | None, str | None]:
    """The line's text for the product's two operands (``self.W`` and ``x`` in ``self.W @ x``),
    where the line holds the product once and its operands are names, attributes, calls or
    indexing, not longer than a hint can quote; ``(None, None)`` otherwise."""
    if infix:
        once, pattern = code.count("@") == 1, rf"({_TERM})\s*@\s*({_TERM})"
    elif _as_method(op, code):
        once, pattern = code.count(f".{op}(") == 1, rf"({_TERM})\.{op}\(\s*({_TERM})\s*[,)]"
    else:
        addend = rf"{_TERM}\s*,\s*" if op in _WITH_ADDEND else ""
        once = len(re.findall(rf"\b{op}\(", code)) == 1
        pattern = rf"\b{op}\(\s*{addend}({_TERM})\s*,\s*({_TERM})\s*[,)]"
    found = re.search(pattern, code) if once else None
    if found is None or max(len(found.group(1)), len(found.group(2))) > 40:
        return None, None
    return found.group(1), found.group(2)


def _as_method(op: str, code: str) -> bool:
    """Whether the line calls the product as a tensor method (``x.bmm(w)``), not ``torch.bmm``."""
    return f".{op}(" in code and f"torch.{op}(" not in code


def _call(op: str, a: _Operand, b: _Operand, infix: bool, code: str) -> str:
    """The product as the snippet wrote it: ``x @ w``, ``x.bmm(w)``, ``torch.bmm(x, w)``."""
    if a.name is None or b.name is None:
        return "The product @" if infix else f"torch.{op}"
    if infix:
        return f"{a.name} @ {b.name}"
    if _as_method(op, code):
        return f"{a.name}.{op}({b.name})"
    return f"torch.{op}(…, {a.name}, {b.name})" if op in _WITH_ADDEND else f"torch.{op}({a.name}, {b.name})"


def _rank_problem(op: str, a: _Operand, b: _Operand, infix: bool, code: str) -> str | None:
    """The hint for an operand with the wrong number of dimensions for ``op``, else ``None``."""
    want = _RULES[op]
    if op == "inner":  # any number of dimensions, a single number too
        return None
    if want is None:  # matmul, @: any number of dimensions from 1 on
        scalar = next((o for o in (a, b) if not o.shape), None)
        if scalar is None:
            return None
        star = f"{a.name} * {b.name}" if a.name and b.name else "*"
        return (
            f"{_call(op, a, b, infix, code)} multiplies tensors of at least one dimension, and "
            f"{scalar.label} is a single number (shape ()). To scale by a number use {star}."
        )
    wrong = next((o for o, rank in zip((a, b), want, strict=True) if len(o.shape) != rank), None)
    if wrong is None:
        return None
    at = f"{a.name} @ {b.name}" if a.name and b.name else "@ (torch.matmul)"
    hint = (
        f"{_call(op, a, b, infix, code)} takes {_TAKES[want]}, and {wrong.label} has shape "
        f"{wrong.shape}. {at} takes tensors of any number of dimensions (vectors, "
        "matrices, batches of matrices)"
    )
    if want == (3, 3) and len(wrong.shape) == 2:
        name = wrong.name or "the 2-D one"
        return hint + f"; to keep {op}, give {name} a batch size of 1 with {name}.unsqueeze(0)."
    return hint + "."


def _size_problems(op: str, a: _Operand, b: _Operand) -> list[str]:
    """What the product needs of the two operands' sizes that they do not have, in words:
    ``x's last size (3) to equal w's first size (4)``; empty when they fit."""
    sa, sb = a.shape, b.shape
    if op == "inner":
        pairs = [("last", sa[-1] if sa else 1, "last", sb[-1] if sb else 1)]
    elif len(sa) == 1 and len(sb) == 1:
        pairs = [("length", sa[0], "length", sb[0])]
    elif len(sb) == 1:
        pairs = [("last", sa[-1], "length", sb[0])]
    else:
        right = "first" if len(sb) == 2 else "second" if op in _BATCHED else "second-to-last"
        pairs = [("length" if len(sa) == 1 else "last", sa[-1], right, sb[-2])]
    needs = [
        f"{a.label}'s {_size(left)} ({k}) to equal {b.label}'s {_size(right)} ({m})"
        for left, k, right, m in pairs
        if k != m
    ]
    if op in _BATCHED and sa[0] != sb[0]:
        needs.insert(
            0, f"{a.label}'s first size ({sa[0]}), its number of matrices, to equal {b.label}'s ({sb[0]})"
        )
    if op == "matmul" and len(sa) > 2 and len(sb) > 2 and not _broadcast(sa[:-2], sb[:-2]):
        batch_a, batch_b = (", ".join(map(str, s[:-2])) for s in (sa, sb))
        needs.insert(
            0, f"{a.label}'s sizes before its last two ({batch_a}) to broadcast with {b.label}'s ({batch_b})"
        )
    return needs


def _size(which: str) -> str:
    return which if which == "length" else f"{which} size"


def _broadcast(sa: tuple[int, ...], sb: tuple[int, ...]) -> bool:
    return all(x == y or 1 in (x, y) for x, y in zip(sa[::-1], sb[::-1], strict=False))


def _without_transpose(name: str) -> str | None:
    """``w`` for an operand written ``w.T``, ``w.mT`` or ``w.t()``; None for any other."""
    for suffix in (".T", ".mT", ".t()"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def _size_fix(op: str, a: _Operand, b: _Operand, infix: bool, code: str) -> str:
    """What to change: transpose the operand that holds its sizes the other way round, where
    that makes the product fit; else look where the shapes come from."""
    for which in (b, a):
        if len(which.shape) < 2:
            continue
        flipped = _Operand(which.label, (*which.shape[:-2], which.shape[-1], which.shape[-2]), which.name)
        if _size_problems(op, *((flipped, b) if which is a else (a, flipped))):
            continue
        if which.name is None:
            return f"If {which.label} holds its sizes the other way round, transpose it (.T, or .transpose(-2, -1) for a batch)."
        untransposed = _without_transpose(which.name)
        if untransposed is not None:  # `X @ w.T` that should have been `X @ w`
            t = untransposed
        else:
            t = f"{which.name}.T" if len(which.shape) == 2 else f"{which.name}.transpose(-2, -1)"
        named = _Operand(t, flipped.shape, t)
        fixed = _call(op, named, b, infix, code) if which is a else _call(op, a, named, infix, code)
        if untransposed is not None:
            return f"{untransposed} itself has shape {flipped.shape}, which fits: leave out the transpose, {fixed}."
        said = f"If {which.name} holds its sizes the other way round, transpose it: {fixed}"
        if which is a and len(a.shape) == 2 and len(b.shape) == 2 and b.name:
            # x @ W with W built wrong: x.T @ W runs, and mixes x's samples (hunt 64)
            rows, cols = a.shape
            return (
                f"{said}; if {a.name} is right ({rows} rows of {cols}), {b.name} needs {cols} rows: "
                f"make it of shape ({cols}, {b.shape[1]}) where it is made."
            )
        return f"{said}."
    look = "Change the size that is off where its tensor gets it"
    if len(a.shape) == 1 and len(b.shape) == 1 and a.shape != b.shape:
        outer = f"torch.outer({a.name}, {b.name})" if a.name and b.name else "torch.outer"
        return (
            f"The product of two vectors is one number, the sum of their entries multiplied pairwise, "
            f"so they must be of one length. {look}; for every product of a pair (a {a.shape[0]}×"
            f"{b.shape[0]} table) use {outer}."
        )
    if op in _BATCHED and a.shape[0] != b.shape[0]:
        return f"{look}: {op} multiplies the first matrix of one with the first of the other, and so on."
    if op == "matmul" and not _broadcast(a.shape[:-2], b.shape[:-2]):
        return (
            f"{look}: the sizes before the last two count the matrices, and the matrices of one pair "
            "up with those of the other. Lined up from the right, each pair of those sizes must be "
            "equal, or 1 in one of the two (that one matrix then meets all; unsqueeze(0) adds a 1)."
        )
    return f"{look} (the size it was made with, a reshape, a layer's in or out size)."


# the dimensions each product takes (None: matmul's own rules, from 1 on); an add- form
# takes the tensor to add first
_RULES: dict[str, tuple[int, int] | None] = {
    "matmul": None,
    "mm": (2, 2),
    "addmm": (2, 2),
    "bmm": (3, 3),
    "baddbmm": (3, 3),
    "addbmm": (3, 3),
    "mv": (2, 1),
    "addmv": (2, 1),
    "dot": (1, 1),
    "vdot": (1, 1),
    "inner": None,
}
_TAKES = {
    (2, 2): "two matrices (2-D tensors)",
    (3, 3): "two batches of matrices (3-D tensors)",
    (2, 1): "a matrix (2-D) and a vector (1-D)",
    (1, 1): "two vectors (1-D tensors)",
}
# an operand as a line writes it: a name or attribute, then calls, indexing and attributes
# (`x`, `self.W`, `k.transpose(1, 2)`, `h[0].T`, `torch.randn(3)`)
_TERM = r"[^\W\d][\w.]*(?:(?:\([^()]*\)|\[[^\[\]]*\])(?:\.[^\W\d]\w*)*)*"
_WITH_ADDEND = frozenset({"addmm", "baddbmm", "addbmm", "addmv"})
_BATCHED = frozenset({"bmm", "baddbmm", "addbmm"})
# the messages of a product's shape errors (PyTorch 2.x): 1-D with 1-D, bmm (and matmul with
# a batch), mv (and matrix @ vector), mm (and vector @ matrix), dimensions, batch broadcasting
_SHAPE_ERRORS = re.compile(
    "inconsistent tensor size|last dimension must match|Expected size for first two dimensions"
    "|must be a 3D tensor|must have same number of batches|Incompatible matrix sizes"
    "|size mismatch, got input|matrix @ vector expected|shapes cannot be multiplied"
    "|must be a matrix|1D tensors expected|need to be at least 1D|must match the size of tensor b"
)
