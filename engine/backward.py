"""Observe each backward walk: the nodes in the engine's real order, and every ``+=`` into ``.grad``.

Every recorded node gets a post-hook (see NOTE [Node ids] in graph.py), which fires right
after the engine runs the node, so the order of the ``node_executed`` events is the
engine's order, and a pre-hook, which reads the gradients the node receives. On an
``AccumulateGrad`` node the pre-hook also reads the leaf's ``.grad`` before the engine adds
to it; its post-hook reads ``.grad`` after.

# NOTE [Read what AccumulateGrad receives before it runs]
What a node receives is read in its pre-hook, not its post-hook: a node may change what it
received in place before its post-hooks run (a custom Function's backward that does
``g.mul_(2); return g``; a module's full backward hook that scales ``grad_input[0]`` in
place, which runs as a post-hook of the node that hands the gradient on), and the walk then
showed the node receiving what the node before it never sent (found by hunt 55's checker,
tests/engine/truth.py). AccumulateGrad meets it most: tensor post-accumulate hooks
(``p.register_post_accumulate_grad_hook``) run inside the node,
after the ``+=`` and before the node's post-hooks; and when ``.grad`` was None, PyTorch
adopts the incoming tensor itself as ``.grad``. A hook that changes ``.grad`` in place
(``clip_grad_norm_([p], 1.0)``) then changed the very tensor the post-hook is handed, and
the trace showed the clipped value as what the node received. The node's pre-hooks run
after the tensor's own hooks (``x.register_hook``), so what they see is exactly what is
accumulated. ``after`` is ``.grad`` once the node and its hooks are done, so with such a
hook ``before + added`` need not equal it.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from .source import SNIPPET_FILENAME, snippet_frame
from .tracebacks import drop_gradwalk_frames
from .values import dispatches_to_python, same_elements_key, shape_list

if TYPE_CHECKING:
    from torch.utils.hooks import RemovableHandle

    from .recorder import Recorder

__all__ = ["BackwardTracker"]


class BackwardTracker:
    """Backward calls, node hooks, and the last scalar loss (for training metrics)."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._handles: list[RemovableHandle] = []
        self.calls = 0
        self.current: int | None = None
        self._step = 0
        self._before: dict[int, dict[str, Any] | None] = {}
        # AccumulateGrad node id -> the values of the gradients it received (NOTE [Read what
        # AccumulateGrad receives before it runs])
        self._received: dict[int, list[dict[str, Any] | None]] = {}
        self.last_loss: float | None = None
        self.first_backward_line: int | None = None
        self.grad_only = True  # every call so far was torch.autograd.grad (which fills no .grad)
        # the snippet hooked a gradient or a node: its code runs inside the walk (NOTE [Writes
        # through .data]); set by Recorder.on_hook and _hooks_last
        self.snippet_hooks = False
        self._values: dict[int, tuple[weakref.ref[torch.Tensor], int, dict[str, Any] | None]] = {}
        self._blocks: dict[tuple[Any, ...], tuple[weakref.ref[torch.Tensor], dict[str, Any]]] = {}
        self._originals: tuple[Any, Any] | None = None
        self._tensor_backward: Any = None  # torch.Tensor.backward, while wrapped
        self._running = False
        # (id, name) of the node that ran last: anomaly mode raises right after a node's
        # hooks when its gradient came out NaN, and the error is about that node
        self.last_ran: tuple[int, str] | None = None

    def watch(self, node: Any, nid: int, line: int | None) -> None:
        """Hook ``node`` (id ``nid``, made at snippet line ``line``) so its execution is recorded."""
        # The hooks live on the node, so they must not reference it (nor its leaf) strongly:
        # that cycle would outlive the graph until a full garbage collection, and a freed
        # graph must be freed at once, exactly as without gradwalk.
        name = type(node).__name__
        is_acc = name == "AccumulateGrad"
        leaf_ref = weakref.ref(node.variable) if is_acc else None
        # a custom Function's backward is the snippet's code (NOTE [Writes through .data])
        runs_snippet = isinstance(node, torch.autograd.function.BackwardCFunction)
        rec = self._rec
        mute = rec.mute()
        ran = (nid, name)

        def post(
            grad_inputs: Sequence[torch.Tensor | None], grad_outputs: Sequence[torch.Tensor | None]
        ) -> None:
            if rec.active and self.current is not None:
                self.last_ran = ran
                try:
                    with mute:
                        self._executed(nid, name, line, leaf_ref, grad_inputs, grad_outputs, runs_snippet)
                except Exception:
                    rec.observation_failed()

        self._handles.append(node.register_hook(post))

        def pre(grad_outputs: Sequence[torch.Tensor | None]) -> None:
            leaf = leaf_ref() if leaf_ref is not None else None
            if rec.active and self.current is not None:
                try:
                    with mute:
                        fresh = self.snippet_hooks
                        self._received[nid] = [self._value(g, fresh) for g in grad_outputs]
                        if leaf is not None:
                            self._before[nid] = rec.value_or_none(leaf.grad)
                            rec.pitfalls.before_accumulate(leaf)
                except Exception:
                    rec.observation_failed()

        self._handles.append(node.register_prehook(pre))

    def _hooks_last(self) -> None:
        """Move gradwalk's hook on each node after the snippet's own, and forget the hooks of
        nodes that were freed.

        # NOTE [gradwalk's node hooks run last]
        # A node's Python hooks run in the order they were registered, each handed what the
        # one before returned: a hook the snippet put on a node after gradwalk hooked it
        # (``y.grad_fn.register_hook``, a module's ``register_full_backward_hook``) could
        # change the gradients the node sends after gradwalk had read them, and the walk
        # showed a node sending what the next node never received. All of a node's post
        # hooks (and all its pre-hooks) share one ordered dict, which each handle holds
        # weakly: putting gradwalk's entry at its end, before each backward call, reads what
        # the node really sends. A hook added while the walk runs still comes after it.
        """
        live = []
        for handle in self._handles:
            hooks = handle.hooks_dict_ref()
            if hooks is None:  # the node was freed
                continue
            live.append(handle)
            if len(hooks) > 1 and not self.snippet_hooks:
                # (a detector's hook is gradwalk's own: engine/pitfalls/running_totals.py)
                self.snippet_hooks = any(not _ours(hook) for hook in hooks.values())
            if len(hooks) > 1 and next(reversed(hooks)) != handle.id:
                # popped and put back, not move_to_end: PyTorch calls them in the order of
                # the dict beneath, which move_to_end leaves as it was
                hooks[handle.id] = hooks.pop(handle.id)
        self._handles = live

    def _executed(
        self,
        nid: int,
        name: str,
        line: int | None,
        leaf_ref: weakref.ref[torch.Tensor] | None,
        grad_inputs: Sequence[torch.Tensor | None],
        grad_outputs: Sequence[torch.Tensor | None],
        runs_snippet: bool,
    ) -> None:
        """Record that node ``nid`` ran (and, for a leaf's AccumulateGrad, what it added)."""
        rec = self._rec
        v = self._value
        fresh = runs_snippet or self.snippet_hooks
        step = self._step
        self._step += 1
        received = self._received.pop(nid, None)
        if received is None:
            received = [v(g) for g in grad_outputs]
        sent = [v(g, fresh) for g in grad_inputs]
        rec.emit(
            dict(
                type="node_executed",
                backward=self.current,
                step=step,
                node=nid,
                grad_in=received,
                grad_out=sent,
            )
        )
        rec.pitfalls.on_node_ran(nid, name, line, sent, (grad_outputs, grad_inputs))
        leaf = leaf_ref() if leaf_ref is not None else None
        if leaf is not None:
            tid = rec.tensors.ensure(leaf)
            rec.emit(
                dict(
                    type="grad_accumulated",
                    backward=self.current,
                    step=step,
                    tensor=tid,
                    node=nid,
                    before=self._before.pop(nid, None),
                    added=received[0] if received else None,
                    # (a post-accumulate hook is the snippet's code: NOTE [Writes through .data])
                    after=v(leaf.grad, fresh or leaf._post_accumulate_grad_hooks is not None),
                )
            )
            rec.pitfalls.after_accumulate(leaf)

    def _value(self, g: torch.Tensor | None, fresh: bool = False) -> dict[str, Any] | None:
        """The trace value of gradient ``g``, read again when ``fresh``, else from this call's
        cache where ``g`` was read before (NOTE [Writes through .data])."""
        # A gradient a node sends is usually the very tensor the next node receives:
        # describe each tensor once per backward call. The cache holds gradients weakly: a
        # strong hold would keep every gradient of the walk alive until it ends, and would
        # stop the engine from summing two incoming gradients in place into the first one
        # (it does so only when nothing else holds it). That in-place sum bumps the tensor's
        # version, so a hit needs the same object at the same version; a dead entry's id
        # may be reused, and the identity check then misses, as it must.
        #
        # NOTE [Writes through .data]
        # A write through ``g.data`` (``def hook(g): g.data.mul_(10)``, in a tensor hook, a
        # node hook or a custom Function's backward) changes g's elements and not its
        # version, and the cache then handed the next node the elements from before the
        # write (found by hunt 55's checker). Where the snippet's code runs inside the walk
        # (it hooked a gradient or a node: ``snippet_hooks``; the node is its own Function;
        # a leaf's post-accumulate hook, for ``after``) each gradient is read again; other
        # walks keep the cache.
        if g is None:
            return None
        hit = None if fresh else self._values.get(id(g))
        if hit is not None and hit[0]() is g and hit[1] == g._version:
            return hit[2]
        rec = self._rec
        key = same_elements_key(g) if rec.values and g.numel() > rec.limits.max_value_elements else None
        block = self._blocks.get(key) if key is not None and not fresh else None
        if block is not None and block[0]() is not None:
            # the same elements seen through another view (a transpose): same statistics.
            # Only while the tensor first described is alive: once it is freed, the
            # allocator may hand its memory (same address, size, version 0) to a new one.
            value: dict[str, Any] | None = {**block[1], "shape": shape_list(g)}
        else:
            value = rec.value_or_none(g)
            if key is not None and value is not None:
                self._blocks[key] = (weakref.ref(g), value)
        self._values[id(g)] = (weakref.ref(g), g._version, value)
        return value

    def install(self) -> None:
        """Wrap ``torch.autograd.backward`` and ``torch.autograd.grad`` (``Tensor.backward`` calls the first)."""
        orig_backward, orig_grad = torch.autograd.backward, torch.autograd.grad
        self._originals = (orig_backward, orig_grad)

        tensor_backward = torch.Tensor.backward.__code__

        # each wrapper the snippet calls drops gradwalk's frames from an error it passes on
        # (NOTE [Errors leave without gradwalk's frames] in tracebacks.py)
        def backward(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_code
            try:
                if caller is tensor_backward:
                    return self.run("Tensor.backward", orig_backward, args, kwargs)
                return self.run(
                    "autograd.backward", orig_backward, args, kwargs, caller.co_filename == SNIPPET_FILENAME
                )
            except BaseException as exc:
                drop_gradwalk_frames(exc)
                raise

        def grad(*args: Any, **kwargs: Any) -> Any:
            direct = sys._getframe(1).f_code.co_filename == SNIPPET_FILENAME
            try:
                return self.run("autograd.grad", orig_grad, args, kwargs, direct)
            except BaseException as exc:
                drop_gradwalk_frames(exc)
                raise

        functools.update_wrapper(backward, orig_backward)
        functools.update_wrapper(grad, orig_grad)
        torch.autograd.backward, torch.autograd.grad = backward, grad

        # NOTE [Detail switched off after Tensor.backward]: loss.backward() reaches the wrapper
        # above through the tape mode's handler, where the mode is off PyTorch's stack and
        # cannot be taken off for good (it is pushed back when the handler returns); a
        # metrics-only call that follows (NOTE [Loops that step by hand]) would then pay the
        # handler on every op. Back in the snippet, the mode is on top again and goes.
        orig_tensor_backward = torch.Tensor.backward
        self._tensor_backward = orig_tensor_backward
        rec = self._rec

        def backward_then_settle(*args: Any, **kwargs: Any) -> Any:
            try:
                return orig_tensor_backward(*args, **kwargs)
            except BaseException as exc:
                drop_gradwalk_frames(exc)
                raise
            finally:
                rec.settle_detail()

        functools.update_wrapper(backward_then_settle, orig_tensor_backward)
        torch.Tensor.backward = backward_then_settle  # type: ignore[method-assign]

    def remove(self) -> None:
        if self._tensor_backward is not None:
            torch.Tensor.backward = self._tensor_backward  # type: ignore[method-assign]
            self._tensor_backward = None
        if self._originals is not None:
            torch.autograd.backward, torch.autograd.grad = self._originals
            self._originals = None
        for h in self._handles:
            if h.hooks_dict_ref() is not None:  # (a freed node's is gone with it: most, after backward)
                h.remove()
        self._handles.clear()

    def run(
        self, api: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], direct: bool = True
    ) -> Any:
        """Call a backward function ``fn`` (from the tape mode), recording the walk around it.

        ``direct``: the snippet's own call, not a library's on its behalf (``jacobian`` calls
        ``autograd.grad`` once per output): only those count as a loop's steps (NOTE [Loops
        that step by hand] in hand_loops.py).
        """
        # one call at a time, whichever thread makes it (NOTE [Threads] in threads.py)
        with self._rec.serial:
            if self._running:
                # the original re-dispatches through the tape mode when one is active
                return fn(*args, **kwargs)
            self._running = True
            try:
                return self._run(api, fn, args, kwargs)
            finally:
                self._running = False
                if direct:
                    self._rec.hand_loop.after_call(self.calls - 1)

    def _read_loss(self, roots: list[torch.Tensor]) -> None:
        """The loss of the training charts: a one-element root, read with one item() call.

        A call with any other roots (``out.backward(torch.ones(6))``, two losses to
        ``autograd.backward``) has no loss: ``None``, not the loss of an earlier call, which
        the step's event (and a metrics-only call's) showed as this call's (hunt 56).
        """
        self.last_loss = None
        if len(roots) == 1 and roots[0].numel() == 1 and not dispatches_to_python(roots[0]):
            try:
                value = roots[0].item()
            except (RuntimeError, ValueError):
                return
            self.last_loss = float(value) if isinstance(value, int | float) else None

    def _run(self, api: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        rec = self._rec
        index = self.calls
        self.calls += 1
        if index == 0:
            self.first_backward_line = snippet_frame()[1]
        if api != "autograd.grad":
            self.grad_only = False
        if not rec.detail:
            # a metrics-only step: the loss and the detectors (which look the line up only
            # when they report), nothing per node
            roots = _as_list(args[0] if args else kwargs.get(_ROOT_KEYS[api]))
            with rec.mute():
                self._read_loss(roots)
                rec.pitfalls.on_backward(roots)
            # NOTE [Memory of metrics-only steps]: no memory event here. The graph's peak
            # goes out with the next optimizer step (graph_peak_bytes) and what is held
            # then as its graph_bytes, so the memory chart still rises and falls every
            # step, with one event a step where there were three (each event costs
            # ~0.2 ms on its way to the browser). A peak no step reports is flushed as a
            # memory event when the run ends (Recorder.finish).
            rec.memory.peak_unreported = True
            result = fn(*args, **kwargs)
            with rec.mute():
                rec.pitfalls.after_backward()
            if rec.hand_loop.counting:  # a loop that steps by hand: its loss and memory
                rec.hand_loop.counted(index, snippet_frame()[1])
            return result
        frame, line = snippet_frame()
        roots, seeds, retain, create = _backward_args(api, args, kwargs)
        # gradwalk's own tensor work below is muted: called as torch.autograd.backward(...)
        # (not through Tensor.backward) this runs with the tape mode active
        with rec.mute():
            self._read_loss(roots)
            rec.pitfalls.on_backward(roots, line)
            # (a tensor subclass's own __torch_function__ sees none of these reads either)
            root_ids = [rec.tensors.ensure(t, frame=frame) for t in roots]
            held = self._leaf_roots(roots, line)
            for t in roots:
                rec.tensors.name_from(t, frame)
            seed_values = [
                rec.value_or_none(s)
                if s is not None
                else (
                    rec.value_or_none(torch.ones_like(r))
                    if r.numel() == 1 and not dispatches_to_python(r)
                    else None
                )
                for r, s in zip(roots, seeds, strict=False)
            ]
        rec.report_memory(line)
        rec.emit(
            dict(
                type="backward_started",
                index=index,
                api=api,
                roots=root_ids,
                seed=seed_values,
                retain_graph=retain,
                create_graph=create,
                line=line,
            )
        )
        self.current, self._step = index, 0
        self._hooks_last()
        ok = False
        try:
            result = fn(*args, **kwargs)
            ok = True
            with rec.mute():
                rec.pitfalls.after_backward(line)
            return result
        finally:
            del held
            executed = self._step
            self.current = None
            self._before.clear()
            self._received.clear()
            self._values.clear()
            self._blocks.clear()
            rec.emit(
                dict(
                    type="backward_finished",
                    index=index,
                    nodes_executed=executed,
                    graph_freed=ok and not retain,
                    ok=ok,
                )
            )
            rec.report_memory(line)

    def _leaf_roots(self, roots: list[torch.Tensor], line: int | None) -> list[Any]:
        """The AccumulateGrad nodes of the roots that are leaves (``x.backward(g)`` runs that
        node alone), recorded; the caller holds them while the call runs."""
        try:
            return [
                self._rec.graph.discover_leaf(t, line) for t in roots if t.grad_fn is None and t.requires_grad
            ]
        except Exception:
            self._rec.observation_failed()
            return []


def _ours(hook: Any) -> bool:
    """Whether a node hook is gradwalk's own (the engine's, not the snippet's or a library's)."""
    return str(getattr(hook, "__module__", "")).startswith(__name__.rpartition(".")[0] + ".")


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, torch.Tensor):
        return [x]
    return list(x)


# the name of each backward entry point's first parameter: the root(s)
_ROOT_KEYS = {"Tensor.backward": "self", "autograd.backward": "tensors", "autograd.grad": "outputs"}


def _backward_args(
    api: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[list[torch.Tensor], list[torch.Tensor | None], bool, bool]:
    """Normalise the arguments of the three backward entry points."""
    if api == "Tensor.backward":
        names = ["self", "gradient", "retain_graph", "create_graph", "inputs"]
        seed_key = "gradient"
    elif api == "autograd.backward":
        names = ["tensors", "grad_tensors", "retain_graph", "create_graph", "grad_variables", "inputs"]
        seed_key = "grad_tensors"
    else:
        names = ["outputs", "inputs", "grad_outputs", "retain_graph", "create_graph"]
        seed_key = "grad_outputs"
    root_key = _ROOT_KEYS[api]
    bound = dict(zip(names, args, strict=False))
    bound.update(kwargs)
    roots = _as_list(bound.get(root_key))
    seeds = _as_list(bound.get(seed_key)) or [None] * len(roots)
    create = bool(bound.get("create_graph") or False)
    retain = bound.get("retain_graph")
    return roots, seeds, bool(create if retain is None else retain), create
