"""The last time step taken from dim 1 of a time-first recurrent layer's output
(rnn-last-step-from-batch-axis).

``self.lstm = nn.LSTM(3, 8)`` fed ``(batch, time, features)`` data, then
``self.head(out[:, -1, :])`` for "the last time step of each sequence": the idiom of a
batch-first layer. Made without ``batch_first=True``, nn.LSTM (GRU, RNN) reads its input as
``(time, batch, features)``, so dim 1 of its output is the batch and ``out[:, -1]`` is the
last sequence of the batch at every time step. If the data is batch-first (as ``[:, -1]``
reads it), the layer also ran its recurrence across the samples, carrying state from one
sample into the next. The sizes often fit what follows (the head gets one row per "sample"),
so nothing raises: the model trains on the wrong numbers.

Told at the indexing: a ``__getitem__`` of a remembered output of an ``lstm``, ``gru``,
``rnn_tanh`` or ``rnn_relu`` op run with ``batch_first=False`` on a 3-D input, whose index is
``[:, -1]`` or ``[:, -1, :]`` (or the last position written as a number). ``out[-1]`` (the
last time step, right for a time-first layer), a batch-first layer's ``out[:, -1]``, packed
sequences and unbatched 2-D inputs are left alone.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Sequence
from types import FrameType
from typing import Any, NamedTuple

import torch

from ..source import find_name, parsed_source, without_comment

__all__ = ["INDEX_OPS", "RECURRENT_OPS", "RecurrentOutputs"]

#: the ops nn.LSTM, nn.GRU and nn.RNN (tanh, relu) call, positional ``batch_first`` last
RECURRENT_OPS = frozenset({"lstm", "gru", "rnn_tanh", "rnn_relu"})
INDEX_OPS = frozenset({"__getitem__"})
_LAYERS = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}
_BATCH_FIRST_ARG = (
    8  # torch.lstm(input, hx, params, has_biases, layers, dropout, train, bidirectional, batch_first)
)
_KEPT = 64  # outputs remembered at once (a loop makes one per iteration; the oldest go first)


class _Output(NamedTuple):
    """A time-first recurrent layer's output, as the report names it."""

    ref: weakref.ref[torch.Tensor]
    layer: str  # "LSTM", "GRU", "RNN"
    input_shape: tuple[int, int, int]
    line: int | None  # the line that called the layer
    batch_first: bool


class RecurrentOutputs:
    """The outputs of the time-first recurrent layers a run called (held weakly, by identity),
    and the report of one indexed as a batch-first output would be."""

    def __init__(self, source_lines: Sequence[str]) -> None:
        self._source_lines = source_lines
        self._outputs: dict[int, _Output] = {}
        self._told: set[int | None] = set()  # the lines reported (a loop indexes once per iteration)

    def ran(self, op: str, args: tuple[Any, ...], result: Any, line: int | None) -> None:
        """Remember ``result``'s output when ``op`` (one of :data:`RECURRENT_OPS`), called at
        ``line`` with positional ``args``, ran on a batched 3-D input (time-first or batch-first)."""
        given = args[0] if args else None
        if (
            not isinstance(given, torch.Tensor)
            or given.dim() != 3
            or len(args) <= _BATCH_FIRST_ARG
            or not isinstance(args[3], bool)  # has_biases; a packed sequence's call has its params there
            or not isinstance(args[_BATCH_FIRST_ARG], bool)
            or not isinstance(result, tuple)
            or not result
            or not isinstance(result[0], torch.Tensor)
        ):
            return
        if len(self._outputs) >= _KEPT:
            self._outputs.pop(next(iter(self._outputs)))
        shape = (int(given.shape[0]), int(given.shape[1]), int(given.shape[2]))
        batch_first = bool(args[_BATCH_FIRST_ARG])
        self._outputs[id(result[0])] = _Output(weakref.ref(result[0]), _LAYERS[op], shape, line, batch_first)

    def indexed(
        self, args: tuple[Any, ...], line: int | None, frame: FrameType | None
    ) -> tuple[str, str, str] | None:
        """``(title, message, fix)`` when ``__getitem__`` at snippet ``line`` (in ``frame``) with
        ``args`` takes the last position of dim 1 of a remembered time-first output, all of dim 0,
        or the last position of dim 0 of a batch-first one, all of the rest; else None."""
        given = args[0] if args else None
        found = self._outputs.get(id(given))
        if (
            found is None
            or found.ref() is not given
            or len(args) < 2
            or not isinstance(given, torch.Tensor)
            or line in self._told
        ):
            return None
        if found.batch_first:
            return self._last_sample(found, given, args[1], line, frame)
        written = _last_of_dim_1(args[1], given)
        if written is None:
            return None
        steps, batch, features = found.input_shape
        if steps < 2 or batch < 2:
            return None
        name, layer, where, called = self._telling(found, given, line, frame)
        title = f"{name}[:, -1] of a time-first {layer}: the last sequence of the batch, not the last step"
        message = (
            f"{name}{written} {where}takes the last position of dim 1 of the {layer}'s output{called}, the "
            f"batch-first way to read the last time step. This {layer} was made without batch_first=True, so "
            f"it reads its input as (time, batch, features): its {steps}×{batch}×{features} input as {steps} "
            f"time steps of a batch of {batch}, and dim 1 of its output is the batch. {name}{written} is the "
            f"last sequence's output (of {batch}) at every one of the {steps} time steps, not the last step of each "
            f"sequence. If the input is (batch, time, features), as {written} reads it, the {layer} also ran "
            f"its recurrence across the {steps} samples, carrying its state from one sample into the next. "
            "Nothing raises while the sizes fit what follows: the model trains on the wrong numbers."
        )
        made = _made_at(self._source_lines, layer)
        if made is None:
            make = f"make the layer with batch_first=True (nn.{layer}(…, batch_first=True))"
        else:
            make = f"make the layer with batch_first=True (line {made[0]}: {made[1]})"
        fix = (
            f"For (batch, time, features) data, {make}; {name}[:, -1] is then each sequence's last step. "
            f"For (time, batch, features) data, keep the layer and take {name}[-1], the last time step of "
            "every sequence."
        )
        return title, message, fix

    def _telling(
        self, found: _Output, given: torch.Tensor, line: int | None, frame: FrameType | None
    ) -> tuple[str, str, str, str]:
        """Note ``line`` as told, and name what the message quotes: the output's name, its layer,
        ``at line N `` and `` (line M)`` where the layer was called."""
        self._told.add(line)
        where = f"at line {line} " if line is not None else ""
        called = f" (line {found.line})" if found.line is not None else ""
        return find_name(given, frame) or "out", found.layer, where, called

    def _last_sample(
        self, found: _Output, given: torch.Tensor, index: object, line: int | None, frame: FrameType | None
    ) -> tuple[str, str, str] | None:
        """The report of ``out[-1]`` (``index``) of a batch-first layer's output ``given``: the
        last sample of the batch at every step, where the last step of each sequence was meant."""
        written = _last_of_dim_0(index, given)
        batch, steps, features = found.input_shape
        if written is None or steps < 2 or batch < 2:
            return None
        name, layer, where, called = self._telling(found, given, line, frame)
        title = f"{name}{written} of a batch-first {layer}: the last sample of the batch, not the last step"
        message = (
            f"{name}{written} {where}takes the last position of dim 0 of the {layer}'s output{called}, the "
            f"time-first way to read the last time step. This {layer} was made with batch_first=True, so it "
            f"reads its input as (batch, time, features): its {batch}×{steps}×{features} input as a batch of "
            f"{batch} sequences of {steps} time steps, and dim 0 of its output is the batch. {name}{written} is "
            f"the last sample's output (of {batch}) at every one of its {steps} time steps, not the last step "
            "of each sequence: every prediction is made from the same sample. Nothing raises while the sizes "
            "fit what follows: the model trains on the wrong numbers."
        )
        fix = (
            f"Take {name}[:, -1] (or {name}[:, -1, :]), each sequence's last step, for a batch-first layer; "
            f"{name}[-1] is the last step only for a layer made without batch_first=True."
        )
        return title, message, fix


