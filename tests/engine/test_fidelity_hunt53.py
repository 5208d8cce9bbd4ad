"""Fidelity hunt 53: PyTorch features no earlier hunt ran (torch.library custom ops, torch.fx,
torch.export, torch.compile's own callers, higher-order ops such as ``torch.cond``, forward-mode
AD, multi-grad and post-accumulate hooks, saved-tensor hooks, custom Functions with vmap rules
or unmaterialized gradients, DataLoader workers, flex attention), each recorded as it runs
without gradwalk: the same prints, errors and leaf gradients, bitwise.

The hunt found one bug: ``torch.cond`` calls ``torch.compile`` itself, and gradwalk's eager
stand-in handed it the snippet's branches unchanged, so a branch that returns one tensor made
the backward fail inside PyTorch (NOTE [PyTorch's own compiles] in engine/eager.py). The
call is now one op of the tape, ``torch.cond``, whose node the backward walk runs.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from engine import queries as q
from engine import record
from engine.eager import NOTICE
from tests.engine.snippets import assert_as_plain

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

# correct snippets that recorded as without gradwalk before this hunt too (a regression guard)
_PASSING: dict[str, tuple[str, tuple[str, ...]]] = {
    "library_custom_op": (
        H
        + """@torch.library.custom_op("gw53::mysin", mutates_args=())
def mysin(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x)
@mysin.register_fake
def _(x):
    return torch.empty_like(x)
def setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
def backward(ctx, grad):
    x, = ctx.saved_tensors
    return grad * x.cos()
mysin.register_autograd(backward, setup_context=setup_context)
x = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
y = mysin(x).sum()
y.backward()
print(x.grad)
""",
        ("x",),
    ),
    "fx_symbolic_trace": (
        H
        + """import torch.fx
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 2)
    def forward(self, x):
        return torch.relu(self.l(x)).sum()
torch.manual_seed(0)
m = M()
gm = torch.fx.symbolic_trace(m)
print(gm.code.strip().splitlines()[0])
x = torch.randn(4, 3, requires_grad=True)
gm(x).backward()
print(x.grad.shape)
""",
        ("x",),
    ),
    "post_accumulate_grad_hook_optimizer_in_backward": (
        H
        + """torch.manual_seed(0)
model = nn.Linear(4, 1)
opts = {p: torch.optim.SGD([p], lr=0.1) for p in model.parameters()}
def step(p):
    opts[p].step()
    opts[p].zero_grad()
for p in model.parameters():
    p.register_post_accumulate_grad_hook(step)
x = torch.randn(8, 4)
for _ in range(3):
    model(x).pow(2).mean().backward()
print(model.weight.grad, model.bias)
""",
        (),
    ),
    "multi_grad_hook": (
        H
        + """a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0], requires_grad=True)
seen = []
h = torch.autograd.graph.register_multi_grad_hook((a, b), lambda grads: seen.append([g is not None for g in grads]))
((a * 2).sum() + (b ** 2).sum()).backward()
print(seen)
h.remove()
""",
        ("a", "b"),
    ),
    "node_prehook_changes_grad": (
        H
        + """x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
z = y.sum()
y.grad_fn.register_prehook(lambda gO: (gO[0] * 10,))
z.backward()
print(x.grad)
""",
        ("x",),
    ),
    "is_grads_batched": (
        H
        + """x = torch.randn(3, requires_grad=True)
y = x ** 2
eye = torch.eye(3)
jac, = torch.autograd.grad(y, x, eye, is_grads_batched=True)
print(torch.allclose(jac, torch.diag(2 * x)))
""",
        (),
    ),
    "backward_inputs_subset": (
        H
        + """a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
(a * b).backward(inputs=[a])
print(a.grad, b.grad)
""",
        ("a",),
    ),
    "allow_mutation_on_saved": (
        H
        + """with torch.autograd.graph.allow_mutation_on_saved_tensors():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    z = y * y
    y.mul_(2)
    z.sum().backward()
print(x.grad)
""",
        ("x",),
    ),
    "forward_ad_dual": (
        H
        + """import torch.autograd.forward_ad as fwAD
