"""A norm op's running statistics read as they were (NOTE [Running statistics] in engine/running_stats.py).

batch_norm updates running_mean and running_var in its kernel without moving their version
counters, so the tape went on showing the values they started as.
"""

from __future__ import annotations

from typing import Any

import torch

from engine import queries as q
from engine import record
from engine.events import Limits, Trace

TWICE = """import torch
import torch.nn as nn
torch.manual_seed(0)
bn = nn.BatchNorm1d(2)
x = torch.randn(4, 2)
y = bn(x)
z = bn(x * 2)
"""

LOOP = """import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 3)
target = torch.randn(16, 1)
for step in range(6):
    opt.zero_grad()
    loss = (model(x) - target).pow(2).mean()
    loss.backward()
    opt.step()
model.eval()
pred = model(x)
"""


def _plain(source: str) -> dict[str, Any]:
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, "plain.py", "exec"), scope)
    return scope


def _values(trace: Trace) -> dict[int, list[float]]:
    return {e.id: q.value_of(e.value) for e in q.events_of(trace, "tensor")}


def _norms(trace: Trace) -> list[Any]:
    return [op for op in q.events_of(trace, "op") if op.name == "batch_norm"]


def test_each_forward_reads_the_running_stats_the_one_before_left() -> None:
    trace = record(TWICE)
    assert trace.events[-1].status == "ok"
    first, second = _norms(trace)
    values = _values(trace)
    tensors = {e.id: e for e in q.events_of(trace, "tensor")}
    # in: as they started; out: the op's own result, then their new versions
    assert [values[t] for t in first.inputs[1:3]] == [[0.0, 0.0], [1.0, 1.0]]
    made_mean, made_var = first.outputs[1:]
    assert [tensors[t].version_of for t in (made_mean, made_var)] == first.inputs[1:3]
    assert [tensors[t].name for t in (made_mean, made_var)] == ["bn.running_mean", "bn.running_var"]
    # the second forward reads what the first left, which is what PyTorch holds after one forward
    assert second.inputs[1:3] == [made_mean, made_var]
    once = _plain(TWICE.replace("z = bn(x * 2)\n", ""))["bn"]
    assert values[made_mean] == once.running_mean.tolist()
    assert values[made_var] == once.running_var.tolist()
    twice = _plain(TWICE)["bn"]
    assert [values[t] for t in second.outputs[1:]] == [
        twice.running_mean.tolist(),
        twice.running_var.tolist(),
    ]


def _running_mean_after(forwards: int) -> list[float]:
    """PyTorch's running_mean of LOOP's batch norm after ``forwards`` training steps."""
    return _plain(LOOP.replace("range(6)", f"range({forwards})"))["model"][1].running_mean.tolist()


def test_eval_reads_the_running_stats_training_left() -> None:
    trace = record(LOOP, limits=Limits(detail_steps=10))  # every step in full, and the eval after
    assert trace.events[-1].status == "ok"
    evaluated = _norms(trace)[-1]
    assert (evaluated.line, len(evaluated.outputs)) == (14, 1)  # eval mode updates nothing
    assert _values(trace)[evaluated.inputs[1]] == _running_mean_after(6)


def test_a_step_recorded_after_steps_recorded_metrics_only_reads_what_they_left() -> None:
    # steps 0, 2 and 5 in full; 1, 3 and 4 metrics-only, which update the statistics unseen;
    # the eval after the loop in full again (NOTE [Code after the loop]), after all 6
    trace = record(LOOP, limits=Limits(detail_steps=1, detail_every=3))
    assert trace.events[-1].status == "ok"
    values = _values(trace)
    checked = []
    for norm in _norms(trace):
        steps_before = sum(1 for e in trace.events if e.type == "optimizer_step" and e.seq < norm.seq)
        assert values[norm.inputs[1]] == _running_mean_after(steps_before), steps_before
        checked.append(steps_before)
    assert checked == [0, 2, 5, 6]


def test_instance_norm_with_running_stats_and_eval_batch_norm() -> None:
    source = """import torch
import torch.nn as nn
torch.manual_seed(0)
norm = nn.InstanceNorm1d(2, track_running_stats=True)
x = torch.randn(3, 2, 5)
y = norm(x)
bn = nn.BatchNorm1d(2).eval()
z = bn(x)
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    ops = {op.name: op for op in q.events_of(trace, "op")}
    values = _values(trace)
    norm = _plain(source)["norm"]
    made = ops["instance_norm"].outputs[1:]
    assert [values[t] for t in made] == [norm.running_mean.tolist(), norm.running_var.tolist()]
    assert len(ops["batch_norm"].outputs) == 1
    assert torch.is_grad_enabled()
