"""Snippets print and raise as without gradwalk: autograd features beyond loss.backward(),
ordinary PyTorch a practitioner records, and what fuzzing the engine found (views changed
under no_grad, nested tensors, the streams a script writes to)."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings

import pytest
import torch

from engine import queries as q
from engine import record
from engine.events import Trace

# Autograd features beyond loss.backward(): each snippet must print exactly what it prints
# without gradwalk, and record without an error (the suite runs with GRADWALK_STRICT=1, so a
# failure of gradwalk's own observation fails the test too).
AUTOGRAD_FEATURES = {
    "torch.func transforms": """
import torch
from torch.func import grad, jacrev, vmap
f = lambda x: (x ** 3).sum()
x = torch.tensor([1.0, 2.0, 3.0])
print(grad(f)(x).tolist(), jacrev(lambda x: x ** 2)(x).diagonal().tolist())
print(vmap(grad(lambda v: (v ** 2).sum()))(torch.ones(2, 3)).tolist())
""",
    "custom autograd.Function": """
import torch
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g
x = torch.tensor([1.0, -2.0], requires_grad=True)
Square.apply(x).sum().backward()
print(x.grad.tolist())
""",
    "activation checkpointing": """
import torch
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0)
lin = torch.nn.Linear(4, 4)
x = torch.randn(2, 4, requires_grad=True)
checkpoint(lambda t: lin(t).relu(), x, use_reentrant=False).sum().backward()
print(x.grad.tolist())
""",
    # gradwalk raises this error itself (PyTorch skips its check under saved-tensor hooks):
    # its message is PyTorch's, word for word, in and out of anomaly mode
    "a saved tensor changed in place, caught": """
import torch
x = torch.ones(2, requires_grad=True)
y = x.sigmoid()
y.mul_(2)
try:
    y.sum().backward()
except RuntimeError as e:
    print(e)
y = x * 2
z = y.exp()
y.add_(1)
try:
    z.sum().backward()
except RuntimeError as e:
    print(e)
with torch.autograd.set_detect_anomaly(True):
    y = x.exp()
    y.add_(1)
    try:
        y.sum().backward()
    except RuntimeError as e:
        print(e)
""",
    # the tracer saw gradwalk's own reads of each op: "Graphs differed across invocations"
    "torch.jit.trace of a module": """
import warnings
import torch, torch.nn as nn
torch.manual_seed(0)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 2)
    def forward(self, t):
        return self.l(t) * 2
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # deprecated in PyTorch 2.13, still used
    traced = torch.jit.trace(M(), torch.ones(1, 2))
print(traced(torch.ones(1, 2)).tolist())
""",
    # the subclass saw gradwalk's reads of each op too (versions, numel, tolist)
    "a tensor subclass with its own __torch_function__": """
import torch
class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        print(getattr(func, "__name__", func))
        return super().__torch_function__(func, types, args, kwargs or {})
x = torch.ones(2).as_subclass(Logged)
y = x + 1
print(y.tolist())
""",
    # PyTorch refuses grad_fn and is_leaf of such a view: gradwalk read both of each op's output
    "views changed in place under no_grad": """
import torch
w = torch.ones(4, 3, requires_grad=True)
with torch.no_grad():
    v = w[1:3]
    v.mul_(2)
    w[0, 0] = 5.0
    w.view(-1)[5] += 1
y = (w * w).sum()
y.backward()
print(w.tolist(), w.grad.tolist(), w._version)
""",
    "a sparse input that requires grad": """
import torch
s = torch.eye(2).to_sparse().requires_grad_()
out = torch.sparse.mm(s, torch.ones(2, 2))
out.sum().backward()
print(out.tolist(), s.grad.to_dense().tolist())
""",
    "higher-order gradients": """
import torch
x = torch.tensor(2.0, requires_grad=True)
(g,) = torch.autograd.grad(x ** 3, x, create_graph=True)
(h,) = torch.autograd.grad(g, x)
print(g.item(), h.item())
""",
    "forward-mode AD": """
