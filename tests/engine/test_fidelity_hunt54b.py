"""Fidelity hunt 54, its second set: autograd's graph API (``get_gradient_edge``, multi-grad
hooks, ``allow_mutation_on_saved_tensors``, ``increment_version``, node hooks), gradients of
views (``retain_grad`` on views, integer indexing, ``as_strided``, ``unfold``, scatters,
``index_put_`` with ``accumulate``), ``once_differentiable``, saved-tensor hooks disabled, deep
graphs, and unusual tensors (zero-size, 0-dim, integer and bool operands, non-contiguous,
channels_last, float16 and bfloat16, meta). Each records as it runs without gradwalk: the same
prints and errors, the pitfalls listed and no other, the leaf gradients bitwise. A regression
guard: these found no bug (the hunt's bugs are in test_fidelity_hunt54.py).
"""

from __future__ import annotations

import pytest

from tests.engine.snippets import assert_as_plain

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

# name: (source, leaves whose .grad is compared, pitfalls said)
_SNIPPETS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "allow_mutation_on_saved_ctx": (
        H
        + """import torch.autograd.graph as g
with g.allow_mutation_on_saved_tensors():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.clone()
    out = (b ** 2).sum()
    b.sin_()
    out.backward()
print(a.grad)
""",
        ("a",),
        (),
    ),
    "as_strided_grad": (
        H
        + """x = torch.arange(6.0, requires_grad=True)
y = x.as_strided((3, 2), (1, 1))
(y * torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "bool_int_with_float": (
        H
        + """x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
m = x > 0
i = torch.tensor([1, 2, 3])
y = x * m + x * i + (x + True)
y.sum().backward()
print(y.dtype, x.grad)
z = torch.where(m, x, 0)
z.sum().backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "channels_last_small": (
        H
        + """x = torch.randn(1, 2, 3, 3).to(memory_format=torch.channels_last).requires_grad_()
conv = nn.Conv2d(2, 2, 2).to(memory_format=torch.channels_last)
bn = nn.BatchNorm2d(2)
y = bn(conv(x))
print(y.is_contiguous(memory_format=torch.channels_last))
y.pow(2).sum().backward()
print(x.grad.stride(), conv.weight.grad.stride())
""",
        ("x",),
        (),
    ),
    "deep_graph_6000_ops": (
        H
        + """x = torch.tensor([0.5], requires_grad=True)
y = x
for i in range(6000):
    y = y + 0.0001 * i
y.backward()
print(x.grad, y.grad_fn.name())
""",
        ("x",),
        (),
    ),
    "diagonal_scatter_and_select_scatter": (
        H
        + """a = torch.zeros(3, 3, requires_grad=True)
d = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = torch.diagonal_scatter(a, d * 2, offset=0)
z = torch.select_scatter(y, d[:3], 0, 1)
(z * torch.arange(9.0).reshape(3, 3)).sum().backward()
print(a.grad, d.grad)
""",
        ("a", "d"),
        (),
    ),
    "disable_saved_tensors_hooks": (
        H
        + """x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
    y = (x * x).sum()
    try:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass
    except RuntimeError as e:
        print(str(e))
y.backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "float16_bfloat16_cpu_grads": (
        H
        + """a = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float16, requires_grad=True)
b = torch.tensor([1.5, -2.5, 3.25], dtype=torch.bfloat16, requires_grad=True)
(a.exp() * 3).sum().backward()
(b.tanh() ** 2).sum().backward()
print(a.grad, b.grad)
lin = nn.Linear(3, 2).to(torch.bfloat16)
lin(b.detach().unsqueeze(0)).sum().backward()
print(lin.weight.grad)
""",
        ("a", "b"),
        (),
    ),
    "gradient_edge_grad": (
        H
        + """from torch.autograd.graph import get_gradient_edge
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
h = x * 2
y = (h ** 2).sum()
edge = get_gradient_edge(h)
gh, = torch.autograd.grad(y, edge, retain_graph=True)
print(gh)
gx, = torch.autograd.grad(y, [x])
print(gx)
""",
        (),
        (),
    ),
    "gradient_edge_of_leaf_and_backward_inputs": (
        H
        + """from torch.autograd.graph import get_gradient_edge, GradientEdge
w = torch.randn(3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = (w * b).exp().sum()
e = get_gradient_edge(w)
print(type(e).__name__, e.output_nr)
z.backward(inputs=[e, b])
print(w.grad is not None, b.grad)
""",
        ("w", "b"),
        (),
    ),
    "gradient_edge_split_backward": (
        H
        + """from torch.autograd.graph import get_gradient_edge
x = torch.randn(4, requires_grad=True)
w = torch.randn(4, requires_grad=True)
h = x * w
out = h.sin().sum()
gh = torch.autograd.grad(out, get_gradient_edge(h), retain_graph=True)[0]
gw, = torch.autograd.grad(h, w, grad_outputs=gh, retain_graph=True)
print(torch.allclose(gw, x * h.cos()))
out.backward()
print(torch.equal(w.grad, gw))
""",
        ("x", "w"),
        (),
    ),
    "increment_version_then_backward_error": (
        H
        + """x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()
z = y.sum()
torch.autograd.graph.increment_version(y)
try:
    z.backward()
except RuntimeError as e:
    print("err")
y2 = x.sigmoid()
torch.autograd.graph.increment_version(y2)
y2.sum().backward()
print(x.grad)
""",
        (),
        (),
    ),
    "index_put_accumulate": (
        H
        + """x = torch.zeros(5, requires_grad=True)
v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x.clone()
y.index_put_((torch.tensor([0, 2, 0]),), v, accumulate=True)
print(y)
(y * torch.arange(5.0)).sum().backward()
print(x.grad, v.grad)
""",
        ("x", "v"),
        (),
    ),
    "integer_index_view_grads": (
        H
        + """x = torch.arange(12.0).reshape(3, 4).requires_grad_()
a = x[1]
b = x[:, 2]
c = x[[0, 2], [1, 3]]
d = x[x > 5]
(a.sum() + 2 * b.sum() + 3 * c.sum() + d.pow(2).sum()).backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "meta_tensors": (
        H
        + """x = torch.empty(3, 4, device="meta", requires_grad=True)
w = torch.empty(4, 2, device="meta", requires_grad=True)
y = (x @ w).relu()
print(y.shape, y.device, y.requires_grad)
y.sum().backward()
print(x.grad.shape, x.grad.device)
""",
        (),
        (),
    ),
    "multi_grad_hook_all_partial": (
        H
        + """from torch.autograd.graph import register_multi_grad_hook
a = torch.ones(2, requires_grad=True)
b = torch.ones(2, requires_grad=True)
c = torch.ones(2, requires_grad=True)
def hook(grads):
    print([None if g is None else g.tolist() for g in grads])
register_multi_grad_hook((a, b, c), hook)
(a * 2 + b).sum().backward()
""",
        ("a", "b"),
        (),
    ),
    "multi_grad_hook_any": (
        H
        + """from torch.autograd.graph import register_multi_grad_hook
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0], requires_grad=True)
seen = []
def hook(g):
    seen.append(tuple(g.shape))
h = register_multi_grad_hook((a, b), hook, mode="any")
(a.sum() * 2 + b.sum()).backward()
print(seen)
h.remove()
(a * 3).sum().backward()
print(seen, a.grad, b.grad)
""",
        ("a", "b"),
        (),
    ),
    "node_hooks_user": (
        H
        + """x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()
seen = []
y.grad_fn.register_hook(lambda gi, go: seen.append((len(gi), len(go))))
y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
y.sum().backward()
print(seen, x.grad)
print(y.grad_fn.name(), y.grad_fn.next_functions[0][0].name())
print(y.grad_fn._saved_result)
""",
        ("x",),
        (),
    ),
    "non_contiguous_grads_strides": (
        H
        + """a = torch.randn(3, 4, requires_grad=True)
b = a.t()
c = b[::2]
d = a.expand(2, 3, 4)
print(b.is_contiguous(), c.stride(), d.stride())
(c.sum() + d.sum() + b.contiguous().pow(2).sum()).backward()
print(a.grad.stride())
w = torch.randn(4, 3).t().requires_grad_()
(w * 2).sum().backward()
print(w.is_leaf, w.grad.stride())
""",
        ("a", "w"),
        (),
    ),
    "once_differentiable_double_backward_error": (
        H
        + """from torch.autograd.function import once_differentiable
class Sq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2
    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * x * g
x = torch.tensor([1.0, 3.0], requires_grad=True)
y = Sq.apply(x).sum()
g, = torch.autograd.grad(y, x, create_graph=True)
print(g, g.requires_grad)
try:
    g.sum().backward()
except RuntimeError as e:
    print(str(e)[:60])
""",
        (),
        (),
    ),
    "requires_grad_setter_on_nonleaf_error": (
        H
        + """x = torch.ones(2, requires_grad=True)
y = x * 2
try:
    y.requires_grad = False
except RuntimeError as e:
    print(str(e)[:50])
y.sum().backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "retain_grad_on_views": (
        H
        + """x = torch.arange(6.0, requires_grad=True)
v = x.view(2, 3)
v.retain_grad()
row = v[1]
row.retain_grad()
(row * 2).sum().backward()
print(v.grad, row.grad, x.grad)
""",
        ("x",),
        (),
    ),
    "retain_grad_view_then_inplace": (
        H
        + """x = torch.ones(4, requires_grad=True)
y = x * 1
v = y[:2]
v.retain_grad()
v.mul_(3)
y.sum().backward()
print(v.grad, x.grad)
""",
        ("x",),
        (),
    ),
    "unfold_overlapping": (
        H
        + """x = torch.arange(8.0, requires_grad=True)
w = x.unfold(0, 3, 2)
print(w)
(w ** 2).sum().backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "zero_dim_tensors": (
        H
        + """a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
c = a * b + a.exp()
print(c.dim(), c.shape)
c.backward()
print(a.grad, b.grad, a.grad.shape)
v = torch.tensor([1.0, 2.0]) * a
v.sum().backward()
print(a.grad)
""",
        ("a", "b"),
        (),
    ),
    "zero_size_edge_cases": (
        H
        + """x = torch.randn(2, 0, 3, requires_grad=True)
y = x.sum(1)
print(y, y.shape)
y.sum().backward()
print(x.grad.shape)
e = torch.zeros(0, requires_grad=True)
print(e.max() if e.numel() else "empty", torch.cat([e, torch.ones(2)]).sum())
z = torch.cat([e, torch.ones(2, requires_grad=True)])
z.sum().backward()
print(e.grad)
m = nn.Linear(3, 2)
print(m(torch.zeros(0, 3)).shape)
try:
    F.softmax(torch.zeros(0, 2), 1).max()
except RuntimeError as err:
    print(str(err)[:50])
""",
        ("x", "e"),
        (),
    ),
}


@pytest.mark.parametrize("name", sorted(_SNIPPETS))
def test_records_as_without_gradwalk(name: str) -> None:
    source, leaves, pitfalls = _SNIPPETS[name]
    assert_as_plain(source, leaves, pitfalls)
