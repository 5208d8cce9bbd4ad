"""Hints for picking elements out of a tensor, each naming the snippet's tensors and shapes
(read from the line's code, the frame and the failed op's operands) with the line that fixes it:
``gather``/``scatter_`` given a 1-D index for a 2-D tensor (``idx.unsqueeze(1)``; a one-hot
made by ``scatter_`` also gets ``F.one_hot``) or a float index (``idx.long()``);
``index_select`` given a 2-D index (``emb[ids]``, ``ids.flatten()``); ``F.one_hot`` of floats
(``labels.long()``) or of a label not below ``num_classes`` (``labels - 1`` for labels counted
from 1, else ``num_classes=max + 1``); ``torch.where`` given floats where the condition goes
(``probs > 0.5``); a float index (``len(x) / 2``: ``//``); an index past the end (0 to n - 1;
a loop from 1: ``range(len(x))``); a boolean mask of another length than the dimension it
covers (``x[:, keep]`` for columns); more indices than the tensor has dimensions."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_reading import find_call, number, parsed, shape, with_arg, wrapped
from .source import bound_to, indentation, visible_names, without_comment
from .tensor_facts import dtype_name

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["indexing_hint"]

_SAME_DIMS = re.compile(r"Index tensor must have the same number of dimensions as (?:input|self) tensor")
_INDEX_DTYPE = re.compile(r"(gather|scatter)\(\): Expected dtype [\w/]+ for index")
_SELECT = re.compile(r"index_select\(\): Index is supposed to be a vector")
_ONE_HOT = re.compile(
    r"one_hot is only applicable to index tensor of type LongTensor|Class values must be smaller than num_classes"
)
_WHERE = re.compile(r"where expected condition to be a boolean tensor, but got a tensor with dtype (\w+)")
_FLOAT_INDEX = re.compile(r"are valid indices \(got (?:float|numpy\.float\d*)\)")
_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for dimension (\d+) with size (\d+)")
_MASK = re.compile(
    r"The shape of the mask \[(\d+)\] at index 0 does not match the shape of the indexed tensor "
    r"\[[\d, ]*\] at index (\d+)"
)
_GATHERS = ("gather", "scatter", "scatter_")
_TOO_MANY = re.compile(r"too many indices for tensor of dimension (\d+)")


def indexing_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``), or ``None``."""
    text = str(exc)
    op, ts = rec.failed_op if rec.failed_op is not None else ("", [])
    two, indexed = len(ts) == 2, isinstance(exc, IndexError)
    checks: list[tuple[object, re.Pattern[str], Callable[[re.Match[str]], str | None]]] = [
        (two and op in _GATHERS, _SAME_DIMS, lambda m: _index_dims(op, ts, code, frame)),
        (two and op in _GATHERS, _INDEX_DTYPE, lambda m: _float_index(op, ts, code)),
        (two and op == "index_select", _SELECT, lambda m: _index_select(ts, code)),
        (op == "one_hot" and len(ts) == 1, _ONE_HOT, lambda m: _one_hot(text, ts[0], code, frame)),
        (op == "where" and ts, _WHERE, lambda m: _where(ts[0], code)),
        (indexed, _FLOAT_INDEX, lambda m: _divided(code, frame)),
        (indexed, _BOUNDS, lambda m: _past_end(m, code, frame, rec.statement_lines)),
        (indexed and two, _MASK, lambda m: _mask(ts, int(m[2]), code)),
        (indexed, _TOO_MANY, lambda m: _too_many(int(m[1]), code, frame)),
    ]  # fmt: skip
    for applies, pattern, hint in checks:
        found = pattern.search(text) if applies else None
        if found:
            return hint(found)
    return None


# -- the hints ------------------------------------------------------------------------------


