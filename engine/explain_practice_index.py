"""The indexing, scatter and broadcasting hints of explain_practice.py, read from the failed
op's operands (``rec.failed_op``): an index past the end of what it picks from (a graph's
node ids counted from 1, a timestep drawn up to T, class indices gathered along dim 0), ``index_add_`` given float indices or a
source of another dtype, ``scatter_add`` given a 1-D index for 2-D messages, ``gather`` of a
1-D schedule with a 2-D index, a per-sample tensor that meets a batch of maps from the right
(a timestep's ᾱ, a time embedding), a VAE's KL summed over the batch, positional encodings
made for fewer positions than the sequence, and attention masks that do not line up with the
scores (a key padding mask without its head and query dimensions, a causal mask for another
length)."""

from __future__ import annotations

import ast
import re
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_reading import find_call, parsed, shape, with_arg, wrapped
from .source import bound_to, quoted_code

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["index_hint"]

_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for dimension (\d+) with size (\d+)")
_INDEX_FLOAT = re.compile(
    r"(index_add_?|index_copy_?|index_fill_?)\(\): Expected dtype int32/int64 for index"
)
_SOURCE_DTYPE = re.compile(
    r"(index_add_?)\(\): self \((\w+)\) and source \((\w+)\) must have the same scalar type"
)
_SAME_DIMS = re.compile(r"Index tensor must have the same number of dimensions as (?:input|self) tensor")
_BROADCAST = re.compile(r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\)")
_CALLS = {  # op: (the names it is called by, its parameters after self)
    "index_add_": (("index_add_", "index_add"), ("dim", "index", "source")),
    "index_add": (("index_add_", "index_add"), ("dim", "index", "source")),
    "index_copy_": (("index_copy_", "index_copy"), ("dim", "index", "source")),
    "index_fill_": (("index_fill_", "index_fill"), ("dim", "index", "value")),
    "scatter_add_": (("scatter_add_", "scatter_add"), ("dim", "index", "src")),
    "scatter_add": (("scatter_add_", "scatter_add"), ("dim", "index", "src")),
    "scatter_reduce": (("scatter_reduce", "scatter_reduce_"), ("dim", "index", "src", "reduce")),
    "scatter_reduce_": (("scatter_reduce", "scatter_reduce_"), ("dim", "index", "src", "reduce")),
    "gather": (("gather",), ("dim", "index")),
    "scatter": (("scatter", "scatter_"), ("dim", "index", "src")),
    "scatter_": (("scatter", "scatter_"), ("dim", "index", "src")),
}
_ELEMENTWISE = frozenset({"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "iadd", "imul"})
_OVER_BATCH = re.compile(r"\.(sum|mean)\(\s*(?:dim\s*=\s*)?0\s*\)")
_SLICED = re.compile(r"([^\W\d][\w.]*)\[\s*:\s*([^\[\]:,]+?)\s*\]")


def index_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (see the module docstring), or ``None``."""
    if rec.failed_op is None:
        return None
    text = str(exc)
    op, ts = rec.failed_op
    bounds = _BOUNDS.search(text)
    if bounds:
        return _out_of_range(op, ts, code, frame, (int(bounds.group(2)), int(bounds.group(3))), rec)
    if _INDEX_FLOAT.search(text) or _SOURCE_DTYPE.search(text):
        return _index_dtype(op, ts, code)
    if _SAME_DIMS.search(text):
        return _scatter_dims(op, ts, code)
    if _BROADCAST.search(text) and op in _ELEMENTWISE and len(ts) == 2:
        return (
            _summed_over_batch(ts, rec, code, frame)
            or _positions_short(ts, code, frame)
            or _leading(ts, code, frame)
        )
    if _BROADCAST.search(text) and op in ("masked_fill", "masked_fill_", "scaled_dot_product_attention"):
        return _mask_shape(op, ts, code)
    return None


def _named(code: str | None, op: str) -> dict[str, object] | None:
    names, params = _CALLS[op]
    return find_call(code, names, params)


def _out_of_range(
    op: str,
    ts: list[torch.Tensor],
    code: str | None,
    frame: FrameType | None,
    at: tuple[int, int],
    rec: Recorder,
) -> str | None:
    """An index tensor holding a value at or past ``size``, the length of dim ``dim`` (``at``)."""
    dim, size = at
    if op == "__getitem__" and len(ts) == 2:
        subscript = next(
            (n for n in ast.walk(parsed(code) or ast.Module([], [])) if isinstance(n, ast.Subscript)), None
        )
        if subscript is None or isinstance(subscript.slice, ast.Tuple | ast.Slice) or dim != 0:
            return None
        target, idx = ast.unparse(subscript.value), ast.unparse(subscript.slice)
        index = ts[1]
    elif op in _CALLS:
        call = _named(code, op)
        if call is None or "index" not in call:
            return None
        target, idx, index = str(call.get("self", "the tensor")), str(call["index"]), ts[1]
    else:
        return None
    if index.is_floating_point() or index.dtype == torch.bool or not index.numel():
        return None
    low, high = int(index.min()), int(index.max())
    if high < size:
        return None
    across = _other_dim(op, code, ts, dim, high)
    if across:
        return across
    along = f" along dim {dim}" if dim else ""
    start = (
        f"{idx} holds {high}, and {target} has {size} entries{along}, numbered 0 to {size - 1}: every index must "
        f"be below {size}."
    )
    line, made = _made(rec, index)
    drawn = re.search(r"\brandint\(([^()]*(?:\([^()]*\))?[^()]*)\)", made or "")
    if drawn:
        return (
            f"{start} Line {line} ({made}) draws it, and torch.randint(low, high, …) draws from low to high - 1: "
            f"draw from 0 to {size - 1} with torch.randint(0, {size}, …)."
        )
    if low == 1 and high == size:
        nodes = " (node ids counted from 1)" if "edge" in idx else ""
        return f"{start} Its values run from 1 to {high}{nodes}: count from 0, {_postfix(idx)} - 1."
    graph = " A graph's edge_index must number its nodes 0 to x.size(0) - 1." if "edge" in idx else ""
    return f"{start}{graph} Either {target} needs {high + 1} entries{along}, or {idx} was made wrong."


def _other_dim(op: str, code: str | None, ts: list[torch.Tensor], dim: int, high: int) -> str | None:
    """``logits.gather(0, targets.unsqueeze(1))``: indices that fit another dimension of the
    tensor, one the index tensor has a size of 1 in, as picking one entry per row does."""
    call = find_call(code, ("gather",), ("dim", "index"))
    if op != "gather" or call is None or "dim" not in call or ts[0].dim() != ts[1].dim():
        return None
    fits = [
        d
        for d in range(ts[0].dim())
        if d != dim % ts[0].dim() and ts[1].shape[d] == 1 and ts[0].shape[d] > high
    ]
    if len(fits) != 1:
        return None
    other, target, idx = fits[0], call.get("self", "the tensor"), call["index"]
    return (
        f"{target}.gather({call['dim']}, …) picks along dim {call['dim']}, which has {ts[0].shape[dim]} entries, and "
        f"{idx} holds values up to {high}, which fit dim {other} ({ts[0].shape[other]} entries), where {idx} has size "
        f"1: it picks one entry per row there. Gather along that dim: {with_arg(call, 'dim', str(other))}."
    )


def _made(rec: Recorder, t: torch.Tensor) -> tuple[int | None, str | None]:
    """The snippet line that made ``t`` and its code, where the run saw it made."""
    tid = rec.tensors.known(t)
    line = rec.tensors.lines.get(tid) if tid is not None else None
    return line, quoted_code(rec.statement_lines, line, 200)


def _postfix(source: str) -> str:
    """``source`` ready for ``.view(…)`` or ``- 1`` after it: bracketed unless it is a name, an
    attribute, a subscript or a call (``abar[t].sqrt()`` stays as it is, ``1 - a`` gets brackets)."""
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        return f"({source})"
    return source if isinstance(node, ast.Name | ast.Attribute | ast.Subscript | ast.Call) else f"({source})"


def _index_dtype(op: str, ts: list[torch.Tensor], code: str | None) -> str | None:
    """index_add_ (index_copy_, index_fill_) given float indices, or a source of another dtype."""
    if op not in _CALLS or len(ts) < 2:
        return None
    call = _named(code, op)
    if call is None or "index" not in call:
        return None
    index = ts[1]
    if index.is_floating_point():
        if index.numel() and not bool((index == index.round()).all()):
            return None
        idx = str(call["index"])
        fixed = idx.removesuffix(".float()") if idx.endswith(".float()") else f"{wrapped(idx)}.long()"
        return (
            f"{op} takes its index as integers (int64), and {idx} holds floats. Pass "
            f"{with_arg(call, 'index', fixed)}."
        )
    if len(ts) == 3 and "source" in call and ts[0].dtype != ts[2].dtype:
        src, into = str(call["source"]), ts[0].dtype
        cast = f"{wrapped(src)}.float()" if into == torch.float32 else f"{wrapped(src)}.to({into})"
        return (
            f"{op} adds {src} into a tensor of {str(into).removeprefix('torch.')}, and {src} is "
            f"{str(ts[2].dtype).removeprefix('torch.')}: they must have one dtype (torch.from_numpy of a NumPy array "
            f"makes float64). Convert it: {with_arg(call, 'source', cast)}."
        )
    return None


def _scatter_dims(op: str, ts: list[torch.Tensor], code: str | None) -> str | None:
    """scatter_add of messages (E, D) by a 1-D index (E,); gather of a 1-D tensor by an index of more dimensions."""
    call = _named(code, op) if op in _CALLS else None
    if call is None or "index" not in call or "self" not in call:
        return None
    into, idx = str(call["self"]), str(call["index"])
    if op.startswith("scatter") and len(ts) == 3 and "src" in call:
        index, src = ts[1], ts[2]
        if (
            index.dim() != 1
            or src.dim() != 2
            or index.shape[0] != src.shape[0]
            or call.get("dim") not in ("0", "-2")
        ):
            return None
        expanded = with_arg(call, "index", f"{wrapped(idx)}.unsqueeze(1).expand_as({call['src']})")
        added = (
            f"{wrapped(into)}.{'index_add_' if op.endswith('_') else 'index_add'}(0, {idx}, {call['src']})"
        )
        alone = f" (unsqueeze(1) alone would add only column 0 of {call['src']})"
        other = f", or {added}, which adds whole rows by a 1-D index" if op.startswith("scatter_add") else ""
        return (
            f"{op} takes an index of the same shape as what it adds, one target row per element, and {idx} is "
            f"{shape(index.shape)} where {call['src']} is {shape(src.shape)}. Spread it over the columns: "
            f"{expanded}{alone}{other}."
        )
    if op == "gather" and len(ts) == 2 and ts[0].dim() == 1 and ts[1].dim() > 1:
        index = ts[1]
        return (
            f"gather picks along a dimension of its own, so its index has as many dimensions as the tensor: {into} is "
            f"{shape(ts[0].shape)} and {idx} {shape(index.shape)}. Index it instead, {wrapped(into)}[{idx}], which "
            f"keeps {idx}'s shape {shape(index.shape)}; or gather by a flat index, {with_arg(call, 'index', f'{wrapped(idx)}.flatten()')}."
        )
    return None


def _sides(code: str | None, frame: FrameType | None, ts: list[torch.Tensor]) -> list[str | None]:
    """What ``code`` writes for each operand of an elementwise op: a name bound to it, or the
    other side of a binary operation whose one side is the other operand."""
    names: list[str | None] = [None, None]
    for node in ast.walk(parsed(code) or ast.Module([], [])):
        if not isinstance(node, ast.BinOp):
            continue
        sides = [node.left, node.right]
        held = [bound_to(ast.unparse(s), frame) for s in sides]
        for i, t in enumerate(ts):
            for j in (0, 1):
                if held[j] is t:
                    names[i] = ast.unparse(sides[j])
                    if held[1 - j] is not ts[1 - i] and names[1 - i] is None:
                        names[1 - i] = ast.unparse(sides[1 - j])
        if all(names):
            break
    return names


def _leading(ts: list[torch.Tensor], code: str | None, frame: FrameType | None) -> str | None:
    """A per-sample (or per-channel) tensor whose shape is the start of a batch of maps'."""
    small, large = sorted(ts, key=lambda t: t.dim())
    if not 0 < small.dim() < large.dim() or large.shape[: small.dim()] != small.shape:
        return None
    names = _sides(code, frame, ts)
    name = names[0] if small is ts[0] else names[1]
    other = names[1] if small is ts[0] else names[0]
    if name is None:
        return None
    extra = large.dim() - small.dim()
    if small.dim() == 1:
        fixed = f"{_postfix(name)}.view(-1{', 1' * extra})"
    else:
        fixed = f"{_postfix(name)}[..., {', '.join(['None'] * extra)}]"
    each = "one number per sample" if small.dim() == 1 else f"one {shape(small.shape[1:])} per sample"
    return (
        f"{name} is {shape(small.shape)}, {each}, and {other or 'the other operand'} is {shape(large.shape)}. "
        f"Broadcasting lines shapes up from the right, so {name}'s sizes meet the last dimensions, "
        f"{shape(large.shape[-small.dim() :])}, not the first. Give it trailing dimensions of 1: {fixed}, "
        f"{shape([*small.shape, *[1] * extra])}, which spreads over the rest (each per-sample factor on the line needs it)."
    )


def _summed_over_batch(
    ts: list[torch.Tensor], rec: Recorder, code: str | None, frame: FrameType | None
) -> str | None:
    """A per-sample loss (N,) meeting a term reduced over dim 0, the batch: one number per feature."""
    if any(t.dim() != 1 for t in ts):
        return None
    names = _sides(code, frame, ts)
    for i, t in enumerate(ts):
        tid = rec.tensors.known(t)
        at = rec.tensors.lines.get(tid) if tid is not None else None
        made = quoted_code(rec.statement_lines, at, 200) or ""
        reduced = _OVER_BATCH.search(made)
        if reduced and names[i]:
            how = "summed" if reduced.group(1) == "sum" else "averaged"
            return (
                f"{names[i]} (line {at}) was {how} over dim 0, the batch, so it holds one number per feature "
                f"({t.shape[0]}) where {names[1 - i] or 'the other operand'} holds one per sample ({ts[1 - i].shape[0]}). "
                f"Reduce over the features instead: .{reduced.group(1)}(1) (or dim=-1), which gives "
                f"({ts[1 - i].shape[0]},)."
            )
    return None


def _positions_short(ts: list[torch.Tensor], code: str | None, frame: FrameType | None) -> str | None:
    """``x + self.pe[: x.size(1)]`` with a positional table of fewer positions than x has."""
    found = _SLICED.search(code or "")
    table = bound_to(found.group(1), frame) if found else None
    if not found or not isinstance(table, torch.Tensor) or table.dim() < 2:
        return None
    small, large = sorted(ts, key=lambda t: t.dim())
    rows = table.shape[0]
    if small.shape[0] != rows or small.dim() >= large.dim():
        return None
    at = large.dim() - small.dim()
    if large.shape[at] <= rows:
        return None
    name = found.group(1)
    return (
        f"{name} holds {rows} positions (the max_len it was made with), and the sequence has {large.shape[at]}: "
        f"{name}[:{found.group(2)}] stops at its end, {rows} rows. Make the table for the longest sequence, a "
        f"max_len of at least {large.shape[at]}."
    )


def _mask_shape(op: str, ts: list[torch.Tensor], code: str | None) -> str | None:
    """An attention mask that does not line up with the (…, L, S) scores: a (batch, S) key
    padding mask without its head and query dimensions, or a square mask of another length."""
    if op == "scaled_dot_product_attention":
        if len(ts) != 4:
            return None
        scores_shape = [*ts[0].shape[:-1], ts[1].shape[-2]]
        call = find_call(code, ("scaled_dot_product_attention",), ("key", "value", "attn_mask"))
        param = "attn_mask"
    else:
        scores_shape = list(ts[0].shape)
        call = find_call(code, ("masked_fill", "masked_fill_"), ("mask", "value"))
        param = "mask"
    mask = ts[-1]
    if call is None or param not in call or len(scores_shape) < 3:
        return None
    name = str(call[param])
    bare = name.removeprefix("~")  # (mask, not ~mask, is what was made too large)
    batch, length, keys = scores_shape[0], scores_shape[-2], scores_shape[-1]
    if mask.dim() == 2 and list(mask.shape) == [batch, keys]:
        spread = ", ".join([":"] + ["None"] * (len(scores_shape) - 2) + [":"])
        fixed = with_arg(call, param, f"{wrapped(name)}[{spread}]")
        return (
            f"{name} is {shape(mask.shape)}, one row per sequence marking its keys (a padding mask), and the scores "
            f"are {shape(scores_shape)}. Broadcasting lines shapes up from the right, so its rows met the queries "
            f"({length}), not the batch. Give it the missing dimensions: {fixed}, "
            f"{shape([batch, *[1] * (len(scores_shape) - 2), keys])}."
        )
    if mask.dim() >= 2 and mask.shape[-1] == mask.shape[-2] != keys and length == keys:
        scores = f"{call['self']}.size(-1)" if param == "mask" and "self" in call else "the sequence's length"
        return (
            f"{bare} is {shape(mask.shape)}, a mask for {mask.shape[-1]} positions, and the scores it masks are "
            f"{length} × {keys}. Make it for the sequence's own length, {keys}: read it off the input ({scores}) "
            "rather than a block or maximum size."
        )
    return None
