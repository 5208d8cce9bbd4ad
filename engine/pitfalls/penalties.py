"""penalty-without-gradient: a penalty built from the parameters' values off the graph
(``p.data``, ``p.detach()``) and added to the loss.

# NOTE [Penalties off the graph]
# ``l2 = sum((p.data ** 2).sum() for p in model.parameters()); loss = ce + lam * l2`` reads
# the weights through ``.data``: ``l2`` has no grad_fn, so to autograd it is a constant. It
# changes the loss's value and contributes nothing to any gradient, and the regularisation
# does nothing. While the tape records in full, op_recorder.py hands every op to
# :meth:`ParameterValues.after_op`, which marks the tensors computed off the graph from the
# values of parameters that train: a ``.data`` read of one (NOTE [Changed through .data] in
# tensors.py) or its ``detach()``, and what ops make of those with no graph. An add (an op of
# ADD_OPS, op_checks.py) of such a tensor to one with a graph is a candidate; it is said once
# a backward() walks the add's node (a loss backpropagated, not a total printed). Constants
# that are not the parameters' values (a target, a label-smoothing term, log 2π), a penalty
# of the parameters themselves, and one whose coefficient only is read off them
# (``p.pow(2).sum() / p.detach().norm()``: a graph) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .hook_calls import guarded

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["ParameterValues"]

_MAX_MARKED = 20_000  # tensors followed, at most (a run recorded in full makes few of these)
_ASSIGNED = re.compile(r"\s*([A-Za-z_]\w*)\s*(?:[-+*/]?=)(?!=)")
_OFF_GRAPH = re.compile(r"\.data\b(?!\s*\()|\.detach\(\)")


def _read_through(code: str) -> str:
    """How a line reads the parameters: ``.data``, ``.detach()`` or both."""
    ways = [
        way
        for way, found in ((".data", re.search(r"\.data\b", code)), (".detach()", ".detach()" in code))
        if found
    ]
    return " and ".join(ways) or ".data"


class ParameterValues:
    """The tensors computed off the graph from trained parameters' values (NOTE [Penalties off
    the graph]); ``say`` emits a pitfall (``PitfallWatch._say``)."""

    def __init__(self, rec: Recorder, say: Callable[..., None]) -> None:
        self._rec = rec
        self._say = say
        # tid -> (the tids of the parameters whose values it holds, the line that read them)
        self._marked: dict[int, tuple[frozenset[int], int | None]] = {}
        self._pending: dict[int, Any] = {}  # add line -> the hook on its node
        self._said: set[int] = set()

    @guarded
    def after_op(
        self,
        short: str,
        inputs: list[torch.Tensor],
        in_ids: list[int],
        outputs: list[torch.Tensor],
        out_ids: list[int],
        line: int | None,
    ) -> None:
        """Look at an op recorded at ``line``: ``short`` its name, ``inputs`` its tensors (ids
        ``in_ids``), ``outputs`` what it made (ids ``out_ids``, in the same order)."""
        tensors = self._rec.tensors
        params: frozenset[int] = frozenset()
        read_at = line
        for t, tid in zip(inputs, in_ids, strict=False):
            known = self._marked.get(tid)
            if known is not None:
                params, read_at = params | known[0], known[1] if not params else read_at
                continue
            owner = t if short == "detach" else tensors.data_owner(tid, t)
            if isinstance(owner, nn.Parameter) and owner.requires_grad:
                owner_id = tensors.known(owner)
                if owner_id is not None:
                    params = params | {owner_id}
        if not params or len(self._marked) >= _MAX_MARKED:
            return
        for t, tid in zip(outputs, out_ids, strict=False):
            if t.grad_fn is None and not t.requires_grad and t.is_floating_point():
                self._marked[tid] = (params, read_at)

    def on_add(self, args: tuple[Any, ...], result: torch.Tensor, line: int | None) -> None:
        """Look at an add (``loss = ce + lam * l2``) that made ``result`` at ``line``: one
        operand with a graph, the other marked, becomes a candidate (NOTE [Penalties off the graph])."""
        if not self._marked or line is None or line in self._said or result.grad_fn is None:
            return
        operands = [a for a in args[:2] if isinstance(a, torch.Tensor)]
        if len(operands) != 2:
            return
        tensors = self._rec.tensors
        for term, other in (operands, operands[::-1]):
            tid = tensors.known(term)
            found = self._marked.get(tid) if tid is not None else None
            if found is None or other.grad_fn is None or term.requires_grad:
                continue
            value = float(term.sum()) if term.numel() else 0.0
            self._candidate(result, line, found[0], found[1], value)
            return

    def _candidate(
        self, result: torch.Tensor, line: int, params: frozenset[int], read_at: int | None, value: float
    ) -> None:
        """Hook the add's node: the report goes out when a backward() walks it."""
        old = self._pending.pop(line, None)
        if old is not None:
            old.remove()
        names = [self._rec.tensors.names.get(p) or "a parameter" for p in sorted(params)]
        report = self._report(line, names, read_at, value)

        def walked(grad_outputs: Any) -> None:
            try:
                handle = self._pending.pop(line, None)
                if handle is not None:
                    handle.remove()
                if line not in self._said:
                    self._said.add(line)
                    self._say("penalty-without-gradient", line, *report)
            except Exception:  # in the snippet's backward(): never raise there
                self._rec.observation_failed()

        node: Any = result.grad_fn
        self._pending[line] = node.register_prehook(walked)

    def _report(self, line: int, names: list[str], read_at: int | None, value: float) -> tuple[str, str, str]:
        """The title, message and fix of penalty-without-gradient."""
        source = self._rec.source_lines
        code = source[read_at - 1].strip() if read_at is not None and 0 < read_at <= len(source) else ""
        assigned = _ASSIGNED.match(code)
        term = assigned.group(1) if assigned else "the penalty"
        how = _read_through(code)
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        count = f"{len(names)} parameter{'' if len(names) == 1 else 's'}"
        where = f" at line {read_at}" if read_at is not None and read_at != line else ""
        fixed = _OFF_GRAPH.sub("", code) if code else ""
        return (
            f"{term} reads the weights through {how}: it adds to the loss and nothing to the gradients",
            f"This line adds a term worth {value:.6g} to the loss, computed{where} from the values of "
            f"{count} ({shown}) read through {how}. That term has no grad_fn: to autograd it is a "
            "constant, so it changes the loss's value and contributes nothing to backward(). Every "
            "gradient is what it would be without it, and the penalty never pulls a weight towards "
            "zero: the regularisation does nothing, and nothing reports it.",
            (
                f"Compute it from the parameters themselves: {fixed}"
                if fixed and fixed != code
                else "Compute the penalty from the parameters themselves, not their .data or .detach()"
            )
            + " (or drop it and pass weight_decay=… to the optimizer, for an L2 penalty).",
        )
