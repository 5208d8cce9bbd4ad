"""The false alarms hunt 52b left to their own modules (test_pitfall_hunt52b.py's docstring), each
now silent, its buggy twin still told. Each test records the correct snippet (said before the
fix) and its twin:

- loss-tensor-accumulated (running_totals.py), of capsule networks' dynamic routing: the routing
  logits updated at each of three iterations inside one forward (``b = b + (u_hat *
  v.unsqueeze(1)).sum(-1)``, or ``b += …``), the last update read by nothing. A chain of adds
  any link of which a backward walked is no running total (only the latest link counted);
  a running total of the losses is still told;
- parameter-not-optimized (unoptimized_on_purpose.py), of a head widened by surgery after the
  optimizer was built, with a new optimizer over the new model (or the new head added with
  ``opt.add_param_group``): the old head, kept to copy its weights, holds the gradient of a
  backward() made before the surgery. A layer whose place in its model now holds another
  parameter is left alone; a new head no optimizer holds is still told;
- parameter-not-optimized, of an A3C worker's local model whose gradients are handed to the
  shared model's parameters (``shared_param._grad = param.grad``, or ``… = param.grad.clone()``)
  before the shared optimizer steps. Left alone where the source hands a ``.grad`` over and a
  stepped model of the same shapes holds gradients; without the hand-off, still told;
- missing-zero-grad (hand_updates.py), of a GAN stepped by hand through ``.data`` in the DCGAN
  order: the generator's backward() adds into the discriminator's gradients its update has just
  used, and the next iteration clears them (``p.grad.data.zero_()`` or ``p.grad = None``) before
  they are used. Such a sum is now said once an update has used it; a network never cleared
  still is;
- data-edit-hidden-from-autograd (data_edit_writes.py), of a weight centred through ``.data`` at
  every call of a layer run twice in one graph (``self.w.data.sub_(self.w.data.mean(dim=1,
  keepdim=True))``): after the first call the mean it subtracts is rounding. A shift (or scale)
  within a few ulps of the tensor's largest value changes nothing; a centring after the forward
  that saved the weight, or one by half the mean, is still told.
"""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import recorded_silently, the_pitfall

# capsule layer with dynamic routing (Sabour et al.), trained on the lengths of its output
# capsules; every iteration updates the routing logits, the last update is read by nothing
CAPSULE_ROUTING = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
def squash(s, dim=-1):
    n2 = (s ** 2).sum(dim, keepdim=True)
    return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)
class CapsLayer(nn.Module):
    def __init__(self, n_in, d_in, n_out, d_out, iters=3):
        super().__init__()
        self.W = nn.Parameter(0.1 * torch.randn(1, n_in, n_out, d_out, d_in))
        self.iters = iters
    def forward(self, u):
        u_hat = (self.W @ u[:, :, None, :, None]).squeeze(-1)
        b = torch.zeros(u_hat.shape[:3])
        for i in range(self.iters):
            c = F.softmax(b, dim=2)
            v = squash((c.unsqueeze(-1) * u_hat).sum(1))
            b = b + (u_hat * v.unsqueeze(1)).sum(-1)
        return v
