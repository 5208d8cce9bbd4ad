"""data-edit-hidden-from-autograd: a tensor a node saved for backward, changed through ``.data``
(in place, or given new memory by ``w.data = …``) before backward used it. Autograd cannot see
the change, backward runs and computes the gradient from the new values; the recorded run must
compute exactly that gradient too. Each silent near miss is one edit away from a snippet that is
said, and each test records both."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_error, plain_grads, recorded_silently, the_pitfall

_KIND = "data-edit-hidden-from-autograd"

# the classic of PyTorch's docs: the true gradient of y.sum() at the forward's x is [3, 4]
_DOCS = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
x = torch.tensor([3.0, 4.0])
y = w * x
x.data.mul_(2)
y.sum().backward()
print(w.grad)
"""

_SWAPPED = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
x = torch.tensor([3.0, 4.0], requires_grad=True)
y = w * x
w.data = w.data * 2
y.sum().backward()
print(w.grad, x.grad)
"""

# a layer that renormalises its weight through .data after using it
_RENORMALISED = """import torch, torch.nn as nn
torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        out = self.fc(x)
        self.fc.weight.data.div_(self.fc.weight.data.norm())
        return out

net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(5, 3, requires_grad=True)
for step in range(6):
    opt.zero_grad()
    loss = net(x).pow(2).mean()
    loss.backward()
    opt.step()
print(round(loss.item(), 5), x.grad.sum().item())
"""

# WGAN: the critic's weights clipped after its step, its graph freed by then
_WGAN = """import torch, torch.nn as nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
optD = torch.optim.RMSprop(D.parameters(), lr=5e-5)
optG = torch.optim.RMSprop(G.parameters(), lr=5e-5)
for it in range(8):
    real = torch.randn(16, 2) + 3
    fake = G(torch.randn(16, 2))
    lossD = D(fake.detach()).mean() - D(real).mean()
    optD.zero_grad()
    lossD.backward()
    optD.step()
    for p in D.parameters():
        p.data.clamp_(-0.01, 0.01)
    lossG = -D(fake).mean()
    optG.zero_grad()
    lossG.backward()
    optG.step()
