"""Which optimizer a new one replaces: the last to step the very same parameters.

NOTE [Rebuilt optimizers]: a loop that builds its optimizer anew each iteration
(``opt = torch.optim.Adam(model.parameters())`` inside the loop) steps each one once: every
step read as step 1 of a new ``opt (Adam) #N``, the charts drew N one-point series, and
every iteration, at step 1, was recorded in full. An optimizer with the label (the variable
that holds it) and class of the last one to step the very same parameters, in the same
order, continues that one's count (the one replaced may outlive its variable: PyTorch's own
frames from its ``__init__`` can hold it for a while). The training tracker counts the
optimizers in a row that made one step each, for the pitfall optimizer-rebuilt. One over
other parameters (a new model per trial) starts afresh.
"""

from __future__ import annotations

import weakref
from typing import Any, Generic, Protocol, TypeVar

import torch

__all__ = ["Lineage"]


class _Entry(Protocol):
    label: str | None
    kind: type
    ref: weakref.ref[Any]


_E = TypeVar("_E", bound=_Entry)

# past this many parameter lists, those whose parameters were all freed are forgotten
_PRUNE_AT = 64


class Lineage(Generic[_E]):
    """The tracker's entry of the optimizer that last stepped each list of parameters."""

    def __init__(self) -> None:
        self._by_params: dict[tuple[int, ...], tuple[list[weakref.ref[torch.Tensor]], _E]] = {}

    def replaced(self, opt: torch.optim.Optimizer, entry: _E, params: list[torch.Tensor]) -> _E | None:
        """Note that ``opt`` (tracked as ``entry``, labelled) steps ``params``; return the
        entry of the optimizer it replaced, if it replaced one (NOTE [Rebuilt optimizers])."""
        key = tuple(map(id, params))
        known = self._by_params.get(key)
        before = None
        if known is not None:
            refs, last = known
            if (
                last is not entry
                and last.label == entry.label
                and last.kind is type(opt)
                and last.ref() is not opt
                and all(ref() is p for ref, p in zip(refs, params, strict=True))
            ):
                before = last
        if len(self._by_params) >= _PRUNE_AT:  # models of past trials: forget those freed
            self._by_params = {
                k: v for k, v in self._by_params.items() if all(ref() is not None for ref in v[0])
            }
        self._by_params[key] = ([weakref.ref(p) for p in params], entry)
        return before