import torch
import torch.autograd.forward_ad as fwAD
p = torch.tensor([1.0, 2.0])
with fwAD.dual_level():
    out = (fwAD.make_dual(p, torch.ones(2)) ** 2).sum()
    print(fwAD.unpack_dual(out).tangent.item())
""",
}


def recorded_as_plain(source: str) -> Trace:
    """Record ``source``; check it raised nothing and printed what it prints without gradwalk."""
    trace = record(source)
    assert not q.errors(trace), q.errors(trace)
    plain = io.StringIO()
    with contextlib.redirect_stdout(plain):
        exec(compile(source, "plain.py", "exec"), {"__name__": "__main__"})
    assert q.stdout(trace) == plain.getvalue()
    return trace


@pytest.mark.parametrize("feature", sorted(AUTOGRAD_FEATURES))
def test_autograd_features_run_as_without_gradwalk(feature: str) -> None:
    recorded_as_plain(AUTOGRAD_FEATURES[feature])


def test_a_custom_function_call_is_an_op_whose_node_the_backward_walk_runs() -> None:
    # Square.apply is not a function the tape mode sees: its node was found only through a
    # later op, so a custom Function whose output was the loss had no node, and the walk of
    # its backward() ran none
    original = torch.autograd.Function.__dict__["apply"]
    source = AUTOGRAD_FEATURES["custom autograd.Function"].replace(
        "Square.apply(x).sum().backward()", "y = Square.apply(x)\ny.backward(torch.ones(2))"
    )
    trace = recorded_as_plain(source)
    (op,) = [e for e in q.events_of(trace, "op") if e.api == "Square.apply"]
    # and gradwalk's own work does not show as the snippet's: the detach its memory
    # accounting makes of what save_for_backward saves, outside any op, was on the tape
    assert "detach" not in [e.name for e in q.events_of(trace, "op")]
    assert op.name == "Square" and op.grad_mode == "grad" and op.line == 13
    nodes = q.node_names(trace)
    assert sorted(nodes[n] for n in op.nodes) == ["AccumulateGrad", "SquareBackward"]
    # what forward saved with ctx.save_for_backward(x) is the node's, named as backward reads it
    (node,) = [e for e in q.events_of(trace, "node") if e.name == "SquareBackward"]
    assert [(s.name, s.tensor, s.bytes) for s in node.saved] == [("ctx.saved_tensors[0]", op.inputs[0], 8)]
    assert q.backward_order(trace) == ["SquareBackward", "AccumulateGrad"]
    # the output is named and has its grad_fn (the forward's own x * x, recorded first, had not)
    (y,) = [e for e in q.events_of(trace, "tensor") if e.id == op.outputs[0]]
    assert y.requires_grad and not y.is_leaf and q.tensor_names(trace)[y.id] == "y"
    # the gradient the walk shows is PyTorch's own
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    (x * x).backward(torch.ones(2))
    assert [added for _, added, _ in q.accumulations(trace, "x")] == [x.grad.tolist()]
    assert torch.autograd.Function.__dict__["apply"] is original  # unwrapped after the run


def test_a_custom_functions_matrix_output_adds_no_op_of_gradwalks_own() -> None:
    # the record of the call read the output's value (a reshape(-1) of a 3x4 matrix) with the
    # tape mode on: a reshape the snippet never wrote was on the tape, its ViewBackward0
    # dangling from the graph
    source = """
import torch
class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * (a > 0)

torch.manual_seed(0)
a = torch.randn(3, 4, requires_grad=True)
c = Clip.apply(a)
c.sum().backward()
"""
    trace = recorded_as_plain(source)
    assert [e.name for e in q.events_of(trace, "op")] == ["randn", "clamp", "Clip", "sum"]
    assert "ViewBackward0" not in q.node_names(trace).values()


# Ordinary PyTorch a practitioner records: layers with several outputs per node (LSTM, max,
# chunk, svd), an in-place custom Function, autocast, hooks the snippet registers itself,
# parametrizations, a DataLoader and a thread of its own.
ORDINARY_PYTORCH = {
    "recurrent layers": """
