"""The labels beside a shuffle (inputs-shuffled-apart-from-labels, shuffles.py): what the
shuffling scope held of as many rows when a permutation first indexed, and whether a loss's
target is those labels left in their order.

A target made after the shuffle from the shuffled rows themselves (a teacher's outputs
``teacher(Xs)``, the next tokens ``tokens[:, 1:]`` of a shuffled sequence, ``y = Xs @ w``)
is in their order already, whatever its values: only labels that existed at the shuffle, as
themselves or as their values (``y.float()``, ``torch.tensor(ys)`` made since), can have
been left behind. Held weakly where they can be (a list is held as it is while its
permutation is followed).
"""

from __future__ import annotations

import weakref
from types import FrameType, ModuleType
from typing import Any

import torch

from ..source import frame_scopes
from .in_place_shuffles import sequence

__all__ = ["held_beside", "held_then", "label_name", "one_hot_run", "path_name"]

_MOST_HELD = 16  # candidate labels noted beside a shuffle
_FEWEST_ONE_HOT = 8  # rows a one-hot target needs to be matched to a run of labels by value


def held_beside(root: torch.Tensor, source: Any, frame: FrameType) -> list[Any]:
    """The tensors, arrays and lists of as many rows as ``root`` that ``frame``'s scope
    binds (and its dicts and plain objects hold, one level down) beside ``source``, the tensor
    being shuffled."""
    rows = len(root)
    values: list[Any] = []
    for scope in frame_scopes(frame):
        for key, value in list(scope.items()):
            if key.startswith("__") or isinstance(value, (type, ModuleType, torch.nn.Module)):
                continue
            values.append(value)
            inner = value if isinstance(value, dict) else getattr(value, "__dict__", None)
            if isinstance(inner, dict) and len(inner) <= _MOST_HELD:
                values.extend(inner.values())
    held: list[Any] = []
    for value in values[: 20 * _MOST_HELD]:
        if value is source or value is root or not sequence(value) or len(value) != rows:
            continue
        if any(_live(h) is value for h in held):
            continue
        try:
            held.append(weakref.ref(value))
        except TypeError:  # (a list)
            held.append(value)
        if len(held) >= _MOST_HELD:
            break
    return held


def held_then(held: list[Any] | None, labels: torch.Tensor) -> bool:
    """Whether ``labels`` (the tensor a loss's target rows are rows of) is, or equals, one of
    ``held`` (None: no scope was seen, judged by the rows alone)."""
    if held is None:
        return True
    for ref in held:
        value = _live(ref)
        if value is labels:
            return True
        values = _as_tensor(value)
        if (
            values is not None
            and values.numel() == labels.numel()
            and bool(torch.equal(values.to(labels.device, labels.dtype).reshape(labels.shape), labels))
        ):
            return True
    return False


def one_hot_run(held: list[Any], target: torch.Tensor, rows: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(labels, taken)`` where ``target`` is one-hot rows of a run of one of ``held``'s
    class labels (``rows`` long): ``F.one_hot(y[i:i + bs])``, its rows ``i … i + bs - 1``."""
    m = len(target)
    if target.dim() != 2 or m < _FEWEST_ONE_HOT or target.shape[1] < 2 or m > rows:
        return None
    if not bool(((target == 0) | (target == 1)).all()) or not bool((target.sum(1) == 1).all()):
        return None
    classes = target.argmax(1).cpu()
    for ref in held:
        labels = _as_tensor(_live(ref))
        if labels is None or labels.dim() != 1 or labels.is_floating_point() or len(labels) != rows:
            continue
        if len(labels.unique()) == rows:  # (indices, a permutation or an arange: not classes)
            continue
        runs = (labels.detach().cpu().unfold(0, m, 1) == classes).all(1).nonzero()
        if len(runs):
            start = int(runs[0])
            return labels, torch.arange(start, start + m)
    return None


def label_name(labels: torch.Tensor, frame: FrameType | None) -> str | None:
    """The name of a tensor of the snippet's equal to ``labels`` (``y`` for the copy
    ``y.float()`` a loss was given, or for ``y`` made ``y.unsqueeze(1)``), if one is."""
    for scope in frame_scopes(frame):
        for key, value in list(scope.items()):
            if (
                isinstance(value, torch.Tensor)
                and value.numel() == labels.numel()
                and len(value) == len(labels)
                and value.device == labels.device
                and bool(torch.equal(value.to(labels.dtype).reshape(labels.shape), labels))
            ):
                return key
    return None


def path_name(obj: Any, frame: FrameType | None) -> str | None:
    """How the snippet reaches ``obj`` one level down from a name of ``frame``'s scope:
    ``data["x"]`` (a dict's value) or ``ds.y`` (a plain object's attribute), if it does."""
    for scope in frame_scopes(frame):
        for key, value in list(scope.items()):
            if key.startswith("__") or isinstance(value, (type, ModuleType, torch.nn.Module)):
                continue
            keyed = isinstance(value, dict)
            inner: Any = value if keyed else getattr(value, "__dict__", None)
            if not isinstance(inner, dict) or len(inner) > _MOST_HELD:
                continue
            for attribute, held in list(inner.items()):
                if held is obj and isinstance(attribute, str):
                    if keyed:
                        return f'{key}["{attribute}"]'
                    if attribute.isidentifier():
                        return f"{key}.{attribute}"
    return None


def _live(ref: Any) -> Any:
    return ref() if isinstance(ref, weakref.ref) else ref


def _as_tensor(value: Any) -> torch.Tensor | None:
    if value is None or isinstance(value, torch.Tensor):
        return value
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        return None