print(round(lossD.item(), 6), round(lossG.item(), 6))
"""


def test_a_saved_input_changed_through_data_is_said_and_the_gradient_stays_pytorch_s() -> None:
    said = the_pitfall(_DOCS, _KIND, 5)
    assert said.title == "x changed through .data after a node saved it: autograd cannot see the change"
    assert said.message == (
        "Line 5 (x.data.mul_(2)) changes x in place through .data after MulBackward0 (line 4) saved it "
        "for backward. A change made that way moves no version counter autograd checks, so it cannot "
        "see it: the backward() at line 6 ran without an error and used x as line 5 left it, where the "
        "gradient needs the values the forward saw: w.grad is [6, 8]."
    )
    assert said.fix == (
        "Make the change after backward(); or make it where PyTorch checks it, with torch.no_grad(): "
        "x.mul_(2) (or x.detach().mul_(2)), and backward() then raises if the graph still needs the old "
        "values; or change a copy (x = x.clone() before line 5)."
    )
    trace = record(_DOCS)
    (said_again,) = q.pitfalls(trace)
    node = said_again.nodes[0]
    assert q.node_names(trace)[node] == "MulBackward0"
    # the recording changes no number: PyTorch's own (wrong) gradient
    assert q.final_grads(trace)["w"] == plain_grads(_DOCS, ["w"])["w"] == [6.0, 8.0]


def test_w_data_replaced_after_the_forward_is_said_with_the_gradient_it_changed() -> None:
    said = the_pitfall(_SWAPPED, _KIND, 5)
    assert said.title == "w replaced through .data after a node saved it: backward used the new values"
    assert said.message == (
        "Line 5 (w.data = w.data * 2) gives w new memory through .data after MulBackward0 (line 4) "
        "saved w itself for backward. Its version counter does not move, so autograd cannot see the "
        "change: the backward() at line 6 ran without an error and used the new values of w, not those "
        "the forward used: x.grad is [2, 4]."
    )
    assert said.fix == (
        "Make the change after backward(); or make it where PyTorch checks it, with torch.no_grad(): "
        "w.copy_(w * 2), and backward() then raises if the graph still needs the old values."
    )
    trace = record(_SWAPPED)
    plain = plain_grads(_SWAPPED, ["w", "x"])
    assert q.final_grads(trace)["x"] == plain["x"] == [2.0, 4.0]
    assert q.final_grads(trace)["w"] == plain["w"]


def test_a_layer_renormalised_through_data_in_its_forward_is_said_once_at_that_line() -> None:
    said = the_pitfall(_RENORMALISED, _KIND, 11)
    assert said.message.startswith(
        "Line 11 (self.fc.weight.data.div_(self.fc.weight.data.norm())) changes self.fc.weight (net.fc.weight) "
        "in place "
        "through .data after AddmmBackward0 (line 10) saved it for backward."
    )
    assert "the backward() at line 20 ran without an error" in said.message
    # a parameter: no copy to change, and the no_grad form drops every .data
    assert said.fix == (
        "Make the change after backward(); or make it where PyTorch checks it, with torch.no_grad(): "
        "self.fc.weight.div_(self.fc.weight.norm()), and backward() then raises if the graph still "
        "needs the old values."
    )
    assert q.final_grads(record(_RENORMALISED))["x"] == plain_grads(_RENORMALISED, ["x"])["x"]


def test_a_second_backward_through_a_retained_graph_after_a_data_update_is_said() -> None:
    source = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
x = torch.tensor([3.0, 4.0], requires_grad=True)
y = (w * x).sum()
y.backward(retain_graph=True)
w.data -= 0.5 * w.grad
w.grad = x.grad = None
y.backward()
print(x.grad)
"""
    said = the_pitfall(source, _KIND, 6)
    assert "the backward() at line 8 ran without an error and used w as line 6 left it" in said.message
    assert said.message.endswith("x.grad is [-0.5, 0].")
    # an augmented assignment takes no .detach() on its left
    assert "with torch.no_grad(): w -= 0.5 * w.grad, and backward() then raises" in said.fix


def _said_and_silent(said: str, line: int, silent: str) -> None:
    """``said`` is said at ``line``; ``silent``, its near miss, is not."""
    the_pitfall(said, _KIND, line)
    recorded_silently(silent)


def test_the_change_made_after_backward_or_before_the_forward_stays_silent() -> None:
    after = _DOCS.replace("x.data.mul_(2)\ny.sum().backward()\n", "y.sum().backward()\nx.data.mul_(2)\n")
    before = _DOCS.replace("y = w * x\nx.data.mul_(2)\n", "x.data.mul_(2)\ny = w * x\n")
    _said_and_silent(_DOCS, 5, after)
    recorded_silently(before)


def test_the_manual_update_after_backward_stays_silent() -> None:
    loop = """import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
X, Y = torch.randn(16, 3), torch.randn(16)
for step in range(20):
    loss = ((X @ w - Y) ** 2).mean()
    loss.backward()
    w.data -= 0.1 * w.grad
    w.grad.data.zero_()
print(round(loss.item(), 4))
"""
    # one edit away: the update (with the last step's gradient, zeroed after it) between the
    # forward and its backward()
    wrong = loop.replace(
        "    loss = ((X @ w - Y) ** 2).mean()\n    loss.backward()\n    w.data -= 0.1 * w.grad\n"
        "    w.grad.data.zero_()\n",
        "    loss = ((X @ w - Y) ** 2).mean() + (w * w).sum()\n    if step:\n        w.data -= 0.1 * w.grad\n"
        "        w.grad.data.zero_()\n    loss.backward()\n",
    )
    _said_and_silent(wrong, 8, loop)


def test_optimizer_steps_stay_silent() -> None:
    source = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