def _index_dims(op: str, ts: Sequence[torch.Tensor], code: str | None, frame: FrameType | None) -> str | None:
    """gather (or scatter_ of a number) given an index of one dimension fewer than the tensor."""
    source, index = ts
    call = find_call(code, (op,), ("dim", "index", "value"))
    dim = number(call.get("dim") if call else None, frame)
    if call is None or dim is None or "index" not in call or index.dim() != source.dim() - 1:
        return None
    d = dim % source.dim()
    fitted = [*index.shape[:d], 1, *index.shape[d:]]
    if any(fitted[i] > source.shape[i] for i in range(source.dim()) if i != d) or not _indices(
        index, source.shape[d]
    ):
        return None
    idx = call["index"]
    picks = "one entry per row" if (source.dim(), d) == (2, 1) else f"one entry along dim {d} per position"
    given = f"the tensor is {shape(source.shape)} and {idx} is {shape(index.shape)}"
    fix = with_arg(call, "index", f"{wrapped(idx)}.unsqueeze({d})")
    if op == "gather":
        return (
            f"gather picks, along dim {dim}, the entries {idx} names, one for each position of {idx}, so {idx} "
            f"must have as many dimensions as the tensor it picks from: {given}. To pick {picks}, give {idx} "
            f"a dimension of 1 there and drop it from the result: {fix}.squeeze({d}), which gives "
            f"{shape(index.shape)}."
        )
    one_hot = ""
    if (source.dim(), d) == (2, 1) and call.get("value") in ("1", "1.0") and not bool(source.count_nonzero()):
        f = "F" if visible_names(frame).get("F") is torch.nn.functional else "torch.nn.functional"
        one_hot = f"; for one-hot rows, {f}.one_hot({idx}, {source.shape[1]}).float() makes them in one go"
    return (
        f"{op} writes at the places {idx} names, one for each position of {idx}, so {idx} must have as many "
        f"dimensions as the tensor it writes into: {given}. Give {idx} a dimension of 1 at dim {d}: "
        f"{fix}{one_hot}."
    )


def _float_index(op: str, ts: Sequence[torch.Tensor], code: str | None) -> str | None:
    """gather or scatter given an index tensor of floats (of whole numbers in range)."""
    source, index = ts
    call = find_call(code, (op,), ("dim", "index", "value"))
    dim = number(call.get("dim") if call else None, None)
    if call is None or dim is None or "index" not in call or not index.is_floating_point():
        return None
    if index.dim() != source.dim() or not _indices(index, source.shape[dim % source.dim()]):
        return None
    idx = call["index"]
    fix = with_arg(call, "index", f"{wrapped(idx)}.long()")
    return (
        f"{idx} holds {dtype_name(index.dtype)} numbers, and {op} takes its index as integers (int64): "
        f"convert it, {fix}. (torch.tensor([[0.], [2.]]) makes floats; torch.tensor([[0], [2]]) int64.)"
    )


def _indices(t: torch.Tensor, size: int) -> bool:
    """Whether ``t`` holds whole numbers from 0 to ``size - 1`` (whatever its dtype)."""
    t = t.double()
    return not t.numel() or (bool((t == t.round()).all()) and int(t.min()) >= 0 and int(t.max()) < size)


def _index_select(ts: Sequence[torch.Tensor], code: str | None) -> str | None:
    source, index = ts
    call = find_call(code, ("index_select",), ("dim", "index"))
    dim = number(call.get("dim") if call else None, None)
    if call is None or dim is None or "self" not in call or "index" not in call:
        return None
    d = dim % source.dim()
    if not _indices(index, source.shape[d]):
        return None
    src, idx = call["self"], call["index"]
    flat = [*source.shape[:d], index.numel(), *source.shape[d + 1 :]]
    flattened = f"{src}.index_select({dim}, {wrapped(idx)}.flatten()), which gives {shape(flat)}"
    start = f"index_select takes its indices as a vector (1-D), and {idx} is {shape(index.shape)}."
    if d == 0:
        kept = [*index.shape, *source.shape[1:]]
        return f"{start} To look up a row for every entry of {idx} and keep its shape, index with it: {wrapped(src)}[{idx}], which gives {shape(kept)}; or flatten it, {flattened}."
    return f"{start} Flatten it: {flattened}."


