"""A ``view`` or ``reshape`` that reorders a tensor's axes (reshape-instead-of-permute).

Images loaded channels-last, ``(N, H, W, C)``, "made" ``(N, C, H, W)`` with
``x.view(N, C, H, W)``; a batch-first ``(N, T, F)`` sequence "made" ``(T, N, F)`` with
``x.reshape(T, N, F)`` for a recurrent layer that wants time first; attention heads split
with ``q.reshape(B, H, T, D)``. Each runs, and the shapes fit what follows, but ``view`` and
``reshape`` keep the numbers in their order and only cut them into the new shape: they never
move an axis. Each "channel" is then a slab of consecutive pixels with their colours
interleaved, each "time step" a mix of samples, and the model trains on scrambled data with
no error. ``permute`` (or ``transpose``) moves the axes.

Told at the op: a ``view``/``reshape`` of floating-point data written on the snippet's line,
whose result has the same number of dimensions (three or more) and the same sizes as its
input, in another order, once the sizes of 1 (which can move freely) are left out. Not where
a size the call writes at a moved place divides, or is a whole number times the size that
place had (``x.view(B, T // 2, 2 * D)``, ``x.reshape(B, -1, 2 * D)`` of ``(B, T, D)``: neighbouring
frames or tokens stacked, a regrouping whose sizes only happen to match the input's in
another order, as toy sizes often do), nor where the line moves axes itself right before or
after the reshape (``q.view(T, B * H, D).transpose(0, 1)``,
``o.transpose(0, 1).contiguous().view(T, B, C)``: heads folded into the batch axis and back,
neighbouring axes merged or split), or the input is the ``.contiguous()`` copy of a
``transpose``/``permute`` (as its graph shows, or, for one made under ``torch.no_grad()``,
the line that last assigned it: ``o = o.transpose(0, 1).contiguous()``) and the view does not
put the sizes back as they were (``x.permute(0, 2, 3, 1).contiguous()`` then
``.view(N, C, H, W)`` is still told).

Attention heads split or merged by a reshape alone are told too: ``(B, T, C)`` cut into
``(B, H, T, C // H)`` (heads before the sequence axis, where ``view(B, T, H, C // H)
.transpose(1, 2)`` was meant), and ``(B, H, T, D)`` cut back into ``(B, T, H * D)`` without the
``transpose(1, 2)`` first. Not where ``H`` equals ``T`` (the shapes cannot tell the orders
apart) or a size is 1, nor where the size written at the heads' place names channels (or,
in a merge, the positions' place groups): a group norm written out, ``x.view(N, G, -1)`` of
``(N, C, H, W)`` with as many groups as rows, and ``x.view(N, C, H, W)`` back.

Scores ``(N, C, H, W)`` cut into rows of class scores by ``logits.view(-1, C)`` are told too
(class_axis.py).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import torch

from ..source import assigned_name, find_name, quoted_code
from .class_axis import class_axis_cut, cuts_class_axis, index_at, index_text, shape_text

__all__ = ["RESHAPE_OPS", "axes_reordered"]

RESHAPE_OPS = frozenset({"view", "reshape"})
_CALLED = re.compile(r"\.(view|reshape)\(|\btorch\.reshape\(")


def axes_reordered(
    op: str,
    args: tuple[Any, ...],
    result: torch.Tensor,
    line: int | None,
    source_lines: Sequence[str],
    frame: FrameType | None,
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` when ``op`` (one of :data:`RESHAPE_OPS`), called at snippet
    ``line`` (in ``frame``) with positional ``args``, gave ``result`` its input's sizes in
    another order; ``None`` otherwise (a reshape that changes the sizes, or only moves
    dimensions of size 1)."""
    given = args[0] if args else None
    if not isinstance(given, torch.Tensor) or not given.is_floating_point():
        return None
    before, after = tuple(given.shape), tuple(result.shape)
    heads = _heads_moved(before, after)
    if heads is not None:
        return _heads_report(op, given, after, heads, line, source_lines, frame)
    if cuts_class_axis(before, after):
        return _class_axis_report(op, given, after, line, source_lines, frame)
    if len(before) < 3 or len(after) != len(before) or before == after or sorted(before) != sorted(after):
        return None
    if [s for s in before if s != 1] == [s for s in after if s != 1]:
        return None  # only a dimension of size 1 moved (a single channel): nothing is reordered
    code = quoted_code(source_lines, line, sys.maxsize)
    called = _CALLED.search(code or "")
    if code is None or called is None:
        return None  # a view inside a library's code, called from this line
    if _regrouped(code, before, after, frame) or _axes_moved_around(code, called):
        return None
    unmoved = _shape_before_move(given)
    if unmoved is None and given.grad_fn is None:
        unmoved = _shape_before_written_move(_receiver(code[: called.start()]), line, source_lines, before)
    if unmoved is not None and unmoved != after:
        return None  # axes moved just before, and not put back as they were: neighbours regrouped
    order = _permutation(before, after)
    name = find_name(given, frame) or _receiver(code[: called.start()]) or "the input"
    out = assigned_name(code) or "the result"
    how = _rearrange(order)
    call = _call_text(code, called)
    quoted = f" ({code})" if len(code) <= 60 else ""
    fixed = code.replace(call, how, 1) if call and call.startswith(".") else None
    return (
        f"{op} reorders no axis: {shape_text(before)} cut into {shape_text(after)}",
        f"Line {line}{quoted} makes {name} of shape {shape_text(before)} into {shape_text(after)}: the same sizes in "
        f"another order. view and reshape keep the {given.numel():,} numbers in the order they are in and "
        f"only cut them into the new shape; they never move an axis.{_example(order, before, after, name, out)} "
        "Every layer after it sees scrambled data (pixels with colours, samples with time steps) and "
        "trains on it all the same: nothing raises.",
        f"Move the axes with {how}"
        + (f": {fixed}" if fixed else f" in place of the {op}")
        + " (add .contiguous() before a later view).",
    )