adam = torch.optim.Adam(model.parameters(), lr=1e-2)
sgd = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
X, Y = torch.randn(32, 4), torch.randint(0, 2, (32,))
for step in range(12):
    opt = adam if step % 2 else sgd
    opt.zero_grad()
    loss = F.cross_entropy(model(X), Y)
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""
    wrong = source.replace(
        "    loss.backward()\n",
        "    model[2].weight.data.mul_(0.99)\n    loss.backward()\n",
    )
    _said_and_silent(wrong, 11, source)


def test_the_wgan_critic_clipped_after_its_step_stays_silent() -> None:
    # one edit away: the critic clipped after the generator's forward went through it
    wrong = _WGAN.replace(
        "    for p in D.parameters():\n        p.data.clamp_(-0.01, 0.01)\n    lossG = -D(fake).mean()\n",
        "    lossG = -D(fake).mean()\n    for p in D.parameters():\n        p.data.clamp_(-0.01, 0.01)\n",
    )
    _said_and_silent(wrong, 16, _WGAN)


def test_data_reads_and_changes_of_tensors_no_graph_saved_stay_silent() -> None:
    source = """import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
x, z = torch.randn(3), torch.randn(3)
y = (w * x).sum()
print(w.data.norm() > 0, x.data.shape)
v = w.data.clone()
v.mul_(2)
z.data.mul_(2)
y.backward()
print(w.grad, z)
"""
    _said_and_silent(source.replace("z.data.mul_(2)", "x.data.mul_(2)"), 9, source)


def test_a_graph_kept_but_never_backpropagated_stays_silent() -> None:
    # `kept` saved w before the clamp; the loss backward() runs on saved w after it
    source = """import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
x = torch.randn(3)
kept = (w * x * w).sum()
w.data.clamp_(-0.5, 0.5)
loss = (w * x * w).sum()
loss.backward()
print(w.grad, kept.item() != 0)
"""
    _said_and_silent(source.replace("loss = (w * x * w).sum()", "loss = kept * 2"), 6, source)


def test_a_layer_whose_weight_is_replaced_after_linear_saved_a_view_of_it_stays_silent() -> None:
    # F.linear saves weight.t(), a view that keeps the old memory: backward uses the old values
    source = """import torch, torch.nn as nn
torch.manual_seed(0)
lin = nn.Linear(3, 2)
x = torch.randn(4, 3, requires_grad=True)
out = lin(x)
lin.weight.data = lin.weight.data * 2
out.sum().backward()
print(x.grad)
"""
    trace = recorded_silently(source)
    assert q.final_grads(trace)["x"] == plain_grads(source, ["x"])["x"]
    the_pitfall(source.replace("lin.weight.data = lin.weight.data * 2", "lin.weight.data.mul_(2)"), _KIND, 6)


@pytest.mark.parametrize("change", ["with torch.no_grad():\n    x.mul_(2)", "x.detach().mul_(2)"])
def test_a_change_pytorch_checks_raises_as_it_does_without_gradwalk(change: str) -> None:
    source = _DOCS.replace("x = torch.tensor([3.0, 4.0])", "x = torch.tensor([3.0, 4.0], requires_grad=True)")
    source = source.replace("x.data.mul_(2)", change)
    trace = record(source)
    assert trace.events[-1].status == "error"
    assert "modified by an inplace operation" in trace.events[-1].message
    assert "modified by an inplace operation" in str(plain_error(source))
    assert [p.kind for p in q.pitfalls(trace)] == []
    the_pitfall(_DOCS, _KIND, 5)


def test_a_change_in_a_step_recorded_metrics_only_is_not_said() -> None:
    # ops are not recorded in a metrics-only step (past Limits.detail_steps, 3), so a change
    # made there is not seen (the module's docstring); the same line in a step recorded in full is
    source = """import torch
torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
X = torch.randn(8, 4)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(6):
    opt.zero_grad()
    h = (X * w * w).sum()
    if step == 4:
        w.data.clamp_(-1, 1)
    h.backward()
    opt.step()
print(w.grad)
"""
    said = the_pitfall(source.replace("step == 4", "step == 1"), _KIND, 10)
    assert said.message.endswith("w.grad is [1.2, -0.4216, -4.435, -1.911].")
    recorded_silently(source)


