"""The detectors, one method group per pitfall kind (see the package docstring).

:class:`PitfallWatch` takes the recorder's calls and reports; the ops it watches
(:data:`WATCHED_OPS`) go to the op detectors in op_checks.py. What a detector must follow
across calls lives beside it: the chains of adds of loss-tensor-accumulated in
running_totals.py, the gradients of missing-zero-grad (and what it says) in stale_grads.py,
the shape check of broadcast-in-loss in broadcast.py, what made a loss's input in
loss_inputs.py; the modes of dropout, batch norm and whole models in module_calls.py; the
end-of-run reports are built in parameters.py, run_end.py and diverging.py.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..source import snippet_frame
from .clip_order import clip_after_step, clip_got_no_parameters
from .clip_targets import ClipTargets
from .custom_backward import IgnoredGradients
from .diverging import LossCourse, diverged_reports
from .grad_of_grad import GradOfGrad, grad_of_grad_added
from .hand_updates import HandUpdates, left_in_grad_by_hand
from .hook_calls import UNKNOWN, Unknown, guarded, known, nothing
from .kinds import PITFALL_KINDS
from .kl_sign import kl_sign_reports
from .late_retain import LateRetains
from .leaked_gradients import LeakedGradients
from .module_calls import ModeWatch
from .nan_gradients import NonFiniteGradients
from .never_stepped import never_stepped
from .no_gradients import no_gradients_said, previews_a_schedule
from .non_finite_loss import non_finite_said
from .op_checks import OpChecks
from .parameters import parameter_reports
from .piled_hooks import PiledHooks
from .piled_module_hooks import PiledModuleHooks
from .rebuilt import rebuilt_report, restarted_report
from .rounding import RoundingCuts
from .run_end import loop_reports, memory_reports, uncalled_reports
from .samples import SampleDraws
from .scaled_clipping import scaled_clip_report
from .scheduler_periods import scheduler_reports
from .stale_grads import StaleGradients, stale_used_explained
from .uncalled import uncalled_methods
from .ungraded import UngradedParams
from .uninitialised import EXPLAINED_BY_UNFILLED, Unfilled
from .unused_grads import UnusedGradients, cleared_unused
from .vanishing import VanishingGradients

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["PitfallWatch"]

_ONCE_PER_RUN = frozenset(
    {
        "missing-zero-grad",
        "non-finite-loss",
        "non-finite-gradient",
        "eval-mode-in-training",
        "optimizer-rebuilt",
        "parameter-not-optimized",
        "parameter-without-gradient",
    }
)
_KINDS = frozenset(PITFALL_KINDS)


class PitfallWatch:
    """All detectors of one run. The recorder calls the ``on_*`` methods.

    With ``enabled=False`` every detector is off (the benchmark's baseline).
    """

    def __init__(self, rec: Recorder, *, enabled: bool = True) -> None:
        self._rec = rec
        self.enabled = enabled
        if not enabled:  # every hook the recorder calls does nothing
            for name in dir(type(self)):
                if name.startswith(("on_", "before_", "after_")):
                    setattr(self, name, nothing)
        self._said: set[tuple[str, int | None]] = set()
        self._stale = StaleGradients(known)  # missing-zero-grad
        self._leaks = LeakedGradients(rec, self._say)  # gradient-leaked-from-other-loss
        self._nan_gradients = NonFiniteGradients()  # non-finite-gradient
        # eval-mode-in-training, train-mode-in-evaluation, graph-built-in-evaluation's forwards
        self._modes = ModeWatch(rec, self._say)
        # clip-after-step: (the step, its line, backward() calls by then) of the last step
        self._last_step: tuple[int, int | None, int] | None = None
        self.clips = ClipTargets(rec, self._say)  # clip-on-other-parameters (library_calls.py)
        self._from_leaf = False  # the last backward() started from leaves only
        self._ungraded = UngradedParams()  # parameter-without-gradient
        self._hand_updates = HandUpdates()  # missing-zero-grad in a loop that steps by hand
        self._course = LossCourse()  # loss-diverging
        self._piled_hooks = PiledHooks()  # hook-registered-in-loop
        self._piled_module_hooks = PiledModuleHooks()  # its module hooks (library_calls.py)
        self._unused = UnusedGradients()  # gradients-cleared-unused
        self._grad_of_grad = GradOfGrad()  # grad-of-grad-accumulated
        self._ignored = IgnoredGradients()  # custom-backward-ignores-gradient
        self._late_retains = LateRetains()  # retain-grad-after-backward
        self._rounding = RoundingCuts()  # loss-through-rounding
        self._vanishing = VanishingGradients(  # vanishing-gradients
            rec.source_lines, lambda p: rec.modules.param_name(p)[0], self._made_at
        )
        # the op detectors, and what they follow: loss inputs, running totals, and
        # tensor-copied-off-graph's line -> what it did and what to write instead (for the
        # hint of a backward() that fails for it: explain_cut.py)
        self._ops = OpChecks(rec, self._say)
        self.unfilled = Unfilled(rec, self._say)  # parameter-never-initialised (op_recorder.py)
        self.copied_at = self._ops.copied_at
        self.shuffles = self._ops.shuffles  # inputs-shuffled-apart-from-labels (also library_calls.py)
        self.draws = SampleDraws(rec.source_lines)  # sample-instead-of-rsample (library_calls.py)
        self.penalties = self._ops.penalties  # shown each op recorded in full (op_recorder.py)
        self._optimizers: dict[int, weakref.ref[torch.optim.Optimizer]] = {}  # by id(), in order met
        self.found = 0

    # --- emitting ---------------------------------------------------------------------

    def _say(
        self,
        kind: str,
        line: int | None,
        title: str,
        message: str,
        fix: str,
        tensors: list[int] | None = None,
        nodes: list[int] | None = None,
        metrics_only_after: int | None = None,
    ) -> None:
        if kind not in _KINDS:
            raise ValueError(f"unknown pitfall kind {kind!r}: list it in engine/pitfalls/kinds.py")
        if kind in EXPLAINED_BY_UNFILLED and self.unfilled.said:
            return  # values from the allocator's bytes (NOTE [Judged by what the code did])
        key = (kind, None if kind in _ONCE_PER_RUN else line)
        if key in self._said:
            return
        self._said.add(key)
        self.found += 1
        event = {
            "type": "pitfall",
            "kind": kind,
            "line": line,
            "title": title,
            "message": message,
            "fix": fix,
            "tensors": tensors or [],
            "nodes": nodes or [],
        }
        if metrics_only_after is not None:
            event["metrics_only_after"] = metrics_only_after
        self._rec.emit(event)

    # --- ops --------------------------------------------------------------------------

    @guarded
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
        self._ops.on_op(name, args, result, line, kwargs, frame)

    # --- modules ------------------------------------------------------------------------

    def needs_calls_of(self, module: nn.Module, is_root: bool) -> bool:
        """Whether :meth:`on_module_call` must see ``module``'s calls (when not every call is
        seen): see :meth:`.ModeWatch.needs_calls_of`."""
        return self.enabled and self._modes.needs_calls_of(module, is_root)

    @guarded
    def on_module_call(self, module: nn.Module, is_root: bool) -> None:
        """Look at a module about to run its forward (``is_root``: called as a whole)."""
        self._modes.on_module_call(module, is_root)
        if self._rec.detail:  # which layers run, for parameter-without-gradient's wording
            self._ungraded.on_module_call(module)

    # --- backward and steps -------------------------------------------------------------

    @guarded
    def on_backward(self, roots: list[torch.Tensor], line: int | Unknown | None = UNKNOWN) -> None:
        """Look at a backward call before it runs (``line``: the backward call's, looked up
        when a report needs it unless given)."""
        loss = self._rec.backward.last_loss
        if loss is not None and not math.isfinite(loss):
            self._non_finite(f"the loss is {loss}", known(line), updates=self._rec.training.total_steps)
        self._stale.before_backward()
        self._leaks.before_backward()
        self._ops.data_edits.before_backward(roots)
        self._rounding.before_backward()
        if self._rec.detail:
            self._vanishing.before_backward(roots)
        for said in (*self.shuffles.before_backward(), *self.draws.before_backward()):
            self._say(*said)
        self._nan_gradients.before_backward(roots, read=self._rec.detail)
        if self._rec.detail:
            if not self._rec.training.inside_step():  # an LBFGS closure's are step()'s own
                self._unused.before_backward(known(line))
            self._grad_of_grad.before_backward(roots, (p for p, _ in self._rec.modules.all_params()))
        # step-without-gradients: a backward() from leaves (a loss rewrapped with requires_grad=True)
        self._from_leaf = all(isinstance(r, torch.Tensor) and r.grad_fn is None for r in roots)

    @guarded
    def on_node_ran(
        self,
        nid: int,
        name: str,
        line: int | None,
        sent_values: list[dict[str, Any] | None],
        gradients: tuple[Sequence[torch.Tensor | None], Sequence[torch.Tensor | None]],
    ) -> None:
        """Look at the gradients node ``nid`` (class ``name``, made at ``line``) received and
        sent in a recorded backward walk: ``sent_values``, those it sent as trace values, and
        ``gradients``, the tensors it received and sent."""
        self._late_retains.ran(nid, line)
        self._rounding.ran(nid, name, line, *gradients)
        ignored = self._ignored.ran(name, *gradients)
        if ignored is not None:
            self._say("custom-backward-ignores-gradient", ignored[0], *ignored[1:], nodes=[nid])
        if not self._nan_gradients.may_report(name, sent_values):
            return
        rec = self._rec
        with torch.no_grad():
            report = self._nan_gradients.report(
                name, *gradients, rec.backward.last_loss, line, rec.statement_lines
            )
        if report is not None:
            self._say("non-finite-gradient", line, *report, nodes=[nid])

    @guarded
    def on_function_applied(self, cls: type) -> None:
        """Look at custom Function ``cls``, applied by the snippet in a part recorded in full."""
        self._ignored.applied(cls)

    @guarded
    def before_accumulate(self, leaf: torch.Tensor) -> None:
        """Look at ``leaf`` as AccumulateGrad is about to add into its ``.grad``, in a walk
        recorded in full: a gradient left from before an update by hand (hand_updates.py), or
        the gradient this backward() started from (grad_of_grad.py)."""
        self._grad_of_grad.before_accumulate(leaf)
        if self._rec.training.total_steps or not self._hand_updates.stale(leaf):
            return  # with an optimizer, its steps judge (stale_grads.py)
        name = self._name(leaf) or "the leaf"
        line = known(UNKNOWN)
        self._say("missing-zero-grad", line, *left_in_grad_by_hand(name, line, self._rec.statement_lines))

    @guarded
    def after_accumulate(self, leaf: torch.Tensor) -> None:
        """Look at ``leaf`` right after AccumulateGrad added into its ``.grad``."""
        self._rounding.accumulated(leaf)
        numbers = self._grad_of_grad.added(leaf)
        if numbers is not None or self._grad_of_grad.pending(leaf):
            name = self._name(leaf) or "x"
            self._say("grad-of-grad-accumulated", known(UNKNOWN), *grad_of_grad_added(name, numbers))
        if not self._rec.training.total_steps:  # once an optimizer steps, its steps judge
            self._hand_updates.accumulated(leaf)

    @guarded
    def after_backward(self, line: int | Unknown | None = UNKNOWN) -> None:
        """Look at a backward call that returned: mark the gradients it added into that a
        step already used (NOTE [Stale gradients] in stale_grads.py)."""
        self._stale.after_backward(line)
        self._leaks.after_backward(line)
        if self._rec.memory.unseen_uses:  # data-edit-hidden-from-autograd (data_edit.py)
            for said, nodes in self._ops.data_edits.after_backward(known(line)):
                self._say(*said, nodes=nodes)
        flat = self._rounding.after_backward(self._rec.statement_lines)
        if flat is not None:
            self._say("loss-through-rounding", *flat[:4], nodes=flat[4])
        if self._rec.detail and not self._rec.training.inside_step():
            self._unused.after_backward((p for p, _ in self._rec.modules.all_params()), known(line))

    @guarded
    def on_optimizer_step(
        self,
        opt: torch.optim.Optimizer,
        params: list[torch.Tensor],
        step: int,
        grad_norm: float | None,
        line: int | None,
        rebuilds: int = 0,
        restarted: tuple[int, int] | None = None,
    ) -> None:
        """Look at an optimizer right after its ``step()``; ``rebuilds``: how many optimizers
        in a row before it, over the same parameters, made one step each (NOTE [Rebuilt
        optimizers] in lineage.py); ``restarted``: how many in a row before it, with the same
        settings, made several steps each, and how many the last one made (or ``None``)."""
        self._last_step = (step, line, self._rec.backward.calls)
        self.clips.stepped(opt, params, line)
        self._modes.stepped(step, line, params)
        every_step = rebuilds >= 2  # a third in a row, keeping state PyTorch-style
        every_epoch = restarted is not None and restarted[0] >= 2
        if (every_step or every_epoch) and opt.state:
            label, kind, source = (
                self._rec.training.label_of(opt) or type(opt).__name__,
                type(opt).__name__,
                self._rec.statement_lines,
            )
            rebuilt = (
                rebuilt_report(label, kind, line, source)
                if every_step or restarted is None
                else restarted_report(label, kind, restarted[1], line, source)
            )
            self._say("optimizer-rebuilt", *rebuilt)
        known = self._optimizers.get(id(opt))
        if known is None or known() is not opt:
            self._optimizers[id(opt)] = weakref.ref(opt)
        unused = self._unused.stepped(params, self._rec.source_lines)
        if unused is not None:
            label = (self._rec.training.label_of(opt) or "opt").split(" ", 1)[0]
            self._say(
                "gradients-cleared-unused",
                unused[0],
                *cleared_unused(*unused, line, label, self._rec.source_lines),
            )
        if ("missing-zero-grad", None) not in self._said:
            stale = self._stale.used_by(params, step)
            if stale is not None:
                entry, grad = stale
                said = stale_used_explained(entry, grad, step, self._uncalled)
                self._say("missing-zero-grad", entry.added_at, *said)
        self._ungraded.on_step(opt, params)
        self._leaks.stepped(opt, params, line)
        lr = opt.param_groups[0].get("lr") if opt.param_groups else None
        climbs = any(group.get("maximize") for group in opt.param_groups)  # (the loss climbs on purpose)
        norms = self._rec.training.last_norms
        self._ops.dead_relus.stepped(opt, params, step, lr, self._rec.backward.last_loss, norms)
        self._vanishing.stepped(opt, params, norms, step)
        self._course.note(
            self._rec.training.label_of(opt) or type(opt).__name__,
            step,
            None if climbs else self._rec.backward.last_loss,
            lr if isinstance(lr, float | int) else None,
            line,
        )
        if (
            params
            and grad_norm is None  # (a post-hook of the optimizer's own may have cleared them since)
            and all(p.grad is None for p in params)
            and not previews_a_schedule(opt, params, self._name)
        ):
            self._step_without_gradients(line, opt)
        if grad_norm is not None and not math.isfinite(grad_norm):
            # backward made them non-finite from a finite loss, in a walk no node of which was read
            report = self._nan_gradients.unread_walk(step, grad_norm, self._rec.backward.last_loss)
            if report is not None:
                self._say("non-finite-gradient", line, *report, metrics_only_after=step - 1)
                return
            # the gradients this step used were computed before it
            updates = self._rec.training.total_steps - 1
            self._non_finite(f"the gradient norm is {grad_norm}", line, updates=updates, step=step, opt=opt)

    @guarded
    def on_clip(self, function: str) -> None:
        """Look at a call of ``function`` (``clip_grad_norm_``, ``clip_grad_value_``) as it starts."""
        frame, line = snippet_frame()
        scaled = scaled_clip_report(function, frame, line, self._rec.statement_lines)
        if scaled is not None:
            self._say("clip-before-unscale", line, *scaled)
        last = self._last_step
        if last is None or self._rec.backward.calls != last[2]:
            return  # before any step, or a backward() since the last: what it clips is used next
        step, step_line, _ = last
        report = clip_after_step(function, line, step, step_line, self._rec.backward.first_backward_line)
        self._say("clip-after-step", line, *report)

    def on_hook(self, tensor: torch.Tensor, line: int | None, handle: object) -> None:
        """Look at ``tensor.register_hook(…)`` just run from snippet line ``line``, which
        returned ``handle``."""
        piled = self._piled_hooks.registered(tensor, line, handle, self._rec.source_lines)
        if piled is not None:
            self._say("hook-registered-in-loop", line, *piled)

    @guarded
    def on_module_hook(
        self, module: nn.Module, method: str, hook: object, line: int | None, handle: object
    ) -> None:
        """Look at ``module.<method>(hook)`` (``register_forward_hook`` and the like: see
        piled_module_hooks.py) just called from snippet line ``line``, which returned ``handle``."""
        rec = self._rec
        path = rec.modules.path_of(module)
        piled = self._piled_module_hooks.registered(
            module, method, hook, line, handle, rec.statement_lines, path
        )
        if piled is not None:
            self._say("hook-registered-in-loop", line, *piled)

    @guarded
    def on_retain_grad(self, tensor: torch.Tensor, line: int | None) -> None:
        """Look at ``tensor.retain_grad()`` just run from snippet line ``line``."""
        if tensor.grad_fn is not None:
            self._late_retains.called(self._rec.graph.node_id(tensor.grad_fn), self._name(tensor), line)

    def on_clip_empty(self, function: str, name: str | None) -> None:
        """A call of ``function`` whose ``parameters`` were a generator with nothing left in it."""
        _, line = snippet_frame()
        self._say(
            "clip-got-no-parameters",
            line,
            *clip_got_no_parameters(function, name, line, self._rec.source_lines),
        )

    def _name(self, t: torch.Tensor) -> str | None:
        """The snippet's name of ``t``, where the run knows ``t`` and it has one."""
        tid = self._rec.tensors.known(t)
        return self._rec.tensors.names.get(tid) if tid is not None else None

    def _made_at(self, t: torch.Tensor) -> int | None:
        """The snippet line that made ``t``, where the run saw it made."""
        tid = self._rec.tensors.known(t)
        return self._rec.tensors.lines.get(tid) if tid is not None else None

    def _step_without_gradients(self, line: int | None, opt: torch.optim.Optimizer) -> None:
        """A step of ``opt`` none of whose parameters had a ``.grad``: it skipped them all
        (:func:`~.no_gradients.no_gradients_said` says why, or leaves it to another kind)."""
        uncalled = [(at, name) for at, name, method in self._uncalled if method == "backward"]
        said = no_gradients_said(self._rec, opt, line, uncalled, self._from_leaf, self.copied_at)
        if said is not None:
            self._say("step-without-gradients", line, *said)

    @functools.cached_property
    def _uncalled(self) -> list[tuple[int, str, str]]:
        """The snippet's loop methods named without parentheses, read from its source once."""
        return uncalled_methods(self._rec.source_lines)

    def _non_finite(
        self,
        what: str,
        line: int | None,
        *,
        updates: int,
        step: int | None = None,
        opt: torch.optim.Optimizer | None = None,
    ) -> None:
        """Report ``what`` went non-finite; ``updates``: the optimizer steps taken before it
        was computed (with none, no learning rate can be the cause), ``step``: the step that
        found it, if one did."""
        if self._nan_gradients.reported:
            return  # a consequence of the gradient non-finite-gradient explained
        if opt is None:
            opt = next((o for o in (r() for r in self._optimizers.values()) if o is not None), None)
        lr = opt.param_groups[0].get("lr") if opt is not None else None
        taken = self._rec.training.total_steps
        self._say(*non_finite_said(what, line, updates=updates, step=step, taken=taken, lr=lr))

    # --- the end of the run -----------------------------------------------------------

    @guarded
    def on_finish(self, scope: dict[str, Any]) -> None:
        """Run the detectors that need the whole run; ``scope`` is the snippet's globals."""
        rec = self._rec
        self._leaks.finished()
        self.clips.judge()
        for said in (
            *memory_reports(rec, scope, self._ops.totals.accumulated(scope), self._modes.eval_forwards),
            *parameter_reports(rec, scope, self._ungraded),
            *scheduler_reports(scope, rec, self._course),
            *kl_sign_reports(rec, scope),
            *self._ops.dead_relus.reports(rec.backward.last_loss),
            *self._ops.twice.reports(rec.source_lines, rec.backward.last_loss),
            *self._vanishing.reports(
                [p for p, _ in rec.modules.all_params()],
                rec.backward.last_loss,
                rec.backward.first_backward_line,
            ),
        ):
            self._say(*said)
        calls = rec.backward.calls
        stepped = never_stepped(
            scope,
            lambda opt: rec.training.label_of(opt) is not None,
            calls,
            rec.statement_lines,
            ended_early=rec.ended_early,
        )
        if stepped is not None:
            self._say("optimizer-never-stepped", stepped.line, *stepped.report(calls))
        if ("non-finite-loss", None) not in self._said:  # one that reached Inf or NaN was said so
            for said in diverged_reports(self._course.diverged(), rec.statement_lines):
                self._say(*said)
        for said in (*uncalled_reports(self._uncalled), *loop_reports(rec)):
            self._say(*said)
        for line, title, message, fix in self._late_retains.reports(rec.source_lines):
            self._say("retain-grad-after-backward", line, title, message, fix)
