"""The detectors, one method group per pitfall kind (see the package docstring)."""

from __future__ import annotations

import functools
import math
import re
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..source import find_name, snippet_frame, snippet_frames
from ..tensors import autograd_of
from .stale_grads import LeftInGrad, StaleGradients

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["WATCHED_OPS", "PitfallWatch"]

ADD_OPS = frozenset({"add", "__add__", "__radd__", "__iadd__", "add_"})
BROADCAST_OPS = frozenset(
    {
        "sub",
        "__sub__",
        "__rsub__",
        "add",
        "__add__",
        "__radd__",
        "mul",
        "__mul__",
        "__rmul__",
        "div",
        "__truediv__",
        "__rtruediv__",
        "mse_loss",
        "l1_loss",
    }
)
LOSS_FUNCTIONS = frozenset({"mse_loss", "l1_loss"})
SOFTMAX_OPS = frozenset({"softmax", "log_softmax"})
WATCHED_OPS = ADD_OPS | BROADCAST_OPS | SOFTMAX_OPS | {"cross_entropy"}

# NOTE [Running totals past full detail]
# The tape sees a running total's adds only while a step is recorded in full; in a training
# loop the total keeps growing in the metrics-only steps after. So each add the detector
# sees marks the node it made (in the node's own metadata, which holds nothing alive), and
# at the end of the run the totals the snippet still holds are walked back along their
# chain of adds to the last marked node: the links past it are the iterations not seen.
#
# NOTE [A total that backward walks]
# Adds chained at one line are also how a loss is built for one backward: a sequence loss
# summed over time steps, a loss of several terms, a residual stack (`x = x + block(x)`).
# What tells the pitfall apart is whether a backward walks the total's graph (its root is
# the total, or computed from it). That is asked of the graph, not of the tensor: the total
# is often freed by the end of the run (a function's local, an unnamed expression), so
# "was it a backward root?", asked then, cannot be answered. A pre-hook on the node that
# made the latest total seen marks its chain walked; it holds only the chain's record.
_TOTAL_KEY = "gradwalk_total"
_ADD_NODES = frozenset({"AddBackward0", "AddBackward1"})
_MAX_CHAIN = 100_000

_ONCE_PER_RUN = frozenset({"missing-zero-grad", "non-finite-loss", "parameter-not-optimized"})
_STOCHASTIC = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)


def _safe(method: Callable[..., None]) -> Callable[..., None]:
    """Never let a detector's own failure break the user's run (see ``Recorder.observation_failed``)."""

    @functools.wraps(method)
    def guarded(self: PitfallWatch, *args: Any, **kwargs: Any) -> None:
        try:
            method(self, *args, **kwargs)
        except Exception:
            self._rec.observation_failed()

    return guarded


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


class _Unknown:
    """A snippet line not looked up yet (walking the stack costs; most calls report nothing)."""


_UNKNOWN = _Unknown()


def _known(line: int | _Unknown | None) -> int | None:
    # called from within the hook that received ``line``, so the snippet is still on the stack
    return snippet_frame()[1] if isinstance(line, _Unknown) else line


