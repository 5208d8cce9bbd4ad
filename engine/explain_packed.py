"""Hints for packed sequences (``torch.nn.utils.rnn``), told with the snippet's own calls:

- ``pack_padded_sequence`` (or ``pack_sequence``) given lengths that do not go down, with
  ``enforce_sorted=True`` (the default): pass ``enforce_sorted=False``, written into the
  snippet's call;
- lengths holding a 0: a sequence of no steps cannot be packed;
- lengths as a column (2-D) or on the GPU: a 1-D int64 tensor on the CPU;
- ``pad_packed_sequence(…, total_length=n)`` with ``n`` shorter than the longest sequence;
- the output ``pad_packed_sequence`` gave back without ``total_length`` met with a tensor of
  the padded input's length (targets, a mask): it pads only to the longest sequence, which is
  shorter, so the two differ by that length (an elementwise op, or a loss's batch after a
  reshape); ``total_length=`` the input's length makes them agree;
- a PackedSequence handed to a layer that takes a tensor: unpack it, or take ``h_n``;
- an RNN given the lengths (or a mask) as a keyword, which it has none of: pack the batch.

The padded input and the lengths are read from the snippet's ``pack_padded_sequence`` line
and its variables (nothing of the snippet is run); a hint that cannot name them says so in
general words, and the one about a shorter output is given only where the error's sizes are
the longest length and the input's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from .explain_reading import call_name, calls, literal
from .source import bound_to, find_name, is_a, quoted_code, visible_names

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["packed_hint"]

_UNSORTED = "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True"
_EMPTY = "Length of all samples has to be greater than 0"
_TOTAL_LENGTH = re.compile(
    r"Expected total_length to be at least the length of the longest sequence in input, but got "
    r"total_length=(\d+) and max sequence length being (\d+)"
)
_PACKED_INTO = re.compile(r"^(\w+)\(\): argument '\w+' \(position \d+\) must be Tensor, not PackedSequence$")
# "The size of tensor a (5) must match the size of tensor b (6) at non-singleton dimension 1"
_SIZES = re.compile(r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")
# "Expected input batch_size (15) to match target batch_size (18)." (a loss after a reshape)
_BATCHES = re.compile(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)")
# "LSTM.forward() got an unexpected keyword argument 'lengths'" (seq_lens, lens, mask, …)
_LENGTHS_GIVEN = re.compile(
    r"^(LSTM|GRU|RNN)\.forward\(\) got an unexpected keyword argument '(\w*len\w*|\w*mask\w*)'$"
)
# "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor"
_LENGTHS_KIND = re.compile(
    r"'lengths' argument should be a 1D CPU int64 tensor, but got (\d+)D (\S+) \w+ tensor"
)
_PACK = ("pack_padded_sequence",)
_PACK_PARAMS = ("input", "lengths", "batch_first", "enforce_sorted")
_PAD = ("pad_packed_sequence",)
_PAD_PARAMS = ("sequence", "batch_first", "padding_value", "total_length")


def packed_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``) about a
    packed sequence (see the module's docstring); ``None`` for any other error."""
    text = str(exc)
    if _UNSORTED in text:
        return _unsorted(code, frame)
    if _EMPTY in text:
        return _empty(code, frame)
    short = _TOTAL_LENGTH.search(text)
    if short:
        return _total_length_short(int(short.group(1)), int(short.group(2)), code, rec.statement_lines)
    into = _PACKED_INTO.match(text)
    if into:
        return _packed_into_layer(into.group(1), code, frame, rec.statement_lines)
    kind = _LENGTHS_KIND.search(text)
    if kind:
        return _lengths_kind(int(kind.group(1)), kind.group(2), code)
    given = _LENGTHS_GIVEN.match(text)
    if given:
        return _lengths_given(given.group(1), given.group(2), code)
    sizes = _SIZES.search(text) or _BATCHES.search(text)
    if sizes:
        return _shorter_than_input(int(sizes.group(1)), int(sizes.group(2)), rec, frame)
    return None


def _call(code: str | None, names: Sequence[str], params: Sequence[str]) -> dict[str, Any] | None:
    """The first call on the line to one of ``names`` (``pack_padded_sequence(…)`` or
    ``nn.utils.rnn.pack_padded_sequence(…)``): its arguments' source by parameter, and
    ``call``, the node."""
    for node in calls(code):
        if call_name(node) in names and not any(isinstance(a, ast.Starred) for a in node.args):
            found: dict[str, Any] = dict(zip(params, map(ast.unparse, node.args), strict=False))
            found.update({k.arg: ast.unparse(k.value) for k in node.keywords if k.arg})
            found["call"] = node
            return found
    return None


def _with_keyword(found: dict[str, Any], name: str, value: str) -> str:
    """The call :func:`_call` found, written with ``name=value`` (set, or added last)."""
    call: ast.Call = found["call"]
    new = ast.keyword(name, ast.parse(value, mode="eval").body)
    keywords = [new if k.arg == name else k for k in call.keywords]
    if all(k.arg != name for k in call.keywords):
        keywords.append(new)
    return ast.unparse(ast.Call(func=call.func, args=call.args, keywords=keywords))