def _class_axis_report(
    op: str,
    given: torch.Tensor,
    after: tuple[int, ...],
    line: int | None,
    source_lines: Sequence[str],
    frame: FrameType | None,
) -> tuple[str, str, str] | None:
    """:func:`class_axis_cut` for a reshape written on snippet ``line`` (not one inside a
    library's code) that no move of axes on the line comes right before or after."""
    code = quoted_code(source_lines, line, sys.maxsize)
    called = _CALLED.search(code or "")
    if code is None or called is None or _axes_moved_around(code, called):
        return None
    name = find_name(given, frame) or _receiver(code[: called.start()]) or "the input"
    return class_axis_cut(op, given, after, line, code, _call_text(code, called), name)


def _regrouped(code: str, before: tuple[int, ...], after: tuple[int, ...], frame: FrameType | None) -> bool:
    """Whether every reshape call written in ``code`` with ``len(after)`` sizes divides at a
    place whose size changed (``T // 2`` where ``before`` and ``after`` differ), or writes there
    a whole number times the size that place had (``2 * D`` where ``before`` had ``D``, ``D``
    read in ``frame``): sizes computed to regroup the numbers, not an axis order written out."""
    moved = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a]
    verdicts = []
    for found in _CALLED.finditer(code):
        sizes = _sizes_written(_call_text(code, found))
        if sizes is not None and len(sizes) == len(after):
            verdicts.append(
                any(
                    isinstance(n, ast.BinOp)
                    and (
                        isinstance(n.op, ast.FloorDiv | ast.Div)
                        or (isinstance(n.op, ast.Mult) and _stacks(n, before[i], frame))
                    )
                    for i in moved
                    for n in ast.walk(sizes[i])
                )
            )
    return bool(verdicts) and all(verdicts)


def _stacks(product: ast.BinOp, size: int, frame: FrameType | None) -> bool:
    """Whether ``product`` is a whole number written out times ``size`` (``2 * D`` where ``D``,
    read in ``frame``, is ``size``): that axis made some times longer by stacking its
    neighbours, not another axis's name (``H * W``) written in its place."""
    for times, other in ((product.left, product.right), (product.right, product.left)):
        if isinstance(times, ast.Constant) and isinstance(times.value, int) and times.value > 1:
            value: object = None
            if isinstance(other, ast.Constant):
                value = other.value
            elif isinstance(other, ast.Name) and frame is not None:
                value = frame.f_locals.get(other.id, frame.f_globals.get(other.id))
            if isinstance(value, int) and not isinstance(value, bool) and value == size:
                return True
    return False


