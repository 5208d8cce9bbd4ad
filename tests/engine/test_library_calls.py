"""Library calls recorded as one op each (NOTE [Library calls as one op] in
engine/library_calls.py): a DataLoader's batch, gradient clipping, a module's conversion. The ops that make them are
off the tape, the snippet runs as without gradwalk, and its training numbers are PyTorch's."""

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


CLIPPED = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(16, 4), torch.randn(16, 1) * 10
for step in range(3):
    opt.zero_grad()
    nn.functional.mse_loss(model(X), y).backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    print(round(norm.item(), 5))
"""
CLIP_LINE = 9


def test_clipping_is_one_op_whose_gradients_come_out_as_new_versions() -> None:
    trace = record(CLIPPED)
    assert trace.events[-1].status == "ok"
    ops = _ops(trace)
    clips = [op for op in ops if op.line == CLIP_LINE]
    assert [op.name for op in clips] == ["clip_grad_norm"] * 3  # not 12 ops of plumbing a step
    assert not {"foreach_norm", "foreach_mul", "stack", "to"} & {op.name for op in ops}
    names = q.tensor_names(trace)
    params = ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]
    for op in clips:
        assert op.api.endswith("clip_grad_norm_") and op.grad_mode == "no_grad" and op.inplace
        assert [names.get(t) for t in op.inputs] == [f"{p}.grad" for p in params]
        clipped = op.outputs[1:]
        # the gradients it scaled in place: new versions, under their names
        assert [names.get(t) for t in clipped] == [f"{p}.grad" for p in params]
        assert not set(clipped) & set(op.inputs)
        assert [(c.position, c.value) for c in op.constants] == [(1, 0.5)]
    # the norm it returned: a tensor of the tape (the module level binds the last one's name)
    shapes = {e.id: e.shape for e in q.events_of(trace, "tensor")}
    assert all(shapes[op.outputs[0]] == [] for op in clips)
    assert names.get(clips[-1].outputs[0]) == "norm"
    # the norms it returned and the steps it clipped, as without gradwalk
    printed = io.StringIO()
    torch.manual_seed(0)
    with contextlib.redirect_stdout(printed):
        plain: dict[str, Any] = {"__name__": "__main__"}
        exec(compile(CLIPPED, "plain.py", "exec"), plain)
    assert q.stdout(trace) == printed.getvalue()
    got = q.final_values(trace)
    assert got["model.0.weight"] == plain["model"][0].weight.reshape(-1).tolist()
    # the value the trace holds for a clipped gradient is the clipped one
    values = {e.id: e.value for e in q.events_of(trace, "tensor")}
    last = clips[-1].outputs[1]
    assert values[last].flat == plain["model"][0].weight.grad.reshape(-1).tolist()


def test_clipping_runs_as_without_gradwalk_for_a_tensor_an_empty_generator_and_by_value() -> None:
    source = """import torch, warnings
w = torch.tensor([3.0, -4.0], requires_grad=True)
(w * w).sum().backward()
total = torch.nn.utils.clip_grad_norm_(w, max_norm=1.0)
torch.nn.utils.clip_grad_value_([w], 0.5)
torch.nn.utils.clip_grad_norm_((p for p in []), 1.0)
print(round(total.item(), 4), w.grad.tolist())
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    assert q.stdout(trace) == "10.0 [0.5, -0.5]\n"  # |2w| = 10, scaled to norm 1, then to +-0.5
    assert "empty generator" in "".join(e.text for e in q.events_of(trace, "output") if e.stream == "stderr")
    names = q.tensor_names(trace)
    by_line = {op.line: op for op in _ops(trace)}
    assert [k.name for k in by_line[4].keywords] == ["max_norm"]
    assert [names.get(t) for t in by_line[4].outputs] == ["total", "w.grad"]
    # clip_grad_value_ returns None: its outputs are the gradients it clamped
    assert by_line[5].name == "clip_grad_value" and [names.get(t) for t in by_line[5].outputs] == ["w.grad"]
    # an empty generator: no gradient in, the zero norm PyTorch returns out
    assert by_line[6].inputs == [] and len(by_line[6].outputs) == 1
    # the library is as it was once the run is over
    assert torch.nn.utils.clip_grad_norm_ is torch.nn.utils.clip_grad.clip_grad_norm_
    assert torch.nn.utils.clip_grad_norm_.__module__ == "torch.nn.utils.clip_grad"
    assert "gradwalk" not in repr(torch.nn.utils.clip_grad_norm_.__code__)