caps = CapsLayer(8, 4, 3, 6)
opt = torch.optim.Adam(caps.parameters(), lr=1e-2)
u, y = torch.randn(5, 8, 4), torch.randint(0, 3, (5,))
for step in range(4):
    v = caps(u)
    loss = F.cross_entropy(v.norm(dim=-1), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


@pytest.mark.parametrize("update", ["b = b + (u_hat", "b += (u_hat"], ids=["b = b +", "b +="])
def test_routing_logits_updated_in_one_forward_are_no_running_total(update: str) -> None:
    source = CAPSULE_ROUTING.replace("b = b + (u_hat", update)
    recorded_silently(source)
    # the twin: the loss itself summed over the batches, graph and all
    twin = source.replace("for step in range(4):\n", "running = 0.0\nfor step in range(4):\n").replace(
        "opt.step()\n", "opt.step()\n    running = running + loss\n"
    )
    p = the_pitfall(twin, "loss-tensor-accumulated", 27)
    assert p.title == "A running total keeps every iteration's graph alive"


# Net2Net-style widening of a classifier's head from 3 classes to 5, the 3 learnt kept; a
# backward() before the surgery checks that every layer gets a gradient
WIDENED_HEAD = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
F.cross_entropy(model(X), y).backward()
print([p.grad.abs().sum().item() > 0 for p in model.parameters()])
old = model[2]
new = nn.Linear(8, 5)
with torch.no_grad():
    new.weight[:3] = old.weight
    new.bias[:3] = old.bias
model[2] = new
opt = torch.optim.SGD(model.parameters(), lr=0.1)
y5 = torch.randint(0, 5, (16,))
for step in range(5):
    loss = F.cross_entropy(model(X), y5)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

# the body's optimizer made first, the new head added to it once its size is known
HEAD_ADDED_AS_A_GROUP = WIDENED_HEAD.replace(
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nX",
    "opt = torch.optim.SGD(model[:2].parameters(), lr=0.1)\nX",
).replace(
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\ny5",
    'opt.add_param_group({"params": model[2].parameters()})\ny5',
)


def test_a_head_replaced_by_surgery_then_optimized_anew_is_silent() -> None:
    recorded_silently(WIDENED_HEAD)
    # the twin: no new optimizer, the old one steps the head taken out of the model
    found = q.pitfalls(
        record(WIDENED_HEAD.replace("opt = torch.optim.SGD(model.parameters(), lr=0.1)\ny5", "y5"))
    )
    assert ("parameter-not-optimized", 3) in [(p.kind, p.line) for p in found]


def test_a_head_added_to_the_optimizer_as_a_group_is_silent() -> None:
    recorded_silently(HEAD_ADDED_AS_A_GROUP)
    twin = HEAD_ADDED_AS_A_GROUP.replace('opt.add_param_group({"params": model[2].parameters()})\n', "")
    p = the_pitfall(twin, "parameter-not-optimized", 4)
    assert p.title == "The optimizer trains only model.0"


# one A3C worker, as ikostrikov's pytorch-a3c writes it: the local model computes the
# gradients, ensure_shared_grads hands them to the shared model, whose optimizer steps
A3C_WORKER = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 32)
        self.pi = nn.Linear(32, 2)
        self.v = nn.Linear(32, 1)
    def forward(self, x):
        h = F.relu(self.body(x))
        return self.pi(h), self.v(h)
def ensure_shared_grads(model, shared_model):
    for param, shared_param in zip(model.parameters(), shared_model.parameters()):
        if shared_param.grad is not None:
            return
        shared_param._grad = param.grad
shared_model = ActorCritic()
optimizer = torch.optim.Adam(shared_model.parameters(), lr=1e-3)
model = ActorCritic()
for update in range(4):
    model.load_state_dict(shared_model.state_dict())
    states = torch.randn(5, 4)
    rewards = torch.randn(5)
    logits, values = model(states)
    dist = torch.distributions.Categorical(logits=logits)
    actions = dist.sample()
    advantage = rewards - values.squeeze(-1)
    loss = -(dist.log_prob(actions) * advantage.detach()).mean() + 0.5 * advantage.pow(2).mean()
    optimizer.zero_grad()
    model.zero_grad()
    loss.backward()
    ensure_shared_grads(model, shared_model)
    optimizer.step()
print(round(loss.item(), 4))
"""

# the Hogwild form: a copy of each local gradient
A3C_WORKER_CLONES = A3C_WORKER.replace(
    """        if shared_param.grad is not None:
            return
        shared_param._grad = param.grad
