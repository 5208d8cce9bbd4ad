"""How an op was called, as the tape keeps it: the Python numbers (``OpRecorded.constants``
and ``OpRecorded.keywords``: ``x * 4``, ``x.sum(dim=1)``) and, as text for reading, the
other arguments a call writes out (``OpRecorded.arguments``: ``x.to(torch.float64)``,
``torch.einsum('ij,jk->ik', a, b)``, ``x.sum(dim=(0, 1))``, ``reduction='sum'``); tensors
are the op's inputs, and anything with no short text (a function, a module) is left out."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

import torch

__all__ = ["argument_text", "op_constants", "op_keywords"]

_NUMBERS = (int, float, bool)
_MAX_CONSTANTS = 8
# an argument's text past this many characters ends in an ellipsis
_MAX_TEXT = 40
# a tuple or list shows this many elements, then an ellipsis; lists in lists, this deep
_MAX_ITEMS = 8
_MAX_DEPTH = 2
_NAMED = (torch.dtype, torch.layout, torch.memory_format)


def op_constants(args: tuple[Any, ...], texts: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The Python numbers among an op's positional arguments (``4`` in ``4 * x``), so that a
    reader can write the op out. With ``texts``, the other arguments that are not tensors
    and have a short text (:func:`argument_text`) are appended to it as ``{position, text}``;
    a ``None`` is not (mostly a default passed on, or the place of a library call's object)."""
    found = []
    for i, a in enumerate(args[:_MAX_CONSTANTS]):
        kind = type(a)
        if kind in _NUMBERS:
            found.append({"position": i, "value": a})
        elif texts is not None and a is not None and not isinstance(a, torch.Tensor):
            text = argument_text(a)
            if text is not None:
                texts.append({"position": i, "text": text})
    return found


def argument_text(value: Any) -> str | None:
    """``value`` as a call could write it, or ``None`` when it has no short text (a tensor,
    a function, a module). Strings read as Python writes them (``'sum'``), dtypes and the
    like by their names (``torch.float64``), a device by its name in quotes (``'cuda:0'``),
    slices as in a subscript (``1:3``, ``:``), tuples and lists of these two levels deep
    (a small matrix: ``[[1.0, 2.0], [3.0, 4.0]]``). Never raises: a tuple subclass whose
    iteration fails, an int too long for ``repr``, have no text."""
    try:
        return _text(value, 0)
    except Exception:
        return None


def _text(value: Any, depth: int) -> str | None:
    kind = type(value)
    if kind in _NUMBERS:
        return repr(value)
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
            item_text = _text(item, depth + 1)
            if item_text is None:
                return None  # a tensor among them (an input), or something with no text
            items.append(item_text)
            length += len(item_text) + 2
        inner = ", ".join(items)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return None


_defaults_cache: dict[Any, dict[str, Any]] = {}


def _defaults_of(func: Any) -> dict[str, Any]:
    """The keyword defaults of a Python function (``F.dropout``'s ``p=0.5``); {} for a builtin."""
    found = _defaults_cache.get(func)
    if found is None:
        try:
            params = inspect.signature(func).parameters.values()
            found = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
        except (TypeError, ValueError):
            found = {}
        if not found and inspect.isfunction(func) and func.__closure__:
            # a dispatcher, ``fn(*args, **kwargs)``: ``F.max_pool2d`` picks one of two
            # functions by ``return_indices``; their defaults are its own
            for cell in func.__closure__:
                with contextlib.suppress(ValueError):  # an empty cell
                    inner = cell.cell_contents
                    if inspect.isfunction(inner) and inner is not func:
                        found = {**_defaults_of(inner), **found}
        with contextlib.suppress(TypeError):
            _defaults_cache[func] = found
    return found


def op_keywords(
    func: Any, kwargs: dict[str, Any], texts: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The Python numbers an op was passed by keyword (``dim=1`` in ``x.sum(dim=1)``), in order.

    A ``torch.nn.functional`` function hands the mode every keyword it has, the ones the
    call left out at their defaults too (``F.dropout(x, p=0.25)`` arrives with
    ``training=True, inplace=False``): a keyword at its default is left out, as the call
    most likely left it out, and so is a private one (``_stacklevel=5``, which
    ``nn.Softmax`` passes on). With ``texts``, the other keywords not at their defaults that
    are neither tensors nor ``None`` and have a short text are appended to it as ``{name, text}``.
    """
    defaults = _defaults_of(func)
    found = []
    for name, value in kwargs.items():
        if name[:1] == "_":
            continue
        at_default = name in defaults and type(defaults[name]) is type(value) and _same(defaults[name], value)
        if type(value) in _NUMBERS:
            if not at_default:
                found.append({"name": name, "value": value})
        elif (
            texts is not None and not at_default and value is not None and not isinstance(value, torch.Tensor)
        ):
            text = argument_text(value)
            if text is not None and len(texts) < _MAX_CONSTANTS:
                texts.append({"name": name, "text": text})
    return found[:_MAX_CONSTANTS]


def _same(default: Any, value: Any) -> bool:
    try:
        return bool(default == value)
    except Exception:  # a comparison that raises or will not give one answer
        return False
