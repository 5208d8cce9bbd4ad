"""How an op was called, as the tape keeps it: the Python numbers (``OpRecorded.constants``
and ``OpRecorded.keywords``: ``x * 4``, ``x.sum(dim=1)``) and, as text for reading, the
other arguments a call writes out (``OpRecorded.arguments``: ``x.to(torch.float64)``,
``torch.einsum('ij,jk->ik', a, b)``, ``x.sum(dim=(0, 1))``, ``reduction='sum'``); tensors
are the op's inputs, and anything with no short text (a function, a module) is left out."""

from __future__ import annotations

import contextlib
import inspect
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = [
    "KEY_TENSOR",
    "SUBSCRIPT_OPS",
    "argument_text",
    "input_positions",
    "named_positionals",
    "op_constants",
    "op_keywords",
    "python_number",
    "tensors_in",
]

_NUMBERS = (int, float, bool)
_MAX_CONSTANTS = 8
# positional arguments read, at most: nn.LSTM passes 9 (batch_first last), torch.randn(1, …, 1) one a dimension
_MAX_POSITIONS = 16
# an argument's text past this many characters ends in an ellipsis
_MAX_TEXT = 40
# a tuple or list shows this many elements, then an ellipsis; lists in lists, this deep
_MAX_ITEMS = 8
_MAX_DEPTH = 2
_NAMED = (torch.dtype, torch.layout, torch.memory_format)
# a builtin's positional settings are named once it was passed this many of them
_NAMED_FROM = 3


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
        if kind in _NUMBERS:
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
    if kind in _NUMBERS:
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
    func: Any, kwargs: dict[str, Any], texts: list[dict[str, Any]] | None = None, numbers_before: int = 0
) -> list[dict[str, Any]]:
    """The Python numbers an op was passed by keyword (``dim=1`` in ``x.sum(dim=1)``), in order.

    A ``torch.nn.functional`` function hands the mode every keyword it has, the ones the
    call left out at their defaults too (``F.dropout(x, p=0.25)`` arrives with
    ``training=True, inplace=False``): a keyword at its default is left out, as the call
    most likely left it out, and so is a private one (``_stacklevel=5``, which
    ``nn.Softmax`` passes on). With ``texts``, the other keywords not at their defaults that
    are neither tensors nor ``None`` and have a short text are appended to it as ``{name, text,
    after}``, ``after`` counting the numbers before it in the call (``numbers_before`` of them
    were named from positions, :func:`named_positionals`), so a reader keeps the call's order.
    """
    defaults = _defaults_of(func)
    found = []
    for name, value in kwargs.items():
        if name[:1] == "_":
            continue
        if type(value) not in _NUMBERS and value is not None and not isinstance(value, torch.Tensor):
            number = python_number(value)  # `dim=np.int64(0)` reads as the 0 it stands for
            if number is not None:
                value = number
        at_default = name in defaults and type(defaults[name]) is type(value) and _same(defaults[name], value)
        if type(value) in _NUMBERS:
            if not at_default:
                found.append({"name": name, "value": value})
        elif (
            texts is not None and not at_default and value is not None and not isinstance(value, torch.Tensor)
        ):
            text = argument_text(value)
            if text is not None and len(texts) < _MAX_CONSTANTS:
                texts.append({"name": name, "text": text, "after": numbers_before + len(found)})
    return found[:_MAX_CONSTANTS]


def _same(default: Any, value: Any) -> bool:
    try:
        return bool(default == value)
    except Exception:  # a comparison that raises or will not give one answer
        return False