def _tensor_events(trace: Trace) -> dict[int, Any]:
    return {e.id: e for e in q.events_of(trace, "tensor")}


def test_moving_a_model_to_its_own_device_is_one_op_handing_back_its_tensors() -> None:
    source = """import torch, torch.nn as nn
model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
model = model.to(device)
loss = model(torch.randn(8, 3, device=device)).pow(2).mean()
loss.backward()
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    ops = _ops(trace)
    moves = [op for op in ops if op.line == 3]
    assert [(op.name, op.api, op.grad_mode) for op in moves] == [("to", "Module.to", "no_grad")]
    (move,) = moves
    names = q.tensor_names(trace)
    assert [names.get(t) for t in move.inputs] == [
        *(f"model.{i}.{p}" for i in (0, 1, 3) for p in ("weight", "bias")),
        "model.1.running_mean",
        "model.1.running_var",
        "model.1.num_batches_tracked",
    ]
    # on the device they are on already: handed back, the same tensors with the same ids
    assert move.outputs == move.inputs and not move.inplace
    assert "to" not in {op.name for op in ops if op.api.startswith("Tensor.")}
    first_linear = next(op for op in ops if op.name == "linear")
    assert first_linear.inputs[1:] == move.inputs[:2]
    assert trace.events[-1].counts.ops == len(ops)


MIXED = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
first = model(torch.randn(4, 3)).sum()
model.double()
loss = model(torch.randn(4, 3, dtype=torch.float64)).sum()
loss.backward()
"""


def test_a_conversion_that_changes_the_parameters_gives_them_new_versions_with_their_new_dtype() -> None:
    trace = record(MIXED)
    assert trace.events[-1].status == "ok"
    ops = _ops(trace)
    (convert,) = [op for op in ops if op.line == 5]
    assert (convert.name, convert.api, convert.grad_mode, convert.inplace) == (
        "double",
        "Module.double",
        "no_grad",
        True,
    )
    names = q.tensor_names(trace)
    tensors = _tensor_events(trace)
    floats = [
        "model.0.weight",
        "model.0.bias",
        "model.1.weight",
        "model.1.bias",
        "model.1.running_mean",
        "model.1.running_var",
    ]
    assert [names.get(t) for t in convert.inputs] == [*floats, "model.1.num_batches_tracked"]
    assert [names.get(t) for t in convert.outputs] == [*floats, "model.1.num_batches_tracked"]
    # the float tensors are new versions, in float64 under their names; the int64 counter,
    # which double() leaves as it is, keeps its id
    assert [tensors[t].dtype for t in convert.inputs[:6]] == ["float32"] * 6
    assert [tensors[t].dtype for t in convert.outputs[:6]] == ["float64"] * 6
    assert not set(convert.outputs[:6]) & set(convert.inputs)
    # versions of what went in: the parameters changed under the same objects, and the
    # buffers replaced by new ones alike
    assert [tensors[t].version_of for t in convert.outputs[:6]] == convert.inputs[:6]
    assert convert.outputs[6] == convert.inputs[6]
    # the forward after the conversion reads the converted parameters, the one before the old
    linears = [op for op in ops if op.name == "linear"]
    assert linears[0].inputs[1:] == convert.inputs[:2]
    assert linears[1].inputs[1:] == convert.outputs[:2]
    assert {op.api for op in ops} >= {"Module.double"} and "Tensor.double" not in {op.api for op in ops}
    want = plain_grads(MIXED, ["model[0].weight", "model[1].bias"])
    got = q.final_grads(trace)
    assert got["model.0.weight"] == want["model[0].weight"] and got["model.1.bias"] == want["model[1].bias"]


