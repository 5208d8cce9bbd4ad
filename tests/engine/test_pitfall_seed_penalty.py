"""seed-reset-in-loop: ``torch.manual_seed(…)`` run inside the training loop before random
draws, so every iteration draws the same numbers; penalty-without-gradient: a weight penalty
built from ``p.data`` or ``p.detach()`` and added to the loss, a constant to autograd. Each
with the correct twins that stay silent."""

from __future__ import annotations

from tests.engine.snippets import recorded_silently, the_pitfall

_SEED_PER_BATCH = """import torch
from torch import nn

model = nn.Linear(10, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
w_true = torch.randn(10, 1)
for step in range(6):
    torch.manual_seed(0)
    x = torch.randn(32, 10)
    loss = ((model(x) - x @ w_true) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_SEED_PER_EPOCH = """import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

X = torch.randn(48, 4)
y = (X.sum(1) > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(3):
    torch.manual_seed(42)
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("done")
"""

_SEED_IN_A_HELPER = """import random
import torch
import torch.nn as nn

def set_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)

model = nn.Linear(3, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
data = torch.randn(50, 3)
target = data.sum(1, keepdim=True)
for epoch in range(4):
    set_seed(7)
    idx = torch.randint(0, 50, (8,))
    loss = ((model(data[idx]) - target[idx]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained")
"""


def test_a_seed_per_batch_before_randn_is_said_with_its_calls_and_draws() -> None:
    said = the_pitfall(_SEED_PER_BATCH, "seed-reset-in-loop", 8)
    assert "torch.manual_seed(0) ran 6 times, once per iteration of the loop at line 7" in said.message
    assert "with 5 optimizer steps between the first call and the last" in said.message
    assert "torch.randn at line 9" in said.message
    assert said.fix.startswith("Seed once, above the loop: move torch.manual_seed(0) before line 7.")


def test_a_seed_per_epoch_names_the_shuffle_and_the_dropout() -> None:
    said = the_pitfall(_SEED_PER_EPOCH, "seed-reset-in-loop", 11)
    assert "ran 3 times" in said.message
    assert "the shuffled order of loader (line 12)" in said.message
    assert "the dropout masks of model (line 13)" in said.message


def test_a_helper_that_seeds_is_said_at_its_call_in_the_loop() -> None:
    said = the_pitfall(_SEED_IN_A_HELPER, "seed-reset-in-loop", 14)
    assert said.message.startswith("set_seed(7) ran 4 times")
    assert "torch.randint at line 15" in said.message


def test_a_seed_above_the_loop_is_silent() -> None:
    fixed = _SEED_PER_BATCH.replace("    torch.manual_seed(0)\n", "").replace(
        "model = nn.Linear", "torch.manual_seed(0)\nmodel = nn.Linear"
    )
    recorded_silently(fixed)


def test_a_seed_that_changes_each_epoch_is_silent() -> None:
    recorded_silently(_SEED_PER_BATCH.replace("torch.manual_seed(0)", "torch.manual_seed(step)"))


def test_a_seed_before_training_that_draws_nothing_is_silent() -> None:
    recorded_silently("""import torch
from torch import nn

X = torch.linspace(-1, 1, 40).unsqueeze(1)
Y = 3 * X + 1
model = nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(5):
    torch.manual_seed(0)
    loss = ((model(X) - Y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
""")


def test_a_fixed_probe_set_drawn_after_training_or_under_no_grad_is_silent() -> None:
    after = """import torch
from torch import nn

X = torch.randn(64, 4)
Y = X.sum(1, keepdim=True)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    loss = ((model(X) - Y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.manual_seed(123)
    probe = torch.randn(16, 4)
    err = ((model(probe) - probe.sum(1, keepdim=True)) ** 2).mean()
    print(epoch, round(err.item(), 3))
"""
    recorded_silently(after)
    before = """import torch
from torch import nn

X = torch.linspace(-1, 1, 32).unsqueeze(1)
model = nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    torch.manual_seed(5)
    with torch.no_grad():
        probe = torch.rand(8, 1)
        print(round((model(probe) - 2 * probe).abs().mean().item(), 3))
    loss = ((model(X) - 2 * X) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    recorded_silently(before)


def test_the_same_seed_before_each_run_of_a_sweep_is_silent() -> None:
    recorded_silently("""import torch
from torch import nn

results = {}
for lr in [0.1, 0.01, 0.001]:
    torch.manual_seed(0)
    model = nn.Linear(5, 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(4):
        x = torch.randn(16, 5)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    results[lr] = loss.item()
print(len(results))
""")
    recorded_silently("""import copy
import torch
from torch import nn

X = torch.randn(60, 3)
Y = X.sum(1, keepdim=True)
base = nn.Linear(3, 1)
init = copy.deepcopy(base.state_dict())
for fold in range(3):
    torch.manual_seed(0)
    base.load_state_dict(init)
    opt = torch.optim.SGD(base.parameters(), lr=0.1)
    for step in range(3):
        idx = torch.randint(0, 60, (10,))
        loss = ((base(X[idx]) - Y[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
print("folds done")
""")


_PENALTY_DATA = """import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 4)
y = torch.randint(0, 3, (32,))
lam = 1e-3
for step in range(3):
    ce = nn.functional.cross_entropy(model(x), y)
    l2 = sum((p.data ** 2).sum() for p in model.parameters())
    loss = ce + lam * l2
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""

_PENALTY_DETACH = """import torch
import torch.nn as nn

net = nn.Linear(6, 1)
opt = torch.optim.Adam(net.parameters(), lr=0.01)
X = torch.randn(40, 6)
Y = torch.randn(40, 1)
for epoch in range(3):
    mse = ((net(X) - Y) ** 2).mean()
    reg = 0.01 * torch.norm(net.weight.detach(), p=1)
    loss = mse + reg
    opt.zero_grad()
    loss.backward()
    opt.step()
print("ok")
"""


def test_an_l2_penalty_of_p_data_is_said_at_the_add_with_its_value_and_parameters() -> None:
    said = the_pitfall(_PENALTY_DATA, "penalty-without-gradient", 13)
    assert (
        said.title == "l2 reads the weights through .data: it adds to the loss and nothing to the gradients"
    )
    assert "computed at line 12 from the values of 4 parameters (model.0.weight" in said.message
    assert "That term has no grad_fn" in said.message
    assert said.fix.startswith("Compute it from the parameters themselves: l2 = sum((p ** 2).sum() for p in")


def test_a_penalty_of_a_detached_weight_is_said() -> None:
    said = the_pitfall(_PENALTY_DETACH, "penalty-without-gradient", 11)
    assert "1 parameter (net.weight) read through .detach()" in said.message
    assert "reg = 0.01 * torch.norm(net.weight, p=1)" in said.fix


def test_a_penalty_added_in_place_in_a_loop_over_named_parameters_is_said() -> None:
    source = """import torch
from torch import nn

model = nn.Linear(5, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(16, 5)
t = torch.randn(16, 2)
for i in range(3):
    loss = nn.MSELoss()(model(x), t)
    penalty = 0.0
    for name, p in model.named_parameters():
        if "weight" in name:
            penalty = penalty + p.data.pow(2).sum()
    loss += 1e-2 * penalty
    opt.zero_grad()
    loss.backward()
    opt.step()
print("ok")
"""
    said = the_pitfall(source, "penalty-without-gradient", 14)
    assert "penalty = penalty + p.pow(2).sum()" in said.fix


def test_the_penalty_of_the_parameters_themselves_is_silent() -> None:
    recorded_silently(_PENALTY_DATA.replace("p.data ** 2", "p ** 2"))
    recorded_silently(_PENALTY_DETACH.replace("net.weight.detach()", "net.weight"))


def test_a_penalty_only_printed_beside_the_loss_is_silent() -> None:
    recorded_silently("""import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(20, 4)
y = torch.randn(20, 1)
for step in range(3):
    mse = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    mse.backward()
    opt.step()
    wnorm = sum((p.data ** 2).sum() for p in model.parameters())
    total = mse + 1e-3 * wnorm
    print(step, round(total.item(), 4))
""")


def test_constants_that_are_not_the_weights_and_anchors_read_off_them_are_silent() -> None:
    recorded_silently("""import math
import torch
from torch import nn

model = nn.Linear(3, 2)
anchor = [p.detach().clone() for p in model.parameters()]
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(12, 3)
y = torch.randn(12, 2)
log2pi = torch.tensor(0.5 * math.log(2 * math.pi))
for step in range(3):
    nll = 0.5 * ((model(x) - y) ** 2).mean() + log2pi
    drift = sum(((p - a) ** 2).sum() for p, a in zip(model.parameters(), anchor))
    scale = model.weight.detach().norm()
    loss = nll + 0.1 * drift + 0.01 * model.weight.pow(2).sum() / scale
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
""")


def test_a_loss_module_built_in_the_loop_is_not_a_fresh_start() -> None:
    source = _SEED_PER_BATCH.replace(
        "loss = ((model(x) - x @ w_true) ** 2).mean()", "loss = nn.MSELoss()(model(x), x @ w_true)"
    )
    the_pitfall(source, "seed-reset-in-loop", 8)


def test_draws_from_a_generator_of_their_own_are_silent() -> None:
    recorded_silently(
        _SEED_PER_EPOCH.replace(
            "shuffle=True", "shuffle=True, generator=torch.Generator().manual_seed(1)"
        ).replace("nn.Dropout(0.2), ", "")
    )
    recorded_silently(
        _SEED_PER_BATCH.replace("torch.randn(32, 10)", "torch.randn(32, 10, generator=g)").replace(
            "for step in", "g = torch.Generator()\nfor step in"
        )
    )