x = torch.tensor([1.0, 2.0])
v = torch.tensor([1.0, 0.0])
with fwAD.dual_level():
    d = fwAD.make_dual(x, v)
    out = torch.sin(d) * d
    print(fwAD.unpack_dual(out).tangent)
""",
        (),
    ),
    "func_jvp_vjp": (
        H
        + """from torch.func import jvp, vjp, jacfwd, hessian
f = lambda x: (x.sin() * x).sum()
x = torch.tensor([0.3, 0.7])
print(jvp(f, (x,), (torch.ones(2),))[1])
out, fn = vjp(lambda x: x.exp(), x)
print(fn(torch.ones(2))[0])
print(hessian(f)(x).shape, jacfwd(torch.sin)(x).diagonal())
""",
        (),
    ),
    "set_materialize_grads": (
        H
        + """class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone(), x.clone()
    @staticmethod
    def backward(ctx, g1, g2):
        out = torch.zeros(2) if g1 is None else g1.clone()
        if g2 is not None:
            out = out + g2
        return out
x = torch.tensor([1.0, 2.0], requires_grad=True)
a, b = Two.apply(x)
(a * 3).sum().backward()
print(x.grad)
""",
        ("x",),
    ),
    "once_differentiable_non_diff_output": (
        H
        + """from torch.autograd.function import once_differentiable
class ArgmaxAndMax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        v, i = x.max(0)
        ctx.mark_non_differentiable(i)
        ctx.save_for_backward(i)
        ctx.n = x.shape[0]
        return v, i
    @staticmethod
    @once_differentiable
    def backward(ctx, gv, gi):
        i, = ctx.saved_tensors
        g = torch.zeros(ctx.n)
        g[i] = gv
        return g
x = torch.tensor([1.0, 5.0, 3.0], requires_grad=True)
v, i = ArgmaxAndMax.apply(x)
(v * 2).backward()
print(x.grad, i)
""",
        ("x",),
    ),
    "function_with_vmap_rule": (
        H
        + """class Sq(torch.autograd.Function):
    generate_vmap_rule = True
    @staticmethod
    def forward(x):
        return x ** 2
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * x * g
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
Sq.apply(x).sum().backward()
print(x.grad)
print(torch.vmap(Sq.apply)(torch.arange(3.0)))
print(torch.func.grad(lambda t: Sq.apply(t).sum())(torch.tensor([1.0, 4.0])))
""",
        ("x",),
    ),
    "enable_grad_inside_no_grad": (
        H
        + """x = torch.tensor(2.0, requires_grad=True)
with torch.no_grad():
    a = x * 2
    with torch.enable_grad():
        b = x * 3
print(a.requires_grad, b.requires_grad)
b.backward()
print(x.grad)
""",
        ("x",),
    ),
    "set_grad_enabled_false_globally": (
        H
        + """torch.set_grad_enabled(False)
x = torch.tensor(2.0, requires_grad=True)
y = x * 2
print(y.requires_grad)
torch.set_grad_enabled(True)
z = x * 5
z.backward()
print(x.grad)
""",
        ("x",),
    ),
    "no_grad_decorator_and_inference_mode_decorator": (
        H
        + """@torch.no_grad()
def ev(m, x):
    return m(x)
@torch.inference_mode()
def ev2(m, x):
    return m(x)
torch.manual_seed(0)
m = nn.Linear(2, 1)
x = torch.randn(3, 2)
print(ev(m, x).requires_grad, ev2(m, x).is_inference())
m(x).sum().backward()
print(m.weight.grad)
""",
        (),
    ),
    "dataloader_workers": (
        H
        + """from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