def _values(expression: str | None, frame: FrameType | None) -> list[int] | None:
    """The lengths written on the line (``[5, 3, 2]``) or held by the name written there."""
    value = literal(expression, frame)
    if is_a(value, torch.Tensor) and value.dim() == 1:
        value = value.tolist()
    if isinstance(value, list | tuple) and all(type(v) in (int, float) for v in value):
        return [int(v) for v in value]
    return None


def _shown(values: list[int] | None) -> str:
    """The lengths quoted in a hint: ``, which is [2, 5, 3]`` (nothing for a long list)."""
    return f" ({values})" if values is not None and len(values) <= 8 else ""


def _unsorted(code: str | None, frame: FrameType | None) -> str:
    found = _call(code, _PACK, _PACK_PARAMS)
    listed = _call(code, ("pack_sequence",), ("sequences", "enforce_sorted"))
    if found is None and listed is not None:  # pack_sequence(seqs): the lengths are the sequences'
        seqs = bound_to(listed.get("sequences"), frame)
        sizes = [len(t) for t in seqs] if isinstance(seqs, list | tuple) else None
        lengths = f"the lengths of {listed['sequences']}" if "sequences" in listed else "the lengths"
        fixed, name = _with_keyword(listed, "enforce_sorted", "False"), "pack_sequence"
    else:
        lengths = found.get("lengths", "the lengths") if found else "the lengths"
        sizes = _values(lengths, frame)
        name = "pack_padded_sequence"
        fixed = (
            _with_keyword(found, "enforce_sorted", "False") if found else f"{name}(…, enforce_sorted=False)"
        )
    return (
        f"{name} takes the sequences longest first unless told otherwise (enforce_sorted=True is the default), and "
        f"{lengths}{_shown(sizes)} do not go down. Pass enforce_sorted=False, {fixed}: it sorts the batch itself "
        "and hands the RNN's output and final state back in the batch's own order, so the targets still line up. "
        "(Sorting is needed only to export the model to ONNX.)"
    )


def _empty(code: str | None, frame: FrameType | None) -> str:
    found = _call(code, _PACK, _PACK_PARAMS)
    lengths = found.get("lengths", "the lengths") if found else "the lengths"
    values = _values(lengths, frame)
    where = f": {lengths}[{values.index(0)}] is 0" if values and 0 in values else ""
    return (
        f"pack_padded_sequence packs each sequence's first steps, as many as its length says, and a sequence of "
        f"no steps has none to pack{where}. Leave the empty sequences out of the batch (in the Dataset or "
        f"collate_fn), or count each as one step, {lengths}.clamp(min=1), which runs its padding through the RNN "
        "once."
    )


def _pack_line(source_lines: Sequence[str]) -> dict[str, Any] | None:
    """The snippet's ``pack_padded_sequence`` call (the first one found), as :func:`_call`
    reads it."""
    for at in range(1, len(source_lines) + 1):
        found = _call(quoted_code(source_lines, at, 10_000), _PACK, _PACK_PARAMS)
        if found and "input" in found:
            return found
    return None


def _pad_line(source_lines: Sequence[str]) -> tuple[int, dict[str, Any]] | None:
    """The snippet's ``pad_packed_sequence`` call with no ``total_length``, and its line."""
    for at in range(1, len(source_lines) + 1):
        found = _call(quoted_code(source_lines, at, 10_000), _PAD, _PAD_PARAMS)
        if found and "sequence" in found and "total_length" not in found:
            return at, found
    return None


def _time_dim(found: dict[str, Any]) -> int:
    """The dimension of the padded input that counts steps: 1 with batch_first=True, else 0."""
    return 1 if found.get("batch_first") == "True" else 0


def _total_length_short(given: int, longest: int, code: str | None, source_lines: Sequence[str]) -> str:
    pack = _pack_line(source_lines)
    found = _call(code, _PAD, _PAD_PARAMS)
    fix = (
        f"pass the padded input's own length, total_length={pack['input']}.size({_time_dim(pack)}) (its length "
        "before packing)"
        if pack
        else "pass the padded batch's length before packing"
    )
    kept = (
        f"; or leave it out: {ast.unparse(_without(found['call'], 'total_length'))} pads to {longest}"
        if found
        else ""
    )
    return (
        f"total_length is the length pad_packed_sequence pads every sequence to, and the longest sequence here has "
        f"{longest} steps: it cannot be cut to {given}. To line the output up with tensors of the original length, "
        f"{fix}{kept}."
    )


def _without(call: ast.Call, name: str) -> ast.Call:
    return ast.Call(func=call.func, args=call.args, keywords=[k for k in call.keywords if k.arg != name])


