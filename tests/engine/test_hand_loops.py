"""Loops that step by hand (NOTE [Loops that step by hand]): the first backward() calls in
full, the rest as one ``backward_counted`` event each, with real PyTorch's numbers."""

from __future__ import annotations

import itertools

from engine import record
from engine.events import BackwardCounted, Limits, Trace
from server.settings import Settings
from tests.engine.snippets import plain_stdout

# the PyTorch tutorial's polynomial fit of sin(x), written out (w -= lr * w.grad), shortened;
# it prints each loss and, at call 20 (metrics-only), how many torch-function modes are on
TUTORIAL = """import torch, math
x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
a, b, c, d = (torch.randn((), requires_grad=True) for _ in range(4))
for t in range(300):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    print(loss.item())
    if t == 20:
        print("modes", torch._C._len_torch_function_stack())
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= 1e-5 * p.grad
            p.grad = None
print("final", a.item(), b.item(), c.item(), d.item())
"""


def _printed(trace: Trace) -> str:
    return "".join(e.text for e in trace.events if e.type == "output" and e.stream == "stdout")


def _calls(trace: Trace) -> tuple[list[int], list[BackwardCounted]]:
    started = [e.index for e in trace.events if e.type == "backward_started"]
    counted = [e for e in trace.events if isinstance(e, BackwardCounted)]
    return started, counted


def test_a_loop_that_steps_by_hand_records_its_first_calls_in_full_and_counts_the_rest() -> None:
    trace = record(TUTORIAL)
    assert trace.events[-1].type == "run_finished" and trace.events[-1].status == "ok"
    started, counted = _calls(trace)
    assert started == list(range(10))
    assert [e.index for e in counted] == list(range(10, 300))
    # the numbers are PyTorch's own: the printed losses and final parameters equal a plain
    # run's, and each counted call's loss is the one the snippet printed before it
    printed = _printed(trace)
    assert printed == plain_stdout(TUTORIAL)
    losses = [float(line) for line in printed.splitlines() if not line.startswith(("modes", "final"))]
    assert [e.loss for e in counted] == losses[10:]
    assert losses[-1] < losses[0] / 10
    # a metrics-only call runs with the tape mode off PyTorch's stack (not merely idle in it),
    # as a plain run does
    assert "modes 0" in printed
    # the ops of the first ten iterations only: the tape does not grow with the loop
    ops = [e for e in trace.events if e.type == "op"]
    assert all(e.line is not None and e.line <= 16 for e in ops)
    assert len(ops) < 20 * 10 + 10
    assert {e.line for e in counted} == {11}
    assert all(e.wall_s > 0 for e in counted)


def test_detail_every_records_every_kth_call_of_a_loop_in_full() -> None:
    trace = record(TUTORIAL, limits=Limits(detail_every=100))
    started, counted = _calls(trace)
    assert started == [*range(10), 99, 199, 299]
    assert len(counted) == 300 - len(started)
    walked = {e.backward for e in trace.events if e.type == "node_executed"}
    assert walked == set(started)  # the 100th call's walk is there, node by node
    assert _printed(trace) == _printed(record(TUTORIAL))


def test_a_snippet_holding_an_optimizer_is_left_to_its_schedule() -> None:
    # gradient accumulation: twelve backward() calls before the first step
    source = """import torch
w = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(2):
    opt.zero_grad()
    for micro in range(12):
        loss = ((w - micro) ** 2).sum()
        loss.backward()
    opt.step()
print(w.tolist())
"""
    trace = record(source)
    started, counted = _calls(trace)
    assert counted == []
    assert len(started) == 24  # both steps are among the first detail_steps: every call whole
    assert sum(e.type == "optimizer_step" for e in trace.events) == 2
    assert _printed(trace) == plain_stdout(source)


def test_a_short_loop_stays_whole() -> None:
    source = (Settings().examples_dir / "accumulate_loop.py").read_text()
    started, counted = _calls(record(source))
    assert started == [0, 1, 2, 3] and counted == []


def test_counted_calls_carry_the_graph_memory_a_held_loss_keeps() -> None:
    # a total of tensors no backward() walks keeps each one's graph (exp saved its result)
    # alive; a total of Python numbers (.item()) keeps nothing
    held = """import torch
w = torch.ones(64, requires_grad=True)
kept = 0
for step in range(40):
    loss = (w * torch.linspace(0, 1, 64)).pow(2).sum()
    loss.backward()
    kept = kept + (w * 2).exp().sum(){item}
    with torch.no_grad():
        w -= 0.01 * w.grad
        w.grad = None
"""
    climbing = [e.graph_bytes for e in _calls(record(held.format(item="")))[1]]
    assert len(climbing) == 30 and all(b > a for a, b in itertools.pairwise(climbing))
    flat = _calls(record(held.format(item=".item()")))[1]
    assert {e.graph_bytes for e in flat} == {0} and all(e.graph_peak_bytes > 0 for e in flat)


def test_detail_next_step_records_that_iteration_of_a_loop_by_hand_in_full() -> None:
    source = """import torch, gradwalk
w = torch.zeros(1, requires_grad=True)
for t in range(30):
    if t == 20:
        gradwalk.detail_next_step()
    loss = ((w - 3) ** 2).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad = None
"""
    started, counted = _calls(record(source))
    assert started == [*range(10), 20]
    assert [e.index for e in counted] == [*range(10, 20), *range(21, 30)]


def test_a_librarys_calls_on_the_snippets_behalf_stay_whole() -> None:
    # jacobian calls autograd.grad once per output: twenty calls, none of them the snippet's
    source = """import torch
from torch.autograd.functional import jacobian
x = torch.linspace(0, 1, 20, requires_grad=True)
J = jacobian(lambda t: torch.sin(t) * 2, x)
print(J.diagonal()[:3])
"""
    trace = record(source)
    started, counted = _calls(trace)
    assert started == list(range(20)) and counted == []
    assert _printed(trace) == plain_stdout(source)


FAILS_AT_500 = """import torch
w = torch.zeros(4, requires_grad=True)
for t in range(800):
    loss = ((w - 1) ** 2).sum()
    if t == 500:
        w.mul_(2)  # in place on a leaf that requires grad, outside no_grad
    loss.backward()
    with torch.no_grad():
        w -= 0.01 * w.grad
        w.grad = None
"""


def test_an_error_in_a_counted_call_says_so_and_detail_every_records_it_in_full() -> None:
    error = next(e for e in record(FAILS_AT_500).events if e.type == "error")
    assert error.line == 6 and error.metrics_only_calls == 500 and error.metrics_only_after is None
    # run again with the failing iteration's call (the 501st) recorded in full
    again = record(FAILS_AT_500, limits=Limits(detail_every=501))
    error = next(e for e in again.events if e.type == "error")
    assert error.metrics_only_calls is None
    failing = [e for e in again.events if e.type == "op" and e.line == 4]
    assert len(failing) == 3 * 11  # sub, pow, sum of the first 10 iterations and of the 501st
