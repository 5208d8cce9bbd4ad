"""Hints for a model's ``load_state_dict`` whose keys do not match, beyond a prefix (which
explain_saving.py reads):

- the same layers under other names (``fc.weight`` saved, ``head.weight`` wanted): the
  pairs of keys, and a load that renames them;
- buffers the checkpoint lacks (``running_mean`` of a BatchNorm saved with
  ``track_running_stats=False``): built otherwise than the model that saved it;
- one tensor given where the dict of them goes (``m.load_state_dict(m.weight)``).

:func:`state_keys_hint` is called by explain_saving.saving_hint with the load's message."""

from __future__ import annotations

import re
from types import FrameType

import torch

from .source import bound_to, is_module

__all__ = ["state_keys_hint", "tensor_as_state"]

_KEYS = re.compile(r"(Missing|Unexpected) key\(s\) in state_dict: ((?:\"[^\"]*\"(?:, )?)+)")
_BUFFER_NAMES = ("running_mean", "running_var", "num_batches_tracked")


def state_keys_hint(text: str, owner: str, state: str, frame: FrameType | None) -> str | None:
    """The hint for the message ``text`` of ``owner.load_state_dict(state)`` (as the line
    writes them, run in ``frame``) when its keys differ as the module's docstring lists."""
    missing, unexpected = _keys(text, "Missing"), _keys(text, "Unexpected")
    if missing and unexpected and "size mismatch" not in text:
        return _renamed(missing, unexpected, owner, state, frame)
    if missing and not unexpected and all(k.rsplit(".", 1)[-1] in _BUFFER_NAMES for k in missing):
        return _buffers_missing(missing, owner)
    return None


def tensor_as_state(given: str, owner: str, state: str) -> str | None:
    """``owner.load_state_dict(state)`` with ``state`` one tensor (``given`` is its class)."""
    if given.rsplit(".", 1)[-1] not in ("Tensor", "Parameter"):
        return None
    name = state.rsplit(".", 1)[-1] if "." in state else "weight"
    return (
        f"{owner}.load_state_dict takes a dict of tensors keyed by name (what {owner}.state_dict() gives), and {state} "
        f"is one tensor. To load a whole model, pass such a dict; to set this one tensor, copy it in without "
        f"recording: with torch.no_grad(): {owner}.{name}.copy_(new_values)."
    )


def _keys(text: str, kind: str) -> list[str]:
    """The keys the message lists as ``Missing`` or ``Unexpected``."""
    return re.findall(r"\"([^\"]*)\"", next((m[2] for m in _KEYS.finditer(text) if m[1] == kind), ""))


def _renamed(
    missing: list[str], unexpected: list[str], owner: str, state: str, frame: FrameType | None
) -> str | None:
    """The checkpoint holds the same layers under other names: pairs of keys whose last part
    (``weight``, ``bias``) and shape agree."""
    if len(missing) != len(unexpected):
        return None
    saved = bound_to(state, frame)
    model = bound_to(owner, frame)
    shapes = dict(saved) if isinstance(saved, dict) else {}
    wanted = dict(model.state_dict()) if is_module(model) else {}
    pairs: dict[str, str] = {}  # saved prefix -> model prefix
    for new, old in zip(sorted(missing), sorted(unexpected), strict=False):
        new_layer, _, new_part = new.rpartition(".")
        old_layer, _, old_part = old.rpartition(".")
        if new_part != old_part or not new_layer or not old_layer:
            return None
        if _shape_of(shapes.get(old)) != _shape_of(wanted.get(new)):
            return None
        pairs[old_layer + "."] = new_layer + "."
    if not pairs:
        return None
    named = ", ".join(f"{old!r} for {new!r}" for old, new in list(pairs.items())[:3])
    if len(pairs) == 1:
        ((old, new),) = pairs.items()
        fix = f"{owner}.load_state_dict({{k.replace({old!r}, {new!r}, 1): v for k, v in {state}.items()}})"
    else:
        fix = (
            f"renames = {pairs!r}, then {owner}.load_state_dict({{next((k.replace(o, n, 1) for o, n in "
            f"renames.items() if k.startswith(o)), k): v for k, v in {state}.items()}})"
        )
    return (
        f"The checkpoint holds the same layers under other names: {named} (the attribute names the model was "
        f"built with). load_state_dict matches weights by name only, so none of those load. Rename the "
        f"checkpoint's keys as you load: {fix}; or name the layers in {owner}'s class as "
        "they were saved."
    )


def _shape_of(value: object) -> tuple[int, ...] | None:
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


def _buffers_missing(missing: list[str], owner: str) -> str:
    """The checkpoint lacks a BatchNorm's running statistics."""
    layers = sorted({k.rpartition(".")[0] for k in missing} - {""})
    which = f" for {', '.join(layers[:3])}" if layers else ""
    return (
        f"{owner} keeps running statistics ({', '.join(sorted({k.rpartition('.')[2] for k in missing}))}){which}, "
        f"and the checkpoint has none: it was saved from a batch norm built with "
        "track_running_stats=False, which keeps no running mean and variance and normalises with each batch's "
        "own even in eval(). Build this model as that one was (track_running_stats=False), or load with "
        f"strict=False, {owner}.load_state_dict(…, strict=False), to keep freshly initialised statistics "
        "(mean 0, variance 1), which are wrong until trained."
    )