ds = TensorDataset(torch.randn(16, 3), torch.randn(16, 1))
dl = DataLoader(ds, batch_size=4, num_workers=2)
m = nn.Linear(3, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for xb, yb in dl:
    opt.zero_grad()
    F.mse_loss(m(xb), yb).backward()
    opt.step()
print(m.weight.shape)
""",
        (),
    ),
    "generator_pipeline": (
        H
        + """def batches():
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        yield torch.randn(4, 2, generator=g)
w = torch.zeros(2, requires_grad=True)
for b in batches():
    (b @ w - 1).pow(2).mean().backward()
print(w.grad)
""",
        ("w",),
    ),
    "increment_version_and_saved_hooks": (
        H
        + """packed = []
def pack(t):
    packed.append(t.shape)
    return t
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
y.backward()
print(packed, x.grad)
""",
        ("x",),
    ),
    "spectral_and_weight_norm_parametrizations": (
        H
        + """from torch.nn.utils.parametrizations import weight_norm, spectral_norm
torch.manual_seed(0)
a = weight_norm(nn.Linear(3, 2))
b = spectral_norm(nn.Linear(2, 2))
x = torch.randn(4, 3)
b(a(x)).sum().backward()
print(a.parametrizations.weight.original0.grad.shape)
""",
        (),
    ),
    "torch_compile_eager_backend": (
        H
        + """torch.manual_seed(0)
m = nn.Linear(3, 1)
cm = torch.compile(m, backend="eager")
x = torch.randn(4, 3)
cm(x).sum().backward()
print(m.weight.grad)
""",
        (),
    ),
    "sdpa_with_mask": (
        H
        + """torch.manual_seed(0)
q = torch.randn(2, 4, 5, 8, requires_grad=True)
k = torch.randn(2, 4, 5, 8)
v = torch.randn(2, 4, 5, 8)
out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
out.sum().backward()
print(q.grad.shape)
""",
        (),
    ),
    "tensor_subclass_parameter_buffer_persistence": (
        H
        + """class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("s", torch.tensor(2.0), persistent=False)
        self.w = nn.Parameter(torch.tensor([1.0, -1.0]))
    def forward(self, x):
        return (self.w * x * self.s).sum()
m = Scale()
m(torch.tensor([3.0, 4.0])).backward()
print(m.w.grad, list(m.state_dict()))
""",
        (),
    ),
    "export_then_run": (
        H
        + """class M(nn.Module):
    def forward(self, x):
        return (x * 2).relu()
ep = torch.export.export(M(), (torch.randn(3),))
print(ep.module()(torch.tensor([-1.0, 2.0, 3.0])))
""",
        (),
    ),
    "while_loop": (
        H
        + """from torch._higher_order_ops.while_loop import while_loop
def c(i, x): return i < 5
def b(i, x): return i + 1, x * 2
i, x = while_loop(c, b, (torch.tensor(0), torch.tensor([1.0, 2.0])))
print(i, x)
""",
        (),
    ),
    "scan": (
        H
        + """from torch._higher_order_ops.scan import scan
def step(carry, x):
    nc = carry * 0.5 + x
    return nc, nc.clone()
init = torch.zeros(2, requires_grad=True)
xs = torch.randn(4, 2, requires_grad=True)
carry, ys = scan(step, init, xs)
ys.sum().backward()
print(carry, xs.grad)
""",
        ("xs",),
    ),
    "associative_scan": (
        H
        + """from torch._higher_order_ops.associative_scan import associative_scan
x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
y = associative_scan(lambda a, b: a + b, x, dim=0, combine_mode="generic")
y.sum().backward()
print(y, x.grad)
""",
        ("x",),
    ),
    "flex_attention": (
        H
        + """from torch.nn.attention.flex_attention import flex_attention
torch.manual_seed(0)
q = torch.randn(1, 2, 8, 4, requires_grad=True)
k = torch.randn(1, 2, 8, 4)
v = torch.randn(1, 2, 8, 4)
def causal(score, b, h, qi, kv): return torch.where(qi >= kv, score, -float("inf"))
out = flex_attention(q, k, v, score_mod=causal)
out.sum().backward()
print(q.grad.shape)
""",
        (),
    ),
}

# a cond whose branch returns one tensor (the example of engine/eager.py's NOTE)
COND = """import torch
def t(x): return x.sin()
def f(x): return x.cos()
x = torch.tensor([0.5, 1.5], requires_grad=True)
y = torch.cond(x.sum() > 1, t, f, (x,))
y.sum().backward()
print(x.grad)
"""


# a module whose forward is a cond, trained by the snippets below (its model is m)
GATE = (
    "class Gate(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.a = nn.Linear(2, 2)\n"
    "        self.b = nn.Linear(2, 2)\n"
    "    def forward(self, x):\n"
    "        return torch.cond(x.mean() > 0, lambda t: self.a(t), lambda t: self.b(t).relu(), (x,))\n"
    "torch.manual_seed(0)\n"
    "m = Gate()\n"
)

# torch.cond, which stopped the run or failed its backward under gradwalk before this hunt
_CONDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cond_higher_order_op": (
        H + COND.removeprefix("import torch\n"),
        ("x",),
    ),
    "cond_in_module_training": (
        H
        + GATE
        + """opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    m(torch.randn(4, 2)).pow(2).mean().backward()
    opt.step()
print(m.a.weight.grad is not None)
""",
        (),
    ),
    "cond_metrics_only_steps": (
        H
        + GATE
        + """opt = torch.optim.Adam(m.parameters(), lr=0.1)
for _ in range(12):
    opt.zero_grad()
    loss = m(torch.randn(4, 2)).pow(2).mean()
    loss.backward()
    opt.step()
print(round(loss.item(), 6))
""",
        (),
    ),
    "cond_python_bool_pred": (
        H
        + """x = torch.tensor([1.0, 2.0], requires_grad=True)
y = torch.cond(True, lambda t: t * 2, lambda t: t * 3, (x,))
y.sum().backward()
print(x.grad)
""",
        ("x",),
    ),
    "cond_no_grad": (
        H
        + """x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    y = torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))
