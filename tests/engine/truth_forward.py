"""An independent check of a trace's forward side: its ops, their outputs' values and nodes.

:func:`plain_tape` (tests/engine/truth_forward_plain.py) runs a snippet WITHOUT gradwalk, seeded as gradwalk seeds it, under a
``TorchFunctionMode`` of its own that notes each call of the snippet's code that returns a
tensor (a ``__setitem__`` its target): the function's name and, for each tensor output, a
clone taken right after the call, its shape, dtype, ``requires_grad``, ``is_leaf``, its
``grad_fn``'s class, edges and ``_saved_*`` tensors (clones), whether it is one of the
call's inputs and whether the call moved its version. :func:`forward_differences` lays
those beside the trace's ``op`` events in order, the ``tensor`` events of their outputs and
the ``node`` events of their grad_fns, and lists every disagreement: an op missing or of
another name; an output whose whole value is not bitwise PyTorch's (a summary: its
statistics, tests/engine/truth_values.py), or of another shape, dtype, requires_grad or
leafness; a grad_fn of another class, an edge to another node class or input_nr, a saved
tensor whose recorded id holds another value; an input changed in place not shown as a
new version of that input's id, or one handed back unchanged shown as a new one.

What gradwalk legitimately shows differently, and is not compared:

- Only calls with a tensor result count (``x.item()``, ``x.shape``, ``print(x)`` are no
  ops); of the attribute reads only ``T``, ``mT``, ``H``, ``mH``, ``real`` and ``imag``
  (they make nodes), of attribute writes ``requires_grad`` and ``data`` (not ``w.data = d``
  where ``d`` is ``w``'s own data: ``w.data -= x`` writes it back, and the op is ``sub_``).
- Library calls are one op (NOTE [Library calls as one op] in engine/library_calls.py): a
  DataLoader's batch, ``clip_grad_norm_`` / ``clip_grad_value_``, a module's ``to`` /
  ``float`` / …; here the calls are wrapped the same way and only their names compared. A
  custom Function's ``apply`` is an op after the ops of its ``forward`` (engine/functions.py),
  its outputs new ids: compared by name only.
- Ops that initialise a library module (inside ``nn.Linear.__init__``, ``reset_parameters``),
  ops inside an optimizer's ``step`` and ops a backward call runs (hooks, a custom backward)
  are not on the tape; nor are the ops of an iteration recorded metrics-only (the trace's
  ops then stop short: only the ops it has are compared).
- An op may list more outputs than PyTorch returned: a norm's running statistics and the
  tensor ``y`` whose ``y.data`` an op changed (its new version); only the first are compared.
- An in-place op whose target's version does not move (``requires_grad_()``) may still
  show a new version; grad mode is not compared (the trace's ``grad_mode`` says it).
- Gradwalk's own reads of tensors (muted) are not the snippet's: the plain run has none.
  Uninitialised memory (``torch.empty``) differs run to run and is not compared by value.
- Each op's inputs are compared too (an input changed off the tape is a new version with
  its value), but a tensor changed through another alias after its last use (``a =
  base.view(2, 3)``, then ``base[::2].mul_(2)``) keeps the value it had when last used.
"""

from __future__ import annotations

from typing import Any

from engine import record
from engine.events import Trace
from tests.engine.truth_forward_plain import Out, PlainOp, plain_tape
from tests.engine.truth_values import value_differs

__all__ = ["assert_forward_truthful", "forward_differences"]


def _same_name(api: str, name: str) -> bool:
    shown = api.rsplit(".", 1)[-1].strip("_")  # what was called, as the api names it
    name = name.strip("_")
    return (
        shown == name
        or (shown in ("rmul", "radd") and shown[1:] == name)
        or (
            name.startswith("i") and shown == name[1:]  # x += 1 reaches the mode as __iadd__
        )
    )


