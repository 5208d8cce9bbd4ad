"""Read answers out of a trace: names, final grads, backward order, accumulations, output.

These are the questions tests, the command line and notebooks ask of a trace; the browser
answers the same ones from the same events.

>>> from engine import record
>>> t = record("import torch\\nx = torch.tensor(3.0, requires_grad=True)\\n(x * x).backward()\\n")
>>> final_grads(t)
{'x': 6.0}
"""

from __future__ import annotations

from typing import Any

from .events import FullValue, SummaryValue, Trace

__all__ = [
    "accumulations",
    "backward_order",
    "errors",
    "events_of",
    "final_grads",
    "final_values",
    "nested_value",
    "node_names",
    "optimizer_steps",
    "pitfalls",
    "stdout",
    "tensor_names",
    "value_of",
]


def events_of(trace: Trace, kind: str) -> list[Any]:
    """Return the events of one ``type``, in order."""
    return [e for e in trace.events if e.type == kind]


def value_of(v: FullValue | SummaryValue | None) -> Any:
    """Return a full value as a Python number (0-d) or flat list; a summary as its norm."""
    if v is None:
        return None
    if isinstance(v, FullValue):
        return v.flat[0] if v.shape == [] and v.flat else v.flat
    return v.norm


def nested_value(value: FullValue | SummaryValue) -> Any:
    """A whole value as a number (0-d) or nested lists in its shape, as ``Tensor.tolist()``
    gives them; a summary as it is (:func:`value_of` gives the flat list)."""
    if value.kind != "full":
        return value
    flat, shape = value.flat, value.shape
    if not shape:
        return flat[0] if flat else None

    def rows(start: int, dims: list[int]) -> list[Any]:
        if len(dims) == 1:
            return flat[start : start + dims[0]]
        size = 1
        for d in dims[1:]:
            size *= d
        return [rows(start + i * size, dims[1:]) for i in range(dims[0])]

    return rows(0, shape)


def tensor_names(trace: Trace) -> dict[int, str]:
    """Return the latest known name of each tensor id."""
    names: dict[int, str] = {}
    for e in trace.events:
        if e.type in ("tensor", "tensor_named") and e.name:
            names[e.id] = e.name
        elif e.type == "tensor_named":  # a name that no longer holds
            names.pop(e.id, None)
    return names


def node_names(trace: Trace) -> dict[int, str]:
    """Return the ``grad_fn`` class name of each node id."""
    return {e.id: e.name for e in trace.events if e.type == "node"}


def final_grads(trace: Trace) -> dict[str, Any]:
    """Return ``{name: .grad}`` of the named leaves at the end of the run."""
    return {e.name: value_of(e.grad) for e in events_of(trace, "tensor_final") if e.grad is not None}


def final_values(trace: Trace) -> dict[str, Any]:
    """Return ``{name: value}`` of the named leaves and parameters at the end of the run."""
    return {e.name: value_of(e.value) for e in events_of(trace, "tensor_final")}


def backward_order(trace: Trace, index: int = 0) -> list[str]:
    """Return the node class names in the order the engine ran them in backward call ``index``."""
    names = node_names(trace)
    return [names[e.node] for e in events_of(trace, "node_executed") if e.backward == index]


def accumulations(trace: Trace, name: str) -> list[tuple[Any, Any, Any]]:
    """Return ``(before, added, after)`` for each accumulation into the leaf called ``name``."""
    names = tensor_names(trace)
    return [
        (value_of(e.before), value_of(e.added), value_of(e.after))
        for e in events_of(trace, "grad_accumulated")
        if names.get(e.tensor) == name
    ]


def stdout(trace: Trace) -> str:
    """Return everything the snippet printed to stdout."""
    return "".join(e.text for e in events_of(trace, "output") if e.stream == "stdout")


def errors(trace: Trace) -> list[Any]:
    return events_of(trace, "error")


def pitfalls(trace: Trace) -> list[Any]:
    return events_of(trace, "pitfall")


def optimizer_steps(trace: Trace) -> list[Any]:
    return events_of(trace, "optimizer_step")