import torch, torch.nn as nn
torch.manual_seed(0)
lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True); gru = nn.GRU(4, 2)
out, (h, c) = lstm(torch.randn(2, 5, 3))
o2, h2 = gru(out.transpose(0, 1))
(o2.sum() + h.sum() + c.sum()).backward()
print(lstm.weight_ih_l0.grad.shape, gru.weight_hh_l0.grad.shape)
""",
    "ops with several outputs": """
import torch
torch.manual_seed(0)
x = torch.randn(4, 6, requires_grad=True)
v, i = x.max(dim=1)
t = x.topk(2, dim=0)
a, b, c = x.chunk(3, dim=1)
u = torch.unbind(x, 0)
U, S, Vh = torch.linalg.svd(x[:3, :3])
(v.sum() + t.values.sum() + b.sum() + u[2].sum() + S.sum()).backward()
print(x.grad.shape, i.dtype)
""",
    "in-place custom Function": """
import torch
from torch.autograd.function import once_differentiable
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.mul_(2)
    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return g * 2
a = torch.ones(3, requires_grad=True)
c = Double.apply(a.clone())
c.sum().backward()
print(a.grad.tolist(), c.tolist())
""",
    "autocast and the snippet's own hooks": """
import torch
torch.manual_seed(0)
m = torch.nn.Linear(8, 4)
with torch.autocast("cpu", dtype=torch.bfloat16):
    y = m(torch.randn(2, 8))
y.register_hook(lambda g: g * 2)
y.retain_grad()
h = m.weight.register_post_accumulate_grad_hook(lambda p: print("accumulated", p.grad.dtype))
y.float().sum().backward()
h.remove()
print(y.dtype, y.grad.dtype, m.weight.grad.shape)
""",
    # a lazy layer materializes its parameters with ``self.data = torch.empty(…)`` in its
    # first forward: the tape read the uninitialized parameter's shape and the run failed
    "lazy layers": """
import torch, torch.nn as nn
torch.manual_seed(0)
net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.randn(16, 5), torch.randn(16, 1)
for _ in range(3):
    opt.zero_grad()
    loss = nn.functional.mse_loss(net(x), y)
    loss.backward()
    opt.step()
print(net[0].weight.shape, round(loss.item(), 6), net[2].bias.grad.tolist())
""",
    "parametrizations": """
import torch, torch.nn as nn
torch.manual_seed(0)
m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
m(torch.randn(4, 3)).sum().backward()
print(sorted(n for n, p in m.named_parameters() if p.grad is not None))
""",
    "a DataLoader and a thread": """