""",
    "        shared_param.grad = param.grad.clone()\n",
)


@pytest.mark.parametrize(
    ("source", "line"),
    [(A3C_WORKER, 19), (A3C_WORKER_CLONES, 17)],
    ids=["_grad = grad", "grad = grad.clone()"],
)
def test_a_local_model_whose_gradients_go_to_a_shared_one_is_silent(source: str, line: int) -> None:
    recorded_silently(source)
    # the twin: the gradients are never handed over (the shared optimizer steps nothing)
    twin = source.replace("    ensure_shared_grads(model, shared_model)\n", "")
    p = the_pitfall(twin, "parameter-not-optimized", line)
    assert p.title == "model is used but no optimizer holds its parameters"


# DCGAN's training step (pytorch/examples), stepped by hand through .data, each network's
# gradients cleared by hand right before its own backward()
DCGAN_BY_HAND = """\
import torch, torch.nn as nn
torch.manual_seed(0)
nz = 4
netG = nn.Sequential(nn.Linear(nz, 16), nn.ReLU(), nn.Linear(16, 2))
netD = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
criterion = nn.BCELoss()
lr = 0.01
def zero_grads(net):
    for p in net.parameters():
        if p.grad is not None:
            p.grad.data.zero_()
def sgd_update(net):
    for p in net.parameters():
        p.data.add_(p.grad.data, alpha=-lr)
for i in range(5):
    real = torch.randn(8, 2) + 2.0
    zero_grads(netD)
    errD_real = criterion(netD(real), torch.ones(8, 1))
    errD_real.backward()
    fake = netG(torch.randn(8, nz))
    errD_fake = criterion(netD(fake.detach()), torch.zeros(8, 1))
    errD_fake.backward()
    sgd_update(netD)
    zero_grads(netG)
    errG = criterion(netD(fake), torch.ones(8, 1))
    errG.backward()
    sgd_update(netG)
print(round(errD_real.item() + errD_fake.item(), 4), round(errG.item(), 4))
"""

DCGAN_SET_TO_NONE = DCGAN_BY_HAND.replace(
    """        if p.grad is not None:
            p.grad.data.zero_()
""",
    "        p.grad = None\n",
)


@pytest.mark.parametrize(
    ("source", "line"),
    [(DCGAN_BY_HAND, 26), (DCGAN_SET_TO_NONE, 25)],
    ids=["grad.data.zero_()", "grad = None"],
)
@pytest.mark.parametrize("net", ["netD", "netG"])
def test_a_gan_stepped_by_hand_in_the_dcgan_order_is_silent(source: str, line: int, net: str) -> None:
    recorded_silently(source)
    # the twin: one network's gradients never cleared, so each update follows their sum
    p = the_pitfall(source.replace(f"    zero_grads({net})\n", ""), "missing-zero-grad", line - 1)
    assert p.title == "Gradients from the previous update are still in .grad"
    assert f"{net}.2.bias.grad" in p.message


# a layer whose weight rows are centred at every call, run twice in one forward (weight sharing)
CENTRED_LAYER_RUN_TWICE = """\
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class CentredLinear(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d_out, d_in) * 0.3)
        self.b = nn.Parameter(torch.zeros(d_out))
    def forward(self, x):
        self.w.data.sub_(self.w.data.mean(dim=1, keepdim=True))
        return F.linear(x, self.w, self.b)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.mix = CentredLinear(8, 8)
        self.out = nn.Linear(8, 1)
    def forward(self, x):
        h = torch.tanh(self.mix(torch.tanh(self.inp(x))))
        h = torch.tanh(self.mix(h))
        return self.out(h)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(5):
    loss = F.mse_loss(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


def test_a_weight_centred_again_at_its_second_call_is_silent() -> None:
    recorded_silently(CENTRED_LAYER_RUN_TWICE)
    # the twins: centred after the forward that saved the weight, or by half the mean (which
    # the second call changes again by a quarter)
    after = CENTRED_LAYER_RUN_TWICE.replace(
        """        self.w.data.sub_(self.w.data.mean(dim=1, keepdim=True))
        return F.linear(x, self.w, self.b)""",
        """        out = F.linear(x, self.w, self.b)
        self.w.data.sub_(self.w.data.mean(dim=1, keepdim=True))
        return out""",
    )
    the_pitfall(after, "data-edit-hidden-from-autograd", 10)
    half = CENTRED_LAYER_RUN_TWICE.replace(".sub_(self.w.data.mean", ".sub_(0.5 * self.w.data.mean")
    p = the_pitfall(half, "data-edit-hidden-from-autograd", 9)
    assert p.title == "net.mix.w changed through .data after a node saved it: autograd cannot see the change"