def test_gradcheck_perturbing_its_inputs_and_putting_them_back_stays_silent() -> None:
    # gradcheck changes x through x.data and restores it, between a forward and its backward:
    # library code, not the snippet's; the snippet's own change of the same kind is said
    source = """import torch
from torch.autograd import gradcheck, gradgradcheck
x = torch.randn(3, dtype=torch.double, requires_grad=True)
W = torch.randn(2, 3, dtype=torch.double, requires_grad=True)
f = lambda x, W: torch.tanh(W @ x).exp()
print(gradcheck(f, (x, W)), gradgradcheck(f, (x, W)))
"""
    recorded_silently(source)
    wrong = source.replace(
        "print(gradcheck(f, (x, W)), gradgradcheck(f, (x, W)))",
        "y = f(x, W).sum()\nW.data.mul_(2)\ny.backward()\nprint(x.grad)",
    )
    said = the_pitfall(wrong, _KIND, 7)
    assert said.message.startswith(
        "Line 7 (W.data.mul_(2)) changes W in place through .data after MvBackward0"
    )


def test_new_memory_with_the_same_values_stays_silent() -> None:
    recorded_silently(_SWAPPED.replace("w.data = w.data * 2", "w.data = w.data.clone()"))
    the_pitfall(_SWAPPED, _KIND, 5)


def test_an_nn_init_call_on_data_and_a_change_in_a_helper_function_are_said() -> None:
    init = _DOCS.replace("x.data.mul_(2)", "torch.nn.init.constant_(x.data, 1.0)")
    said = the_pitfall(init, _KIND, 5)
    assert said.message.endswith("w.grad is [1, 1].")
    assert "with torch.no_grad(): torch.nn.init.constant_(x, 1.0)" in said.fix
    helper = _DOCS.replace("import torch\n", "import torch\ndef squash(t):\n    t.data **= 2\n").replace(
        "x.data.mul_(2)", "squash(x)"
    )
    said = the_pitfall(helper, _KIND, 3)
    assert said.message.startswith(
        "Line 3 (t.data **= 2) changes t in place through .data after MulBackward0 (line 6) saved x, "
        "which shares its memory, for backward."
    )
    assert said.message.endswith("w.grad is [9, 16].")


def test_an_ema_teacher_updated_through_data_while_its_graph_lives_unused_stays_silent() -> None:
    # the teacher's graph (t_out) is alive at the update, but no backward() goes through it
    source = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
student = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
teacher = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
teacher.load_state_dict(student.state_dict())
opt = torch.optim.Adam(student.parameters(), lr=1e-2)
x = torch.randn(32, 4)
for step in range(6):
    t_out = teacher(x)
    loss = F.mse_loss(student(x), t_out.detach()) + student(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    for tp, sp in zip(teacher.parameters(), student.parameters()):
        tp.data.mul_(0.99).add_(0.01 * sp.data)
print(round(loss.item(), 5))
"""
    _said_and_silent(_DOCS, 5, source)


def test_a_weight_normalised_through_data_before_the_forward_uses_it_stays_silent() -> None:
    source = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)

class Cosine(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3, bias=False)

    def forward(self, x):
        self.fc.weight.data = F.normalize(self.fc.weight.data, dim=1)
        return self.fc(F.normalize(x, dim=1)) * 10

net = Cosine()
opt = torch.optim.SGD(net.parameters(), lr=0.5)
X, y = torch.randn(64, 4, requires_grad=True), torch.randint(0, 3, (64,))
for step in range(6):
    loss = F.cross_entropy(net(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""
    recorded_silently(source)
    # one edit away: normalised in place after the forward used it
    wrong = source.replace(
        "        self.fc.weight.data = F.normalize(self.fc.weight.data, dim=1)\n"
        "        return self.fc(F.normalize(x, dim=1)) * 10\n",
        "        out = self.fc(F.normalize(x, dim=1)) * 10\n"
        "        self.fc.weight.data.div_(self.fc.weight.data.norm(dim=1, keepdim=True))\n"
        "        return out\n",
    )
    the_pitfall(wrong, _KIND, 11)
