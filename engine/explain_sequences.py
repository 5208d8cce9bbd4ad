"""Hints for sequences given to what takes one step, or one class per position, beyond
explain_recurrent.py and explain_targets.py:

- ``nn.LSTMCell(…)(x)`` with ``x`` a whole sequence (3-D): a cell runs one step;
- ``nn.GRUCell(…)(x, (h, c))``: a GRU's or plain RNN's state is one tensor, an LSTM's a pair;
- ``F.nll_loss(logp, y)`` with ``logp`` (N, T, C) and ``y`` (N, T): the classes go in dim 1
  (cross_entropy's own hint is in explain_targets.py);
- a key_padding_mask whose columns are not the keys' length (made for the query, or for
  padded batches of another length; its rows are explain_setup.py's).

Each names the snippet's layer and tensors; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType

import torch
from torch import nn

from .explain_reading import calls, literal, wrapped
from .source import find_name

__all__ = ["sequence_hint"]

_CELL_SEQUENCE = re.compile(r"(LSTMCell|GRUCell|RNNCell): Expected input to be 1D or 2D, got 3D instead")
_MASK_COLUMNS = re.compile(r"Expected key_padded_mask\.shape\[1\] to be (\d+), but got (\d+)")
_TARGET_SIZE = re.compile(r"Expected target size \[([\d, ]+)\], got \[([\d, ]+)\]")


def sequence_hint(
    text: str, code: str | None, frame: FrameType | None, failed: tuple[str, Sequence[torch.Tensor]] | None
) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``), by the op
    the tape saw fail (``failed``), that the module's docstring lists; ``None`` for any other."""
    cell = _CELL_SEQUENCE.search(text)
    if cell:
        return _sequence_to_cell(cell.group(1), code, frame)
    if "'tuple' object has no attribute" in text:
        return _pair_state(code, frame)
    columns = _MASK_COLUMNS.search(text)
    if columns:
        return _mask_columns(int(columns.group(1)), int(columns.group(2)), code, frame)
    if _TARGET_SIZE.search(text) and failed is not None and failed[0] == "nll_loss" and len(failed[1]) >= 2:
        return _positions_last(failed[1][0], failed[1][1], code, frame)
    return None


def _cell_call(
    code: str | None, frame: FrameType | None, kinds: tuple[type, ...]
) -> tuple[str, ast.Call] | None:
    """The line's call of a layer of one of ``kinds`` (``cell(x, h)``): its source and the call."""
    for node in calls(code):
        name = ast.unparse(node.func)
        if isinstance(literal(name, frame), kinds):
            return name, node
    return None


def _sequence_to_cell(kind: str, code: str | None, frame: FrameType | None) -> str:
    """A whole sequence given to a cell, which runs one time step."""
    found = _cell_call(code, frame, (nn.RNNCellBase,))
    cell = found[0] if found else "The cell"
    x = ast.unparse(found[1].args[0]) if found and found[1].args else "x"
    layer = kind.removesuffix("Cell")
    state = "(h, c)" if kind == "LSTMCell" else "h"
    return (
        f"{cell} is an nn.{kind}: it runs one time step, on (batch, features), and {x} is 3-D, a whole sequence. "
        f"Loop over the steps, for x_t in {wrapped(x)}.unbind(0): {state} = {cell}(x_t, {state}) (with the time "
        f"first, (time, batch, features)), or use nn.{layer}, which runs the whole sequence itself."
    )


def _pair_state(code: str | None, frame: FrameType | None) -> str | None:
    """An LSTM's (h, c) given to a GRUCell or RNNCell, whose state is one tensor."""
    found = _cell_call(code, frame, (nn.GRUCell, nn.RNNCell))
    if found is None or len(found[1].args) < 2:
        return None
    cell, call = found
    state = call.args[1]
    if not (isinstance(state, ast.Tuple) or isinstance(literal(ast.unparse(state), frame), tuple)):
        return None
    kind = type(literal(cell, frame)).__name__
    first = (
        ast.unparse(state.elts[0])
        if isinstance(state, ast.Tuple) and state.elts
        else f"{ast.unparse(state)}[0]"
    )
    return (
        f"{cell} is an nn.{kind}, whose state is one tensor, h, (batch, hidden_size), and it was given a pair, "
        f"{ast.unparse(state)}: an LSTM's (h, c). Pass h alone, {cell}({ast.unparse(call.args[0])}, {first}), and "
        "keep the cell state only with nn.LSTMCell."
    )


def _positions_last(
    scores: torch.Tensor, target: torch.Tensor, code: str | None, frame: FrameType | None
) -> str | None:
    """nll_loss of (N, T, C) log-probabilities with (N, T) targets: the classes go in dim 1."""
    if scores.dim() != 3 or target.dim() != 2 or tuple(target.shape) != tuple(scores.shape[:2]):
        return None
    n, steps, classes = scores.shape
    s = find_name(scores, frame) or "logp"
    t = find_name(target, frame) or "target"
    return (
        f"nll_loss takes the classes in dim 1, (N, C) or (N, C, T), and {s} is ({n}, {steps}, {classes}): "
        f"{steps} positions before {classes} classes, as a sequence model gives them, so it read {steps} classes at "
        f"{classes} positions. Move the classes to dim 1: F.nll_loss({s}.permute(0, 2, 1), {t}), or flatten both, "
        f"F.nll_loss({s}.reshape(-1, {classes}), {t}.reshape(-1))."
    )


def _mask_columns(keys: int, got: int, code: str | None, frame: FrameType | None) -> str | None:
    """A key_padding_mask with another number of columns than the keys have positions."""
    for node in calls(code):
        mask = next((k for k in node.keywords if k.arg and k.arg.endswith("key_padding_mask")), None)
        if mask is None or not node.args:
            continue
        layer = literal(ast.unparse(node.func), frame)
        key = (
            node.args[1] if isinstance(layer, nn.MultiheadAttention) and len(node.args) >= 2 else node.args[0]
        )
        query = ast.unparse(node.args[0])
        named = ast.unparse(key)
        other = (
            f" It has the length of {query}, the query: the mask goes with the keys, {named}."
            if named != query and got == _length(literal(query, frame), layer)
            else ""
        )
        return (
            f"{mask.arg} is (batch, key length), True at the keys to leave out, so it needs one column per position of "
            f"{named}: {keys}, and {ast.unparse(mask.value)} has {got}.{other} Make it from {named}'s own padding, "
            f"as (batch, {keys})."
        )
    return None


def _length(x: object, layer: object) -> int | None:
    """The sequence length of ``x`` as ``layer`` reads it (dim 1 with batch_first, else dim 0)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        return None
    return int(x.shape[1] if getattr(layer, "batch_first", False) else x.shape[0])