_MOVE = r"(\.(transpose|permute|movedim|swapaxes|swapdims)\([^()]*\)|\.mT\b|\.T\b)"
_MOVED_BEFORE = re.compile(_MOVE + r"(\.contiguous\(\))?\s*$")
_MOVED_AFTER = re.compile(r"\s*(\.contiguous\(\))?" + _MOVE)


def _axes_moved_around(code: str, called: re.Match[str]) -> bool:
    """Whether the line moves axes itself right before or right after the reshape ``called``
    found in ``code`` (``bmm(w, v).transpose(0, 1).contiguous().view(T, B, C)``,
    ``q.view(T, B * H, D).transpose(0, 1)``): the axes are put in place by that move, and the
    reshape only merges or splits neighbours, as heads folded into the batch are, whose toy
    sizes can be the input's in another order."""
    call = _call_text(code, called)
    after = code[called.start() + len(call) :] if call else ""
    return _MOVED_BEFORE.search(code[: called.start()]) is not None or _MOVED_AFTER.match(after) is not None


def _shape_before_move(given: torch.Tensor) -> tuple[int, ...] | None:
    """The shape ``given`` had before the ``transpose`` or ``permute`` whose ``.contiguous()``
    copy it is (the axes moved and laid out for a view, as the snippet writes it; a library's
    output left transposed is not), read from its autograd nodes; ``None`` where it was not so
    made, or carries no graph."""
    node: Any = given.grad_fn  # its saved dims are attributes torch's stubs do not list
    if node is None or node.name() != "CloneBackward0":
        return None
    node = node.next_functions[0][0]
    if node is None:
        return None
    shape, n = list(given.shape), given.dim()
    if node.name() == "TransposeBackward0":
        a, b = node._saved_dim0 % n, node._saved_dim1 % n
        shape[a], shape[b] = shape[b], shape[a]
        return tuple(shape)
    if node.name() == "PermuteBackward0":
        before = [0] * n
        for i, d in enumerate(node._saved_dims):
            before[d % n] = shape[i]
        return tuple(before)
    return None


_MOVED_COPY = re.compile(r"\.(transpose|permute)\(([\d\s,-]*)\)\.contiguous\(\)\s*(#.*)?$")


