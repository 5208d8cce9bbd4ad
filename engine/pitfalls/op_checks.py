"""The detectors that look at one op at a time, and which ops they watch (:data:`WATCHED_OPS`).

:class:`OpChecks` hands each watched op to the detector of its kind: attention-mask-misread,
what made a loss's input (loss_inputs.py), the argmax of a softmax over the batch
(batch_predictions.py), functional-dropout-in-eval,
tensor-copied-off-graph, reshape-instead-of-permute (axis_order.py), broadcast-in-loss and
broadcast-in-comparison, the running totals of loss-tensor-accumulated
(running_totals.py), the last step of a time-first recurrent layer read from its batch axis
(recurrent_axes.py), the adds of penalty-without-gradient (penalties.py), and the indexes
by a permutation and the losses of inputs-shuffled-apart-from-labels (shuffles.py), and the
layers below the ReLUs of relu-units-dead (dead_relu.py, whose gradients PitfallWatch reads at
each optimizer step), and the activations of activation-applied-twice (activation_twice.py). It
keeps what
those detectors follow across ops; :class:`~.detectors.PitfallWatch` calls it and emits what
it finds. Every in-place op (:data:`~.data_edit.DATA_EDIT_OPS`) goes first to
data-edit-hidden-from-autograd's :class:`~.data_edit.DataEdits`, whatever else watches it.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from .activation_twice import TWICE_READ_OPS, ActivationsTwice
from .attention_masks import ATTENTION_OPS, attention_mask_report
from .axis_order import RESHAPE_OPS, axes_reordered
from .batch_predictions import BatchPredictions
from .bootstrap_targets import TARGET_LOSS_OPS, bootstrap_target_report
from .broadcast import BROADCAST_OPS, COMPARISON_OPS, broadcast_in_comparison, broadcast_in_loss
from .copied_out import COPYING_OPS, copied_off_graph
from .data_edit import DATA_EDIT_OPS, DataEdits
from .dead_relu import RELU_OPS, DeadRelus
from .flattened_targets import FlattenedAxes
from .functional_dropout import DROPOUT_OPS, dropout_in_eval
from .label_comparisons import scores_against_labels
from .loss_inputs import LOG_OPS, LOSS_INPUT_OPS, MAKER_OPS, MAKER_SPELLINGS, LossInputs
from .penalties import ParameterValues
from .recurrent_axes import INDEX_OPS, RECURRENT_OPS, RecurrentOutputs
from .running_totals import ADD_OPS, RunningTotals
from .shuffles import SHUFFLE_OPS, Shuffles
from .thresholds import THRESHOLD_OPS, thresholded_at_zero

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["WATCHED_OPS", "OpChecks"]

WATCHED_OPS = (
    ADD_OPS
    | BROADCAST_OPS
    | COMPARISON_OPS
    | MAKER_OPS
    | LOG_OPS
    | LOSS_INPUT_OPS
    | COPYING_OPS
    | DROPOUT_OPS
    | ATTENTION_OPS
    | RESHAPE_OPS
    | THRESHOLD_OPS
    | RECURRENT_OPS
    | INDEX_OPS
    | TARGET_LOSS_OPS
    | SHUFFLE_OPS
    | RELU_OPS
    | DATA_EDIT_OPS
    | frozenset(MAKER_SPELLINGS)
)


class OpChecks:
    """The op detectors of one run.

    ``say(kind, line, title, message, fix, …)`` emits a pitfall (``PitfallWatch._say``: once
    per kind and line). ``totals`` (loss-tensor-accumulated) is read at the end of the run;
    ``copied_at`` maps the line of each tensor-copied-off-graph to what it did and what to
    write instead (for the hint of a backward() that fails for it: explain_cut.py).
    """

    def __init__(self, rec: Recorder, say: Callable[..., None]) -> None:
        self._rec = rec
        self._say = say
        # loss-tensor-accumulated
        self.totals = RunningTotals(
            lambda: rec.memory.saved_bytes, lambda: rec.training.total_steps, rec.source_lines
        )
        self._loss_inputs = LossInputs()  # what made a loss function's input
        self._predictions = BatchPredictions(rec.source_lines)  # softmax-over-batch's argmax
        self.copied_at: dict[int, str] = {}
        self._recurrent = RecurrentOutputs(rec.source_lines)  # rnn-last-step-from-batch-axis
        self._flattened = FlattenedAxes(rec.source_lines)  # targets-flattened-in-other-order
        self.shuffles = Shuffles(rec.source_lines)  # inputs-shuffled-apart-from-labels
        # penalty-without-gradient: what op_recorder.py shows it of each op recorded in full
        self.penalties = ParameterValues(rec, say)
        # relu-units-dead: the layers below the ReLUs, read at each step (detectors.py)
        self.dead_relus = DeadRelus(self._parameter_name, lambda: rec.training.total_steps)
        # data-edit-hidden-from-autograd: each in-place write, told to memory.py (data_edit.py)
        self.data_edits = DataEdits(rec)
        # activation-applied-twice: read at the end of the run (detectors.py)
        self.twice = ActivationsTwice(
            lambda: rec.modules.current,
            rec.modules.path_of,
            lambda: rec.training.total_steps,
            lambda: rec.backward.last_loss,
        )

    def _parameter_name(self, p: torch.Tensor) -> str | None:
        """A parameter's module name (``net.fc1.weight``), else its snippet name (``W1``)."""
        name = self._rec.modules.param_name(p)[0]
        tid = None if name else self._rec.tensors.known(p)
        return name or (self._rec.tensors.names.get(tid) if tid is not None else None)

    def on_op(
        self,
        name: str,
        args: tuple[Any, ...],
        result: Any,
        line: int | None,
        kwargs: dict[str, Any] | None = None,
        frame: FrameType | None = None,
    ) -> None:
        """Look at one op whose name is in :data:`WATCHED_OPS`, run from snippet line ``line``
        (in snippet frame ``frame``) with positional ``args`` and keyword ``kwargs``."""
        if name in DATA_EDIT_OPS:
            self.data_edits.wrote(name, args, kwargs or {}, line)
        if name in RELU_OPS:
            self.dead_relus.saw(result, line)
            return
        if name in SHUFFLE_OPS:
            self.shuffles.saw(name, args, kwargs or {}, result, line, frame)
        if name in ATTENTION_OPS:
            misread = attention_mask_report(name, args, kwargs or {})
            if misread is not None:
                self._say("attention-mask-misread", line, *misread)
            return
        if name in RECURRENT_OPS:
            self._recurrent.ran(name, args, result, line)
            return
        if name in INDEX_OPS:
            misread = self._recurrent.indexed(args, line, frame)
            if misread is not None:
                self._say("rnn-last-step-from-batch-axis", line, *misread)
            return
        if not isinstance(result, torch.Tensor) or result.is_nested:
            return  # (a nested tensor has no one shape for the detectors below to read)
        if name in TWICE_READ_OPS and self.twice.doubled:
            self.twice.read(name, args, kwargs or {}, result, line)
        written = None
        if name in MAKER_SPELLINGS:  # torch.special.expit, …: the activation each is, named as written
            name, written = MAKER_SPELLINGS[name]
        if name in MAKER_OPS:
            dim = self._loss_inputs.made(name, args, kwargs or {}, result, line, written)
            self.twice.saw(name, args, result, dim, line, written)
            predicted = self._predictions.check(name, args[0] if args else None, result, dim, line)
            if predicted is not None:
                self._say(predicted[0], line, *predicted[1:])
            return
        if name in LOG_OPS:
            self._loss_inputs.logged(args, result, line)
            return
        if name in LOSS_INPUT_OPS:
            found = self._loss_inputs.check(name, args, result, line) or self._flattened.check(
                name, args, line
            )
            if found is not None:
                self._say(found[0], line, *found[1:])
            return
        if name in DROPOUT_OPS:
            dropped = dropout_in_eval(
                name,
                args,
                kwargs or {},
                frame,
                line,
                self._rec.statement_lines,
                self._rec.modules.path_of,
            )
            if dropped is not None:
                self._say("functional-dropout-in-eval", line, *dropped)
            return
        if name in RESHAPE_OPS:
            self._flattened.reshaped(args, result, line)
            reordered = axes_reordered(name, args, result, line, self._rec.statement_lines, frame)
            if reordered is not None:
                self._say("reshape-instead-of-permute", line, *reordered)
            return
        if name in COPYING_OPS:
            copied = copied_off_graph(name, args, result, line, self._rec.statement_lines, frame)
            if copied is not None:
                self._say("tensor-copied-off-graph", line, *copied.report)
                if line is not None:
                    self.copied_at[line] = copied.cut
            return
        if name in TARGET_LOSS_OPS:
            names = self._rec.modules.param_name
            said = bootstrap_target_report(
                name, args, kwargs or {}, line, self._rec.statement_lines, lambda p: names(p)[0]
            )
            if said is not None:
                self._say("bootstrap-target-not-detached", line, *said)
        if name in BROADCAST_OPS:
            self._check_broadcast(name, args, result, line)
        if name in THRESHOLD_OPS:
            maker = self._loss_inputs.maker_of(args[0]) if args else None
            at_zero = thresholded_at_zero(args, result, maker, line, self._rec.statement_lines, frame)
            if at_zero is not None:
                self._say("probability-thresholded-at-zero", line, *at_zero)
            return
        if name in COMPARISON_OPS:
            compared = broadcast_in_comparison(args, result, self._rec.statement_lines, line)
            if compared is not None:
                self._say("broadcast-in-comparison", line, *compared)
            scored = scores_against_labels(args, result, line, self._rec.statement_lines, frame)
            if scored is not None:
                self._say("scores-compared-to-labels", line, *scored)
        if name in ADD_OPS:
            self.totals.on_add(args, result, line)
            self.penalties.on_add(args, result, line)

    def _check_broadcast(
        self, name: str, args: tuple[Any, ...], result: torch.Tensor, line: int | None
    ) -> None:
        found = broadcast_in_loss(name, args, result, self._rec.statement_lines, line)
        if found is not None:
            self._say("broadcast-in-loss", line, *found)
