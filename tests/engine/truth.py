"""An independent check of every number a trace shows about a backward walk.

:func:`plain_run` runs a snippet WITHOUT gradwalk, seeded as gradwalk seeds it, and
watches each backward call with PyTorch's public API only: before the call it hooks every
node reachable from the roots (``Node.register_prehook`` for what a node receives and, on an
``AccumulateGrad``, the leaf's ``.grad`` before; ``Node.register_hook`` for what it sends
and ``.grad`` after), and copies each gradient as the node runs. :func:`differences` lays
those walks beside a trace's ``backward_started`` / ``node_executed`` / ``grad_accumulated``
events, the named tensors' values, the ``tensor_final`` values and grads and the optimizer
steps' norms (tests/engine/truth_steps.py), and lists every disagreement: a node missing
or out of order, an edge that points elsewhere, a gradient whose whole value is not
bitwise PyTorch's, or whose summary's statistics are not the real tensor's
(tests/engine/truth_values.py).

Legitimately different views, left out here as a trace leaves them out: a backward call
made while another runs (``torch.autograd.grad`` inside a custom Function's backward,
reentrant checkpointing's recomputation) walks a graph built during backward, which a
trace does not record; its nodes are not hooked, and the outer walk shows the Function's
node alone. Tensors of iterations recorded metrics-only are not compared (a trace has no
values for them), nor is uninitialised memory (``torch.empty``), which differs run to run.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.graph import get_gradient_edge

from engine import record
from engine.events import Limits, Trace
from tests.engine.snippets import plain_main
from tests.engine.truth_steps import Step, step_differences, steps_watched
from tests.engine.truth_values import value_differs

__all__ = ["Plain", "Ran", "Walk", "assert_truthful", "differences", "plain_run"]


@dataclass
class Ran:
    """One node the engine ran: its class name, its edges (next node's class name or None,
    input_nr), the gradients it received and sent, and a leaf's ``.grad`` around it."""

    name: str
    edges: list[tuple[str | None, int]]
    received: list[torch.Tensor | None] = field(default_factory=list)
    sent: list[torch.Tensor | None] = field(default_factory=list)
    before: torch.Tensor | None = None
    after: torch.Tensor | None = None


@dataclass
class Walk:
    """One top-level backward call: the nodes in the order they ran."""

    ran: list[Ran] = field(default_factory=list)


def _copy(g: Any) -> torch.Tensor | None:
    if not isinstance(g, torch.Tensor):
        return None
    with torch.no_grad():
        return g.detach().clone()