def forward_differences(trace: Trace, plain: list[PlainOp]) -> list[str]:
    """Every disagreement between the trace's forward side and the plain run's ops."""
    tensors = {e.id: e for e in trace.events if e.type == "tensor"}
    nodes = {e.id: e for e in trace.events if e.type == "node"}
    shown = []  # the ops before the first iteration recorded metrics-only
    full = True
    for x in trace.events:
        if x.type in ("backward_counted", "limit") or (x.type == "optimizer_step" and not x.detail):
            full = False
            break
        if x.type == "op":
            shown.append(x)
    out: list[str] = []
    for e, p in zip(shown, plain, strict=False):
        where = f"op {e.index} {e.api} (line {e.line})"
        if not _same_name(e.api, p.name) and not (p.name == "set_data" and e.name == "set_data"):
            return [*out, f"{where}: PyTorch ran {p.name}"]
        if len(e.inputs) == len(p.inputs) and p.name != "set_data":  # (its inputs: value, then t)
            for k, (tid, t) in enumerate(zip(e.inputs, p.inputs, strict=True)):
                why = value_differs(tensors[tid].value, t) if t is not None else None
                out += [f"{where} in[{k}] t{tid}: value {why}"] if why else []
        if len(e.outputs) < len(p.outputs):
            out.append(f"{where}: {len(e.outputs)} outputs vs {len(p.outputs)}")
            continue
        for k, (tid, o) in enumerate(zip(e.outputs, p.outputs, strict=False)):
            whys = (
                _value_differs(tensors.get(tid), o)
                if p.library
                else _output_differs(e, tid, o, tensors, nodes)
            )
            out += [f"{where} out[{k}] t{tid}: {why}" for why in whys]
    if full and len(shown) != len(plain):
        names = [p.name for p in plain[len(shown) :]] or [x.api for x in shown[len(plain) :]]
        out.append(f"{len(shown)} ops vs {len(plain)}: {names[:6]}")
    return out


def _value_differs(t: Any, o: Out) -> list[str]:
    if t is None:
        return ["no tensor event"]
    out = [
        f"{label} {got} vs {want}"
        for label, got, want in (("shape", t.shape, o.shape), ("dtype", t.dtype, o.dtype))
        if got != want
    ]
    why = value_differs(t.value, o.value) if o.value is not None else None
    return [*out, f"value {why}"] if why else out


def _output_differs(e: Any, tid: int, o: Out, tensors: dict[int, Any], nodes: dict[int, Any]) -> list[str]:
    t = tensors.get(tid)
    if t is None:
        return ["no tensor event"]
    out = []
    for label, got, want in (
        ("shape", t.shape, o.shape),
        ("dtype", t.dtype, o.dtype),
        ("requires_grad", t.requires_grad, o.requires_grad),
        ("is_leaf", t.is_leaf, o.is_leaf),
    ):
        if got != want:
            out.append(f"{label} {got} vs {want}")
    if o.value is not None:
        why = value_differs(t.value, o.value)
        if why:
            out.append(f"value {why}")
    if o.input_index is not None and o.input_index < len(e.inputs):
        was = e.inputs[o.input_index]
        if o.changed and (tid == was or t.version_of != was):
            out.append(f"changed in place: t{tid} (version of {t.version_of}) vs a new version of t{was}")
        if not o.changed and not e.inplace and tid != was:
            out.append(f"handed back unchanged: t{tid} vs t{was}")
    node = nodes.get(t.grad_fn) if t.grad_fn is not None else None
    if (node.name if node else None) != o.grad_fn:
        return [*out, f"grad_fn {node.name if node else None} vs {o.grad_fn}"]
    if node is None or node.op != e.index:
        return out
    edges = [(nodes[x.node].name if x.node is not None else None, x.input_nr) for x in node.edges]
    if edges != o.edges:
        out.append(f"{node.name} edges {edges} vs {o.edges}")
    for s in node.saved:
        if s.tensor is not None and s.name in o.saved and o.value is not None:
            held = tensors[s.tensor]
            if held.shape == list(o.saved[s.name].shape):
                why = value_differs(held.value, o.saved[s.name])
                if why:
                    out.append(f"{node.name} saved {s.name} = t{s.tensor}: {why}")
    named = {s.name for s in node.saved if s.shape is not None}
    if named - set(o.saved):
        out.append(f"{node.name} saved {sorted(named)} vs {sorted(o.saved)}")
    return out


def assert_forward_truthful(source: str, limits: Any = None) -> Trace:
    """Record ``source`` and check its ops, their inputs and outputs and nodes against a plain run's."""
    plain = plain_tape(source)
    trace = record(source, limits=limits)
    found = forward_differences(trace, plain.ops)
    assert found == [], "\n".join(found[:20])
    return trace
