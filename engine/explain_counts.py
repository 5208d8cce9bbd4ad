"""Hints for a count asked of a tensor that it cannot give, or indices and counts given as
numbers they cannot be:

- ``x.topk(10)`` of a dimension of 5;
- ``torch.multinomial(p, 3)`` of 2 categories without replacement;
- ``x.repeat(2)`` of a 2-D tensor: one count per dimension;
- ``torch.randperm(n / 2)``: a count that is a float;
- ``x.index_select(0, idx)`` (index_fill, index_copy) with ``idx`` of floats (index_add's hint is
  explain_practice_index.py's);
- ``torch.bincount(y)`` of floats or of negative numbers.

Each names the snippet's tensor and sizes; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType

import torch

from .explain_reading import find_call, literal, with_arg

__all__ = ["count_hint"]

_TOPK = "selected index k out of range"
_MULTINOMIAL = "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
_REPEAT = "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
_FLOAT_INDEX = re.compile(
    r"(index_select|index_fill_|index_copy_)\(\): Expected dtype int"
)  # (index_add_: practice)
_BINCOUNT = re.compile(
    r"\"bincount_\w+\" not implemented for '(\w+)'|bincount only supports 1-d non-negative integral"
)
_FLOAT_COUNT = re.compile(
    r"(randperm|randint|arange|zeros|ones|empty)\(\): argument '(\w+)' \(position \d+\) must be int, not float"
)


def count_hint(
    text: str, code: str | None, frame: FrameType | None, failed: tuple[str, Sequence[torch.Tensor]] | None
) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``), by the op
    the tape saw fail (``failed``), that the module's docstring lists; ``None`` for any other."""
    tensors = failed[1] if failed is not None else ()
    if _TOPK in text and tensors:
        return _topk(tensors[0], code, frame)
    if _MULTINOMIAL in text and tensors:
        return _multinomial(tensors[0], code)
    if _REPEAT in text and tensors:
        return _repeat(tensors[0], code)
    index = _FLOAT_INDEX.search(text)
    if index:
        return _float_index(index.group(1).rstrip("_"), code, frame)
    counted = _BINCOUNT.search(text)
    if counted and tensors:
        return _bincount(tensors[0], code, frame)
    floated = _FLOAT_COUNT.search(text)
    if floated:
        return _float_count(floated.group(1), code)
    return None


def _topk(x: torch.Tensor, code: str | None, frame: FrameType | None) -> str | None:
    """topk asked for more values than the dimension holds."""
    call = find_call(code, ("topk",), ("k", "dim"))
    if call is None or "self" not in call:
        return None
    dim = literal(call.get("dim", "-1"), frame)
    if type(dim) is not int or x.dim() == 0:
        return None
    size, k, x_name = x.shape[dim], call.get("k"), call["self"]
    fixed = with_arg(call, "k", f"min({k}, {x_name}.size({dim}))")
    return (
        f"topk picks the k largest along dim {dim}, and {x_name}, {tuple(x.shape)}, has {size} there, fewer than "
        f"k={k}. Ask for at most {size}, {fixed}, or check the dim: topk(k, dim=…) picks along another."
    )


def _multinomial(p: torch.Tensor, code: str | None) -> str:
    """More draws without replacement than there are categories."""
    call = find_call(code, ("multinomial",), ("num_samples", "replacement"))
    n = call.get("num_samples") if call else None
    fixed = (
        f" {ast.unparse(call['call'])[:-1]}, replacement=True)" if call and "replacement" not in call else ""
    )
    return (
        f"torch.multinomial draws without replacement unless told otherwise, so each of the {p.shape[-1]} categories "
        f"can come up once, and {n or 'more'} draws were asked for. Draw with replacement{':' + fixed if fixed else ''}, "
        f"or ask for at most {p.shape[-1]}."
    )


def _repeat(x: torch.Tensor, code: str | None) -> str:
    """``x.repeat(2)`` of a tensor of more dimensions: one count per dimension."""
    call = find_call(code, ("repeat",), ())
    given = [ast.unparse(a) for a in call["rest"]] if call else []
    name = call["self"] if call and "self" in call else "x"
    ones = ["1"] * (x.dim() - len(given))
    example = (
        f" {name}.repeat({', '.join(given + ones)}) repeats along dim 0, {name}.repeat({', '.join(ones + given)}) "
        "along the last."
        if given
        else ""
    )
    return (
        f"repeat takes one count for each dimension of the tensor, and {name} has {x.dim()}, {tuple(x.shape)}, while "
        f"the call gives {len(given)}: write 1 for a dimension to keep as it is.{example}"
    )


def _float_count(op: str, code: str | None) -> str:
    """A count (or size) that is a float, from a ``/`` division: an int is needed."""
    call = find_call(code, (op,), ())
    given = ast.unparse(call["call"].args[0]) if call and call["call"].args else None
    fixed = f" torch.{op}(int({given}))" if given else ""
    division = " (/ always gives a float in Python 3; // gives an int)" if given and "/" in given else ""
    return (
        f"torch.{op} takes a whole number here, and {given or 'it'} is a float{division}. Pass an int:"
        f"{fixed or ' int(n)'}{', or divide with //' if division else ''}."
    )


def _float_index(op: str, code: str | None, frame: FrameType | None) -> str | None:
    """``x.index_select(0, idx)`` with ``idx`` a tensor of floats."""
    call = find_call(code, (op, op + "_"), ("dim", "index"))
    if call is None or "index" not in call:
        return None
    idx = call["index"]
    held = literal(idx, frame)
    dtype = f" ({str(held.dtype).removeprefix('torch.')})" if isinstance(held, torch.Tensor) else ""
    return (
        f"{op} takes its index, the positions it works on, as whole numbers, int64, and {idx} holds floats{dtype}. "
        "Convert it: "
        f"{with_arg(call, 'index', f'{idx}.long()')}."
    )


def _bincount(y: torch.Tensor, code: str | None, frame: FrameType | None) -> str:
    """torch.bincount of floats or of negative numbers: it counts class indices."""
    call = find_call(code, ("bincount",), ())
    name = call["self"] if call and "self" in call else "y"
    if y.dim() != 1 and not y.is_floating_point() and (not y.numel() or int(y.min()) >= 0):
        fix = f"{name}.flatten() to count over all of them"
        what = f"{name} has {y.dim()} dimensions, {tuple(y.shape)}"
    elif y.is_floating_point():
        fix = f"{name}.long() (after rounding, if they are not whole: {name}.round().long())"
        what = f"{name} holds floats ({str(y.dtype).removeprefix('torch.')})"
    else:
        fix = f"{name} - {name}.min() (to count from the lowest), or leave the negatives out, {name}[{name} >= 0]"
        what = (
            f"{name} holds negative numbers (the lowest is {int(y.min())})"
            if y.numel()
            else f"{name} is empty"
        )
    return (
        f"torch.bincount counts how often each of 0, 1, 2, … comes up, so it takes whole numbers of 0 or more, "
        f"in one dimension, and {what}. Pass {fix}."
    )
