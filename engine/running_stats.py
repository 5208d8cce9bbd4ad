"""The running statistics of a normalisation op, which change where no version counter sees.

# NOTE [Running statistics]
# In training mode ``batch_norm`` (and ``instance_norm`` given running statistics) writes
# the batch's mean and variance into ``running_mean`` and ``running_var`` inside its kernel,
# and their version counters do not move (torch 2.13, CPU; ``instance_norm`` copies them in
# afterwards, which does move them, and the op's inputs then named the updated values, a
# version made off the tape: found by hunt 55b's checker). Nothing the tensor table
# watches saw them change (NOTE [Changed off the tape] in tensors.py): the second forward
# read them with the first one's values, and ``model.eval()``'s forward with the zeros and
# ones they started as. So such an op makes new versions of them, as extra outputs, with
# the values it left; they are met before it runs, so that they go in with the values they
# had. A step recorded metrics-only updates them unseen: before a norm op reads them, what
# they hold is compared with what they held when last recorded, and a difference is a new
# version made off the tape. tests/engine/test_running_stats.py has the cases.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import torch

from .source import snippet_frames
from .tensors import TensorTable

__all__ = ["NORM_OPS", "RunningStats"]

# the functions' __name__, then where their running statistics and their flag are passed
NORM_OPS = frozenset({"batch_norm", "instance_norm"})
_SIGNATURES: dict[str, tuple[int, int, int, str, bool]] = {
    # api: (running_mean at, running_var at, flag at, flag keyword, flag default)
    "F.batch_norm": (1, 2, 5, "training", False),
    "F.instance_norm": (1, 2, 5, "use_input_stats", True),
    "torch.batch_norm": (3, 4, 5, "training", False),
    "torch.instance_norm": (3, 4, 5, "use_input_stats", True),
}


def running_stats_of(
    api: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[list[torch.Tensor], bool]:
    """The running statistics norm op ``api`` was passed, and whether it updates them."""
    signature = _SIGNATURES.get(api)
    if signature is None:
        return [], False
    mean_at, var_at, flag_at, flag_name, flag_default = signature

    def argument(at: int, keyword: str, default: Any = None) -> Any:
        return args[at] if len(args) > at else kwargs.get(keyword, default)

    stats = [argument(mean_at, "running_mean"), argument(var_at, "running_var")]
    tensors = [t for t in stats if isinstance(t, torch.Tensor)]
    return tensors, bool(argument(flag_at, flag_name, flag_default)) and bool(tensors)


class _Held(NamedTuple):
    tensor: weakref.ref[torch.Tensor]
    values: torch.Tensor


class RunningStats:
    """The running statistics norm ops met, with what each held when last recorded."""

    def __init__(self, tensors: TensorTable) -> None:
        self._tensors = tensors
        self._held: dict[int, _Held] = {}

    def before(self, api: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Meet the running statistics op ``api`` is about to read, as they are now."""
        for t in running_stats_of(api, args, kwargs)[0]:
            held = self._held.get(id(t))
            if (
                held is not None
                and held.tensor() is t
                and self._tensors.known(t) is not None
                and not self._tensors.moved(t)  # else the tensor table saw it change
            ):
                if not torch.equal(held.values, t):  # a step recorded metrics-only updated it
                    line = snippet_frames()[1]
                    self._tensors.new_version(t, op=None, line=line, by=None, path=None)
                    self._hold(t)
            else:
                self._tensors.before_change(t)
                self._hold(t)

    def updated(self, api: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
        """The running statistics op ``api`` updates (none where it only reads them): inputs it
        changed itself, whatever their version counters say (``instance_norm`` copies the new
        values in, which moves them; ``batch_norm``'s kernel does not)."""
        tensors, updates = running_stats_of(api, args, kwargs)
        return tensors if updates else []

    def after(
        self,
        api: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        op: int,
        line: int | None,
        path: str | None,
    ) -> list[int]:
        """Give the running statistics op ``op`` (api ``api``) updated their new versions; return their ids."""
        tensors, updates = running_stats_of(api, args, kwargs)
        if not updates:
            return []
        ids = [self._tensors.new_version(t, op=op, line=line, by=api, path=path) for t in tensors]
        for t in tensors:
            self._hold(t)
        return ids

    def _hold(self, t: torch.Tensor) -> None:
        key, held = id(t), self._held

        def forget(ref: weakref.ref[torch.Tensor]) -> None:  # the tensor is gone (a replaced buffer)
            entry = held.get(key)
            if entry is not None and entry.tensor is ref:
                del held[key]

        held[key] = _Held(weakref.ref(t, forget), t.detach().clone())
