"""Fidelity hunt 53, its second and third sets: snippets that lean on what gradwalk wraps or
hooks (DataLoaders with iterable datasets, batch samplers and custom collates, clipping with
its options, optimizers built by hand or with closures, param groups added later, state dicts,
SWA, REINFORCE, module hooks with kwargs and global ones, thread pools, a model deep-copied
or pickled after metrics-only steps, EMA teachers) and plain Python a course writes (f-strings
of tensors, match, asyncio, dataclasses, exec), and autograd's less used corners
(materialize_grads, forward-mode Jacobians, jvp Functions, model ensembling, per-sample
gradients, sparse gradients, fft, lstsq). Each records as it runs without gradwalk: the same
prints and errors, the pitfalls listed and no other, the leaf gradients bitwise. A
regression guard: these found no bug (the hunt's one bug is in test_fidelity_hunt53.py)."""

from __future__ import annotations

import pytest

from tests.engine.snippets import assert_as_plain

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

# a small model trained 8 steps (metrics-only past the first 3), which the snippets below then copy
TRAINED = (
    "torch.manual_seed(0)\n"
    "model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.05)\n"
    "X, Y = torch.randn(16, 3), torch.randn(16, 1)\n"
    "for step in range(8):\n"
    "    opt.zero_grad()\n"
    "    loss = F.mse_loss(model(X), Y)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
)

# name: (source, leaves whose .grad is compared, pitfalls said)
_SNIPPETS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "asyncio_snippet": (
        H
        + """import asyncio
async def step(x):
    await asyncio.sleep(0)
    return (x ** 2).sum()
x = torch.tensor([1.0, 3.0], requires_grad=True)
loss = asyncio.run(step(x))
loss.backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "autograd_backward_lists_and_grad_none_outputs": (
        H
        + """a = torch.tensor([1.0, 2.0], requires_grad=True)
l1 = (a ** 2).sum()
l2 = (a * 3).sum()
torch.autograd.backward([l1, l2], [torch.tensor(1.0), torch.tensor(0.5)])
print(a.grad)
b = torch.tensor(2.0, requires_grad=True)
o1, o2 = b * 2, b ** 3
g, = torch.autograd.grad([o1, o2], [b], grad_outputs=[None, torch.tensor(1.0)])
print(g)
""",
        ("a",),
        (),
    ),
    "backward_with_gradient_arg": (
        H
        + """x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x ** 2
y.backward(gradient=torch.tensor([1.0, 0.1, 0.01]))
print(x.grad)
""",
        ("x",),
        (),
    ),
    "batch_sampler_and_dict_batches": (
        H
        + """from torch.utils.data import DataLoader, Dataset, BatchSampler, SequentialSampler
class D(Dataset):
    def __len__(self): return 8
    def __getitem__(self, i): return {"x": torch.full((2,), float(i)), "y": torch.tensor([i % 2], dtype=torch.float)}
dl = DataLoader(D(), batch_sampler=BatchSampler(SequentialSampler(range(8)), batch_size=3, drop_last=False))
torch.manual_seed(0)
m = nn.Linear(2, 1)
for b in dl:
    F.binary_cross_entropy_with_logits(m(b["x"]), b["y"]).backward()
print(m.weight.grad)
""",
        (),
        (),
    ),
    "channels_last_model": (
        H
        + """torch.manual_seed(0)
m = nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last)
x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last).requires_grad_()
m(x).mean().backward()
print(x.grad.is_contiguous(memory_format=torch.channels_last), m.weight.grad.shape)
""",
        (),
        (),
    ),
    "clip_grad_error_if_nonfinite": (
        H
        + """m = nn.Linear(2, 1)
m(torch.tensor([[float("inf"), 1.0]])).sum().backward()
try:
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0, error_if_nonfinite=True)
except RuntimeError as e:
    print("refused:", "non-finite" in str(e))
print(torch.nn.utils.clip_grad_norm_(m.bias, 1.0, foreach=True))
""",
        (),
        ("non-finite-loss",),
    ),
    "clip_grad_value_single_tensor_and_generator": (
        H
        + """torch.manual_seed(0)
