"""targets-flattened-in-other-order, bootstrap-target-not-detached and clip-before-unscale:
a sequence model's time-first scores flattened against batch-first targets, a TD / Q-learning
target built from the network it trains and not detached, and gradients clipped while a
GradScaler still scales them. Each said with the run's numbers; the right versions silent."""

from __future__ import annotations

import pytest
import torch

from tests.engine.snippets import plain_stdout, recorded_silently, the_pitfall

# --- targets-flattened-in-other-order ---------------------------------------------------

_SEQUENCE = """import torch
import torch.nn as nn

torch.manual_seed(0)
V = 12
seqs = torch.randint(0, V, (16, 7))
emb = nn.Embedding(V, 16)
rnn = nn.LSTM(16, 32)
out_layer = nn.Linear(32, V)
params = list(emb.parameters()) + list(rnn.parameters()) + list(out_layer.parameters())
opt = torch.optim.Adam(params, lr=1e-2)
for epoch in range(10):
    inp, tgt = seqs[:, :-1], seqs[:, 1:]
    h, _ = rnn(emb(inp).transpose(0, 1))
    logits = out_layer(h)
    loss = nn.functional.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
"""


def test_time_first_scores_against_batch_first_targets_are_said_with_the_rows_that_line_up() -> None:
    said = the_pitfall(_SEQUENCE, "targets-flattened-in-other-order", 16)
    assert said.title == (
        "cross_entropy's scores and targets are flattened from (6, 16) and (16, 6): rows mismatched"
    )
    assert "flattened from shape (6, 16, 12) at line 16" in said.message
    assert "the targets from shape (16, 6) at line 16:" in said.message
    assert "the same 96 rows" in said.message
    assert "Only 6 of the 96 targets sit on their own row" in said.message
    assert "logits.transpose(0, 1).reshape(-1, 12)" in said.fix and "batch_first=True" in said.fix


def test_the_rows_really_are_mismatched_in_plain_pytorch() -> None:
    # (6, 16) flattened row i is (i // 16, i % 16); (16, 6) flattened read back is (i % 6, i // 6)
    a, b = 6, 16
    grid = torch.arange(a * b).reshape(a, b)  # the id of each (step, sequence)
    scores_rows = grid.reshape(-1)
    target_rows = grid.t().contiguous().reshape(-1)  # the same pairs, batch-first, flattened
    assert int((scores_rows == target_rows).sum()) == 6


def test_flattened_on_separate_lines_with_view_and_nll_loss_is_said_at_the_loss() -> None:
    source = _SEQUENCE.replace(
        "    loss = nn.functional.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))\n",
        "    flat_logp = torch.log_softmax(logits, -1).view(-1, V)\n"
        "    flat_tgt = tgt.contiguous().view(-1)\n"
        "    loss = nn.functional.nll_loss(flat_logp, flat_tgt)\n",
    )
    said = the_pitfall(source, "targets-flattened-in-other-order", 18)
    assert said.title.startswith("nll_loss's scores and targets are flattened from (6, 16) and (16, 6)")
    assert "at line 16 (flat_logp = torch.log_softmax(logits, -1).view(-1, V))" in said.message
    assert "at line 17 (flat_tgt = tgt.contiguous().view(-1))" in said.message


@pytest.mark.parametrize(
    "edit",
    [
        ("logits.reshape(-1, V)", "logits.transpose(0, 1).reshape(-1, V)"),  # scores made batch-first
        ("tgt.reshape(-1)", "tgt.t().reshape(-1)"),  # targets made time-first
        ("seqs[:, :-1], seqs[:, 1:]", "seqs[:, :-1].t(), seqs[:, 1:].t()"),  # time-first throughout
    ],
)
def test_scores_and_targets_flattened_in_the_same_order_stay_silent(edit: tuple[str, str]) -> None:
    source = _SEQUENCE.replace(*edit)
    if edit[0].startswith("seqs"):
        source = source.replace("emb(inp).transpose(0, 1)", "emb(inp)")
    recorded_silently(source)


def test_a_batch_first_layer_stays_silent() -> None:
    recorded_silently(
        _SEQUENCE.replace("nn.LSTM(16, 32)", "nn.LSTM(16, 32, batch_first=True)").replace(
            "emb(inp).transpose(0, 1)", "emb(inp)"
        )
    )


