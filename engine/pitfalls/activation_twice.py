"""An output activation applied twice (activation-applied-twice).

A model that already ends in ``nn.Sigmoid()``, then ``torch.sigmoid(model(x))`` before
``nn.BCELoss()`` or a threshold: every prediction is ``sigmoid(sigmoid(x))``, between 0.5 and
0.731 whatever the logits, so no sample is ever predicted negative and the loss has a floor it
can never go below. The same with softmax: a softmax of a softmax's output over the same dim
squashes the probabilities toward uniform ``1/C``; a log_softmax of it gives log-probabilities
that can never be confident, and nll_loss a floor. Nothing raises; the run trains, badly.

Told at the second activation's line, at the end of the run: the range its outputs took in
the iterations recorded in full (the only ones whose ops are seen), the floor of the loss that
read them on that loss's targets, and where the run's loss ends. "Directly": the second
activation's input is the very tensor the first returned, unchanged (known by identity and
version, as loss_inputs.py knows a loss's input): a copy, ``.detach()``, a slice, a
temperature (``softmax(p / T)``), an in-place change in between, or an in-place ``sigmoid_()``
of a sigmoid's output, is not, and stays silent.

Every spelling of an activation counts as it: ``torch.sigmoid``, ``F.sigmoid``, ``x.sigmoid()``
and ``torch.special.expit`` are sigmoid (the last named as written in what is said), and
``torch.special.softmax`` and ``torch.special.log_softmax`` are softmax and log_softmax.

Cheap: each sigmoid, softmax and log_softmax recorded in full (already watched, for
loss_inputs.py) costs a dict lookup and a weak reference; the losses and comparisons that
may read a doubled output (also watched already) look only once an output was doubled.
Said only where the doubled output is a model's (the first activation ran in a module's
forward: ``nn.Sigmoid``, ``nn.Softmax``, or a forward's own ``torch.sigmoid``) or is read as
predictions (it reached a loss function or a ``>`` comparison), which evaluation-only code
does too; a ``torch.sigmoid(torch.sigmoid(x))`` written out to show the chain rule is neither.

Silent: a softmax over one dim then another (2-D attention, Sinkhorn normalisation), softmax
or log_softmax of log_softmax's output (``softmax(log p)`` is ``p``, ``log_softmax(log p)`` is
``log p``: the same numbers), gates (``torch.sigmoid(a) * torch.sigmoid(b)``), SiLU
(``x * torch.sigmoid(x)``) and hand-written LSTM cells (no sigmoid of a sigmoid's output), and
an activation stacked three or more times on purpose (a loop that squashes its own output to
show the gradient vanish, or to find sigmoid's fixed point): none of the stack's lines is said.
A softmax's output straight into ``cross_entropy`` is probabilities-into-cross-entropy's
(loss_inputs.py), a sigmoid's into ``BCEWithLogitsLoss`` sigmoid-into-bce-with-logits'.
What is said is worded in activation_twice_said.py.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from ..values import has_storage
from .activation_twice_said import Doubled, doubled_said
from .kinds import Said
from .shuffles import PREDICTION_LOSS_OPS

__all__ = ["TWICE_READ_OPS", "ActivationsTwice"]

# what reads a doubled output as predictions (all of them watched already: shuffles.py,
# loss_inputs.py, thresholds.py); the activations themselves are loss_inputs.MAKER_OPS
_THRESHOLDS = frozenset({"gt", "__gt__", "greater"})
TWICE_READ_OPS = PREDICTION_LOSS_OPS | _THRESHOLDS
# the activations whose output a second one squashes again: (first, second)
_PAIRS = frozenset({("sigmoid", "sigmoid"), ("softmax", "softmax"), ("softmax", "log_softmax")})
# losses whose best prediction of a target is the target itself, clamped into the range
# sigmoid(sigmoid(x)) can reach: their floor for this run's targets is exact
_ELEMENTWISE_FLOORS: dict[str, Callable[..., torch.Tensor]] = {
    "binary_cross_entropy": F.binary_cross_entropy,
    "mse_loss": F.mse_loss,
    "l1_loss": F.l1_loss,
}
_MOST_OUTPUTS = 256  # activation outputs followed at once, before the dead ones are dropped


class _Output(NamedTuple):
    """An activation's output, remembered by ``id()``."""

    ref: weakref.ref[torch.Tensor]
    op: str  # sigmoid, softmax, log_softmax
    dim: int | None  # the dim a softmax normalised over
    version: int | None  # the tensor's version then (an in-place change after it: not its output)
    line: int | None
    module: nn.Module | None  # the module whose forward ran it
    written: str | None  # the name the snippet called it by, where not the activation's own


