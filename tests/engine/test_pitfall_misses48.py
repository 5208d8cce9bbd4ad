"""Misses of hunt 48, now told. As snapshot-shares-weights: an EMA ("shadow") model that is
the live model under a second name (``ema = model``, then ``zip(ema.parameters(),
model.parameters())``), and early stopping's ``best_model = copy.copy(model)``, a shallow copy
whose parameters are the live ones. As scores-compared-to-labels: ``out.max(1)[0]`` (the
values) or ``torch.sigmoid(logits)`` compared ``==`` with integer labels. Each with clean
twins, small edits of the buggy snippet, that must stay silent."""

from __future__ import annotations

from tests.engine.snippets import recorded_silently, the_pitfall

_EMA_ALIAS = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(6, 2)
ema = model                        # meant copy.deepcopy(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(8):
    x, y = torch.randn(16, 6), torch.randint(0, 2, (16,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    with torch.no_grad():
        for pe, p in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.99).add_(p, alpha=0.01)
print(loss.item())
"""

_SOFT_UPDATE_ALIAS = """import torch, torch.nn as nn
torch.manual_seed(0)
policy_net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
target_net = policy_net
opt = torch.optim.Adam(policy_net.parameters(), lr=1e-3)
tau = 0.05
for it in range(6):
    s, a, r, s2 = torch.randn(8, 4), torch.randint(0, 2, (8,)), torch.randn(8), torch.randn(8, 4)
    with torch.no_grad():
        target = r + 0.9 * target_net(s2).max(1).values
    q = policy_net(s).gather(1, a[:, None]).squeeze(1)
    loss = nn.functional.smooth_l1_loss(q, target)
    opt.zero_grad(); loss.backward(); opt.step()
    for tp, p in zip(target_net.parameters(), policy_net.parameters()):
        tp.data.copy_(tau * p.data + (1 - tau) * tp.data)
print(round(loss.item(), 4))
"""

_COPY_COPY = """import copy
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(64, 4); y = X.sum(1, keepdim=True)
best, best_model = float("inf"), None
for epoch in range(20):
    loss = nn.functional.mse_loss(model(X), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if loss.item() < best:
        best, best_model = loss.item(), copy.copy(model)
print(round(best, 4), best_model.weight.data)
"""

_COPY_COPY_FROM = """from copy import copy
import torch, torch.nn as nn
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(net.parameters(), lr=0.01)
X, y = torch.randn(32, 3), torch.randn(32, 1)
initial = copy(net)
for epoch in range(10):
    loss = ((net(X) - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
drift = sum((a - b).abs().sum() for a, b in zip(net.parameters(), initial.parameters()))
print(float(drift))
"""


def _edited(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


def test_an_ema_model_bound_to_the_live_model_is_said_at_the_alias() -> None:
    said = the_pitfall(_EMA_ALIAS, "snapshot-shares-weights", 4)
    assert said.title == "ema is model: one model under two names"
    assert "Line 4 (ema = model) binds a second name to the same model" in said.message
    assert "every optimizer step (8 ran) changes both" in said.message
    assert (
        "line 11 (for pe, p in zip(ema.parameters(), model.parameters()):) pairs each of model's "
        "parameters with itself" in said.message
    )
    assert said.fix.startswith("Make ema a copy: ema = copy.deepcopy(model) (import copy)")


def test_a_soft_updated_target_net_bound_to_the_policy_net_is_said_at_the_alias() -> None:
    said = the_pitfall(_SOFT_UPDATE_ALIAS, "snapshot-shares-weights", 4)
    assert said.title == "target_net is policy_net: one model under two names"
    assert "every optimizer step (6 ran) changes both" in said.message
    assert "target_net = copy.deepcopy(policy_net)" in said.fix


def test_a_shallow_copy_of_the_model_kept_as_the_best_is_said_where_it_is_taken() -> None:
    said = the_pitfall(_COPY_COPY, "snapshot-shares-weights", 13)
    assert said.title == "best_model is a shallow copy: it shares model's live weights"
    assert "Line 13 (best, best_model = loss.item(), copy.copy(model)) keeps a copy of model" in said.message
    assert "(best_model.weight is model.weight itself)" in said.message
    assert "(20 steps ran in all)" in said.message
    assert said.fix.startswith("Copy the tensors too: best, best_model = loss.item(), copy.deepcopy(model)")


def test_a_shallow_copy_taken_before_the_loop_with_from_copy_import_copy_is_said() -> None:
    said = the_pitfall(_COPY_COPY_FROM, "snapshot-shares-weights", 7)
    assert "(initial.0.weight is net.0.weight itself)" in said.message
    assert "(10 steps ran in all)" in said.message
    assert "Copy the tensors too: initial = copy.deepcopy(net)" in said.fix


def test_an_ema_model_that_is_a_deep_copy_is_silent() -> None:
    fixed = _edited(_EMA_ALIAS, "ema = model ", "import copy; ema = copy.deepcopy(model)")
    recorded_silently(fixed)


def test_a_second_name_never_walked_beside_the_model_is_silent() -> None:
    renamed = _edited(
        _EMA_ALIAS,
        "        for pe, p in zip(ema.parameters(), model.parameters()):\n"
        "            pe.mul_(0.99).add_(p, alpha=0.01)\n",
        "        norm = sum(p.norm() for p in ema.parameters())\n",
    )
    recorded_silently(renamed)


def test_a_target_net_that_is_a_deep_copy_is_silent() -> None:
    fixed = _edited(
        _SOFT_UPDATE_ALIAS, "target_net = policy_net", "import copy; target_net = copy.deepcopy(policy_net)"
    )
    recorded_silently(fixed)


def test_a_deep_copy_kept_as_the_best_is_silent() -> None:
    recorded_silently(_edited(_COPY_COPY, "copy.copy(model)", "copy.deepcopy(model)"))


def test_a_shallow_copy_taken_after_training_is_silent() -> None:
    moved = _edited(
        _COPY_COPY_FROM,
        "initial = copy(net)\n",
        "",
    )
    moved = _edited(moved, "drift = sum(", "initial = copy(net)\ndrift = sum(")
    recorded_silently(moved)


_MAX_VALUES = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(6, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x, y = torch.randn(32, 6), torch.randint(0, 4, (32,))
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    opt.zero_grad(); loss.backward(); opt.step()
pred = out.max(1)[0]
acc = (pred == y).float().mean()
print(acc.item())
"""

_SIGMOID_VS_LABELS = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(64, 4); y = (X[:, 0] > 0).long()
for step in range(15):
    logits = model(X).squeeze(1)
    loss = nn.functional.binary_cross_entropy_with_logits(logits, y.float())
    opt.zero_grad(); loss.backward(); opt.step()
acc = (torch.sigmoid(logits) == y).float().mean()
print(acc.item())
"""


def test_the_values_of_a_max_compared_with_labels_are_said_with_the_indices_as_the_fix() -> None:
    said = the_pitfall(_MAX_VALUES, "scores-compared-to-labels", 11)
    assert said.title == "pred (scores) compared with y (class labels): they never match"
    assert (
        "Line 11 (acc = (pred == y).float().mean()) compares pred, 32 floating-point scores" in said.message
    )
    assert "with y, 32 class labels of dtype int64" in said.message
    assert "0 of 32 are equal here" in said.message
    assert said.fix.startswith("Take the indices, not the values: pred = out.max(1)[1]")


def test_probabilities_compared_with_labels_are_said_with_a_threshold_as_the_fix() -> None:
    said = the_pitfall(_SIGMOID_VS_LABELS, "scores-compared-to-labels", 10)
    assert said.title.startswith("torch.sigmoid(logits) (probabilities) compared with y")
    assert "64 floating-point probabilities" in said.message and "0 of 64 are equal here" in said.message
    assert "acc = ((torch.sigmoid(logits) > 0.5).long() == y).float().mean()" in said.fix


def test_the_indices_of_a_max_compared_with_labels_are_silent() -> None:
    recorded_silently(_edited(_MAX_VALUES, "out.max(1)[0]", "out.max(1)[1]"))


def test_an_argmax_kept_as_floats_compared_with_labels_is_silent() -> None:
    recorded_silently(_edited(_MAX_VALUES, "out.max(1)[0]", "out.argmax(1).float()"))


def test_thresholded_probabilities_compared_with_labels_are_silent() -> None:
    recorded_silently(
        _edited(
            _SIGMOID_VS_LABELS, "(torch.sigmoid(logits) == y)", "((torch.sigmoid(logits) > 0.5).long() == y)"
        )
    )


def test_rounded_probabilities_compared_with_labels_are_silent() -> None:
    recorded_silently(
        _edited(_SIGMOID_VS_LABELS, "(torch.sigmoid(logits) == y)", "(torch.sigmoid(logits).round() == y)")
    )