def _reachable(roots: list[Any]) -> list[Any]:
    """Every node reachable from the roots' grad_fns, and a leaf root's AccumulateGrad (held,
    so ids stay unique)."""
    seen: dict[int, Any] = {}
    todo = [r.grad_fn for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
    # a leaf as a root runs its own AccumulateGrad (held by the list returned)
    todo += [
        get_gradient_edge(r).node
        for r in roots
        if isinstance(r, torch.Tensor) and r.grad_fn is None and r.requires_grad
    ]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        todo.extend(n for n, _ in node.next_functions)
    return list(seen.values())


class _Watcher:
    """Wraps torch.autograd.backward / grad while a plain run goes on."""

    def __init__(self) -> None:
        self.walks: list[Walk] = []
        self._depth = 0

    def _hook(self, node: Any, walk: Walk) -> list[Any]:
        name = type(node).__name__
        edges = [(type(n).__name__ if n is not None else None, nr) for n, nr in node.next_functions]
        pending: list[Ran] = []
        leaf = getattr(node, "variable", None) if name == "AccumulateGrad" else None

        def pre(grad_outputs: Any) -> None:
            ran = Ran(name, edges, received=[_copy(g) for g in grad_outputs])
            if leaf is not None:
                ran.before = _copy(leaf.grad)
            pending.append(ran)

        def post(grad_inputs: Any, grad_outputs: Any) -> None:
            ran = pending.pop() if pending else Ran(name, edges, received=[_copy(g) for g in grad_outputs])
            ran.sent = [_copy(g) for g in grad_inputs]
            if leaf is not None:
                ran.after = _copy(leaf.grad)
            walk.ran.append(ran)

        return [node.register_prehook(pre), node.register_hook(post)]

    def wrap(self, fn: Any, root_key: str) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if self._depth:  # a call inside another's walk (NOTE in the module docstring)
                return fn(*args, **kwargs)
            roots = args[0] if args else kwargs[root_key]
            roots = [roots] if isinstance(roots, torch.Tensor) else list(roots)
            walk = Walk()
            self.walks.append(walk)
            nodes = _reachable(roots)  # held while the call runs
            handles = [h for node in nodes for h in self._hook(node, walk)]
            self._depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1
                for h in handles:
                    h.remove()
                del nodes

        return wrapped


@dataclass
class Plain:
    """What a plain run did: its backward walks, its optimizer steps, its module namespace."""

    walks: list[Walk]
    steps: list[Step]
    scope: dict[str, Any]


def plain_run(source: str) -> Plain:
    """Run ``source`` as ``python snippet.py`` would, without gradwalk, seeded as gradwalk
    seeds it, watching its backward calls and optimizer steps."""
    watcher = _Watcher()
    steps: list[Step] = []
    originals = torch.autograd.backward, torch.autograd.grad
    torch.autograd.backward = watcher.wrap(originals[0], "tensors")
    torch.autograd.grad = watcher.wrap(originals[1], "outputs")
    try:
        with plain_main() as scope, contextlib.redirect_stdout(None), steps_watched(steps):
            exec(compile(source, "plain.py", "exec"), scope)
    finally:
        torch.autograd.backward, torch.autograd.grad = originals
    return Plain(watcher.walks, steps, scope)


def differences(trace: Trace, plain: Plain) -> list[str]:
    """Every disagreement between ``trace`` and the ``plain`` run of the same snippet."""
    walks, scope = plain.walks, plain.scope
    out: list[str] = step_differences(trace, plain.steps)
    nodes = {e.id: e for e in trace.events if e.type == "node"}
    starts = [e for e in trace.events if e.type == "backward_started"]
    for start in starts:
        if start.index >= len(walks):
            out.append(f"backward {start.index}: PyTorch made only {len(walks)} calls")
            continue
        ran = walks[start.index].ran
        shown = [e for e in trace.events if e.type == "node_executed" and e.backward == start.index]
        accs = {e.step: e for e in trace.events if e.type == "grad_accumulated" and e.backward == start.index}
        names = [nodes[e.node].name for e in shown]
        if names != [r.name for r in ran]:
            out.append(f"backward {start.index}: nodes {names} vs {[r.name for r in ran]}")
            continue
        for e, r in zip(shown, ran, strict=True):
            where = f"backward {start.index} step {e.step} {r.name}"
            edges = [
                (nodes[x.node].name if x.node is not None else None, x.input_nr) for x in nodes[e.node].edges
            ]
            if edges != r.edges:
                out.append(f"{where}: edges {edges} vs {r.edges}")
            for label, values, tensors in (("received", e.grad_in, r.received), ("sent", e.grad_out, r.sent)):
                if len(values) != len(tensors):
                    out.append(f"{where}: {label} {len(values)} grads vs {len(tensors)}")
                    continue
                for i, (v, t) in enumerate(zip(values, tensors, strict=True)):
                    why = value_differs(v, t)
                    if why:
                        out.append(f"{where}: {label}[{i}] {why}")
            acc = accs.get(e.step)
            if r.name == "AccumulateGrad" and acc is not None:
                added = r.received[0] if r.received else None
                for label, v, t in (
                    ("before", acc.before, r.before),
                    ("added", acc.added, added),
                    ("after", acc.after, r.after),
                ):
                    why = value_differs(v, t)
                    if why:
                        out.append(f"{where}: {label} {why}")
    every_call = not any(
        e.type == "backward_counted" or (e.type == "optimizer_step" and not e.detail) for e in trace.events
    )
    if every_call:  # (a metrics-only iteration's tensors are not in the trace)
        out += _named_differences(trace, scope)
        for e in trace.events:
            if (
                e.type == "tensor_final"
                and e.name.isidentifier()
                and isinstance(scope.get(e.name), torch.Tensor)
            ):
                real = scope[e.name]
                for label, v, t in (("value", e.value, real.detach()), ("grad", e.grad, real.grad)):
                    why = value_differs(v, t)
                    if why:
                        out.append(f"final {e.name}.{label}: {why}")
    return out


def _named_differences(trace: Trace, scope: dict[str, Any]) -> list[str]:
    """Each snippet variable's tensor as the trace last saw it (its latest version) against
    the plain run's, at the end."""
    latest: dict[str, int] = {}
    newer: dict[int, int] = {}
    values: dict[int, Any] = {}
    for e in trace.events:
        if e.type == "tensor":
            values[e.id] = e.value
            if e.version_of is not None:
                newer[e.version_of] = e.id
        if e.type in ("tensor", "tensor_named") and e.name:
            latest[e.name] = e.id
    out = []
    for name, tid in latest.items():
        real = scope.get(name)
        if not isinstance(real, torch.Tensor) or name in {
            e.name for e in trace.events if e.type == "tensor_final"
        }:
            continue
        while tid in newer:
            tid = newer[tid]
        why = value_differs(values.get(tid), real.detach())
        if why:
            out.append(f"tensor {name} (id {tid}): {why}")
    return out


def assert_truthful(source: str, limits: Limits | None = None) -> Trace:
    """Record ``source`` (with ``limits``) and check every number of its walks and steps
    against a plain run's."""
    plain = plain_run(source)
    trace = record(source, limits=limits)
    found = differences(trace, plain)
    assert found == [], "\n".join(found[:20])
    return trace