def _shorter_than_input(a: int, b: int, rec: Recorder, frame: FrameType | None) -> str | None:
    """Sizes ``a`` and ``b`` that are the longest length and the padded input's (or those
    times the batch, after a reshape), where ``pad_packed_sequence`` ran without
    ``total_length`` on the output of an RNN given ``pack_padded_sequence`` of that input."""
    pack, pad = _pack_line(rec.statement_lines), _pad_line(rec.statement_lines)
    if pack is None or pad is None:
        return None
    padded = bound_to(pack["input"], frame)  # (globals overlaid by the frame's locals)
    lengths = _values(pack.get("lengths"), frame)
    if not is_a(padded, torch.Tensor) or not lengths:
        return None
    dim = _time_dim(pack)
    if padded.dim() <= dim:
        return None
    steps, longest, batch = padded.shape[dim], max(lengths), padded.shape[1 - dim]
    if longest >= steps or {a, b} not in ({longest, steps}, {longest * batch, steps * batch}):
        return None
    at, found = pad
    seqs, fixed = pack["input"], _with_keyword(found, "total_length", f"{pack['input']}.size({dim})")
    cut = f"[:, :{longest}]" if dim == 1 else f"[:{longest}]"
    others = [
        t for t in (rec.failed_op[1] if rec.failed_op else []) if t.dim() > dim and t.shape[dim] == steps
    ]
    other = find_name(others[0], frame) if others else None
    which = f"{other}" if other and other != seqs else "the others"
    shorter = steps - longest
    return (
        f"pad_packed_sequence (line {at}) pads the output back only to the longest sequence, {longest} steps, and "
        f"{seqs}, the padded input, has {steps}: the output is {shorter} step{'s' if shorter != 1 else ''} shorter "
        f"than the tensors made at the input's length ({other or 'targets, a mask'}). Pass the input's length: "
        f"{fixed}; or cut {which} to the longest length, {which if other else 't'}{cut}."
    )


def _packed_into_layer(
    op: str, code: str | None, frame: FrameType | None, source_lines: Sequence[str]
) -> str | None:
    seen = visible_names(frame)
    name = next(
        (
            ast.unparse(arg)
            for node in calls(code)
            for arg in node.args
            if isinstance(bound_to(ast.unparse(arg), frame), torch.nn.utils.rnn.PackedSequence)
        ),
        None,
    )
    if name is None:
        return None
    pack = _pack_line(source_lines)
    first = ", batch_first=True" if pack and _time_dim(pack) == 1 else ""
    layer = f"{op}()"
    for node in calls(code):
        callee = bound_to(ast.unparse(node.func), frame)
        if isinstance(callee, torch.nn.Module) and any(ast.unparse(a) == name for a in node.args):
            layer = f"{ast.unparse(node.func)} (an nn.{type(callee).__name__})"
    unpack = "pad_packed_sequence" if "pad_packed_sequence" in seen else "nn.utils.rnn.pad_packed_sequence"
    return (
        f"{name} is a PackedSequence, not a tensor: an RNN given a packed input returns its output packed too, and "
        f"{layer} takes a tensor. Unpack it first, {name}, lengths = {unpack}({name}{first}), which pads it back "
        "with zeros; or, for one vector per sequence, take the final hidden state, h_n[-1], which stops at each "
        "sequence's own length."
    )


def _lengths_kind(dims: int, device: str, code: str | None) -> str | None:
    """pack_padded_sequence given lengths of more dimensions than one, or on the GPU."""
    found = _call(code, _PACK, ("input", "lengths"))
    if found is None or "lengths" not in found:
        return None
    lengths = found["lengths"]
    fixes = [f"{lengths}.flatten()"] if dims != 1 else []
    why = [f"{lengths} has {dims} dimensions (a column of lengths, or one per feature)"] if dims != 1 else []
    if device != "cpu":
        why.append(f"it is on {device}")
        fixes = [f"{fixes[0] if fixes else lengths}.cpu()"]
    if not why:
        return None
    return (
        f"pack_padded_sequence takes lengths as a plain list or a 1-D int64 tensor on the CPU (it reads them to plan the "
        f"packing, even when the data is on the GPU), and {' and '.join(why)}. Pass {fixes[0]}."
    )


def _lengths_given(layer: str, keyword: str, code: str | None) -> str:
    """``rnn(batch, lengths=…)``: the lengths go into the input, packed."""
    found = next((n for n in calls(code) if any(k.arg == keyword for k in n.keywords)), None)
    batch = ast.unparse(found.args[0]) if found and found.args else "x"
    value = (
        next((ast.unparse(k.value) for k in found.keywords if k.arg == keyword), "lengths")
        if found
        else "lengths"
    )
    lengths = value if "len" in keyword else "lengths"
    return (
        f"nn.{layer} takes no {keyword}: it runs every sequence of the batch to the padded length, unless the "
        f"batch comes packed. Pack it with the lengths, packed = nn.utils.rnn.pack_padded_sequence({batch}, "
        f"{lengths}, batch_first=True, enforce_sorted=False) (leave batch_first out for a (length, batch, …) input), "
        f"and give the {layer} packed: its output comes back packed (pad_packed_sequence pads it), and its final "
        "state stops at each sequence's own length."
    )