m = nn.Linear(3, 2)
(m(torch.randn(4, 3)) * 100).sum().backward()
torch.nn.utils.clip_grad_value_(m.weight, 0.5)
n = torch.nn.utils.clip_grad_norm_((p for p in m.parameters()), 2.0, norm_type=1.0)
print(m.weight.grad.abs().max(), round(n.item(), 3))
""",
        (),
        (),
    ),
    "data_swap_other_shape": (
        H
        + """w = torch.zeros(2, requires_grad=True)
w.data = torch.ones(3)
(w * 2).sum().backward()
print(w.grad, w.shape)
""",
        ("w",),
        (),
    ),
    "dataclass_of_tensors": (
        H
        + """from dataclasses import dataclass
@dataclass
class Params:
    w: torch.Tensor
    b: torch.Tensor
p = Params(torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor(0.5, requires_grad=True))
loss = ((p.w * 3).sum() + p.b) ** 2
loss.backward()
print(p.w.grad, p.b.grad)
""",
        (),
        (),
    ),
    "deepcopy_model_after_metrics_steps": (
        H
        + "import copy\n"
        + TRAINED
        + """
best = copy.deepcopy(model)
print(sum(p.numel() for p in best.parameters()), best(X).shape, len(best[0]._forward_pre_hooks))
""",
        (),
        (),
    ),
    "deterministic_algorithms": (
        H
        + """torch.use_deterministic_algorithms(True)
x = torch.randn(4, 3, requires_grad=True)
idx = torch.tensor([0, 1, 0, 2])
out = torch.zeros(3, 3).index_add(0, idx[:3], x[:3])
out.sum().backward()
print(x.grad)
torch.use_deterministic_algorithms(False)
""",
        ("x",),
        (),
    ),
    "ema_teacher_deepcopied_in_loop": (
        H
        + """import copy
torch.manual_seed(0)
student = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
teacher = copy.deepcopy(student)
for p in teacher.parameters():
    p.requires_grad_(False)
opt = torch.optim.SGD(student.parameters(), lr=0.05)
X = torch.randn(16, 3)
for step in range(10):
    opt.zero_grad()
    loss = F.mse_loss(student(X), teacher(X).detach() + 0.1)
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pt, ps in zip(teacher.parameters(), student.parameters()):
            pt.mul_(0.9).add_(ps, alpha=0.1)
    if step == 6:
        snapshot = copy.deepcopy(student)
print(round(loss.item(), 5), snapshot[0].weight.shape)
""",
        (),
        (),
    ),
    "ensemble_stack_module_state": (
        H
        + """from torch.func import stack_module_state, functional_call, vmap
import copy
torch.manual_seed(0)
models = [nn.Linear(3, 1) for _ in range(4)]
params, buffers = stack_module_state(models)
base = copy.deepcopy(models[0]).to("meta")
def f(p, b, x): return functional_call(base, (p, b), (x,))
x = torch.randn(5, 3)
out = vmap(f, in_dims=(0, 0, None))(params, buffers, x)
out.sum().backward()
print(out.shape, params["weight"].grad.shape)
""",
        (),
        (),
    ),
    "exec_eval_in_snippet": (
        H
        + """ns = {"torch": torch}
exec("a = torch.tensor([1.0, 2.0], requires_grad=True); b = (a * a).sum()", ns)
ns["b"].backward()
print(eval("a.grad", ns))
""",
        (),
        (),
    ),
    "fft_backward": (
        H
        + """x = torch.randn(8, requires_grad=True)
X = torch.fft.rfft(x)
(X.abs() ** 2).sum().backward()
print(x.grad.shape)
""",
        (),
        (),
    ),
    "forward_hook_with_kwargs_prepend": (
        H
        + """torch.manual_seed(0)
