"""A DataLoader's batch is one op of the tape (NOTE [Loader batches] in engine/loaders.py):
the sampler's, the dataset's and the collate's ops make it off the tape, the snippet runs as
without gradwalk, and its training numbers are PyTorch's."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import torch

from engine import queries as q
from engine import record
from engine.events import Limits, Trace
from tests.engine.snippets import plain_grads

LOOP = """import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
X = torch.randn(64, 5); Y = torch.randint(0, 3, (64,))
loader = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
net = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(2):
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
print(round(loss.item(), 6))
"""
LOOP_LINE = 9  # for xb, yb in loader:
# every step in full detail, so every batch is on the tape
EVERY_STEP = Limits(detail_steps=100)


def _ops(trace: Trace) -> list[Any]:
    return q.events_of(trace, "op")


def test_each_batch_is_one_op_at_the_loop_line_with_the_batch_as_its_outputs() -> None:
    trace = record(LOOP, limits=EVERY_STEP)
    assert trace.events[-1].status == "ok"
    ops = _ops(trace)
    batches = [op for op in ops if op.name == "DataLoader"]
    assert len(batches) == 8  # 2 epochs of 64 samples in batches of 16
    names = q.tensor_names(trace)
    shapes = {e.id: e.shape for e in q.events_of(trace, "tensor")}
    for op in batches:
        assert op.api == "DataLoader.__next__" and op.line == LOOP_LINE
        assert op.inputs == [] and op.nodes == [] and not op.inplace
        assert [names.get(t) for t in op.outputs] == ["xb", "yb"]
        assert [shapes[t] for t in op.outputs] == [[16, 5], [16]]
    # the plumbing that made them is not on the tape: no op of the loop line but the batches
    assert {op.name for op in ops if op.line == LOOP_LINE} == {"DataLoader"}
    assert not {"randperm", "stack", "getitem", "random"} & {op.name for op in ops}
    # the model's ops take the batch's tensors as theirs
    first_linear = next(op for op in ops if op.name == "linear")
    assert first_linear.inputs[0] == batches[0].outputs[0]
    # and the op count is the tape's: batches and model ops, no plumbing
    assert trace.events[-1].counts.ops == len(ops)


def test_recording_a_loader_loop_leaves_shuffling_and_training_as_pytorch_runs_them() -> None:
    trace = record(LOOP, limits=EVERY_STEP)
    want = plain_grads(LOOP, ["net[0].weight", "net[3].bias"])
    got = q.final_grads(trace)
    assert got["net.0.weight"] == want["net[0].weight"]  # bitwise: the same shuffles, the same steps
    assert got["net.3.bias"] == want["net[3].bias"]
    printed = io.StringIO()
    torch.manual_seed(0)
    with contextlib.redirect_stdout(printed):
        exec(compile(LOOP, "plain.py", "exec"), {"__name__": "__main__"})
    assert q.stdout(trace) == printed.getvalue()  # the last batch's loss, as printed without gradwalk


def test_a_batch_of_dicts_and_a_datasets_own_code_make_one_op_and_print_as_they_do() -> None:
    source = """import torch
from torch.utils.data import DataLoader, Dataset
class Pairs(Dataset):
    def __len__(self):
        return 6
    def __getitem__(self, i):
        x = torch.full((2,), float(i))
        if i == 0:
            print("first sample")
        return {"x": x * 2, "y": torch.tensor(i)}
w = torch.ones(2, requires_grad=True)
for batch in DataLoader(Pairs(), batch_size=3):
    (batch["x"] @ w).sum().backward()
print(w.grad.tolist())
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    ops = _ops(trace)
    batches = [op for op in ops if op.name == "DataLoader"]
    assert len(batches) == 2 and all(op.line == 12 for op in batches)
    shapes = {e.id: e.shape for e in q.events_of(trace, "tensor")}
    assert [shapes[t] for t in batches[0].outputs] == [[3, 2], [3]]
    # the dataset's full, mul and tensor ran making the batch: not ops of the tape
    assert {op.line for op in ops} == {11, 12, 13}
    # x * 2 of samples 0..5, summed over both batches and both columns: 2 * 15 each
    assert q.stdout(trace) == "first sample\n[30.0, 30.0]\n"


def test_the_snippets_own_torch_function_mode_still_sees_the_loaders_ops() -> None:
    source = """import torch
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader, TensorDataset
class Count(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.names = []
    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))
data = TensorDataset(torch.arange(4.0))
with Count() as count:
    for (xb,) in DataLoader(data, batch_size=2):
        pass
print(sorted(set(count.names)))
"""
    plain: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source.replace("print(", "seen = ("), "plain.py", "exec"), plain)
    trace = record(source)
    assert trace.events[-1].status == "ok"
    assert q.stdout(trace) == f"{plain['seen']}\n"
    assert "stack" in plain["seen"]  # the collate's ops reached the snippet's mode


def test_an_error_in_a_dataset_is_the_snippets_error_at_its_line() -> None:
    source = """import torch
from torch.utils.data import DataLoader, Dataset
class Broken(Dataset):
    def __len__(self):
        return 4
    def __getitem__(self, i):
        return torch.ones(2) @ torch.ones(3)
for xb in DataLoader(Broken(), batch_size=2):
    pass
"""
    trace = record(source)
    (error,) = q.errors(trace)
    assert error.exc_type == "RuntimeError" and error.line == 7
    assert trace.events[-1].status == "error"
    # after the error, the next run's tape mode records again (the loader's state was unwound)
    again = record("import torch\nx = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\n")
    assert [op.name for op in _ops(again)] == ["ones", "mul", "sum"]


def test_a_loader_in_metrics_only_steps_records_no_op_and_counts_none() -> None:
    # past the first steps in full, batches are neither recorded nor counted, like the model's ops
    trace = record(LOOP)
    batches = [op for op in _ops(trace) if op.name == "DataLoader"]
    steps = q.optimizer_steps(trace)
    assert len(steps) == 8 and 1 <= len(batches) < 8