class _RunningTotal:
    """One chain of adds at a line: the latest total (weakly), its length in adds, the
    bytes saved for backward when it began and at its latest add, and whether a backward
    walked it (NOTE [A total that backward walks])."""

    __slots__ = ("_handle", "bytes_at_start", "bytes_now", "last", "length", "walked")

    def __init__(self, total: torch.Tensor, node: Any, saved: int) -> None:
        self.length = 0
        self.bytes_at_start = saved
        self.walked = False
        self._handle: Any = None
        self.grew(total, node, saved)

    def grew(self, total: torch.Tensor, node: Any, saved: int) -> None:
        """Take ``total``, made by ``node``, as the chain's latest."""
        self.last = weakref.ref(total)
        self.length += 1
        self.bytes_now = saved
        self.unhook()
        self._handle = node.register_prehook(self._walked)

    def unhook(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _walked(self, grad_outputs: Any) -> None:
        self.walked = True


class _IdentitySet:
    """Tensors by identity, held weakly (a WeakSet would compare tensors with ``==``)."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[torch.Tensor]] = {}

    def add(self, t: torch.Tensor) -> None:
        self._refs[id(t)] = weakref.ref(t)

    def __contains__(self, t: object) -> bool:
        ref = self._refs.get(id(t))
        return ref is not None and ref() is t


class PitfallWatch:
    """All detectors of one run. The recorder calls the ``on_*`` methods.

    With ``enabled=False`` every detector is off (the benchmark's baseline).
    """

    def __init__(self, rec: Recorder, *, enabled: bool = True) -> None:
        self._rec = rec
        self.enabled = enabled
        if not enabled:
            for name in (
                "on_op",
                "on_module_call",
                "on_backward",
                "after_backward",
                "on_optimizer_step",
                "on_finish",
            ):
                setattr(self, name, _nothing)
        self._said: set[tuple[str, int | None]] = set()
        self._stale = StaleGradients(_known)  # missing-zero-grad
        self._totals: dict[int, _RunningTotal] = {}  # loss-tensor-accumulated, by line
        # graph-built-in-evaluation: (line, backward calls at that time, bytes)
        self._eval_forwards: list[tuple[int | None, int]] = []
        self._softmaxed = _IdentitySet()
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
    ) -> None:
        key = (kind, None if kind in _ONCE_PER_RUN else line)
        if key in self._said:
            return
        self._said.add(key)
        self.found += 1
        self._rec.emit(
            {
                "type": "pitfall",
                "kind": kind,
                "line": line,
                "title": title,
                "message": message,
                "fix": fix,
                "tensors": tensors or [],
                "nodes": [],
            }
        )

    # --- ops --------------------------------------------------------------------------

    @_safe
    def on_op(self, name: str, args: tuple[Any, ...], result: Any, line: int | None) -> None:
        """Look at one op whose name is in :data:`WATCHED_OPS`, run from snippet line ``line``."""
        if not isinstance(result, torch.Tensor):
            return
        if name in SOFTMAX_OPS:
            self._softmaxed.add(result)
            return
        if name == "cross_entropy":
            self._check_probabilities(args, line)
            return
        if name in BROADCAST_OPS:
            self._check_broadcast(name, args, result, line)
        if name in ADD_OPS:
            self._check_running_total(args, result, line)

    def _check_probabilities(self, args: tuple[Any, ...], line: int | None) -> None:
        logits = args[0] if args else None
        if isinstance(logits, torch.Tensor) and logits in self._softmaxed:
            self._say(
                "probabilities-into-cross-entropy",
                line,
                "Softmax output fed to cross-entropy",
                "cross_entropy applies log_softmax itself, so it expects raw scores (logits). Here it got the "
                "output of softmax/log_softmax: probabilities are squashed a second time, gradients shrink, and "
                "training stalls at a mediocre loss.",
                "Pass the logits (the last layer's output, before softmax) to cross_entropy / nn.CrossEntropyLoss; "
                "or keep log_softmax and use nll_loss.",
            )

    def _check_broadcast(
        self, name: str, args: tuple[Any, ...], result: torch.Tensor, line: int | None
    ) -> None:
        if len(args) < 2 or not result.requires_grad:
            return
        x, y = args[0], args[1]
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            return
        a, b = x.shape, y.shape
        pattern = (len(a) == 2 and len(b) == 1 and a[1] == 1 and a[0] == b[0] > 1) or (
            len(b) == 2 and len(a) == 1 and b[1] == 1 and b[0] == a[0] > 1
        )
        if not pattern:
            return
        n = a[0]
        # not result.shape: a loss function (mse_loss, l1_loss) reduces to a scalar
        shape = tuple(torch.broadcast_shapes(a, b))
        got, pairs = _broadcast_operands(name.strip("_"), column_first=len(a) == 2, n=n)
        self._say(
            "broadcast-in-loss",
            line,
            f"Shapes {tuple(a)} and {tuple(b)} broadcast to {shape}",
            f"This {name.strip('_')} combines {got}. Broadcasting silently pairs {pairs}, giving "
            f"{n}×{n} = {n * n} terms instead of {n}; a loss averages them all, so the model learns to predict "
            "the mean and no error is raised.",
            _broadcast_fix(x if len(a) == 2 else y, y if len(a) == 2 else x),
        )

    def _check_running_total(self, args: tuple[Any, ...], result: torch.Tensor, line: int | None) -> None:
        facts = autograd_of(result) if result.requires_grad else None
        if facts is None or facts[0] is None:  # no graph (or PyTorch will not say)
            return
        if line is None:
            return
        made: Any = facts[0]  # (torch's stubs call a node's metadata a method; it is a dict)
        entry = self._totals.get(line)
        saved = self._rec.memory.saved_bytes
        prev = entry.last() if entry else None
        if (
            entry is not None
            and prev is not None
            and any(a is prev for a in args if isinstance(a, torch.Tensor))
        ):
            entry.grew(result, made, saved)
        else:
            if entry is not None:
                entry.unhook()
            entry = self._totals[line] = _RunningTotal(result, made, saved)
        made.metadata[_TOTAL_KEY] = (line, entry.length)

    # --- modules ------------------------------------------------------------------------

    def needs_calls_of(self, module: nn.Module, is_root: bool) -> bool:
        """Whether :meth:`on_module_call` must see ``module``'s calls (when not every call is seen).

        Dropout and batch norm (train-mode-in-evaluation), and models with parameters
        called as a whole (graph-built-in-evaluation); a loss module, also called as a
        whole, holds no graph of its own worth flagging.
        """
        if not self.enabled:
            return False
        if isinstance(module, _STOCHASTIC):
            return True
        return is_root and next(module.parameters(), None) is not None

    @_safe
    def on_module_call(self, module: nn.Module, is_root: bool) -> None:
        """Look at a module about to run its forward."""
        grad_on = torch.is_grad_enabled()
        if not grad_on and module.training and isinstance(module, _STOCHASTIC):
            if isinstance(module, nn.modules.dropout._DropoutNd) and module.p == 0:
                return
            _, _, top, _ = snippet_frames()
            kind = type(module).__name__
            self._say(
                "train-mode-in-evaluation",
                top,
                f"{kind} still in training mode under no_grad()",
                f"torch.no_grad() stops recording the graph, but it does not switch layers to evaluation "
                f"behaviour: this {kind} is in training mode, so "
                + (
                    "it randomly zeroes activations while you measure"
                    if "Dropout" in kind
                    else "it normalises with this batch's statistics and updates its running averages"
                )
                + ". Your validation numbers are noisy and lower than the model's real quality.",
                "Call model.eval() before evaluating (and model.train() before training again); keep "
                "torch.no_grad() too, they do different things.",
            )
        if is_root and grad_on and not module.training:
            _, _, top, _ = snippet_frames()
            self._eval_forwards.append((top, self._rec.backward.calls))

    # --- backward and steps -------------------------------------------------------------

    @_safe
    def on_backward(self, roots: list[torch.Tensor], line: int | _Unknown | None = _UNKNOWN) -> None:
        """Look at a backward call before it runs (``line``: the backward call's, looked up
        when a report needs it unless given)."""
        loss = self._rec.backward.last_loss
        if loss is not None and not math.isfinite(loss):
            self._non_finite(f"the loss is {loss}", _known(line), updates=self._rec.training.total_steps)
        self._stale.before_backward()

    @_safe
    def after_backward(self, line: int | _Unknown | None = _UNKNOWN) -> None:
        """Look at a backward call that returned: mark the gradients it added into that a
        step already used (NOTE [Stale gradients] in stale_grads.py)."""
        self._stale.after_backward(line)

    @_safe
    def on_optimizer_step(
        self,
        opt: torch.optim.Optimizer,
        params: list[torch.Tensor],
        step: int,
        grad_norm: float | None,
        line: int | None,
    ) -> None:
        """Look at an optimizer right after its ``step()``."""
        known = self._optimizers.get(id(opt))
        if known is None or known() is not opt:
            self._optimizers[id(opt)] = weakref.ref(opt)
        if ("missing-zero-grad", None) not in self._said:
            stale = self._stale.used_by(params, step)
            if stale is not None:
                self._stale_used(*stale, step)
        if grad_norm is not None and not math.isfinite(grad_norm):
            # the gradients this step used were computed before it
            updates = self._rec.training.total_steps - 1
            self._non_finite(f"the gradient norm is {grad_norm}", line, updates=updates, step=step, opt=opt)

    def _stale_used(self, entry: LeftInGrad, grad: torch.Tensor, step: int) -> None:
        norm = float(grad.detach().norm())
        self._say(
            "missing-zero-grad",
            entry.added_at,
            "Gradients from the previous step are still in .grad",
            f"This backward() added its gradients to the ones left over from optimizer step {entry.step}, "
            f"and step {step} used the sum (‖grad‖ is now {_fmt(norm)}): .grad accumulates with +=, it is "
            "never reset by backward() or step(). Every step then follows the sum of all past gradients, and "
            "the loss grows or oscillates instead of falling.",
            "Call opt.zero_grad() once per step, before loss.backward() (the usual order: zero_grad → "
            "forward → loss → backward → step).",
        )

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
        if updates == 0:
            where = "At this backward()" if step is None else f"At optimizer step {step}"
            self._say(
                "non-finite-loss",
                line,
                "The loss became NaN/Inf",
                f"{where} {what}, before any parameter was updated: an op of this computation produced a NaN "
                "or Inf, typically log() of a negative number (nan) or of 0 (-inf), sqrt() of a negative "
                "number, a division by zero, or exp() of a large number (inf); in backward, an op whose slope "
                "is infinite where it ran, such as sqrt() at 0. Every gradient computed from a NaN or Inf is "
                "NaN or Inf too.",
                "Find the first op whose output holds nan or inf (the tape shows each op's value) and keep its "
                "input in range: clamp before log or sqrt (x.clamp_min(1e-8)), add a small epsilon to "
                "denominators, or use a numerically stable form (F.log_softmax, "
                "F.binary_cross_entropy_with_logits).",
            )
            return
        # a loss is seen before the step it leads to: after 19 updates it is the loss the charts
        # show at step 20 ("at optimizer step 19" read as the step before the one charted); a
        # gradient norm is read at its own step
        if step is None:
            taken = self._rec.training.total_steps
            when = f"After {taken} optimizer step{'' if taken == 1 else 's'}"
        else:
            when = f"At optimizer step {step}"
        if opt is None:
            live = [r() for r in self._optimizers.values()]
            opt = next((o for o in live if o is not None), None)
        lr = f" (here {opt.param_groups[0].get('lr')})" if opt is not None else ""
        self._say(
            "non-finite-loss",
            line,
            "The loss became NaN/Inf",
            f"{when} {what}. Once a NaN or Inf appears it spreads through every "
            f"parameter and training cannot recover. The usual cause is a learning rate that is too high{lr}: "
            "each update overshoots, the weights grow without bound and overflow.",
            "Lower the learning rate (try 10× smaller), normalise the inputs, or clip gradients with "
            "torch.nn.utils.clip_grad_norm_.",
        )

    # --- the end of the run -----------------------------------------------------------

    @_safe
    def on_finish(self, scope: dict[str, Any]) -> None:
        """Run the detectors that need the whole run; ``scope`` is the snippet's globals."""
        self._finish_totals(scope)
        self._finish_eval_forwards()
        self._finish_unoptimized()

    def _finish_totals(self, scope: dict[str, Any]) -> None:
        held = [v for v in scope.values() if isinstance(v, torch.Tensor)] if self._totals else []
        for line, entry in self._totals.items():
            entry.unhook()
            total = entry.last()
            length, start, end = entry.length, entry.bytes_at_start, entry.bytes_now
            later = _links_past_mark(line, [total, *held] if total is not None else held)
            if later is not None:
                length = later
                end = max(end, self._rec.memory.saved_bytes)
            if length < 3 or entry.walked:
                continue
            grew = (
                f" The tensors saved for backward grew from {start:,} to {end:,} bytes meanwhile."
                if end > start
                else ""
            )
            self._say(
                "loss-tensor-accumulated",
                line,
                "A running total keeps every iteration's graph alive",
                f"This line adds a tensor that carries a graph into a running total {length} times. The total "
                f"is itself part of a graph that now links every iteration's forward pass, so none of them can "
                f"be freed and memory grows with every batch.{grew}",
                "Accumulate a plain number: total += loss.item() (or loss.detach()).",
            )

    def _finish_eval_forwards(self) -> None:
        unused = [(line, calls) for line, calls in self._eval_forwards if calls == self._rec.backward.calls]
        if not unused:
            return
        line = unused[0][0]
        self._say(
            "graph-built-in-evaluation",
            line,
            "eval() mode with gradients on: graphs built and never used",
            f"{len(unused)} forward pass(es) ran with the model in eval() mode but with gradient recording on, "
            "and no backward() used them. model.eval() only changes how layers such as dropout and batch norm "
            "behave; it does not stop autograd from recording a graph and keeping its saved tensors.",
            "Wrap evaluation in `with torch.no_grad():` (or torch.inference_mode()) as well as calling "
            "model.eval().",
        )

    def _finish_unoptimized(self) -> None:
        training = self._rec.training
        if training.total_steps == 0:
            return
        modules = self._rec.modules
        missed: list[tuple[str, torch.Tensor]] = []
        for p, name in modules.all_params():
            if p.grad is not None and id(p) not in training.stepped_params:
                missed.append((name, p))
        if not missed:
            return
        names = [n for n, _ in missed]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        line = self._assignment_line(names[0])
        tensors = [tid for _, p in missed if (tid := self._rec.tensors.known(p)) is not None]
        self._say(
            "parameter-not-optimized",
            line,
            "Parameters get gradients but never train",
            f"{shown} received gradients in backward(), but no optimizer updates them: they keep their initial "
            "values for the whole run. Layers kept in a plain Python list (or dict) are not registered with "
            "nn.Module, so model.parameters() — and the optimizer built from it — never sees them.",
            "Keep sub-layers in nn.ModuleList / nn.ModuleDict (or as attributes), and build the optimizer from "
            "the model that is actually trained: torch.optim.SGD(model.parameters(), ...).",
            tensors,
        )

    def _assignment_line(self, qualified: str) -> int | None:
        """Find the line that assigned the attribute holding a parameter (``net.layers[0].weight``)."""
        parts = qualified.split(".")
        for attr in reversed(parts[1:-1]):
            attr = attr.split("[")[0]
            pattern = re.compile(rf"\.{re.escape(attr)}\s*=")
            for i, text in enumerate(self._rec.source_lines, start=1):
                if pattern.search(text):
                    return i
        return None


def _broadcast_operands(op: str, *, column_first: bool, n: int) -> tuple[str, str]:
    """What a broadcast-in-loss op got, first operand first, and what broadcasting pairs: a
    loss function's operands are its predictions and targets (``mse_loss(input, target)``);
    an operator's are just values, as which side holds the predictions is the snippet's
    choice (``pred - y``, ``y - pred``)."""
    if op in LOSS_FUNCTIONS:
        first, second = "predictions", "targets"
        pairs = "every prediction with every target"
    else:
        first = second = "values"
        pairs = "every value of the column with every value of the vector"
    column, vector = f"a column of {n} {{}} ({n}, 1)", f"a vector of {n} {{}} ({n},)"
    got = f"{(column if column_first else vector).format(first)} with {(vector if column_first else column).format(second)}"
    return got, pairs


def _broadcast_fix(column: torch.Tensor, vector: torch.Tensor) -> str:
    """The broadcast-in-loss fix, with the snippet's names for the column and the vector
    where its innermost frame binds them (``pred.squeeze(-1)``), else in words."""
    frame, _ = snippet_frame()
    names = [find_name(t, frame) for t in (column, vector)]
    squeeze = f"{names[0]}.squeeze(-1)" if names[0] else ".squeeze(-1) the column"
    unsqueeze = f"{names[1]}.unsqueeze(-1)" if names[1] else ".unsqueeze(-1) the vector"
    return f"Make the shapes match: {squeeze} (or {unsqueeze}) before the subtraction or loss."


def _links_past_mark(line: int, tensors: list[torch.Tensor]) -> int | None:
    """The length in adds of the first chain among ``tensors`` that leads back past an add
    seen at ``line`` (NOTE [Running totals past full detail]); ``None`` when no tensor grew
    the total after the last add seen."""
    for t in tensors:
        facts = autograd_of(t) if t.requires_grad else None
        node: Any = facts[0] if facts is not None else None
        links = 0
        while node is not None and links < _MAX_CHAIN:
            seen = _seen_length(node, line)
            if seen is not None:
                if links:
                    return seen + links
                break  # the last add seen made this tensor: nothing past it here
            if type(node).__name__ not in _ADD_NODES:
                break
            node = _earlier_total(node, line)
            links += 1
    return None


def _seen_length(node: Any, line: int) -> int | None:
    """The total's length when the detector saw the add that made ``node`` at ``line``."""
    mark = node.metadata.get(_TOTAL_KEY)
    return mark[1] if mark is not None and mark[0] == line else None


def _earlier_total(add: Any, line: int) -> Any:
    """The input of ``add`` that carries the running total: the one marked for ``line``, else
    the first that is itself an add (``total + loss`` or ``loss + total``)."""
    inputs = [n for n, _ in add.next_functions if n is not None]
    marked = next((n for n in inputs if _seen_length(n, line) is not None), None)
    if marked is not None:
        return marked
    return next((n for n in inputs if type(n).__name__ in _ADD_NODES), None)