class ActivationsTwice:
    """The activation outputs of a run (weakly, by identity) and the activations applied to one.

    ``current_module()`` is the module whose forward is running (None outside any, and in
    steps recorded for metrics only); ``path_of(module)`` its name (``model.3``); ``steps()``
    the optimizer steps taken so far; ``last_loss()`` the loss of the last backward(). Ops are
    seen only where the run is recorded in full (the first steps): the range said is theirs.
    """

    def __init__(
        self,
        current_module: Callable[[], nn.Module | None],
        path_of: Callable[[nn.Module], str | None],
        steps: Callable[[], int],
        last_loss: Callable[[], float | None],
    ) -> None:
        self._current = current_module
        self._path_of = path_of
        self._steps = steps
        self._last_loss = last_loss
        self._outputs: dict[int, _Output] = {}
        # id() of each doubled output -> (it, weakly; the line of the activation that made it)
        self.doubled: dict[int, tuple[weakref.ref[torch.Tensor], int | None]] = {}
        self._facts: dict[int | None, Doubled] = {}  # by the second activation's line
        # the lines of activations applied three or more times in a row, not said
        self._stacked: set[int | None] = set()

    def saw(
        self,
        op: str,
        args: tuple[Any, ...],
        result: torch.Tensor,
        dim: int | None,
        line: int | None,
        written: str | None = None,
    ) -> None:
        """Look at ``op`` (sigmoid, softmax or log_softmax, over ``dim``) run at ``line`` with
        ``args``, which returned ``result``: note it when its input is an activation's output;
        ``written``: the name the snippet called it by (``torch.special.expit``), if another."""
        given = args[0] if args else None
        module = self._current()
        if given is not None:
            first = self._outputs.get(id(given))
            if (
                first is not None
                and (first.op, op) in _PAIRS
                and first.dim == dim
                and (dim is not None or op == "sigmoid")
            ):
                chained = self.doubled.get(id(given))
                if chained is not None and chained[0]() is given:
                    self._stacked |= {chained[1], line}  # a third of a kind: a stack on purpose
                self._check(first, op, given, result, dim, line, module, written)
        if len(self._outputs) >= _MOST_OUTPUTS:
            self._outputs = _alive(self._outputs)
        self._outputs[id(result)] = _Output(
            weakref.ref(result), op, dim, _version(result), line, module, written
        )

    def _check(
        self,
        first: _Output,
        op: str,
        given: torch.Tensor,
        result: torch.Tensor,
        dim: int | None,
        line: int | None,
        module: nn.Module | None,
        written: str | None,
    ) -> None:
        if first.ref() is not given or first.version != _version(given) or given is result:
            return  # another tensor at a reused id, changed in place since, or made in place
        if not (result.is_floating_point() and result.numel() and has_storage(result)):
            return
        low, high = torch.aminmax(result.detach())
        facts = self._facts.get(line)
        if facts is None:
            classes = result.shape[dim] if dim is not None else None
            facts = Doubled(line, first.op, op, first.line, dim, classes)
            facts.first_module = _named(first.module, self._path_of)
            facts.second_module = _named(module, self._path_of)
            facts.first_written, facts.second_written = first.written, written
            self._facts[line] = facts
        facts.calls += 1
        facts.last_step = self._steps()
        facts.low = min(facts.low, float(low))
        facts.high = max(facts.high, float(high))
        if len(self.doubled) >= _MOST_OUTPUTS:
            self.doubled = {k: v for k, v in self.doubled.items() if v[0]() is not None}
        self.doubled[id(result)] = (weakref.ref(result), line)

    def read(
        self, op: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, line: int | None
    ) -> None:
        """Look at ``op`` (one of :data:`TWICE_READ_OPS`) run at ``line``: note a loss or a
        comparison that read a doubled output, and the floor that loss has on this run's targets."""
        given = args[0] if args else kwargs.get("input")
        entry = self.doubled.get(id(given))
        if entry is None or entry[0]() is not given or not isinstance(given, torch.Tensor):
            return
        facts = self._facts[entry[1]]
        if op in _THRESHOLDS:
            if len(args) > 1 and isinstance(args[1], int | float) and not isinstance(args[1], bool):
                facts.threshold = (line, float(args[1]))
            return
        module = self._current()
        facts.loss = type(module).__name__ if isinstance(module, nn.modules.loss._Loss) else op
        facts.loss_line = line
        if facts.trained and facts.backward_on_it is not False:
            # the last backward() since the loss was last read ran on it: its last value is the run's
            facts.backward_on_it = self._last_loss() == facts.loss_value
        if isinstance(result, torch.Tensor) and result.numel() == 1 and has_storage(result):
            facts.loss_value = float(result.detach())
            facts.trained = result.requires_grad
        target = args[1] if len(args) > 1 else kwargs.get("target")
        facts.floor = _floor(op, facts, given, target, args[2:], kwargs)

    def reports(self, source_lines: Sequence[str], last_loss: float | None) -> list[Said]:
        """activation-applied-twice at each line that applied one to an activation's output, where
        that output is a model's or was read as predictions (``source_lines``: the snippet's, to
        quote; ``last_loss``: the run's last backward() loss)."""
        steps = self._steps()
        for facts in self._facts.values():
            facts.seen_all = steps <= facts.last_step + 1
            if facts.backward_on_it and last_loss is not None:
                facts.loss_value, facts.loss_at_end = last_loss, True
        return [
            doubled_said(facts, source_lines)
            for facts in self._facts.values()
            if facts.line not in self._stacked
            and (
                facts.first_module is not None
                or facts.second_module is not None
                or facts.loss is not None
                or facts.threshold is not None
            )
        ]