def test_binary_labels_flattened_against_time_first_logits_are_said() -> None:
    said = the_pitfall(
        """import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(16, 7, 4)
y = (x.sum(-1) > 0).float()
rnn = nn.GRU(4, 8)
head = nn.Linear(8, 1)
opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)
for epoch in range(5):
    h, _ = rnn(x.transpose(0, 1))
    logits = head(h).squeeze(-1)
    loss = nn.functional.binary_cross_entropy_with_logits(logits.reshape(-1), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
""",
        "targets-flattened-in-other-order",
        13,
    )
    assert "flattened from shape (7, 16) at line 13" in said.message
    assert "Only 4 of the 112 targets sit on their own row" in said.message
    assert "logits.transpose(0, 1).reshape(-1) to match" in said.fix


# --- bootstrap-target-not-detached --------------------------------------------------------

_DQN = """import torch
import torch.nn as nn

torch.manual_seed(0)
q = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(q.parameters(), lr=1e-3)
for step in range(20):
    s, s2 = torch.randn(32, 4), torch.randn(32, 4)
    a, r = torch.randint(0, 2, (32,)), torch.randn(32)
    q_sa = q(s).gather(1, a[:, None]).squeeze(1)
    target = r + 0.99 * q(s2).max(1).values
    loss = nn.functional.mse_loss(q_sa, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
"""


def test_a_q_learning_target_with_gradient_is_said_with_the_parameters_it_shares() -> None:
    said = the_pitfall(_DQN, "bootstrap-target-not-detached", 12)
    assert said.title == "The target of mse_loss carries gradient: it is built from the same parameters"
    assert "Line 12 (loss = nn.functional.mse_loss(q_sa, target))" in said.message
    assert "4 parameter tensors (226 numbers: q.0.bias, q.0.weight, q.2.bias, q.2.weight)" in said.message
    assert "with torch.no_grad(): target = " in said.fix and ".detach()" in said.fix


def test_the_target_does_send_gradient_into_the_network_in_plain_pytorch() -> None:
    torch.manual_seed(0)
    q = torch.nn.Linear(4, 2)
    s, s2, r = torch.randn(8, 4), torch.randn(8, 4), torch.randn(8)
    grads = []
    for detached in (False, True):
        q.weight.grad = None
        target = r + 0.99 * q(s2).max(1).values
        torch.nn.functional.mse_loss(q(s)[:, 0], target.detach() if detached else target).backward()
        grads.append(q.weight.grad.clone())
    assert not torch.allclose(grads[0], grads[1])


def test_a_critic_s_td_target_through_smooth_l1_loss_module_is_said() -> None:
    source = """import torch
import torch.nn as nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.SGD(critic.parameters(), lr=0.05)
criterion = nn.SmoothL1Loss()
for step in range(20):
    s, s2 = torch.randn(16, 3), torch.randn(16, 3)
    r, done = torch.randn(16, 1), (torch.rand(16, 1) < 0.1).float()
    td_target = r + 0.9 * critic(s2) * (1 - done)
    loss = criterion(critic(s), td_target)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 3))
"""
    said = the_pitfall(source, "bootstrap-target-not-detached", 12)
    assert said.title.startswith("The target of smooth_l1_loss carries gradient")
    assert "4 parameter tensors (81 numbers: critic.0.bias" in said.message


@pytest.mark.parametrize(
    "edit",
    [
        (
            "    target = r + 0.99 * q(s2).max(1).values\n",
            "    with torch.no_grad():\n        target = r + 0.99 * q(s2).max(1).values\n",
        ),
        ("q(s2).max(1).values\n", "q(s2).max(1).values.detach()\n"),
        ("target = r + 0.99 * q(s2).max(1).values", "target = (r + 0.99 * q(s2).max(1).values).detach()"),
    ],
)
def test_a_target_without_gradient_stays_silent(edit: tuple[str, str]) -> None:
    recorded_silently(_DQN.replace(*edit))


def test_a_target_network_under_no_grad_stays_silent() -> None:
    recorded_silently(
        _DQN.replace(
            "opt = torch",
            "q_target = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))\nopt = torch",
        ).replace(
            "    target = r + 0.99 * q(s2).max(1).values\n",
            "    with torch.no_grad():\n        target = r + 0.99 * q_target(s2).max(1).values\n",
        )
    )


