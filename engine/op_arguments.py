"""The numbers an op was called with, as the tape keeps them (``OpRecorded.constants`` and
``OpRecorded.keywords``): enough for a reader to write the call out (``x * 4``,
``x.sum(dim=1)``); tensors are the op's inputs, anything else is left out."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

__all__ = ["op_constants", "op_keywords"]

_NUMBERS = (int, float, bool)
_MAX_CONSTANTS = 8


def op_constants(args: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The Python numbers among an op's positional arguments (``4`` in ``4 * x``), so that a
    reader can write the op out; anything else in a position is an input or not shown."""
    found = []
    for i, a in enumerate(args[:_MAX_CONSTANTS]):
        if type(a) in _NUMBERS:
            found.append({"position": i, "value": a})
    return found


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


def op_keywords(func: Any, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """The Python numbers an op was passed by keyword (``dim=1`` in ``x.sum(dim=1)``), in order.

    A ``torch.nn.functional`` function hands the mode every keyword it has, the ones the
    call left out at their defaults too (``F.dropout(x, p=0.25)`` arrives with
    ``training=True, inplace=False``): a keyword at its default is left out, as the call
    most likely left it out, and so is a private one (``_stacklevel=5``, which
    ``nn.Softmax`` passes on).
    """
    defaults = _defaults_of(func)
    found = []
    for name, value in kwargs.items():
        if name[:1] == "_":
            continue
        if type(value) in _NUMBERS and not (
            name in defaults and type(defaults[name]) is type(value) and defaults[name] == value
        ):
            found.append({"name": name, "value": value})
    return found[:_MAX_CONSTANTS]