def _last_of_dim_0(index: object, given: torch.Tensor) -> str | None:
    """The index as written (``[-1]``, ``[-1, :, :]``) when ``index`` takes the last position of
    dim 0 of the 3-D ``given`` and all of the other dimensions; else None."""
    parts = index if isinstance(index, tuple) else (index,)
    if not 1 <= len(parts) <= 3 or given.dim() != 3 or any(not _all(part) for part in parts[1:]):
        return None
    first = parts[0]
    if isinstance(first, torch.Tensor) and first.dim() == 0 and not first.is_floating_point():
        first = int(first)
    if isinstance(first, bool) or not isinstance(first, int) or first not in (-1, given.shape[0] - 1):
        return None
    return f"[{first}" + ", :" * (len(parts) - 1) + "]"


def _last_of_dim_1(index: object, given: torch.Tensor) -> str | None:
    """The index as written (``[:, -1]``, ``[:, -1, :]``) when ``index`` takes all of dim 0 of
    the 3-D ``given`` and the last position of dim 1; else None."""
    if not isinstance(index, tuple) or not 2 <= len(index) <= 3 or given.dim() != 3:
        return None
    first, second, *rest = index
    if not _all(first) or any(not _all(part) for part in rest):
        return None
    if isinstance(second, torch.Tensor) and second.dim() == 0 and not second.is_floating_point():
        second = int(second)
    if isinstance(second, bool) or not isinstance(second, int) or second not in (-1, given.shape[1] - 1):
        return None
    return f"[:, {second}" + (", :]" if rest else "]")


def _all(part: object) -> bool:
    """Whether ``part`` of an index is ``:`` (every position of its dimension)."""
    return isinstance(part, slice) and part == slice(None)


def _made_at(source_lines: Sequence[str], layer: str) -> tuple[int, str] | None:
    """``(line, that line with batch_first=True added)`` for the snippet's one ``nn.LSTM(…)``
    (``layer``) written without ``batch_first`` on a line of its own; None where it makes none,
    several, or one over several lines."""
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return None
    made = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == layer)
            or (isinstance(node.func, ast.Name) and node.func.id == layer)
        )
        and not any(keyword.arg == "batch_first" for keyword in node.keywords)
    ]
    if len(made) != 1:
        return None
    call = made[0]
    if call.end_lineno != call.lineno or call.end_col_offset is None or call.lineno > len(source_lines):
        return None
    text = source_lines[call.lineno - 1].encode()
    end = call.end_col_offset - 1  # the call's closing parenthesis (offsets count UTF-8 bytes)
    opened = text[:end].rstrip().endswith(b"(")
    added = text[:end] + (b"batch_first=True" if opened else b", batch_first=True") + text[end:]
    return call.lineno, without_comment(added.decode()).strip()