def _floor(
    op: str,
    facts: Doubled,
    given: torch.Tensor,
    target: Any,
    more: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> float | None:
    """The least loss ``op`` can give the doubled output ``given`` against ``target`` with the
    other arguments ``more`` and ``kwargs``, whatever the model learns; None where not known."""
    reduction = kwargs.get("reduction", "mean")
    if more or reduction not in ("mean", "sum") or kwargs.get("weight") is not None:
        return None
    if facts.second == "log_softmax" and op in ("nll_loss", "cross_entropy"):
        if kwargs.get("label_smoothing") or reduction != "mean":
            return None
        return -facts.bounds()[1]  # the log-probability of the right class is at most this
    floor = _ELEMENTWISE_FLOORS.get(op)
    if facts.second != "sigmoid" or floor is None or not isinstance(target, torch.Tensor):
        return None
    if target.shape != given.shape or not target.is_floating_point() or not has_storage(target):
        return None
    low, high = facts.bounds()
    target = target.detach()
    return float(floor(target.clamp(low, high).to(given.dtype), target, reduction=reduction))


def _named(module: nn.Module | None, path_of: Callable[[nn.Module], str | None]) -> tuple[str, str] | None:
    """``(path, class name)`` of the module an activation ran in (path ``""`` when it has no name)."""
    if module is None:
        return None
    path, cls = path_of(module) or "", type(module).__name__
    return ("" if path == cls else path), cls  # (a module called unbound is named for its class)


def _version(t: torch.Tensor) -> int | None:
    try:
        return t._version
    except RuntimeError:  # an inference tensor has no version counter
        return None


def _alive(outputs: dict[int, _Output]) -> dict[int, _Output]:
    """``outputs`` without those whose tensors are gone; the newest only, if that is still many."""
    alive = {k: v for k, v in outputs.items() if v.ref() is not None}
    return alive if len(alive) < _MOST_OUTPUTS // 2 else dict(list(alive.items())[-_MOST_OUTPUTS // 4 :])
