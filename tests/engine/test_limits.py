"""Caps on recording: the snippet keeps running, a limit event says what was dropped, counts stay exact."""

from __future__ import annotations

import pytest
import torch

from engine import queries as q
from engine import record
from engine.events import Limits
from engine.values import to_value

CHAIN = """
import torch
h = torch.tensor([0.5, -0.2], requires_grad=True)
x = h
for _ in range({n}):
    x = torch.tanh(x * 1.01 + 0.1)
x.sum().backward()
print("done", h.grad.tolist())
"""


def test_a_2000_step_loop_records_in_full_within_default_limits() -> None:
    trace = record(CHAIN.format(n=2000))
    finished = trace.events[-1]
    assert finished.status == "ok"
    assert finished.counts.ops == 6002 and finished.counts.dropped_ops == 0
    assert not q.events_of(trace, "limit")
    assert len(q.events_of(trace, "node_executed")) == finished.counts.nodes
    assert "done" in q.stdout(trace)


def test_op_cap_drops_ops_but_the_snippet_finishes() -> None:
    trace = record(CHAIN.format(n=100), limits=Limits(max_ops=50, max_nodes=40))
    finished = trace.events[-1]
    assert finished.status == "ok"
    assert "done" in q.stdout(trace)
    assert finished.counts.ops == 302
    assert finished.counts.dropped_ops == 302 - 50
    assert len(q.events_of(trace, "op")) == 50
    assert {e.what for e in q.events_of(trace, "limit")} >= {"ops", "nodes"}
    assert len(q.events_of(trace, "node")) == 40
    assert finished.counts.nodes == finished.counts.dropped_nodes + 40
    assert q.final_grads(trace)["h"] is not None


def test_nodes_made_by_ops_past_the_op_cap_are_counted() -> None:
    # the op cap left their nodes out of counts.nodes (5 of a chain's 21), though the
    # counts of run_finished are the run's exact totals
    whole = record(CHAIN.format(n=100)).events[-1].counts
    trace = record(CHAIN.format(n=100), limits=Limits(max_ops=50))
    capped = trace.events[-1].counts
    assert whole.nodes == 302 and whole.dropped_nodes == 0
    assert capped.nodes == whole.nodes
    assert capped.dropped_nodes == whole.nodes - len(q.events_of(trace, "node"))
    assert capped.dropped_ops == 302 - 50
    assert [e.what for e in q.events_of(trace, "limit")] == ["ops"]  # no cap on nodes was hit
    # what it says names the nodes it dropped too (it said only ops: hunt 63), in words that
    # read after the app's "limit: ops" (it read "limit: ops ops past 50 ...": hunt 64)
    assert (
        q.events_of(trace, "limit")[0].message
        == "the first 50 ops were recorded; those after them, and the graph nodes they make, "
        "are counted, not recorded"
    )


def test_event_cap_keeps_the_closing_events() -> None:
    trace = record(CHAIN.format(n=200), limits=Limits(max_events=300))
    assert len(trace.events) <= 300
    assert trace.events[-1].type == "run_finished"
    assert trace.events[-1].counts.dropped_events > 0
    assert [e.seq for e in trace.events] == list(range(len(trace.events)))
    assert any(e.type == "limit" and e.what == "events" for e in trace.events)


def test_large_tensors_travel_as_summaries() -> None:
    trace = record(
        "import torch\nw = torch.randn(100, 100, requires_grad=True)\n(w * 2).sum().backward()\n",
        limits=Limits(max_value_elements=64),
    )
    final = next(e for e in trace.events if e.type == "tensor_final")
    assert final.value.kind == "summary" and final.value.numel == 10_000
    assert final.grad.kind == "summary" and final.grad.min == final.grad.max == 2.0
    assert 0 < sum(final.value.hist) <= 1024  # a histogram of a strided sample
    assert len(trace.model_dump_json()) < 200_000


def test_output_is_capped() -> None:
    trace = record("for i in range(10000):\n    print('x' * 100)\n", limits=Limits(max_output_bytes=5000))
    assert len(q.stdout(trace)) <= 5000
    (limit,) = [e for e in trace.events if e.type == "limit" and e.what == "output"]
    assert (
        limit.message == "the first 5,000 characters were kept; what the run printed after them was dropped"
    )
    assert trace.events[-1].status == "ok"


def test_output_that_fills_the_cap_exactly_still_says_the_rest_was_dropped() -> None:
    # 50 lines of 100 characters fill 5,000 exactly: the 51st and after were dropped without
    # a word, the run "finished" with its output cut (hunt 64)
    trace = record("for i in range(200):\n    print('x' * 99)\n", limits=Limits(max_output_bytes=5000))
    assert q.stdout(trace) == ("x" * 99 + "\n") * 50
    limits = [e for e in trace.events if e.type == "limit" and e.what == "output"]
    assert len(limits) == 1
    assert limits[0].message.startswith("the first 5,000 characters were kept")