def _one_hot(text: str, labels: torch.Tensor, code: str | None, frame: FrameType | None) -> str | None:
    call = find_call(code, ("one_hot",), ("num_classes",))
    if call is None or "self" not in call:
        return None
    name = call["self"]
    if "only applicable to index tensor of type LongTensor" in text:
        if not _indices(labels, sys.maxsize):
            return None
        fix = with_arg(call, "self", f"{wrapped(name)}.long()")
        return (
            f"F.one_hot takes class indices as integers (int64), and {name} holds "
            f"{dtype_name(labels.dtype)} values: convert it first, {fix}."
        )
    classes = number(call.get("num_classes"), frame)
    if classes is None or not labels.numel():
        return None
    low, high = int(labels.min()), int(labels.max())
    start = f"F.one_hot(…, num_classes={classes}) makes one column per class, 0 to {classes - 1}, and {name} holds {high}"
    if low >= 1 and high == classes:
        fix = with_arg(call, "self", f"{name} - 1")
        return (
            f"{start}: its labels run from {low} to {high}, counted from 1. Count them from 0, {fix}; or, "
            f"if there are {high + 1} classes (0 to {high}), num_classes={high + 1}."
        )
    return f"{start}: num_classes must be larger than the largest label, num_classes={high + 1} (or as many as there are)."


def _where(condition: torch.Tensor, code: str | None) -> str | None:
    call = find_call(code, ("where",), ("x", "y"))
    if call is None or "self" not in call or condition.is_complex():
        return None
    name = call["self"]
    if condition.is_floating_point():
        unit = bool(condition.numel()) and float(condition.min()) >= 0 and float(condition.max()) <= 1
        made = f"{wrapped(name)} > {'0.5' if unit else '0'}"
    elif condition.numel() and bool(((condition == 0) | (condition == 1)).all()):
        made = f"{wrapped(name)}.bool()"
    else:
        return None
    return (
        "torch.where(condition, a, b) takes a bool tensor first, True where the result takes a and False "
        f"where it takes b, and {name} holds {dtype_name(condition.dtype)} numbers. Make the condition from "
        f"it: {with_arg(call, 'self', made)}."
    )


def _subscripts(code: str | None) -> list[ast.Subscript]:
    return [n for n in ast.walk(parsed(code) or ast.Module([], [])) if isinstance(n, ast.Subscript)]


def _divided(code: str | None, frame: FrameType | None) -> str | None:
    """``x[len(x) / 2]``: ``/`` gives a float even for whole numbers."""
    for node in _subscripts(code):
        divisions = [
            n for n in ast.walk(node.slice) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
        ]
        if not divisions or not isinstance(bound_to(ast.unparse(node.value), frame), torch.Tensor):
            continue
        written = ast.unparse(divisions[0])
        for division in divisions:
            division.op = ast.FloorDiv()
        return (
            f"{written} is a float: / always divides to a float in Python 3, even when the division comes "
            f"out whole, and an index must be a whole number. Divide with //, which gives an int: "
            f"{ast.unparse(node)}."
        )
    return None


