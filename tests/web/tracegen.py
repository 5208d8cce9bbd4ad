"""Generate big, valid traces for the browser's scale tests and ``bench/bench_web.py``.

Recording a 10,000-node graph with real PyTorch takes a while and nothing about its
drawing depends on the numbers, so these traces are built directly as events (and
validated against ``engine.events``): a chain ``h = tanh(h * w_k + h)`` whose weights are
parameters grouped into modules, walked backward once.
"""

from __future__ import annotations

from typing import Any

__all__ = ["chain_trace", "run_lasting"]


def _full(x: float) -> dict[str, Any]:
    return {"kind": "full", "shape": [], "flat": [x]}


def chain_trace(nodes: int, *, per_module: int = 0, backward: bool = True) -> dict[str, Any]:
    """Return a trace (``{format, version, source, events}``) with about ``nodes`` grad_fn nodes.

    Every third op multiplies by a parameter (an AccumulateGrad node and a leaf); with
    ``per_module`` > 0, nodes are grouped ``per_module`` to a module (``net.block7``), so
    level of detail can fold them.
    """
    events: list[dict[str, Any]] = []
    seq = 0

    def emit(ev: dict[str, Any]) -> None:
        nonlocal seq
        events.append({"seq": seq, "t": seq * 1e-5, **ev})
        seq += 1

    source = "import torch\n# generated chain\n"
    emit({"type": "run_started", "source": source, "filename": "chain.py"})
    emit(
        {
            "type": "tensor",
            "id": 0,
            "name": "x",
            "shape": [],
            "dtype": "float32",
            "device": "cpu",
            "requires_grad": True,
            "is_leaf": True,
            "value": _full(0.5),
        }
    )
    emit({"type": "node", "id": 0, "name": "AccumulateGrad", "tensor": 0, "line": 2})
    next_tensor, next_node, op_index = 1, 1, 0
    prev_node, prev_tensor = 0, 0
    chain: list[tuple[int, list[int]]] = []  # (node, edge targets)
    leaf_of: dict[int, int] = {0: 0}  # AccumulateGrad node -> its leaf
    while next_node < nodes:
        module = f"net.block{op_index // per_module}" if per_module else None
        inputs = [prev_tensor]
        edges: list[int] = [prev_node]
        created = []
        if op_index % 3 == 0:
            w = next_tensor
            next_tensor += 1
            emit(
                {
                    "type": "tensor",
                    "id": w,
                    "name": f"{module or 'w'}.weight{op_index}" if module else f"w{op_index}",
                    "shape": [],
                    "dtype": "float32",
                    "device": "cpu",
                    "requires_grad": True,
                    "is_leaf": True,
                    "is_param": True,
                    "value": _full(0.9),
                }
            )
            acc = next_node
            next_node += 1
            emit(
                {
                    "type": "node",
                    "id": acc,
                    "name": "AccumulateGrad",
                    "tensor": w,
                    "module_path": module,
                    "op": op_index,
                }
            )
            leaf_of[acc] = w
            created.append(acc)
            inputs.append(w)
            edges.append(acc)
            name = "MulBackward0"
        else:
            name = "TanhBackward0"
        out = next_tensor
        next_tensor += 1
        node = next_node
        next_node += 1
        emit(
            {
                "type": "tensor",
                "id": out,
                "shape": [],
                "dtype": "float32",
                "device": "cpu",
                "requires_grad": True,
                "is_leaf": False,
                "grad_fn": node,
                "op": op_index,
                "line": 3,
                "value": _full(0.4),
            }
        )
        emit(
            {
                "type": "node",
                "id": node,
                "name": name,
                "op": op_index,
                "line": 3,
                "module_path": module,
                "tensor": out,
                "edges": [{"node": e, "input_nr": 0} for e in edges],
            }
        )
        created.append(node)
        emit(
            {
                "type": "op",
                "index": op_index,
                "name": "mul" if name == "MulBackward0" else "tanh",
                "api": "Tensor.mul" if name == "MulBackward0" else "torch.tanh",
                "inputs": inputs,
                "outputs": [out],
                "line": 3,
                "module_path": module,
                "nodes": created,
            }
        )
        chain.append((node, edges))
        prev_node, prev_tensor = node, out
        op_index += 1
    emit({"type": "tensor_named", "id": prev_tensor, "name": "loss"})
    if backward:
        emit(
            {
                "type": "backward_started",
                "index": 0,
                "api": "Tensor.backward",
                "roots": [prev_tensor],
                "seed": [_full(1.0)],
                "retain_graph": False,
                "line": 4,
            }
        )
        step = 0
        for node, edges in reversed(chain):
            emit(
                {
                    "type": "node_executed",
                    "backward": 0,
                    "step": step,
                    "node": node,
                    "grad_in": [_full(1.0)],
                    "grad_out": [_full(0.5) for _ in edges],
                }
            )
            step += 1
            for target in edges[1:]:
                emit(
                    {
                        "type": "node_executed",
                        "backward": 0,
                        "step": step,
                        "node": target,
                        "grad_in": [_full(0.5)],
                        "grad_out": [],
                    }
                )
                emit(
                    {
                        "type": "grad_accumulated",
                        "backward": 0,
                        "step": step,
                        "tensor": leaf_of[target],
                        "node": target,
                        "before": None,
                        "added": _full(0.5),
                        "after": _full(0.5),
                    }
                )
                step += 1
        emit(
            {
                "type": "node_executed",
                "backward": 0,
                "step": step,
                "node": 0,
                "grad_in": [_full(0.5)],
                "grad_out": [],
            }
        )
        emit(
            {
                "type": "grad_accumulated",
                "backward": 0,
                "step": step,
                "tensor": 0,
                "node": 0,
                "before": None,
                "added": _full(0.5),
                "after": _full(0.5),
            }
        )
        emit({"type": "backward_finished", "index": 0, "nodes_executed": step + 1, "graph_freed": True})
    emit(
        {
            "type": "run_finished",
            "status": "ok",
            "counts": {"ops": op_index, "nodes": next_node, "tensors": next_tensor, "events": seq + 1},
        }
    )
    # Through the contract: fills every default, as the engine's own traces have them.
    from engine.events import trace_adapter

    trace = trace_adapter.validate_python({"source": source, "events": events})
    data: dict[str, Any] = trace_adapter.dump_python(trace, mode="json")
    return data


def run_lasting(trace: dict[str, Any], seconds: float) -> dict[str, Any]:
    """
    `trace` with its event times moved so that the run lasts `seconds` and its graph memory
    is first measured at 1% of them: the memory axis then runs from 0 s whatever the recorded
    run's import and warm-up took (a first point past a quarter of the span starts the axis
    there, LATE_FIRST_POINT, and left two ticks to compare).
    """
    events = trace["events"]
    last = max(e["t"] for e in events)
    first = min(e["t"] for e in events if e["type"] in ("memory", "optimizer_step"))
    early = seconds * 0.01
    for e in events:
        t = e["t"]
        e["t"] = t * early / first if t < first else early + (t - first) * (seconds - early) / (last - first)
    return trace