def test_a_gradient_and_its_transpose_keep_their_own_shapes_and_equal_statistics() -> None:
    """TBackward0 hands on a transposed view of the gradient it received: the summary is
    computed once, but each view keeps its own shape (and its own statistics are exact)."""
    trace = record(
        "import torch\nw = torch.randn(20, 30, requires_grad=True)\nx = torch.randn(30, 5)\n"
        "(w.t().t() @ x).pow(2).sum().backward()\n"
    )
    t_nodes = {e.id for e in trace.events if e.type == "node" and e.name == "TBackward0"}
    walked = [e for e in trace.events if e.type == "node_executed" and e.node in t_nodes]
    assert walked
    for e in walked:
        (received,), (sent,) = e.grad_in, e.grad_out
        assert received.kind == sent.kind == "summary"
        assert sorted(received.shape) == sorted(sent.shape) and received.shape != sent.shape
        assert (received.min, received.max, received.mean, received.norm) == (
            sent.min,
            sent.max,
            sent.mean,
            sent.norm,
        )
    final = next(e for e in trace.events if e.type == "tensor_final" and e.name == "w")
    grads = [e.added for e in trace.events if e.type == "grad_accumulated"]
    assert grads[0].norm == pytest.approx(final.grad.norm)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_summaries_of_huge_finite_values_stay_exact_and_quiet(dtype: str) -> None:
    """An exploding run's tensors (1e20 and up) are finite: their float32 sum of squares
    overflows, so the summary is taken in float64, with no warning on the snippet's stderr."""
    trace = record(
        f"import torch\nw = torch.cat([torch.full((600,), 1e20), torch.full((600,), -3e38)]).to(torch.{dtype})\n"
    )
    assert not q.events_of(trace, "error")
    assert not [e for e in q.events_of(trace, "output") if e.stream == "stderr"]
    names = q.tensor_names(trace)
    value = next(e.value for e in q.events_of(trace, "tensor") if names.get(e.id) == "w")
    assert value.kind == "summary" and value.nan == 0 and value.inf == 0
    assert value.min == pytest.approx(-3e38, rel=1e-2) and value.max == pytest.approx(1e20, rel=1e-2)
    assert value.norm == pytest.approx(3e38 * 600**0.5, rel=1e-2)
    assert sum(value.hist) == 1200 // (1200 // 256)


def test_a_view_numpy_cannot_read_is_still_summarised() -> None:
    trace = record("import torch\nw = torch._neg_view(torch.ones(100, 100))\n")
    names = q.tensor_names(trace)
    value = next(e.value for e in q.events_of(trace, "tensor") if names.get(e.id) == "w")
    assert value.kind == "summary" and value.min == value.max == -1.0 and value.norm == pytest.approx(100.0)


def test_each_gradient_of_a_walk_gets_its_own_summary() -> None:
    """Large gradients freed during the walk hand their memory to the next ones (same address,
    size and version): a summary is reused only for a view of a tensor still alive."""
    trace = record(
        "import torch\nx = torch.ones(1000, requires_grad=True)\nh = x\n"
        "for k in range(2, 8):\n    h = h * k\nh.sum().backward()\n"
    )
    walk = [e for e in q.events_of(trace, "node_executed") if e.grad_out and e.grad_out[0] is not None]
    maxima = [e.grad_out[0].max for e in walk]
    # gradients leaving SumBackward0 then each MulBackward0, last op first: 1, 7, 7*6, ...
    assert maxima[:7] == [1.0, 7.0, 42.0, 210.0, 840.0, 2520.0, 5040.0]


@pytest.mark.parametrize("n", [65, 4_096, 65_536, 65_537, 300_000])
def test_a_summary_reads_as_pytorchs_own_statistics(n: int) -> None:
    """Either side of the size where the sum moves from NumPy to PyTorch (NOTE [Summaries
    through NumPy]), a float32 summary says what PyTorch's own reductions say."""
    t = torch.randn(n, generator=torch.Generator().manual_seed(n)) * 3 + 1
    value = to_value(t, 64)
    assert value["kind"] == "summary" and value["numel"] == n
    assert value["min"] == t.min().item() and value["max"] == t.max().item()
    assert value["mean"] == pytest.approx(t.mean().item(), rel=1e-5)
    assert value["std"] == pytest.approx(t.std().item(), rel=1e-5)
    assert value["norm"] == pytest.approx(torch.linalg.vector_norm(t).item(), rel=1e-5)