def named_positionals(
    func: Any, args: tuple[Any, ...], constants: list[dict[str, Any]], texts: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Name the settings a builtin was passed by position, as a reader needs them when there
    are several: ``torch.conv2d(x, w, b, (1, 1), (2, 2), (1, 1), 1)`` (what ``nn.Conv2d``
    passes) reads ``conv2d x, w, b, padding=(2, 2)``, not a row of bare tuples.

    ``constants`` and ``texts`` are what :func:`op_constants` found among ``args``. When the
    builtin was passed at least three numbers or texts by position, all after its last
    tensor, and PyTorch's schemas for it agree on each one's name, they move out of
    ``constants`` and ``texts`` (both changed in place): a number comes back as ``{name,
    value}`` for ``OpRecorded.keywords``, a text is appended to ``texts`` as ``{name, text,
    after}``, and one at its schema default (``stride=(1, 1)``, ``groups=1``) is left out, as
    a call would leave it out. A Python function (``torch.nn.functional``'s) passed three or
    more by position has them named by its signature wherever they stand among its tensors:
    ``nn.MultiheadAttention`` passes ``embed_dim_to_check``, ``num_heads``, ``add_zero_attn``
    and ``dropout_p`` between tensors, ``nn.Embedding`` passes its defaults one by one.
    Otherwise nothing changes and ``[]`` comes back: a few numbers read well by position
    (``x.transpose(0, 1)``, ``torch.clamp(x, 0, 1)``), so do a factory's
    (``torch.randint(0, 10, (3,))``, which has no tensor), and sizes passed one by one
    (``x.view(2, 3, 4)``) have no names.
    """
    if len(constants) + len(texts) < _NAMED_FROM:
        return []
    try:
        if inspect.isfunction(func):
            found = _named_by_signature(func, args, constants, texts)
        else:
            found = _named(func, args, constants, texts)
    except Exception:  # an argument that will not be looked at (a tuple whose iteration raises)
        return []
    if found is None:
        return []
    named, moved = found
    constants.clear()
    texts[:] = [t for t in texts if t["position"] is None] + moved
    return named


def _named(
    func: Any, args: tuple[Any, ...], constants: list[dict[str, Any]], texts: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """:func:`named_positionals`' names for a builtin, changing nothing: the number keywords
    and the text keywords the positional settings become, or None when they keep their
    positions."""
    held = _held_positions(constants, texts)
    last_tensor = max((i for i, a in enumerate(args) if isinstance(a, torch.Tensor)), default=-1)
    if last_tensor < 0 or min(held) < last_tensor:
        return None  # a factory's numbers read as written (`torch.randint(0, 10, (3,))`)
    kinds = "".join(_kind(a) for a in args)
    parameters = _positional_parameters(func, kinds)
    if parameters is None:
        return None
    known = {i: p for i, p in enumerate(parameters) if p is not None}
    if any(i not in known for i in held):
        return None
    return _as_keywords(constants, texts, lambda i: known[i][0], lambda i: _at_default(args[i], known[i][1]))


def _named_by_signature(
    func: Any, args: tuple[Any, ...], constants: list[dict[str, Any]], texts: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """:func:`_named` for a Python function: the names and defaults of its signature's
    positional parameters; None where one of the settings went to ``*args`` (a dispatcher,
    ``fn(*args, **kwargs)``) or the signature cannot be read."""
    parameters = _signature_parameters(func)
    if parameters is None or max(_held_positions(constants, texts)) >= len(parameters):
        return None

    def at_default(i: int) -> bool:
        default = parameters[i][1]
        return default is not inspect.Parameter.empty and _same(default, args[i])

    return _as_keywords(constants, texts, lambda i: parameters[i][0], at_default)


def _held_positions(constants: list[dict[str, Any]], texts: list[dict[str, Any]]) -> list[int]:
    """The positions of the numbers and positional texts :func:`op_constants` found."""
    return [c["position"] for c in constants] + [t["position"] for t in texts if t["position"] is not None]


def _as_keywords(
    constants: list[dict[str, Any]],
    texts: list[dict[str, Any]],
    name_at: Callable[[int], str],
    at_default: Callable[[int], bool],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The positional numbers and texts as keywords, in the call's order, each under
    ``name_at`` its position, those ``at_default`` left out: the number keywords, and the
    text keywords (each with how many number keywords came before it)."""
    named: list[dict[str, Any]] = []
    moved = []
    by_position = [(c["position"], c) for c in constants] + [
        (t["position"], t) for t in texts if t["position"] is not None
    ]
    for position, entry in sorted(by_position, key=lambda pair: pair[0]):
        if at_default(position):
            continue
        if "value" in entry:
            named.append({"name": name_at(position), "value": entry["value"]})
        else:
            moved.append({"name": name_at(position), "text": entry["text"], "after": len(named)})
    return named, moved


_signatures_cache: dict[Any, list[tuple[str, Any]] | None] = {}


def _signature_parameters(func: Any) -> list[tuple[str, Any]] | None:
    """Python function ``func``'s positional parameters in order, each as (name, default),
    up to its ``*args`` if any; None where ``inspect`` cannot read its signature."""
    if func in _signatures_cache:
        return _signatures_cache[func]
    found: list[tuple[str, Any]] | None
    try:
        positional = []
        for p in inspect.signature(func).parameters.values():
            if p.kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
                break
            positional.append((p.name, p.default))
        found = positional
    except (TypeError, ValueError):
        found = None
    _signatures_cache[func] = found
    return found


def _kind(value: Any) -> str:
    """What a schema's overloads are told apart by here: a tensor, a list of them, or else."""
    if isinstance(value, torch.Tensor):
        return "T"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return "L"
    return "o"


def _fits(kind: str, schema_type: str) -> bool:
    """Whether an argument of ``kind`` (:func:`_kind`) can be what a schema's parameter of
    ``schema_type`` takes: a ``Tensor`` one takes a tensor, a ``List[Tensor]`` one a list of
    them, and neither goes elsewhere (``narrow``'s ``start`` is an int in one overload and a
    tensor in the other; ``lstm``'s second argument is a tensor in one, a list in the other)."""
    if schema_type == "Tensor":
        return kind == "T"
    if schema_type == "List[Tensor]":
        return kind == "L"
    if kind == "L":
        return "List[" in schema_type and "Tensor" in schema_type
    return True


_parameters_cache: dict[tuple[Any, str], list[tuple[str, list[Any]] | None] | None] = {}


def _positional_parameters(func: Any, kinds: str) -> list[tuple[str, list[Any]] | None] | None:
    """For each positional argument of builtin ``func`` (``kinds`` says which are tensors,
    :func:`_kind`), its name and defaults in PyTorch's schemas that take them all by
    position, or None where those disagree (``Tensor.to``'s second argument is a device in
    one and a dtype in another) or the name is ``self``; None when no schema takes them (a
    size passed number by number)."""
    key = (func, kinds)
    if key in _parameters_cache:
        return _parameters_cache[key]
    count = len(kinds)
    found: list[tuple[str, list[Any]] | None] | None = None
    try:
        name = getattr(func, "__name__", "")
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{name}") if name.isidentifier() else []
        taking = []
        for schema in schemas:
            positional = [a for a in schema.arguments if not a.kwarg_only]
            if len(positional) >= count and all(
                _fits(k, str(a.type)) for k, a in zip(kinds, positional, strict=False)
            ):
                taking.append(positional[:count])
        if taking:
            found = []
            for i in range(count):
                names = {s[i].name for s in taking}
                only = next(iter(names))
                found.append(
                    (only, [s[i].default_value for s in taking])
                    if len(names) == 1 and only != "self"
                    else None
                )
    except Exception:  # a schema PyTorch cannot hand over: leave the call as it was
        found = None
    _parameters_cache[key] = found  # an unhashable func raised above, in named_positionals' try
    return found


def _at_default(value: Any, defaults: list[Any]) -> bool:
    """Whether ``value`` is the default of its parameter in one of the schemas: ``(1, 1)`` or
    ``1`` for a default ``[1, 1]``. A parameter with no default has ``None`` there; a value
    of ``None`` is never shown, so it never counts as one."""
    for default in defaults:
        passed = value
        if isinstance(default, list):
            if isinstance(value, (tuple, list)):
                passed = list(value)
            elif type(value) is int and default:
                passed = [value] * len(default)
        if default is not None and type(default) in (type(passed), float) and _same(default, passed):
            return True
    return False