def test_a_target_network_with_gradient_is_not_this_pitfall() -> None:
    # other parameters: the target is a constant for q (parameter-not-optimized may say the rest)
    from engine import queries as q
    from engine import record

    source = _DQN.replace(
        "opt = torch", "q_target = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))\nopt = torch"
    ).replace("q(s2).max(1)", "q_target(s2).max(1)")
    kinds = [p.kind for p in q.pitfalls(record(source))]
    assert "bootstrap-target-not-detached" not in kinds


def test_two_predictions_compared_with_no_add_stay_silent() -> None:
    # a consistency (siamese) loss: both sides are predictions, neither a bootstrapped target
    recorded_silently(
        """import torch
import torch.nn as nn

torch.manual_seed(0)
f = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(f.parameters(), lr=0.05)
for step in range(10):
    x = torch.randn(16, 6)
    loss = nn.functional.mse_loss(f(x), f(x + 0.01 * torch.randn(16, 6)))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 5))
"""
    )


def test_a_consistency_loss_of_a_residual_model_stays_silent() -> None:
    # its output is an add of two branches with gradient, not a reward plus a prediction
    recorded_silently(
        """import torch
import torch.nn as nn

torch.manual_seed(0)


class Res(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Linear(6, 6)
        self.g = nn.Linear(6, 6)

    def forward(self, x):
        return self.g(x) + torch.tanh(self.f(x))


m = Res()
opt = torch.optim.SGD(m.parameters(), lr=0.05)
for step in range(10):
    x = torch.randn(16, 6)
    loss = nn.functional.mse_loss(m(x), m(x + 0.01 * torch.randn(16, 6)))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 6))
"""
    )


# --- clip-before-unscale ------------------------------------------------------------------

_SCALED = """import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
X = torch.randn(64, 10)
y = X[:, :1] * 2
for step in range(20):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(model(X).float(), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
print(round(loss.item(), 4))
"""


def test_clipping_scaled_gradients_is_said_with_the_scale() -> None:
    said = the_pitfall(_SCALED, "clip-before-unscale", 15)
    assert said.title == "clip_grad_norm_ before scaler.unscale_(): it clips gradients scaled by 65,536"
    assert "multiplied by the scale, 65,536 now" in said.message
    assert "line 15 (torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))" in said.message
    assert "a gradient of norm max_norm / 65,536" in said.message
    assert "scaler.unscale_(opt); torch.nn.utils.clip_grad_norm_" in said.fix


def test_the_loss_falls_less_than_when_unscaled_first_in_plain_pytorch() -> None:
    clipped_scaled = float(plain_stdout(_SCALED))
    unscaled = _SCALED.replace(
        "    torch.nn.utils.clip_grad_norm_", "    scaler.unscale_(opt)\n    torch.nn.utils.clip_grad_norm_"
    )
    assert float(plain_stdout(unscaled)) < clipped_scaled


def test_clip_grad_value_inside_a_training_function_with_the_scaler_on_self_is_said() -> None:
    source = """import torch
import torch.nn as nn

torch.manual_seed(0)


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.amp = torch.amp.GradScaler("cpu")

    def fit(self, X, y):
        for _ in range(5):
            loss = ((self.model(X) - y) ** 2).mean()
            self.opt.zero_grad()
            self.amp.scale(loss).backward()
            torch.nn.utils.clip_grad_value_(self.model.parameters(), 0.5)
            self.amp.step(self.opt)
            self.amp.update()
        return loss


X = torch.randn(32, 4)
print(round(Trainer().fit(X, X.sum(1, keepdim=True)).item(), 4))
"""
    said = the_pitfall(source, "clip-before-unscale", 18)
    assert said.title == "clip_grad_value_ before self.amp.unscale_(): it clips gradients scaled by 65,536"
    assert "a bound 65,536 times smaller than the one you wrote" in said.message


@pytest.mark.parametrize(
    "edit",
    [
        (
            "    torch.nn.utils.clip_grad_norm_",
            "    scaler.unscale_(opt)\n    torch.nn.utils.clip_grad_norm_",
        ),
        ('torch.amp.GradScaler("cpu")', 'torch.amp.GradScaler("cpu", enabled=False)'),
        ("    scaler.scale(loss).backward()\n", "    loss.backward()\n"),
    ],
)
def test_unscaled_disabled_or_unused_scalers_stay_silent(edit: tuple[str, str]) -> None:
    source = _SCALED.replace(*edit)
    if edit[1] == "    loss.backward()\n":
        source = source.replace("    scaler.step(opt)\n    scaler.update()\n", "    opt.step()\n")
    recorded_silently(source)