def _parts(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _basic(node: ast.Subscript) -> list[ast.expr] | None:
    """A subscript's parts where each is a plain index or a slice (not a list, None or ...)."""
    plain = (ast.Slice, ast.Name, ast.BinOp, ast.UnaryOp, ast.Call, ast.Attribute)
    parts = _parts(node)
    ok = all(isinstance(p, plain) or (isinstance(p, ast.Constant) and type(p.value) is int) for p in parts)
    return parts if ok else None


def _past_end(
    found: re.Match[str], code: str | None, frame: FrameType | None, lines: Sequence[str]
) -> str | None:
    index, dim, size = (int(g) for g in found.groups())
    for node in _subscripts(code):
        name = ast.unparse(node.value)
        tensor, parts = bound_to(name, frame), _basic(node)
        if not isinstance(tensor, torch.Tensor) or parts is None or len(parts) <= dim:
            continue
        written = ast.unparse(parts[dim])
        held = bound_to(written, frame) if isinstance(parts[dim], ast.Name) else index
        if tensor.dim() <= dim or tensor.shape[dim] != size or isinstance(parts[dim], ast.Slice):
            continue
        if type(held) is not int or held != index:  # (a list or a tensor of indices counts otherwise)
            continue
        asked = f"{written}, which is {index}" if written != str(index) else str(index)
        along = "" if tensor.dim() == 1 else f" along dimension {dim}"
        start = f"{name} has {size} entries{along}, numbered 0 to {size - 1} (or -{size} to -1 from the end), and this line asked for index {asked}."
        loop = _loop_over(written, frame, lines)
        if loop is not None and index == size:
            count = f"len({name})" if dim == 0 else f"{name}.shape[{dim}]"
            return (
                f"{start} The loop's {loop} reaches {size}, and indices start at 0: loop over range({count})."
            )
        return f"{start} Count from 0: the first is {name}[0], the last {name}[{size - 1}] (or {name}[-1])."
    return None


def _loop_over(variable: str, frame: FrameType | None, lines: Sequence[str]) -> str | None:
    """The ``range(…)`` of the ``for`` loop around the failing line that sets ``variable``."""
    if frame is None or not re.fullmatch(r"[^\W\d]\w*", variable) or not 0 < frame.f_lineno <= len(lines):
        return None
    depth = indentation(lines[frame.f_lineno - 1])
    for at in range(frame.f_lineno - 1, 0, -1):
        text = without_comment(lines[at - 1])
        if not text.strip() or indentation(text) >= depth:
            continue
        depth = indentation(text)
        found = re.match(rf"\s*for\s+{variable}\s+in\s+(range\(.*\))\s*:", text)
        if found:
            return found.group(1)
    return None


def _mask(ts: Sequence[torch.Tensor], at: int, code: str | None) -> str | None:
    """A 1-D boolean mask laid along a dimension of another length."""
    tensor, mask = ts
    if mask.dtype != torch.bool or mask.dim() != 1 or tensor.dim() <= at:
        return None
    for node in _subscripts(code):
        parts = _parts(node)
        if len(parts) != at + 1 or not all(ast.unparse(p) == ":" for p in parts[:at]):
            continue
        name, keep = ast.unparse(node.value), ast.unparse(parts[at])
        length, size = mask.shape[0], tensor.shape[at]
        start = (
            f"{keep} is a mask of {length} True/False values, and {ast.unparse(node)} lays it along "
            f"dimension {at} of {name}, which has {size} ({name} is {shape(tensor.shape)}): a mask needs one "
            "value per entry of the dimension it picks from."
        )
        fits = [d for d in range(tensor.dim()) if tensor.shape[d] == length and d != at]
        if not fits:
            return f"{start} Make it {size} long."
        d = fits[0]
        picked = [*tensor.shape[:d], int(mask.sum()), *tensor.shape[d + 1 :]]
        kind = "columns" if d == 1 and tensor.dim() == 2 else "rows" if d == 0 else f"along dimension {d}"
        subscript = ", ".join([":"] * d + [keep])
        return f"{start} To pick {kind} with it, put it at dimension {d}: {name}[{subscript}], which gives {shape(picked)}."
    return None


def _too_many(dims: int, code: str | None, frame: FrameType | None) -> str | None:
    for node in _subscripts(code):
        name = ast.unparse(node.value)
        tensor, parts = bound_to(name, frame), _basic(node)
        if isinstance(tensor, torch.Tensor) and tensor.dim() == dims > 0 and len(parts or ()) > dims:
            sizes, column = shape(tensor.shape), shape([tensor.shape[0], *tensor.shape[2:]])
            rows = f"; {name}[0] the first along dimension 0, {shape(tensor.shape[1:])}; {name}[:, 0] the first along dimension 1, {column}"
            return (
                f"{name} has {dims} dimension{'s' if dims != 1 else ''}, {sizes}, and {ast.unparse(node)} gives "
                f"{len(parts or ())} indices, one per dimension: at most {dims} fit. {name}[{', '.join(['0'] * dims)}] "
                f"is one number{rows if dims >= 2 else ''}."
            )
    return None
