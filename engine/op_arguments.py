"""How an op was called, as the tape keeps it: the Python numbers (``OpRecorded.constants``
and ``OpRecorded.keywords``: ``x * 4``, ``x.sum(dim=1)``) and, as text for reading, the
other arguments a call writes out (``OpRecorded.arguments``: ``x.to(torch.float64)``,
``torch.einsum('ij,jk->ik', a, b)``, ``x.sum(dim=(0, 1))``, ``reduction='sum'``); tensors
are the op's inputs, a Python function reads as its name, and anything else with no short
text (a module) is left out. Which keywords and positionals a call wrote, and under what
name: :mod:`engine.op_keywords`."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import torch

__all__ = [
    "KEY_TENSOR",
    "PYTHON_NUMBERS",
    "SUBSCRIPT_OPS",
    "argument_text",
    "input_positions",
    "op_constants",
    "python_number",
    "tensors_in",
]

# the Python numbers an op's constants and keywords hold as numbers (the rest is text)
PYTHON_NUMBERS = (int, float, bool)
# positional arguments read, at most: nn.LSTM passes 9 (batch_first last), torch.randn(1, …, 1) one a dimension
_MAX_POSITIONS = 16
# an argument's text past this many characters ends in an ellipsis
_MAX_TEXT = 40
# a tuple or list shows this many elements, then an ellipsis; lists in lists, this deep
_MAX_ITEMS = 8
_MAX_DEPTH = 2
_NAMED = (torch.dtype, torch.layout, torch.memory_format)


# how a subscript's key writes a tensor it holds (OpArgument.text): `probs[range(8), Y]`
KEY_TENSOR = "⬚"
# the ops whose second argument is a subscript's key (op_constants' `subscript`)
SUBSCRIPT_OPS = frozenset({"getitem", "setitem"})


def op_constants(
    args: tuple[Any, ...], texts: list[dict[str, Any]] | None = None, *, subscript: bool = False
) -> list[dict[str, Any]]:
    """The Python numbers among an op's positional arguments (``4`` in ``4 * x``), so that a
    reader can write the op out. With ``texts``, the other arguments that are not tensors
    and have a short text (:func:`argument_text`) are appended to it as ``{position, text}``;
    a ``None`` is not (mostly a default passed on, or the place of a library call's object).
    With ``subscript`` (``x[key]``, ``x[key] = v``) a key that holds tensors has its text
    too, each tensor written :data:`KEY_TENSOR` (:func:`subscript_key_text`)."""
    found = []
    for i, a in enumerate(args[:_MAX_POSITIONS]):
        kind = type(a)
        if kind in PYTHON_NUMBERS:
            found.append({"position": i, "value": a})
        elif subscript and i == 1 and texts is not None and (key := subscript_key_text(a)) is not None:
            texts.append({"position": i, "text": key})
        elif a is None or kind is torch.Tensor or isinstance(a, torch.Tensor):
            continue
        elif (number := python_number(a)) is not None:
            found.append({"position": i, "value": number})  # `x / np.sqrt(d)`
        elif texts is not None:
            text = argument_text(a)
            if text is not None:
                texts.append({"position": i, "text": text})
    return found


def tensors_in(obj: Any, out: list[torch.Tensor]) -> None:
    """Append to ``out`` every tensor in ``obj``: a tensor, or lists, tuples and dicts (their
    values) of them, nested (a DataLoader's batch may be a dict). The tape mode's inputs and
    outputs of an op, in this order."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, list | tuple):
        for item in obj:
            if isinstance(item, torch.Tensor):
                out.append(item)
            elif isinstance(item, list | tuple | dict):
                tensors_in(item, out)
    elif isinstance(obj, dict):
        tensors_in(tuple(obj.values()), out)


def input_positions(
    args: tuple[Any, ...], kwargs: dict[str, Any] | None, count: int
) -> list[int | str] | None:
    """Where the call passed each of an op's ``count`` inputs (the tensors of ``args`` in
    order, as :func:`tensors_in` collects them, then those of ``kwargs``): the index of the
    positional argument that held it, or the keyword's name. None unless that says more than
    "the inputs first, in order": an argument that is neither a tensor nor ``None`` comes
    before a tensor (``x.gather(1, idx)``), or a tensor was passed by keyword
    (``F.layer_norm(x, (8,), weight=w, bias=b)``, as ``nn.LayerNorm`` calls it). Never raises."""
    try:
        other_before = False
        telling = False
        for a in args[:_MAX_POSITIONS]:
            if isinstance(a, torch.Tensor) or (
                isinstance(a, list | tuple) and any(isinstance(v, torch.Tensor) for v in a)
            ):
                telling = telling or other_before
            elif a is not None:
                other_before = True
        keyword_tensors = (
            [name for name, v in kwargs.items() if isinstance(v, torch.Tensor)] if kwargs else []
        )
        if not (telling or keyword_tensors):
            return None
        positions: list[int | str] = []
        for i, a in enumerate(args):
            held: list[torch.Tensor] = []
            tensors_in(a, held)
            positions += [i] * len(held)
        for name, v in (kwargs or {}).items():
            held = []
            tensors_in(v, held)
            positions += [name] * len(held)
        return positions if len(positions) == count else None
    except Exception:  # an argument that will not be looked at: the inputs first, as without this
        return None


def subscript_key_text(key: Any) -> str | None:
    """The text of a subscript's key that holds a tensor (``probs[range(8), Y]``,
    ``x[0, idx]``, ``x[mask]``), each tensor written :data:`KEY_TENSOR`: they are the op's
    inputs after the subscripted one, in order (as :func:`tensors_in` finds them; a long key
    whose end reads ``…`` writes fewer). None for a key with no tensor (:func:`argument_text`
    writes those) or with something that has no text. Never raises."""
    try:
        if not isinstance(key, torch.Tensor | list | tuple):
            return None
        held: list[torch.Tensor] = []
        tensors_in(key, held)
        return _text(key, 0, KEY_TENSOR) if held else None
    except Exception:
        return None


def python_number(value: Any) -> int | float | bool | None:
    """``value`` as the Python number it stands for when it is a NumPy scalar (``np.sqrt(d)``
    is an ``np.float64``, ``arr.shape[0] // 2`` may be an ``np.int64``) or an instance of a
    subclass of ``int`` or ``float`` (an ``IntEnum``); None for anything else, a complex
    number among them. Never raises."""
    try:
        if isinstance(value, bool | np.bool_):
            return bool(value)
        if isinstance(value, int | np.integer):
            return int(value)
        if isinstance(value, float | np.floating):
            return float(value)
    except Exception:  # a subclass whose conversion raises: no number to show
        return None
    return None


def argument_text(value: Any) -> str | None:
    """``value`` as a call could write it, or ``None`` when it has no short text (a tensor,
    a module). A Python function reads as its name (``lambda`` for a lambda). Strings read as Python writes them (``'sum'``), dtypes and the
    like by their names (``torch.float64``), a device by its name in quotes (``'cuda:0'``),
    slices as in a subscript (``1:3``, ``:``), a range as written (``range(5)``), tuples and lists of these two levels deep
    (a small matrix: ``[[1.0, 2.0], [3.0, 4.0]]``). Never raises: a tuple subclass whose
    iteration fails, an int too long for ``repr``, have no text."""
    try:
        return _text(value, 0)
    except Exception:
        return None


def _text(value: Any, depth: int, tensor: str | None = None) -> str | None:
    """``value``'s text (:func:`argument_text`); a tensor, in a tuple or list too, is written
    ``tensor`` where one is given, else has no text."""
    kind = type(value)
    if kind in PYTHON_NUMBERS:
        return repr(value)
    if tensor is not None and isinstance(value, torch.Tensor):
        return tensor
    if isinstance(value, np.generic | int | float):
        number = python_number(value)
        return None if number is None else repr(number)
    if value is None:
        return "None"
    if value is Ellipsis:
        return "..."
    if kind is str:
        text = repr(value[: _MAX_TEXT + 1])  # never the repr of a long string whole
        return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 2] + "…" + text[0]
    if isinstance(value, _NAMED):
        return str(value)
    if kind is torch.device:
        return repr(str(value))
    if kind is types.FunctionType:  # torch.cond(pred, t, f, (x,)): the branches by their names
        name = value.__name__
        return name if name.isidentifier() else "lambda"
    if kind is range:  # as a call writes it: torch.tensor(range(5)), x[range(3)]
        return f"range({value.stop})" if value.start == 0 and value.step == 1 else repr(value)
    if kind is slice:
        parts: list[str] = []
        for end in (value.start, value.stop, value.step):
            part = "" if end is None else _text(end, depth + 1)
            if part is None:
                return None  # a tensor as an end
            parts.append(part)
        return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
    if isinstance(value, (tuple, list)) and depth < _MAX_DEPTH:
        items: list[str] = []
        length = 0
        for item in value:
            if len(items) == _MAX_ITEMS or length > _MAX_TEXT:
                items.append("…")  # whole items only, so brackets stay paired
                break
            item_text = _text(item, depth + 1, tensor)
            if item_text is None:
                return None  # a tensor among them (an input), or something with no text
            items.append(item_text)
            length += len(item_text) + 2
        inner = ", ".join(items)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return None
