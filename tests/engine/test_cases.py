"""Every worked case in server/examples/cases.json, read back from its recorded trace."""

from __future__ import annotations

import math
from typing import Any

import pytest

from engine import queries as q
from engine import record
from tests.conftest import case_source, load_cases

CASES = load_cases()


def _close(got: Any, want: Any, tol: float = 1e-6) -> bool:
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(got) == len(want)
            and all(_close(g, w, tol) for g, w in zip(got, want, strict=False))
        )
    if isinstance(got, list) and len(got) == 1:
        got = got[0]
    return isinstance(got, int | float) and math.isclose(got, want, rel_tol=tol, abs_tol=tol)


@pytest.fixture(scope="module")
def traces() -> dict[str, Any]:
    return {}


def _trace(traces: dict[str, Any], file: str) -> Any:
    if file not in traces:
        traces[file] = record(case_source(file), filename=file)
    return traces[file]


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_case(case: dict[str, Any], traces: dict[str, Any]) -> None:
    trace = _trace(traces, case["file"])
    finished = trace.events[-1]
    assert finished.type == "run_finished"
    if "error" in case:
        want = case["error"]
        errs = q.errors(trace)
        assert len(errs) == 1, errs
        assert errs[0].exc_type == want["type"]
        assert errs[0].line == want["line"]
        assert want["contains"] in errs[0].message
        assert finished.status == "error"
    else:
        assert finished.status == "ok", finished.message
    for name, want in case.get("grads", {}).items():
        got = q.final_grads(trace)[name]
        assert _close(got, want), (name, got, want)
    if "backward_order" in case:
        assert q.backward_order(trace, 0) == case["backward_order"]
    for name, afters in case.get("accumulations", {}).items():
        assert [a[2] for a in q.accumulations(trace, name)] == pytest.approx(afters)
    for text in case.get("stdout_contains", []):
        assert text in q.stdout(trace)
    for name, want in case.get("final_params", {}).items():
        got = q.final_values(trace)[name]
        assert _close(got, want, case.get("tolerance", 1e-6)), (name, got, want)
    if "optimizer_steps" in case:
        assert len(q.optimizer_steps(trace)) == case["optimizer_steps"]
        assert finished.counts.optimizer_steps == case["optimizer_steps"]
    found = {(p.kind, p.line) for p in q.pitfalls(trace)}
    if case.get("clean") or "pitfalls" not in case:
        assert not found, found
    else:
        assert {kind for kind, _ in found} == set(case["pitfalls"]), found
    if "parameter_names" in case:
        names = {e.param_name for e in trace.events if e.type in ("tensor", "tensor_named") and e.param_name}
        assert names == set(case["parameter_names"])


def test_accumulations_show_before_added_after(traces: dict[str, Any]) -> None:
    trace = _trace(traces, "cubic_twice.py")
    assert q.accumulations(trace, "x") == [(None, 14.75, 14.75), (14.75, 14.75, 29.5)]


def test_backward_twice_error_names_the_first_backward(traces: dict[str, Any]) -> None:
    err = q.errors(_trace(traces, "backward_twice_error.py"))[0]
    assert err.hint and "line 5" in err.hint and "retain_graph" in err.hint


def test_no_grad_op_is_recorded_without_nodes(traces: dict[str, Any]) -> None:
    trace = _trace(traces, "no_grad_region.py")
    ops = [e for e in trace.events if e.type == "op" and e.line == 6]
    assert ops and all(op.grad_mode == "no_grad" and op.nodes == [] for op in ops)
    graded = [e for e in trace.events if e.type == "op" and e.line == 7]
    assert graded and all(op.grad_mode == "grad" and op.nodes for op in graded)


def test_control_flow_records_only_the_branch_taken(traces: dict[str, Any]) -> None:
    trace = _trace(traces, "control_flow.py")
    node_names = set(q.node_names(trace).values())
    assert "DivBackward0" in node_names
    assert "ReluBackward0" not in node_names
    assert not any(e.type == "op" and e.line == 10 for e in trace.events)


def test_linear_records_every_node_it_creates(traces: dict[str, Any]) -> None:
    trace = _trace(traces, "small_net.py")
    nodes = q.node_names(trace)
    linear_ops = [e for e in trace.events if e.type == "op" and e.name == "linear"]
    assert linear_ops and linear_ops[0].module_path == "net.fc1"
    created = {nodes[n] for n in linear_ops[0].nodes}
    assert {"AddmmBackward0", "TBackward0"} <= created


