"""Notice optimizer steps without changing the snippet, and measure each one.

PyTorch's global optimizer step hooks bracket every ``step()`` of every optimizer. Before a
step the gradient norms are taken, as the step is given the gradient (some steps change
``.grad`` in place), or after an SGD step, which leaves it as it was (NOTE [Gradient norms
after an SGD step]); after it the update and parameter norms, and all of them reach the host
in one transfer (NOTE [Norms on the host]). The update of an SGD step over float32/float64
parameters is read off the step itself, any other is measured against a copy taken before
the step (NOTE [Update norms]). The same hook decides whether the next step is recorded in
full detail (``Limits.detail_steps`` / ``Limits.detail_every``, NOTE [Detail with several
optimizers]). What the charts call each optimizer and parameter is chart_labels.py's.
"""

from __future__ import annotations

import math
import sys
import time
import weakref
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from .chart_labels import KeptLabels, ParamLabels, distinct_optimizer_label, optimizer_label
from .lineage import Lineage
from .memory import cuda_allocated
from .norms import GradNorms, grad_norms_started, grads_of, norms_finished, norms_started
from .source import snippet_frame
from .updates import GRAD, copy_before, sgd_readable, sgd_update_terms
from .values import dispatches_to_python

if TYPE_CHECKING:
    from torch.utils.hooks import RemovableHandle

    from .events import Limits
    from .recorder import Recorder

__all__ = ["TrainingTracker"]


class _Optimizer:
    """What the tracker keeps about one optimizer, for as long as that optimizer lives.

    NOTE [Optimizers by id]: kept by ``id(opt)``, as an optimizer class may define
    ``__eq__`` and so have no hash, and checked against ``ref`` at every lookup: once an
    optimizer is freed, a new one may be given its id, and must not take over its step
    count, label or buffers.
    """

    __slots__ = (
        "before",
        "buffers",
        "failed",
        "grads",
        "inherited",
        "interval",
        "kind",
        "label",
        "labels",
        "last_total",
        "lrs",
        "params",
        "rebuilds",
        "ref",
        "restart_every",
        "restarts",
        "settings",
        "sgd",
        "steps",
    )

    def __init__(self, ref: weakref.ref[torch.optim.Optimizer], kind: type) -> None:
        self.ref = ref
        self.kind = kind  # the optimizer's class
        self.steps = 0
        self.last_total = 0  # the tracker's total_steps at this optimizer's latest step
        self.interval = 0  # total steps between its two latest steps (NOTE [Detail with several optimizers])
        self.label: str | None = None
        # the parameters' copy kept from step to step (NOTE [Update norms])
        self.buffers: list[torch.Tensor] = []
        # what its parameters' labels were, kept for its next step: see ParamLabels.labels
        self.labels: KeptLabels | None = None
        # what the pre-step hook hands its post-step hook
        self.params: list[torch.Tensor] = []
        self.grads: GradNorms | None = None  # None: read after the step (a closure step)
        self.before: list[torch.Tensor] = []  # the copy taken for this step, or [] (an SGD step read off)
        self.sgd = False
        self.failed = False
        self.lrs: list[float] | None = None  # read before the step, or None: after it
        # NOTE [Rebuilt optimizers] (lineage.py): the steps counted before this optimizer's first (those of
        # the ones it replaced), and how many optimizers in a row before it made one step each
        self.inherited = 0
        self.rebuilds = 0
        # and how many in a row before it over the same settings made several steps each
        # (an optimizer rebuilt every epoch), the last of them how many
        self.restarts = self.restart_every = 0
        self.settings: tuple[Any, ...] = ()  # its param groups' settings at its first step

    def continues(self, before: _Optimizer) -> None:
        """Carry on ``before``'s count: this optimizer replaced it."""
        self.steps = self.inherited = before.steps
        self.last_total, self.interval = before.last_total, before.interval
        made = before.steps - before.inherited
        self.rebuilds = before.rebuilds + 1 if made == 1 else 0
        same = self.settings == before.settings  # (not a new phase with another learning rate)
        self.restarts = before.restarts + 1 if made >= 2 and same else 0
        self.restart_every = made

    def stepped(self, total: int) -> None:
        """Count one more step, the tracker's ``total``-th."""
        self.interval = total - self.last_total  # before a second step: the total at the first
        self.last_total = total
        self.steps += 1

    def still_stepping(self, total: int) -> bool:
        """Whether this optimizer lives and has not missed steps it would take by now."""
        return self.ref() is not None and total - self.last_total < 2 * self.interval