print(y.requires_grad, y)
""",
        (),
    ),
    "compiled_function_calling_cond": (
        H
        + """@torch.compile(backend="eager")
def f(x):
    return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))
x = torch.tensor([0.5, 1.0], requires_grad=True)
f(x).sum().backward()
print(x.grad)
""",
        ("x",),
    ),
    "export_model_with_cond": (
        H
        + """class M(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))
ep = torch.export.export(M(), (torch.randn(3),))
print(ep.module()(torch.tensor([1.0, 2.0, 3.0])))
""",
        (),
    ),
    "cond_two_outputs": (
        H
        + """def t(x, y): return x + y, x * y
def f(x, y): return x - y, x / y
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0], requires_grad=True)
s, p = torch.cond(a.sum() > b.sum(), t, f, (a, b))
(s.sum() + p.sum()).backward()
print(s, p, a.grad, b.grad)
""",
        ("a", "b"),
    ),
}


@pytest.mark.parametrize("name", sorted(_PASSING))
def test_pytorch_features_record_as_without_gradwalk(name: str) -> None:
    source, leaves = _PASSING[name]
    assert_as_plain(source, leaves)


@pytest.mark.parametrize("name", sorted(_CONDS))
def test_torch_cond_records_as_without_gradwalk(name: str) -> None:
    source, leaves = _CONDS[name]
    assert_as_plain(source, leaves)


def _op(trace: Any, api: str) -> Any:
    (op,) = [e for e in q.events_of(trace, "op") if e.api == api]
    return op


def test_a_cond_is_one_op_of_the_tape_whose_node_the_walk_runs_with_pytorchs_gradient() -> None:
    trace = record(COND)
    assert trace.events[-1].status == "ok", trace.events[-1].message
    cond = _op(trace, "torch.cond")
    assert (cond.name, cond.line) == ("cond", 5)
    gt = _op(trace, "Tensor.gt")
    x = next(e for e in q.events_of(trace, "tensor") if e.op is not None and e.op == 0)
    assert cond.inputs == [gt.outputs[0], x.id]  # the predicate, then the operands
    # the branches' own ops (sin, cos) ran inside PyTorch's compile: not on the tape
    assert not [e for e in q.events_of(trace, "op") if e.name in ("sin", "cos")]
    (node,) = [e for e in q.events_of(trace, "node") if e.name == "CondAutogradOpBackward"]
    assert node.op == cond.index and node.id in cond.nodes
    assert node.id in [e.node for e in q.events_of(trace, "node_executed")]
    final = {e.name: e.grad for e in q.events_of(trace, "tensor_final")}["x"]
    assert final.flat == torch.tensor([0.5, 1.5]).cos().tolist()  # the sin branch's gradient
    # gradwalk did not tell the snippet it skipped a torch.compile the snippet never called
    assert NOTICE.strip() not in q.stdout(trace) + "".join(
        e.text for e in q.events_of(trace, "output") if e.stream == "stderr"
    )


def test_nested_conds_take_the_branches_pytorch_takes() -> None:
    # (a script's answer: run without gradwalk, TorchDynamo's guards need a real __main__)
    source = H + (
        "def inner_t(x): return x * 2\n"
        "def inner_f(x): return x * 3\n"
        "def outer_t(x): return torch.cond(x.sum() > 10, inner_t, inner_f, (x,))\n"
        "def outer_f(x): return -x\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = torch.cond(x.sum() > 0, outer_t, outer_f, (x,))\n"
        "z = torch.cond(x.sum() < 0, outer_t, outer_f, (x,))\n"
        "(y.sum() + z.sum()).backward()\n"
        "print(y.tolist(), z.tolist(), x.grad.tolist())\n"
    )
    trace = record(source)
    assert trace.events[-1].status == "ok", trace.events[-1].message
    assert q.stdout(trace) == "[3.0, 6.0] [-1.0, -2.0] [2.0, 2.0]\n"
    assert [e.line for e in q.events_of(trace, "op") if e.api == "torch.cond"] == [9, 10]


def test_a_custom_function_a_dataset_applies_is_part_of_the_batch_not_an_op_of_its_own() -> None:
    # NOTE [Library calls as one op]: the ops that make a batch are the DataLoader's; a
    # custom Function's call there was still an op of the tape, on the Dataset's line
    source = (
        "import torch\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        "class Double(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return x * 2\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g * 2\n"
        "class Pairs(Dataset):\n"
        "    def __len__(self): return 4\n"
        "    def __getitem__(self, i): return Double.apply(torch.tensor([float(i)]))\n"
        "for batch in DataLoader(Pairs(), batch_size=2):\n"
        "    print(batch.view(-1).tolist())\n"
    )
    trace = assert_as_plain(source)
    assert [(e.api, e.line) for e in q.events_of(trace, "op")] == [
        ("DataLoader.__next__", 13),
        ("Tensor.view", 14),
    ] * 2


@pytest.mark.parametrize(
    ("name", "api"),
    [("scan", "ops.higher_order.scan"), ("while_loop", "ops.higher_order.while_loop")],
)
def test_pytorchs_other_compiles_run_eagerly_their_op_on_the_tape_and_nothing_said(
    name: str, api: str
) -> None:
    # NOTE [PyTorch's own compiles]: only torch.cond's compile is the real one; scan's and
    # while_loop's run eagerly, as before, and the stderr line about a skipped torch.compile
    # is for the snippet's own calls (this snippet made none)
    trace = assert_as_plain(*_PASSING[name])
    assert [e.api for e in q.events_of(trace, "op") if e.api.startswith("ops.higher_order")] == [api]
    stderr = "".join(e.text for e in q.events_of(trace, "output") if e.stream == "stderr")
    assert NOTICE.strip() not in stderr


def test_a_conds_branches_read_by_their_names_on_its_tape_row() -> None:
    # a Python function as an argument reads as its name (op_arguments.argument_text), a
    # lambda as `lambda`: the row reads `cond sum(x) > 1, t, f, x → y`
    cond = _op(record(COND), "torch.cond")
    assert [(a.position, a.text) for a in cond.arguments] == [(1, "t"), (2, "f")]
    assert cond.input_positions == [0, 3]
    lambdas = _op(record(H + GATE + "m(torch.randn(4, 2))\n"), "torch.cond")
    assert [a.text for a in lambdas.arguments] == ["lambda", "lambda"]