m = nn.Linear(2, 2)
seen = []
m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(("k", len(kwargs))), with_kwargs=True)
m.register_forward_pre_hook(lambda mod, args: seen.append("pre"), prepend=True)
m(torch.ones(1, 2)).sum().backward()
print(seen, m.weight.grad)
""",
        (),
        (),
    ),
    "fstring_format_tensor": (
        H
        + """x = torch.tensor(2.0, requires_grad=True)
loss = (x - 1) ** 2
loss.backward()
print(f"{loss:.3f} {x.grad:.2f} {loss.item():.1e}")
""",
        ("x",),
        (),
    ),
    "function_with_jvp": (
        H
        + """import torch.autograd.forward_ad as fwAD
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        r = x.exp()
        ctx.save_for_forward(r)
        ctx.save_for_backward(r)
        return r
    @staticmethod
    def backward(ctx, g):
        r, = ctx.saved_tensors
        return g * r
    @staticmethod
    def jvp(ctx, t):
        r, = ctx.saved_tensors
        return t * r
x = torch.tensor([0.0, 1.0], requires_grad=True)
with fwAD.dual_level():
    d = fwAD.make_dual(x.detach(), torch.ones(2))
    print(fwAD.unpack_dual(Exp.apply(d)).tangent)
Exp.apply(x).sum().backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "generator_object_seeding": (
        H
        + """g = torch.Generator().manual_seed(7)
a = torch.randn(3, generator=g)
g.manual_seed(7)
b = torch.randn(3, generator=g)
print(torch.equal(a, b), g.initial_seed())
""",
        (),
        (),
    ),
    "global_module_hook_by_user": (
        H
        + """from torch.nn.modules.module import register_module_forward_hook
names = []
h = register_module_forward_hook(lambda mod, inp, out: names.append(type(mod).__name__))
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
net(torch.ones(1, 2)).sum().backward()
h.remove()
print(names)
""",
        (),
        (),
    ),
    "grad_accumulation_with_no_sync_style": (
        H
        + """torch.manual_seed(0)
m = nn.Linear(3, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
acc = 4
for i in range(8):
    loss = m(torch.randn(2, 3)).pow(2).mean() / acc
    loss.backward()
    if (i + 1) % acc == 0:
        opt.step()
        opt.zero_grad(set_to_none=True)
print(m.weight.grad, m.bias)
""",
        (),
        (),
    ),
    "graph_freed_after_backward_weakref": (
        H
        + """import weakref
x = torch.randn(3, requires_grad=True)
h = x.exp()
node = weakref.ref(h.grad_fn)
loss = h.sum()
del h
loss.backward()
del loss
print(node() is None)
""",
        (),
        (),
    ),
    "huge_tensor_print": (
        H
        + """x = torch.randn(300, 300, requires_grad=True)
print(x.shape, str(x)[:20])
(x.sum() * 2).backward()
print(x.grad[0, :3])
""",
        (),
        (),
    ),
    "import_torch_as_T_and_star": (
        """import torch as T
from torch import tensor, nn
from torch.nn.functional import *
x = tensor([1.0, 2.0], requires_grad=True)
y = relu(x * 2 - 3).sum()
y.backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "iterable_dataset_and_custom_collate": (
        H
        + """from torch.utils.data import DataLoader, IterableDataset
from collections import namedtuple
Batch = namedtuple("Batch", "x y")
class Stream(IterableDataset):
    def __iter__(self):
        g = torch.Generator().manual_seed(3)
        for _ in range(10):
            yield torch.randn(3, generator=g), torch.randn(1, generator=g)
def collate(items):
    xs, ys = zip(*items)
    return Batch(torch.stack(xs), torch.stack(ys))
torch.manual_seed(0)
m = nn.Linear(3, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for b in DataLoader(Stream(), batch_size=4, collate_fn=collate, drop_last=True):
    opt.zero_grad()
    F.mse_loss(m(b.x), b.y).backward()
    opt.step()
print(m.bias)
""",
        (),
        (),
    ),
    "jacobian_forward_mode": (
        H
        + """from torch.autograd.functional import jacobian, hvp, vhp
f = lambda x: x.sin() * x
x = torch.tensor([0.1, 0.2])
print(jacobian(f, x, vectorize=True, strategy="forward-mode"))
print(hvp(lambda x: (x ** 3).sum(), x, torch.ones(2))[1])
""",
        (),
        (),
    ),
    "lstsq_backward": (
        H
        + """torch.manual_seed(0)
A = torch.randn(5, 3, requires_grad=True)
B = torch.randn(5, 2)
sol = torch.linalg.lstsq(A, B).solution
sol.sum().backward()
print(A.grad.shape)
""",
        (),
        (),
    ),
    "match_and_walrus": (
        H
        + """x = torch.tensor([1.0, -2.0], requires_grad=True)
total = 0
for i, v in enumerate(x):
    match i:
        case 0:
            total = total + v * 2
        case _:
            total = total + (w := v ** 2)
total.backward()
print(x.grad, w)
""",
        ("x",),
        (),
    ),
    "materialize_grads": (
        H
        + """x = torch.tensor(1.0, requires_grad=True)
z = torch.tensor(2.0, requires_grad=True)
g = torch.autograd.grad(x * 2, (x, z), allow_unused=True, materialize_grads=True)
print(g)
""",
        (),
        (),
    ),
    "model_to_double_after_optimizer": (
        H
        + """torch.manual_seed(0)
m = nn.Linear(2, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
m.double()
x = torch.randn(4, 2, dtype=torch.float64)
m(x).sum().backward()
opt.step()
print(m.weight.dtype, m.weight.grad.dtype)
""",
        (),
        (),
    ),
    "module_getattr_override": (
        H
        + """class Wrap(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(2, 2)
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)
torch.manual_seed(0)
w = Wrap()
print(w.in_features)
w.inner(torch.ones(1, 2)).sum().backward()
print(w.weight.grad)
""",
        (),
        (),
    ),
    "module_state_dict_hooks_and_named_buffers": (
        H
        + """class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
    def forward(self, x):
        self.steps += 1
        return self.lin(x)
m = M()
for _ in range(3):
    m(torch.randn(4, 2)).sum().backward()
print(m.steps, [n for n, _ in m.named_buffers()])
""",
        (),
        (),
    ),
    "monkeypatched_forward": (
        H
        + """torch.manual_seed(0)
m = nn.Linear(2, 2)
orig = m.forward
m.forward = lambda x: orig(x) * 2
m(torch.ones(1, 2)).sum().backward()
print(m.weight.grad)
""",
        (),
        (),
    ),
    "parameter_dict_and_list": (
        H
        + """class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.pd = nn.ParameterDict({"a": nn.Parameter(torch.ones(2)), "b": nn.Parameter(torch.zeros(2))})
        self.pl = nn.ParameterList([nn.Parameter(torch.full((2,), 2.0)) for _ in range(2)])
    def forward(self, x):
        return (x * self.pd["a"] + self.pd["b"] + self.pl[0] * self.pl[1]).sum()
m = M()
m(torch.tensor([1.0, 2.0])).backward()
print({k: v.grad for k, v in m.named_parameters()})
""",
        (),
        (),
    ),
    "partial_module_and_lambda_loss": (
        H
        + """import functools
torch.manual_seed(0)
lin = nn.Linear(3, 1)
f = functools.partial(F.mse_loss, reduction="sum")
losses = [f(lin(torch.randn(2, 3)), torch.zeros(2, 1)) for _ in range(3)]
sum(losses).backward()
print(lin.weight.grad.shape, len(losses))
""",
        (),
        (),
    ),
    "per_sample_grads": (
        H
        + """from torch.func import functional_call, vmap, grad
torch.manual_seed(0)
m = nn.Linear(3, 1)
params = {k: v.detach() for k, v in m.named_parameters()}
def loss(p, x, y): return F.mse_loss(functional_call(m, p, (x.unsqueeze(0),)), y.unsqueeze(0))
xs, ys = torch.randn(6, 3), torch.randn(6, 1)
g = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
print(g["weight"].shape)
""",
        (),
        (),
    ),
    "pickle_model": (
        H
        + "import pickle\n"
        + TRAINED
        + """
m2 = pickle.loads(pickle.dumps(model))
print(torch.equal(m2(X), model(X)))
""",
        (),
        (),
    ),
    "print_hooks_dicts": (
        H
        + """torch.manual_seed(0)
m = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(6):
    opt.zero_grad(); m(torch.randn(4, 2)).sum().backward(); opt.step()
print([len(x._forward_pre_hooks) + len(x._forward_hooks) for x in m.modules()], len(opt._optimizer_step_pre_hooks))
""",
        (),
        (),
    ),
    "recursive_tree_net": (
        H
        + """class Tree(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.kids = nn.ModuleList([Tree(depth - 1) for _ in range(2)]) if depth else nn.ModuleList()
    def forward(self, x):
        out = torch.tanh(self.lin(x))
        for k in self.kids:
            out = out + k(x)
        return out
torch.manual_seed(0)
t = Tree(3)
t(torch.randn(4, 2)).sum().backward()
print(t.kids[1].kids[0].lin.weight.grad.shape)
""",
        (),
        (),
    ),
    "refcount_of_param": (
        H
        + """import sys
m = nn.Linear(2, 2)
before = sys.getrefcount(m.weight)
m(torch.randn(3, 2)).sum().backward()
print(sys.getrefcount(m.weight) - before)
""",
        (),
        (),
    ),
    "register_full_backward_pre_hook": (
        H
        + """m = nn.Linear(2, 2)
m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0.5,))
x = torch.ones(1, 2, requires_grad=True)
m(x).sum().backward()
print(x.grad.shape, m.weight.grad)
""",
        ("x",),
        (),
    ),
    "reinforce_categorical": (
        H
        + """from torch.distributions import Categorical
torch.manual_seed(0)
logits = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([logits], lr=0.5)
for _ in range(5):
    d = Categorical(logits=logits)
    a = d.sample((4,))
    reward = (a == 2).float()
    loss = -(d.log_prob(a) * reward).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(logits)
""",
        (),
        (),
    ),
    "requires_grad_on_non_leaf_error": (
        H
        + """x = torch.tensor([1.0], requires_grad=True)
y = x * 2
try:
    y.requires_grad = False
except RuntimeError as e:
    print("error:", str(e)[:60])
z = torch.tensor([3.0])
z.requires_grad_()
(z * y).sum().backward()
print(x.grad, z.grad)
""",
        ("x", "z"),
        (),
    ),
    "retain_graph_twice_then_grad": (
        H
        + """x = torch.tensor(3.0, requires_grad=True)
y = x ** 3
y.backward(retain_graph=True)
y.backward(retain_graph=True)
g, = torch.autograd.grad(y, x)
print(x.grad, g)
""",
        ("x",),
        (),
    ),
    "set_printoptions_and_default_dtype": (
        H
        + """torch.set_printoptions(precision=2)
torch.set_default_dtype(torch.float64)
x = torch.tensor([1.23456, 2.34567], requires_grad=True)
(x ** 2).sum().backward()
print(x.grad, x.dtype)
""",
        ("x",),
        (),
    ),
    "sgd_step_with_closure_and_add_param_group": (
        H
        + """torch.manual_seed(0)
a, b = nn.Linear(2, 1), nn.Linear(2, 1)
opt = torch.optim.SGD(a.parameters(), lr=0.1)
x = torch.randn(4, 2)
def closure():
    opt.zero_grad()
    loss = (a(x) + b(x)).pow(2).mean()
    loss.backward()
    return loss
print(round(opt.step(closure).item(), 4))
opt.add_param_group({"params": b.parameters(), "lr": 0.01})
print(round(opt.step(closure).item(), 4), len(opt.param_groups))
""",
        (),
        (),
    ),
    "sparse_embedding_sparse_adam": (
        H
        + """torch.manual_seed(0)
emb = nn.Embedding(10, 3, sparse=True)
opt = torch.optim.SparseAdam(emb.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    emb(torch.tensor([1, 2, 1])).sum().backward()
    opt.step()
print(emb.weight.grad.is_sparse, emb.weight[1])
""",
        (),
        (),
    ),
    "state_dict_after_deepcopy_in_metrics": (
        H
        + "import copy\n"
        + TRAINED
        + """
sd = copy.deepcopy(model.state_dict())
model2 = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
model2.load_state_dict(sd)
print(torch.equal(model2(X), model(X)))
""",
        (),
        (),
    ),
    "swa_averaged_model_update_bn": (
        H
        + """from torch.optim.swa_utils import AveragedModel, SWALR, update_bn
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
swa = AveragedModel(m)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
sched = SWALR(opt, swa_lr=0.05)
data = [torch.randn(8, 2) for _ in range(3)]
for x in data:
    opt.zero_grad(); m(x).pow(2).mean().backward(); opt.step()
    swa.update_parameters(m); sched.step()
update_bn(data, swa)
print(swa.n_averaged, sched.get_last_lr())
""",
        (),
        (),
    ),
    "thread_pool_backward": (
        H
        + """from concurrent.futures import ThreadPoolExecutor
def work(i):
    x = torch.tensor(float(i), requires_grad=True)
    (x ** 2).backward()
    return x.grad.item()
with ThreadPoolExecutor(2) as ex:
    print(sorted(ex.map(work, range(4))))
""",
        (),
        (),
    ),
    "torch_save_whole_model_after_metrics_steps": (
        H
        + "import io\n"
        + TRAINED
        + """
buf = io.BytesIO()
torch.save(model, buf)
buf.seek(0)
m2 = torch.load(buf, weights_only=False)
print(torch.equal(m2(X), model(X)), len(m2[0]._forward_pre_hooks))
""",
        (),
        (),
    ),
    "user_step_pre_hook_and_custom_optimizer": (
        H
        + """class SignSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.01):
        super().__init__(params, dict(lr=lr))
    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.add_(p.grad.sign(), alpha=-g["lr"])
torch.manual_seed(0)
m = nn.Linear(2, 1)
opt = SignSGD(m.parameters(), lr=0.1)
calls = []
opt.register_step_pre_hook(lambda o, a, k: calls.append(1))
for _ in range(3):
    opt.zero_grad(); m(torch.randn(4, 2)).sum().backward(); opt.step()
print(len(calls), m.bias)
""",
        (),
        (),
    ),
    "warnings_in_snippet": (
        H
        + """import warnings
x = torch.tensor([1.0], requires_grad=True)
warnings.warn("careful")
y = x * 2
y.backward()
print(x.grad)
""",
        ("x",),
        (),
    ),
    "weakref_tensor_freed": (
        H
        + """import weakref, gc
t = torch.randn(1000, requires_grad=True)
u = t * 2
r = weakref.ref(u)
del u
print(r() is None)
x = torch.randn(10)
rx = weakref.ref(x)
del x
print(rx() is None)
""",
        (),
        (),
    ),
    "zero_grad_set_to_none_false_and_state_dict_load": (
        H
        + """torch.manual_seed(0)
m = nn.Linear(2, 1)
opt = torch.optim.Adam(m.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad(set_to_none=False)
    m(torch.randn(3, 2)).sum().backward()
    opt.step()
sd = opt.state_dict()
opt2 = torch.optim.Adam(m.parameters(), lr=0.1)
opt2.load_state_dict(sd)
opt2.zero_grad(set_to_none=False)
m(torch.randn(3, 2)).sum().backward()
opt2.step()
print(opt2.state[m.weight]["step"], m.weight.grad)
""",
        (),
        (),
    ),
}


@pytest.mark.parametrize("name", sorted(_SNIPPETS))
def test_records_as_without_gradwalk(name: str) -> None:
    source, leaves, pitfalls = _SNIPPETS[name]
    assert_as_plain(source, leaves, pitfalls)