class TrainingTracker:
    """Step counts, labels and metrics of every optimizer a snippet uses."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._handles: list[RemovableHandle] = []
        self._optimizers: dict[int, _Optimizer] = {}  # by id(): NOTE [Optimizers by id]
        self._lineage: Lineage[_Optimizer] = Lineage()  # NOTE [Rebuilt optimizers] in lineage.py
        self._step_frame: FrameType | None = None
        self._param_labels = ParamLabels(rec)
        self._last_end = time.perf_counter()
        self._latest_steps = 0  # the step count of the optimizer that stepped last
        self.total_steps = 0
        # whether any optimizer's step() has begun (a loop that steps by hand has none:
        # NOTE [Loops that step by hand] in hand_loops.py)
        self.optimizer_seen = False
        self.stepped_params: set[int] = set()
        # the latest step: its optimizer's label (``opt``) and the snippet line it ran at
        self.last_step: tuple[str | None, int | None] | None = None
        # the latest step's per-parameter norms (the charts'), in the order of its parameters
        self.last_norms: list[dict[str, Any]] = []

    @property
    def steps_done(self) -> int:
        """The fewest steps taken by the optimizers still stepping (the last one's count when
        none is): an error past them is in the iteration that ``Limits.detail_every`` one
        more records in full (NOTE [Detail with several optimizers])."""
        return min(
            (o.steps for o in self._optimizers.values() if o.still_stepping(self.total_steps)),
            default=self._latest_steps,
        )

    def label_of(self, opt: torch.optim.Optimizer) -> str | None:
        """The label of ``opt`` in the charts (``opt (Adam)``), once it has stepped."""
        known = self._optimizers.get(id(opt))
        return known.label if known is not None and known.ref() is opt else None

    def install(self) -> None:
        self._handles.append(register_optimizer_step_pre_hook(self._pre))
        self._handles.append(register_optimizer_step_post_hook(self._post))

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for o in self._optimizers.values():  # the copies go; the counts stay for steps_done
            o.buffers, o.before, o.grads, o.params = [], [], None, []

    def _optimizer(self, opt: torch.optim.Optimizer) -> _Optimizer:
        """``opt``'s entry, a new one for an optimizer not met before (NOTE [Optimizers by id])."""
        key = id(opt)
        known = self._optimizers.get(key)
        if known is not None and known.ref() is opt:
            return known
        optimizers = self._optimizers

        def forget(ref: weakref.ref[torch.optim.Optimizer]) -> None:
            entry = optimizers.get(key)
            if entry is not None and entry.ref is ref:
                del optimizers[key]
                # its lineage may outlive it: not its copies, nor its parameters (a snippet's `del
                # model, opt` frees the model's memory, as without gradwalk)
                entry.buffers, entry.before, entry.params, entry.grads, entry.labels = [], [], [], None, None

        entry = optimizers[key] = _Optimizer(weakref.ref(opt, forget), type(opt))
        return entry

    def _params(self, opt: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p for group in opt.param_groups for p in group["params"]]

    def _pre(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> tuple[Any, Any] | None:
        wrapper = sys._getframe(1)  # the hooks' caller: PyTorch's wrapper of step()
        # (a step is in progress, or one raised: only then can this be a step within it)
        if self._step_frame is not None and _within_its_own_step(opt, wrapper):
            return None  # super().step() of a subclass: part of the step already counted
        rec = self._rec
        rec.in_optimizer = True
        self.optimizer_seen = True
        self._step_frame = wrapper
        wrapped = self._closure_seen(args, kwargs)
        state = self._optimizer(opt)
        params = state.params = self._params(opt)
        if state.label is None:  # its first step: NOTE [Rebuilt optimizers] in lineage.py
            frame = snippet_frame()[0]
            state.label = optimizer_label(opt, frame, self._rec.source_lines)
            state.settings = _settings(opt)
            replaced = self._lineage.replaced(opt, state, params)
            if replaced is not None:
                state.continues(replaced)
            else:  # NOTE [Optimizers of one name] in chart_labels.py
                taken = {
                    o.label
                    for o in self._optimizers.values()
                    if o is not state and o.label is not None and o.still_stepping(self.total_steps)
                }
                state.label = distinct_optimizer_label(opt, state.label, taken, frame)
        state.failed = False
        # no_grad, without the context manager's cost (this runs on every training step)
        grad_was = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        with rec.mute():
            try:
                if _dispatching(params):
                    state.failed = True  # no norms: reading them would run the snippet's code
                    return wrapped
                # the learning rates this step uses: read after it, unless the optimizer has
                # post-hooks of its own, which run before gradwalk's (a scheduler stepped there)
                state.lrs = _lrs(opt) if getattr(opt, "_optimizer_step_post_hooks", None) else None
                state.sgd = sgd_readable(opt, params)
                # NOTE [Gradient norms after an SGD step]: the gradient the step is given is
                # read now, except where it is read after the step: a closure step makes its
                # own, and a step whose update is read off (sgd_readable: not Nesterov, which
                # adds the momentum into .grad, and no post-hooks of the optimizer's own, which
                # may change it) leaves .grad as it was. Then it is read with the parameters,
                # after any pre-hook of the optimizer's own (which runs after gradwalk's) has
                # clipped or scaled it: the norm of the gradient the step used. (Read after
                # the step, the gradient reads warm, ~90 us instead of ~120 for the MLP loop's
                # 784x256 one, but the step then reads it cold: an A/B of five rounds gave
                # 1.46x -> 1.39x for the MLP loop and 1.56x -> 1.51x for the rent regression,
                # inside the spread of single rounds)
                state.grads = None if wrapped is not None or state.sgd else grad_norms_started(params)
                state.before = [] if state.sgd else copy_before(state.buffers, params)
                if not state.sgd:
                    state.buffers = state.before
            except Exception:
                state.failed = True
                rec.observation_failed()
            finally:
                torch._C._set_grad_enabled(grad_was)
        return wrapped

    def _closure_seen(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any] | None:
        """``step(closure)`` (LBFGS and the like): the closure is the snippet's own forward and
        backward, so it is recorded like any other code, not muted as the optimizer's work.

        Returns the step's arguments with the closure wrapped, or ``None`` when there is none.
        """
        closure = kwargs.get("closure") if kwargs else None
        positional = closure is None and len(args) > 1
        if positional:
            closure = args[1]
        if not callable(closure):
            return None
        rec = self._rec
        user_closure = closure

        def recorded_closure() -> Any:
            rec.in_optimizer = False
            try:
                return user_closure()
            finally:
                rec.in_optimizer = True

        if positional:
            return (args[0], recorded_closure, *args[2:]), kwargs
        return args, {**kwargs, "closure": recorded_closure}

    def inside_step(self) -> bool:
        """Whether the ``step()`` whose pre-hook ran last is still on the stack.

        A step that raised never reaches its post-hook; if the snippet catches the error and
        goes on, the recorder must not keep muting its ops as the optimizer's own work.
        """
        target = self._step_frame
        f: FrameType | None = sys._getframe(1)
        while f is not None:
            if f is target:
                return True
            f = f.f_back
        self._step_frame = None
        return False

    def _post(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        wrapper = sys._getframe(1)
        # (the post-hook of the step whose pre-hook ran last is the common case, and no inner one)
        if wrapper is not self._step_frame and _within_its_own_step(opt, wrapper):
            return  # the end of a subclass's super().step(): the outer step() is measured
        rec = self._rec
        rec.in_optimizer = False
        self._step_frame = None
        state = self._optimizer(opt)
        self.total_steps += 1
        state.stepped(self.total_steps)
        step = self._latest_steps = state.steps
        frame, line = snippet_frame()
        if state.label is None:
            state.label = optimizer_label(opt, frame, self._rec.source_lines)
        params = state.params
        self.stepped_params.update(map(id, params))
        self.last_step = (state.label, line)
        # no_grad, without the context manager's cost (this runs on every training step)
        grad_was = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        with rec.mute():  # one mute for the norms, the event and the detectors
            try:
                stats = _no_stats() if state.failed else self._measure(opt, state, frame)
            except Exception:
                rec.observation_failed()
                stats = _no_stats()  # a parameter the norms cannot read: no norms, the run goes on
            finally:
                torch._C._set_grad_enabled(grad_was)
            now = time.perf_counter()
            rec.emit(
                {
                    "type": "optimizer_step",
                    "optimizer": state.label,
                    "step": step,
                    "loss": rec.backward.last_loss,
                    "lr": state.lrs if state.lrs is not None else _lrs(opt),
                    "graph_bytes": rec.memory.saved_bytes,
                    "graph_peak_bytes": rec.memory.take_peak(),
                    "cuda_allocated": cuda_allocated(),
                    "wall_s": now - self._last_end,
                    "detail": rec.detail,
                    "line": line,
                    **stats,
                }
            )
            self._last_end = now
            state.before, state.grads, state.params, state.lrs = [], None, [], None
            restarted = (state.restarts, state.restart_every) if state.restarts else None
            self.last_norms = stats["params"]
            rec.pitfalls.on_optimizer_step(
                opt, params, step, stats["grad_norm"], line, state.rebuilds, restarted
            )
        self._schedule()

    def _measure(
        self, opt: torch.optim.Optimizer, state: _Optimizer, frame: FrameType | None
    ) -> dict[str, Any]:
        """Norms of every parameter, its gradient and its update, in one transfer to the host."""
        params = state.params
        if not params:
            return _no_stats()
        n = len(params)
        sgd = sgd_update_terms(opt) if state.sgd else None
        # see NOTE [Update norms]: for SGD the update is lr * (the gradient, or the momentum
        # buffer the step just applied), so its norm needs no copy and no extra pass for
        # plain SGD; any other optimizer's is measured against the copy taken before the step
        if sgd is not None:
            updates = [t for t, _ in sgd if isinstance(t, torch.Tensor)]
        else:
            updates = state.before
            if updates:
                torch._foreach_sub_(updates, params)  # the copy becomes -(update), in place
        if state.grads is not None:
            with_grad, grads = state.grads
            host, grad_host = norms_finished(norms_started([*params, *updates]), grads)
        else:  # the gradients read after the step, with the rest: one pass, one transfer
            with_grad, grads_now = grads_of(params)
            host = norms_finished(norms_started([*params, *updates, *grads_now]))[0]
            host, grad_host = host[: len(host) - len(with_grad)], host[len(host) - len(with_grad) :]
        pn = host[:n]
        gn: list[float | None] = [None] * n
        for i, v in zip(with_grad, grad_host, strict=True):
            gn[i] = v
        rest = host[n:]
        if sgd is None:
            un = rest if rest else [0.0] * n
        else:
            it = iter(rest)
            un = []
            for i, (term, scale) in enumerate(sgd):
                if term is GRAD:
                    un.append(scale * (gn[i] or 0.0))
                elif term is None:
                    un.append(0.0)
                else:
                    un.append(scale * next(it))
        labels, state.labels = self._param_labels.labels(state.labels, params, frame)
        stats = [
            {"tensor": tid, "name": label, "grad_norm": gn[i], "update_norm": un[i], "param_norm": pn[i]}
            for i, (tid, label) in enumerate(labels)
        ]
        finite_g = [g for g in gn if g is not None]
        return {
            "grad_norm": math.sqrt(sum(g * g for g in finite_g)) if finite_g else None,
            "update_norm": math.sqrt(sum(u * u for u in un)),
            "param_norm": math.sqrt(sum(v * v for v in pn)),
            "params": stats,
        }

    def _schedule(self) -> None:
        """Record the next step in full when it is a detail step of any optimizer still stepping.

        NOTE [Detail with several optimizers]: ``Limits.detail_steps`` and
        ``detail_every`` count each optimizer's own steps, so a GAN's generator has its step
        8 recorded in full as its discriminator does, whichever steps first. An optimizer
        counts while it steps as often as it did: one that has gone twice its last interval
        (in steps of all optimizers) without a step is taken to be done, so an earlier
        training phase's optimizer left at step 7 cannot keep every later step recorded in
        full for ``detail_every=8``. Before its second step an optimizer's interval is the
        run's step count at its first.
        """
        limits, total = self._rec.limits, self.total_steps
        detail = any(
            _is_detail_step(o.steps + 1, limits) for o in self._optimizers.values() if o.still_stepping(total)
        )
        self._rec.set_detail(detail)


def _within_its_own_step(opt: torch.optim.Optimizer, wrapper: FrameType) -> bool:
    """Whether ``wrapper``, PyTorch's wrapper of ``step()`` that calls the step hooks, runs
    inside another ``step()`` of the same ``opt``.

    NOTE [A step within a step]: PyTorch hooks the ``step`` of each optimizer class the
    first time one of its instances is made, so a subclass whose ``step`` calls
    ``super().step()`` runs the hooks twice for one step once any instance of the parent
    class has been made (by the snippet, or by the worker's warm-up, which makes an SGD).
    Only the outermost ``step()`` is a step: the inner one's hooks are ignored. Found by
    the stack, not by a count, so a step that raised (and never reached its post-hook)
    leaves nothing behind; every hooked ``step`` runs the one wrapper code object.
    """
    code = wrapper.f_code
    f = wrapper.f_back
    while f is not None:
        if f.f_code is code and f.f_locals.get("self") is opt:
            return True
        f = f.f_back
    return False


def _is_detail_step(step: int, limits: Limits) -> bool:
    return step <= limits.detail_steps or (limits.detail_every > 0 and step % limits.detail_every == 0)


def _dispatching(params: list[torch.Tensor]) -> bool:
    """Whether a parameter or its gradient is a tensor whose every op, a norm's too, runs a
    ``__torch_dispatch__`` of the snippet's (NOTE [Tensors that dispatch to Python] in
    values.py): such a step is reported without norms."""
    for p in params:
        if dispatches_to_python(p):
            return True
        g = p.grad
        if g is not None and dispatches_to_python(g):
            return True
    return False


def _lrs(opt: torch.optim.Optimizer) -> list[float]:
    """The learning rate of each of ``opt``'s param groups."""
    return [float(g.get("lr", 0.0)) for g in opt.param_groups]


def _no_stats() -> dict[str, Any]:
    return {"grad_norm": None, "update_norm": 0.0, "param_norm": 0.0, "params": []}


def _settings(opt: torch.optim.Optimizer) -> tuple[Any, ...]:
    """``opt``'s param groups' plain settings (lr, betas, weight decay…), to compare with those
    of the optimizer it replaced."""
    return tuple(
        tuple(
            sorted(
                (k, v) for k, v in group.items() if k != "params" and isinstance(v, float | int | str | tuple)
            )
        )
        for group in opt.param_groups
    )
