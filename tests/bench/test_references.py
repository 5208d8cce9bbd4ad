"""The rows of ``make bench`` measure what they say: the reference rows (they are not
gradwalk, but the overhead targets are read against them, so a broken reference would
mislead) and the full rows (every timed rep recorded in full)."""

from __future__ import annotations

import contextlib
import io

import torch

from bench.bench_engine import WORKLOADS, bare_metrics_hooks, measure, minimal_recorder
from engine.events import Limits


def _cubic() -> torch.Tensor:
    x = torch.tensor(2.5, requires_grad=True)
    y = x**3 - 4 * x
    y.backward()
    assert x.grad is not None
    return x.grad


def test_minimal_recorder_hooks_every_node_and_leaves_the_numbers_alone() -> None:
    plain = _cubic()
    with minimal_recorder() as seen:
        recorded = _cubic()
    assert torch.equal(plain, recorded)
    # SubBackward0, PowBackward0, MulBackward0 and the leaf's AccumulateGrad each ran once
    assert len(seen) == 4


def test_minimal_recorder_with_values_takes_each_output_and_each_gradient_sent() -> None:
    with minimal_recorder(values=True) as seen:
        _cubic()
    full = [v["flat"] for v in seen if isinstance(v, dict)]
    sent = [[v["flat"] for v in node] for node in seen if isinstance(node, list)]
    assert [2.5] in full and [15.625 - 10.0] in full  # x and y, whole
    # Sub sends 1 and -1 on; Pow sends 3x^2 = 18.75, Mul sends -4; AccumulateGrad sends nothing
    assert sorted(sent) == sorted([[[1.0], [-1.0]], [[18.75]], [[-4.0]], []])


def test_minimal_recorder_summarises_large_values() -> None:
    with minimal_recorder(values=True) as seen:
        w = torch.randn(100, 100, requires_grad=True)
        (w * 2).sum().backward()
    summaries = [v for v in seen if isinstance(v, dict) and v["kind"] == "summary"]
    assert summaries and summaries[0]["numel"] == 10_000


def test_bare_hooks_leave_a_training_loop_as_it_was() -> None:
    def train() -> list[float]:
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 3), torch.randn(8, 1)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    plain = train()
    with contextlib.redirect_stdout(io.StringIO()), bare_metrics_hooks() as steps:
        hooked = train()
    assert hooked == plain
    # each step saw its loss and the norms of the weight, the bias and their gradients
    assert [loss for loss, _ in steps] == plain
    assert all(len(norms) == 4 and all(n >= 0 for n in norms) for _, norms in steps)


def test_full_rows_record_every_rep_in_full_past_the_hand_loop_limit() -> None:
    # the scalar workload has no optimizer: without its own limits, calls past
    # Limits.detail_calls would be recorded metrics-only and the "full" figure would be wrong
    # (measure raises when the last rep was not recorded in full)
    setup, step, _ = WORKLOADS["cubic scalar"]
    timing = measure(setup, step, reps=Limits().detail_calls + 2)
    assert timing.variant > 0 and timing.base > 0