def _shape_before_written_move(
    name: str | None, line: int | None, source_lines: Sequence[str], shape: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The shape a tensor of ``shape`` had before the ``.transpose(a, b).contiguous()`` or
    ``.permute(…).contiguous()`` that ends the line last assigning ``name`` above ``line``
    (``o = o.transpose(0, 1).contiguous()``), as the source writes it: what
    :func:`_shape_before_move` reads from the graph, for a tensor with none (made under
    ``torch.no_grad()``); ``None`` where that line is no such move."""
    if name is None or not name.isidentifier() or line is None:
        return None
    assigns = re.compile(rf"^\s*{re.escape(name)}\s*=(?!=)")
    for text in reversed(source_lines[: line - 1]):
        if not assigns.match(text):
            continue
        moved = _MOVED_COPY.search(text)
        try:
            dims = ast.literal_eval(f"({moved.group(2)},)") if moved else None
        except (SyntaxError, ValueError):
            return None
        n = len(shape)
        if not dims or not all(isinstance(d, int) and -n <= d < n for d in dims):
            return None
        before = list(shape)
        if moved and moved.group(1) == "transpose" and len(dims) == 2:
            a, b = dims[0] % n, dims[1] % n
            before[a], before[b] = shape[b], shape[a]
            return tuple(before)
        if moved and moved.group(1) == "permute" and sorted(d % n for d in dims) == list(range(n)):
            for i, d in enumerate(dims):
                before[d % n] = shape[i]
            return tuple(before)
        return None
    return None


def _sizes_written(call: str | None) -> list[ast.expr] | None:
    """The size expressions of a reshape call's text (``.view(B, T // 2, -1)``,
    ``torch.reshape(x, (T, B, F))``); ``None`` where they are not written out one by one."""
    if call is None:
        return None
    try:
        parsed = ast.parse("_" + call if call.startswith(".") else call, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(parsed, ast.Call) or parsed.keywords:
        return None
    args = parsed.args[1:] if call.startswith("torch.") else parsed.args
    if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List):
        args = list(args[0].elts)
    return None if any(isinstance(a, ast.Starred) for a in args) else list(args)


def _permutation(before: tuple[int, ...], after: tuple[int, ...]) -> list[int]:
    """For each dimension of ``after``, the dimension of ``before`` it has the size of (equal
    sizes taken in their order)."""
    free = list(range(len(before)))
    order = []
    for size in after:
        j = next(i for i in free if before[i] == size)
        free.remove(j)
        order.append(j)
    return order


def _rearrange(order: list[int]) -> str:
    """``.transpose(a, b)`` for a swap of two dimensions, else ``.permute(…)``."""
    moved = [i for i, j in enumerate(order) if i != j]
    if len(moved) == 2:
        return f".transpose({moved[0]}, {moved[1]})"
    return f".permute({', '.join(map(str, order))})"


def _example(order: list[int], before: tuple[int, ...], after: tuple[int, ...], name: str, out: str) -> str:
    """`` So x[0, 1, 0, 0] is imgs[0, 4, 0, 0], where …``: one element of the result one step
    along a moved dimension, the element of the input it is, and the one moving the axes
    gives; empty where no such step tells them apart."""
    for dim, source in enumerate(order):
        if dim == source or after[dim] == 1:
            continue
        step = tuple(int(i == dim) for i in range(len(after)))
        taken = index_at(_flat(step, after), before)
        meant = tuple(int(i == source) for i in range(len(before)))
        if taken != meant:
            return (
                f" So {out}[{index_text(step)}] is {name}[{index_text(taken)}], where moving the axes would give "
                f"{name}[{index_text(meant)}]."
            )
    return ""


def _flat(index: tuple[int, ...], shape: tuple[int, ...]) -> int:
    flat = 0
    for i, size in zip(index, shape, strict=True):
        flat = flat * size + i
    return flat


def _receiver(before: str) -> str | None:
    """The expression that ends ``before`` (``torch.from_numpy(data)`` in ``x = torch.from_numpy(data)``),
    read back over names, dots and brackets; ``None`` for none."""
    depth, start = 0, len(before)
    while start > 0:
        char = before[start - 1]
        if char in ")]":
            depth += 1
        elif char in "([":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and not (char.isalnum() or char in "_."):
            break
        start -= 1
    found = before[start:]
    return found if found and (found[0].isalpha() or found[0] == "_") else None


def _call_text(code: str, called: re.Match[str]) -> str | None:
    """The call ``called`` found in ``code``, up to its closing parenthesis."""
    depth = 0
    for end in range(called.end() - 1, len(code)):
        depth += {"(": 1, ")": -1}.get(code[end], 0)
        if depth == 0:
            return code[called.start() : end + 1]
    return None


def _heads_moved(before: tuple[int, ...], after: tuple[int, ...]) -> tuple[str, int] | None:
    """``("split", k)`` where ``after`` is ``P + (H, T, D)`` of ``before`` = ``P + (T, H * D)``,
    ``("merged", k)`` where ``before`` is ``P + (H, T, D)`` and ``after`` ``P + (T, H * D)``
    (``k = len(P)``); ``None`` otherwise, and where ``H == T`` or one of them or ``D`` is 1."""
    for kind, cut, whole in (("split", after, before), ("merged", before, after)):
        if len(cut) == len(whole) + 1 >= 3:
            k = len(whole) - 2
            h, t, d = cut[k:]
            if cut[:k] == whole[:k] and (t, h * d) == whole[k:] and h != t and min(h, t, d) > 1:
                return kind, k
    return None


def _heads_report(
    op: str,
    given: torch.Tensor,
    after: tuple[int, ...],
    heads: tuple[str, int],
    line: int | None,
    source_lines: Sequence[str],
    frame: FrameType | None,
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` for heads split or merged (:func:`_heads_moved`) by ``op``
    alone at snippet ``line``, which made ``given`` into shape ``after``; ``None`` for a
    reshape not written on that line with its sizes one by one."""
    kind, k = heads
    code = quoted_code(source_lines, line, sys.maxsize)
    called = _CALLED.search(code or "")
    if code is None or called is None:
        return None
    before = tuple(given.shape)
    h, _, d = after[k:] if kind == "split" else before[k:]
    name = find_name(given, frame) or _receiver(code[: called.start()])
    out = assigned_name(code)
    zeros = (0,) * k
    if kind == "split":  # head 1 at position 0 of the result, and where splitting first puts it
        step, meant = (*zeros, 1, 0, 0), (*zeros, 0, d)
    else:  # position 0, feature d (head 1's first) of the result, and where that is in the input
        step, meant = (*zeros, 0, d), (*zeros, 1, 0, 0)
    taken = index_at(_flat(step, after), before)
    call = _call_text(code, called)
    sizes = _sizes_written(call)
    if sizes is None or len(sizes) != len(after):
        return None  # the line's own reshape writes other sizes: this one ran in a library's code
    if _channel_groups_written(sizes[k], kind):
        return None
    swap = f".transpose({k}, {k + 1})"
    fixed = None
    if call is not None and call.startswith("."):
        if kind == "merged":
            fixed = code.replace(call, swap + call.replace(".view(", ".reshape(", 1), 1)
        else:
            order = [*sizes[:k], sizes[k + 1], sizes[k], *sizes[k + 2 :]]
            written = f"{call[: call.index('(')]}({', '.join(ast.unparse(n) for n in order)})"
            fixed = code.replace(call, written + swap, 1)
    quoted = f" ({code})" if len(code) <= 60 else ""
    input_at = (
        (lambda i: f"{name}[{index_text(i)}]") if name else (lambda i: f"the input's [{index_text(i)}]")
    )
    what = (
        f"a split into {h} heads, put before the sequence axis by the cut alone"
        if kind == "split"
        else f"{h} heads joined back without first moving them behind the sequence axis"
    )
    how, code_fix = (
        (
            "split the last axis where it is, then move the heads",
            f".view({_sizes((*before[:-1], h, d))}){swap}",
        )
        if kind == "split"
        else (
            "move the heads behind the sequence axis before the reshape",
            f"{swap}.reshape({_sizes(after)})",
        )
    )
    return (
        f"{op} mixes heads with positions: {shape_text(before)} cut into {shape_text(after)}",
        f"Line {line}{quoted} makes {name or 'its input'} of shape {shape_text(before)} into {shape_text(after)}: "
        f"{what}. view and reshape keep the {given.numel():,} numbers in the order they are in and only cut "
        f"them into the new shape; they never move an axis. So {out or 'the result'}[{index_text(step)}] is "
        f"{input_at(taken)}, where {'splitting and then moving the axes' if kind == 'split' else 'moving the axes first'} "
        f"would give {input_at(meant)}: each head attends over a mix of positions and features, and the model "
        "trains on it all the same: nothing raises.",
        f"{how[0].upper()}{how[1:]}"
        + (f": {fixed}" if fixed else f": {code_fix} in place of the {op}")
        + ".",
    )


_GROUPS = re.compile(r"(?i)g|\w*groups?\w*")
_CHANNELS = re.compile(r"(?i)c|ch|\w*channels?\w*")


def _channel_groups_written(size: ast.expr, kind: str) -> bool:
    """Whether ``size``, written where a heads split puts the heads (``kind`` ``"split"``) or a
    merge the positions, names channels or groups of channels: a group norm written out,
    ``x.view(N, G, -1)`` of ``(N, C, H, W)`` and ``x.view(N, C, H, W)`` back, whose sizes match
    heads and positions only where ``G`` equals ``H``."""
    named = size.attr if isinstance(size, ast.Attribute) else size.id if isinstance(size, ast.Name) else None
    return named is not None and bool((_CHANNELS if kind == "split" else _GROUPS).fullmatch(named))


def _sizes(shape: tuple[int, ...]) -> str:
    return ", ".join(map(str, shape))