import threading
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
ds = TensorDataset(torch.randn(20, 3), torch.randn(20, 1))
model = torch.nn.Linear(3, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for xb, yb in DataLoader(ds, batch_size=5, shuffle=True):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    opt.step()
out = []
def work():
    a = torch.ones(3, requires_grad=True)
    (a * 2).sum().backward()
    out.append(a.grad.tolist())
t = threading.Thread(target=work); t.start(); t.join()
print(round(loss.item(), 5), out)
""",
}


@pytest.mark.parametrize("snippet", sorted(ORDINARY_PYTORCH))
def test_ordinary_pytorch_runs_as_without_gradwalk_and_every_edge_has_its_shape(snippet: str) -> None:
    trace = recorded_as_plain(ORDINARY_PYTORCH[snippet])
    # the shape the graph labels each edge with (the node's grad_shapes, else its tensor's)
    # is the shape of the gradient the engine then sent along it
    nodes = {e.id: e for e in trace.events if e.type == "node"}
    shapes = {e.id: e.shape for e in trace.events if e.type == "tensor"}
    checked = 0
    for ex in q.events_of(trace, "node_executed"):
        for edge, sent in zip(nodes[ex.node].edges, ex.grad_out, strict=True):
            target = nodes.get(edge.node) if edge.node is not None else None
            if target is None or sent is None:
                continue
            labelled = target.grad_shapes[edge.input_nr] if target.grad_shapes else shapes[target.tensor]
            assert labelled == sent.shape, (nodes[ex.node].name, target.name)
            checked += 1
    assert checked > 0


def test_a_view_made_under_no_grad_whose_base_then_changed_does_not_stop_the_recording() -> None:
    # PyTorch refuses to say whether such a view is a leaf; reading it at the run's end made
    # record() itself raise, with no trace (found by fuzzing the engine with snippets)
    trace = record(
        "import torch\nW = torch.ones(2, 2, requires_grad=True)\n(W * 3).sum().backward()\n"
        "with torch.no_grad():\n    row = W[0]\n    W -= 0.1 * W.grad\nprint(W.tolist())\n"
    )
    assert q.events_of(trace, "run_finished")[0].status == "ok" and not q.errors(trace)
    assert (
        q.stdout(trace)
        == "[[0.699999988079071, 0.699999988079071], [0.699999988079071, 0.699999988079071]]\n"
    )
    assert q.final_grads(trace)["W"] == [3.0, 3.0, 3.0, 3.0]  # flat, as a trace holds values


def test_a_nested_tensor_is_recorded_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # it has no one shape and no size: record() raised reading its value at the run's end, and
    # later its saved-tensor description went unrecorded (tests/engine/test_fidelity_hunt47.py)
    from engine import recorder as recorder_module

    monkeypatch.setattr(recorder_module, "STRICT", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype, and PyTorch says so
        trace = record(
            "import torch\nnt = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], requires_grad=True)\n"
            "out = nt * 2\nprint(out.is_nested)\n"
        )
    finished = q.events_of(trace, "run_finished")[0]
    assert finished.status == "ok" and q.stdout(trace).endswith("True\n")
    assert finished.counts.unrecorded == 0


def test_an_argument_that_refuses_iteration_loses_its_op_record_not_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # PyTorch reads a tuple argument by index; gradwalk looked for tensors in it by iterating,
    # and a snippet's tuple subclass whose iteration raises ended the run with its error
    from engine import recorder as recorder_module

    monkeypatch.setattr(recorder_module, "STRICT", False)
    src = (
        "import torch\nclass Pair(tuple):\n    def __iter__(self):\n        raise RuntimeError('no iter')\n"
        "x = torch.ones(1, 1, 4, 4, requires_grad=True)\nw = torch.ones(1, 1, 3, 3, requires_grad=True)\n"
        "y = torch.conv2d(x, w, None, Pair((1, 1)), Pair((1, 1)), Pair((1, 1)), 1)\n"
        "y.sum().backward()\nprint(y.shape, x.grad.sum().item(), w.grad.sum().item())\n"
    )
    trace = record(src)
    finished = q.events_of(trace, "run_finished")[0]
    assert finished.status == "ok" and not q.errors(trace)
    assert q.stdout(trace) == "torch.Size([1, 1, 4, 4]) 100.0 100.0\n"
    assert finished.counts.unrecorded >= 1
    assert q.final_grads(trace)["w"] == [9.0, 12.0, 9.0, 12.0, 16.0, 12.0, 9.0, 12.0, 9.0]


def test_the_snippets_streams_are_as_a_script_writing_to_a_pipe_has_them() -> None:
    # they were bare text streams: no .encoding, .buffer or .reconfigure (found by fuzzing)
    source = """
import sys
print(sys.stdout.encoding, sys.stdout.errors, sys.stderr.errors)
sys.stdout.reconfigure(line_buffering=True)
sys.stdout.buffer.write("h\\u00e9llo bytes\\n".encode())
sys.stdout.flush()
print("a", "b", sep="-", end="")
print(" c")
try:
    sys.stdout.write(b"no")
except TypeError as e:
    print(e)
"""
    plain = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    trace = record(source)
    assert not q.errors(trace)
    assert q.stdout(trace) == plain.stdout
    assert (
        plain.stdout.startswith("utf-8 ")
        and "h\u00e9llo bytes\na-b c\nwrite() argument must be str" in plain.stdout
    )
