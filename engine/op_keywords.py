"""How an op's arguments are named, as the tape keeps them: the keywords a call passed
(``OpRecorded.keywords``: ``x.sum(dim=1)``, ``reduction='sum'``), and the positional
arguments a reader would write by name (``F.dropout(x, 0.25, True)`` as ``p=0.25,
training=True``), each left out where it is at its default. The numbers and texts come from
:mod:`engine.op_arguments`; this module decides which of them a call wrote and under what name."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any

import torch

from .op_arguments import PYTHON_NUMBERS, argument_text, python_number

__all__ = ["named_positionals", "op_keywords"]

# numbers and texts kept of one op's keywords, at most
_MAX_CONSTANTS = 8
# a builtin's positional settings are named once it was passed this many of them
_NAMED_FROM = 3

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
        if type(value) not in PYTHON_NUMBERS and value is not None and not isinstance(value, torch.Tensor):
            number = python_number(value)  # `dim=np.int64(0)` reads as the 0 it stands for
            if number is not None:
                value = number
        at_default = name in defaults and type(defaults[name]) is type(value) and _same(defaults[name], value)
        if type(value) in PYTHON_NUMBERS:
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