def test_nodes_say_the_shapes_of_gradients_their_tensor_does_not_tell() -> None:
    """The weight.t() F.linear makes inside itself is never a recorded tensor, and a split's
    node receives one gradient per piece: their nodes carry the shapes, as the gradients
    PyTorch later sends them have."""
    trace = record(
        "import torch\nimport torch.nn.functional as F\n"
        "w = torch.randn(2, 16, requires_grad=True)\n"
        "y = F.linear(torch.randn(5, 16), w)\n"
        "a, b = w.split([1, 1])\n"
        "(y.sum() + a.sum() * 2 + b.sum()).backward()\n"
    )
    nodes = {e.id: e for e in trace.events if e.type == "node"}
    by_name = {e.name: e for e in nodes.values()}
    assert by_name["TBackward0"].tensor is None and by_name["TBackward0"].grad_shapes == [[16, 2]]
    assert by_name["SplitWithSizesBackward0"].grad_shapes == [[1, 16], [1, 16]]
    # a node whose tensor tells its shape carries none
    assert by_name["MmBackward0"].grad_shapes is None and by_name["AccumulateGrad"].grad_shapes is None
    # and each shape is the shape of the gradient the engine really sent along that edge
    executed = [e for e in trace.events if e.type == "node_executed"]
    checked = 0
    for ex in executed:
        sender = nodes[ex.node]
        for edge, sent in zip(sender.edges, ex.grad_out, strict=True):
            target = nodes.get(edge.node) if edge.node is not None else None
            if target is not None and target.grad_shapes is not None and sent is not None:
                assert sent.shape == target.grad_shapes[edge.input_nr], (sender.name, target.name)
                checked += 1
    assert checked == 3  # Mm -> T, and the two pieces' sums -> SplitWithSizes


def test_cross_entropy_records_both_nodes() -> None:
    trace = record(
        "import torch\nimport torch.nn.functional as F\n"
        "logits = torch.randn(4, 3, requires_grad=True)\n"
        "loss = F.cross_entropy(logits, torch.tensor([0, 1, 2, 0]))\nloss.backward()\n"
    )
    nodes = q.node_names(trace)
    ce = next(e for e in trace.events if e.type == "op" and e.name == "cross_entropy")
    assert {"LogSoftmaxBackward0", "NllLossBackward0"} <= {nodes[n] for n in ce.nodes}
    assert ce.api == "F.cross_entropy" and ce.line == 4


def test_module_setup_ops_stay_off_the_tape(traces: dict[str, Any]) -> None:
    trace = _trace(traces, "small_net.py")
    assert not any(
        e.type == "op" and e.name in ("kaiming_uniform_", "uniform_", "empty") for e in trace.events
    )


def test_gradwalks_own_tensor_work_stays_off_the_tape() -> None:
    """Called directly (not through Tensor.backward), torch.autograd.backward runs with the
    tape mode active; the loss it reads and the seed it describes are not snippet ops."""
    trace = record(
        "import torch\nx = torch.randn(100, requires_grad=True)\n"
        "y = (x * 2).sum()\ntorch.autograd.backward(y)\n"
        "torch.autograd.backward([(x * 3).sum()], [torch.tensor(2.0)])\n"
    )
    assert [e.name for e in trace.events if e.type == "op"] == ["randn", "mul", "sum", "mul", "sum", "tensor"]
    assert [e.nodes_executed for e in q.events_of(trace, "backward_finished")] == [3, 3]


def test_an_op_that_hands_its_input_back_unchanged_is_not_in_place() -> None:
    """x.float() of a float tensor, x.to() its own device, x.contiguous(), dropout with p=0
    return their input object itself; they were marked in-place (as F.relu(x, inplace=True)
    is, whose output is its input too, but written) and gave it a new id."""
    trace = record(
        "import torch\nimport torch.nn.functional as F\nx = torch.randn(3, requires_grad=True)\nh = x * 2\n"
        "a = h.float()\nb = h.to('cpu')\nc = h.contiguous()\nd = F.dropout(h, 0.0)\n"
        "e = F.relu(h, inplace=True)\nh.add_(1)\n"
    )
    ops = {e.name: e for e in trace.events if e.type == "op"}
    for name in ("float", "to", "contiguous", "dropout"):
        op = ops[name]
        assert not op.inplace and op.outputs == op.inputs and op.nodes == [], op
    for name in ("relu", "add"):  # written: in-place, a new version with a new id
        op = ops[name]
        assert op.inplace and op.outputs != op.inputs[:1] and len(op.nodes) == 1, op


def test_a_saved_result_names_the_version_the_op_made() -> None:
    """An in-place op's input and output are one tensor object: what tanh_ saves is its
    result, the new version, and the node says so (a non-in-place op's too)."""
    trace = record(
        "import torch\nx = torch.randn(3, requires_grad=True)\ny = x * 2\ny.tanh_()\nw = torch.tanh(x)\n"
    )
    ops = [e for e in trace.events if e.type == "op" and e.name == "tanh"]
    nodes = {e.id: e for e in trace.events if e.type == "node"}
    for op in ops:
        (node,) = (nodes[n] for n in op.nodes)
        assert [(s.name, s.tensor) for s in node.saved] == [("result", op.outputs[0])]
    assert ops[0].inplace and ops[0].outputs != ops[0].inputs