def test_a_model_converted_before_its_first_call_goes_in_as_it_was_under_its_names() -> None:
    """Its tensors are first met by the conversion, which swaps ``param.data`` under the same
    objects: met after it, they went in already converted and nameless (``model.to('cuda')``
    showed cuda tensors going in, on the GPU machine)."""
    source = """import torch, torch.nn as nn
net = nn.Linear(4, 2)
net.double()
loss = net(torch.randn(3, 4, dtype=torch.float64)).sum()
loss.backward()
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    (convert,) = [op for op in _ops(trace) if op.line == 3]
    tensors = _tensor_events(trace)
    assert [(tensors[t].name, tensors[t].dtype) for t in convert.inputs] == [
        ("net.weight", "float32"),
        ("net.bias", "float32"),
    ]
    assert [(tensors[t].name, tensors[t].dtype) for t in convert.outputs] == [
        ("net.weight", "float64"),
        ("net.bias", "float64"),
    ]
    assert [tensors[t].version_of for t in convert.outputs] == convert.inputs
    linear = next(op for op in _ops(trace) if op.name == "linear")
    assert linear.inputs[1:] == convert.outputs
    assert not [op for op in _ops(trace) if op.line == 3 and op is not convert]


def test_to_empty_of_a_model_built_on_the_meta_device_is_one_op() -> None:
    source = """import torch, torch.nn as nn
with torch.device('meta'):
    net = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
net.to_empty(device='cpu')
for p in net.parameters():
    nn.init.zeros_(p)
loss = net(torch.ones(4, 3)).sum()
loss.backward()
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    (made,) = [op for op in _ops(trace) if op.line == 4]  # not one empty_like per tensor
    assert (made.name, made.api, made.grad_mode) == ("to_empty", "Module.to_empty", "no_grad")
    tensors = _tensor_events(trace)
    assert [tensors[t].device for t in made.inputs] == ["meta"] * 7
    assert [tensors[t].device for t in made.outputs] == ["cpu"] * 7
    assert [tensors[t].version_of for t in made.outputs] == made.inputs
    assert [tensors[t].name for t in made.outputs][:2] == ["net.0.weight", "net.0.bias"]
    assert q.final_grads(trace)["net.1.bias"] == [4.0, 4.0]


def test_a_modules_own_to_is_the_ops_it_calls_and_the_library_is_restored() -> None:
    source = """import torch, torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
    def to(self, *args, **kwargs):
        print("moving")
        return super().to(*args, **kwargs).float()
net = Net().to(torch.float64)
print(net.fc.weight.dtype)
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    assert q.stdout(trace) == "moving\ntorch.float32\n"
    # the override is the snippet's code: the two conversions it calls are one op each
    move, back = _ops(trace)
    assert [(op.name, op.line, op.top_line) for op in (move, back)] == [("to", 8, 9), ("float", 8, 9)]
    tensors = _tensor_events(trace)
    assert [tensors[t].dtype for t in move.outputs] == ["float64", "float64"]
    assert back.inputs == move.outputs
    assert [tensors[t].dtype for t in back.outputs] == ["float32", "float32"]  # as it left them
    assert [q.tensor_names(trace).get(t) for t in back.outputs] == ["net.fc.weight", "net.fc.bias"]
    assert torch.nn.Module.to.__module__ == "torch.nn.modules.module"
    assert "gradwalk" not in repr(torch.nn.Module.to.__code__)


def test_a_recorder_entered_again_records_library_calls_again_and_leaves_them_as_they_were() -> None:
    # the wrappers are made once and put back on each entry (gradwalk.watch_call enters a
    # recorder per call): each entry records the calls, and each exit restores PyTorch's own
    from engine.recorder import Recorder
    from engine.source import SNIPPET_FILENAME

    originals = (torch.nn.utils.clip_grad_norm_, torch.nn.Module.double)
    events: list[dict[str, Any]] = []
    rec = Recorder(events.append, Limits())
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile("import torch\nnet = torch.nn.Linear(2, 1)", SNIPPET_FILENAME, "exec"), scope)
    step = compile(
        "net.double()\nnet(torch.ones(1, 2, dtype=torch.float64)).sum().backward()\n"
        "torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)\nnet.float()",
        SNIPPET_FILENAME,
        "exec",
    )
    for entry in range(2):
        with rec:
            assert torch.nn.utils.clip_grad_norm_ is torch.nn.utils.clip_grad.clip_grad_norm_
            exec(step, scope)
        assert (torch.nn.utils.clip_grad_norm_, torch.nn.Module.double) == originals
        names = [e["name"] for e in events if e["type"] == "op"]
        assert names.count("clip_grad_norm") == entry + 1
        assert names.count("double") == entry + 1
