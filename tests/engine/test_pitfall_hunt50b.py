"""A false-alarm hunt over four detectors, on 91 correct snippets written as real code
writes them and 18 buggy ones in unusual styles.

- kl-term-sign-flipped (VAEs: the PyTorch example, beta-VAE with annealed beta, conditional VAE,
  ``kld_weight``, an ELBO negated, ``kl_divergence``, the positive form, per-dimension KL, IWAE,
  free bits, a KL logged positive, methods ``loss(self, …)`` returning tuples). Found: ``kl = -kl``
  after minus the KL was ignored; a ``kl`` of one function was read as another's (an ``elbo()``
  for evaluation beside the loss function); an optimizer with ``maximize=True`` raises the
  ELBO. Widened: a tuple returned and unpacked, a method call ``self.kl_loss(…)``, the four terms
  summed later (``kl_element``), and a function's own ``kld`` no longer judged by a global of
  that name.
- reshape-instead-of-permute for heads (nanoGPT, timm, multi-query, Perceiver, patches,
  pixel shuffle, windows, chunks, toy sizes). Found: a group norm written out,
  ``x.view(N, G, -1)`` of ``(N, C, H, W)`` and back, with as many groups as rows.
- eval-mode-in-training (fine-tuning, frozen batch norm, linear probes, PGD, TENT, distillation,
  target networks, pseudo-labels). Found: a discriminator put in eval for G's step, which only
  updates G; ``model.eval()`` whose comment says why (batch norm on its running statistics with
  a batch of one, a policy's log-probabilities without dropout).
- scheduler-stepped-past-its-period for MultiStepLR (per epoch, detectron-style iterations,
  SequentialLR warm-up, gamma=1, ``while it < max_iters``). Found: milestones counted in steps
  (``total_steps // 2``), a loader of one batch, and a step at each epoch's last batch, all read
  against the batches per epoch the run had.
"""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

_VAE = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
enc, dec = nn.Linear(10, 6), nn.Linear(3, 10)
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-2)
x = torch.randn(8, 10)
"""

_NEGATED_AGAIN = """for i in range(5):
    mu, logvar = enc(x).chunk(2, 1)
    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
    recon = ((dec(z) - x) ** 2).sum(1)
    kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1)
    kl = -kl  # the KL divergence, per sample
    loss = (recon + kl).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""

_TWO_FUNCTIONS = """def vae_loss(x):
    mu, logvar = enc(x).chunk(2, 1)
    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return F.mse_loss(dec(z), x, reduction='sum') + kl
def elbo(x):
    mu, logvar = enc(x).chunk(2, 1)
    kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), 1)
    return (-F.mse_loss(dec(mu), x, reduction='none').sum(1) + kl).mean()
for i in range(5):
    loss = vae_loss(x)
    opt.zero_grad(); loss.backward(); opt.step()
with torch.no_grad():
    print(round(elbo(x).item(), 3))
"""

_EVALUATE_FIRST = """def evaluate(x):
    with torch.no_grad():
        mu, logvar = enc(x).chunk(2, 1)
        kld = 0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)
        return -kld.mean()
for i in range(5):
    mu, logvar = enc(x).chunk(2, 1)
    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
    kld = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)
    loss = (F.mse_loss(dec(z), x, reduction='none').sum(1) + kld).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(evaluate(x).item(), 3))
"""

_MAXIMIZED = """opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-3, maximize=True)
for i in range(5):
    mu, logvar = enc(x).chunk(2, 1)
    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
    elbo = -F.mse_loss(dec(z), x, reduction='sum') + 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    opt.zero_grad(); elbo.backward(); opt.step()
print(round(elbo.item(), 3))
"""


@pytest.mark.parametrize("loop", [_NEGATED_AGAIN, _TWO_FUNCTIONS, _EVALUATE_FIRST, _MAXIMIZED])
def test_minus_the_kl_negated_scoped_or_maximized_stays_silent(loop: str) -> None:
    recorded_silently(_VAE + loop)


_VAE_CLASS = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.e = nn.Linear(10, 6); self.d = nn.Linear(3, 10)
    def kl_loss(self, mu, logvar):
        return 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    def loss(self, x):
        mu, logvar = self.e(x).chunk(2, 1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        recon = F.mse_loss(self.d(z), x, reduction="sum")
        kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return recon + kl, recon, kl
vae = VAE()
opt = torch.optim.Adam(vae.parameters(), lr=1e-2)
x = torch.randn(8, 10)
for i in range(20):
    loss, recon, kl = vae.loss(x)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
"""


def test_minus_the_kl_in_a_returned_tuple_is_said_at_the_term() -> None:
    said = the_pitfall(_VAE_CLASS, "kl-term-sign-flipped", 13)
    assert said.message.startswith("kl at line 13 (kl = 0.5 * torch.sum(")
    assert "Line 14 adds it into the loss" in said.message


def test_a_method_returning_minus_the_kl_is_told_to_return_the_kl() -> None:
    source = _VAE_CLASS.replace(
        "    loss, recon, kl = vae.loss(x)\n",
        "    mu, logvar = vae.e(x).chunk(2, 1)\n"
        "    loss = F.mse_loss(vae.d(mu), x, reduction='sum') + vae.kl_loss(mu, logvar)\n",
    )
    said = the_pitfall(source, "kl-term-sign-flipped", 8)
    assert said.message.startswith("kl_loss() at line 8 (return 0.5 * torch.sum(")
    assert said.fix.startswith("Make it the KL divergence with a minus: return -0.5 * torch.sum(")
    assert said.fix.endswith("or subtract it at line 20.")


@pytest.mark.parametrize(
    ("loop", "line"),
    [
        # a loss function's own kld, beside a global kld that is positive
        (
            "def loss_fn(x):\n"
            "    mu, logvar = enc(x).chunk(2, 1)\n"
            "    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)\n"
            "    kld = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n"
            "    return F.mse_loss(dec(z), x, reduction='sum') + kld\n"
            "kld = torch.tensor(1.0)\n"
            "for i in range(20):\n"
            "    loss = loss_fn(x)\n"
            "    opt.zero_grad(); loss.backward(); opt.step()\n"
            "print(round(loss.item(), 3), kld.item())\n",
            9,
        ),
        # the four terms per dimension, summed where the loss adds them
        (
            "for i in range(20):\n"
            "    mu, logvar = enc(x).chunk(2, 1)\n"
            "    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)\n"
            "    kl_element = 0.5 * (1 + logvar - mu.pow(2) - logvar.exp())\n"
            "    loss = F.mse_loss(dec(z), x, reduction='sum') / 8 + kl_element.sum(1).mean()\n"
            "    opt.zero_grad(); loss.backward(); opt.step()\n"
            "print(round(loss.item(), 3))\n",
            9,
        ),
    ],
)
def test_minus_the_kl_in_a_function_or_per_dimension_is_said(loop: str, line: int) -> None:
    the_pitfall(_VAE + loop, "kl-term-sign-flipped", line)


@pytest.mark.parametrize(
    "loop",
    [
        # minus the KL taken off with -=, and a tuple whose ELBO is negated
        "for i in range(5):\n"
        "    mu, logvar = enc(x).chunk(2, 1)\n"
        "    loss = F.mse_loss(dec(mu), x, reduction='sum')\n"
        "    loss -= 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n",
        "def terms(x):\n"
        "    mu, logvar = enc(x).chunk(2, 1)\n"
        "    neg_kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n"
        "    ll = -F.mse_loss(dec(mu), x, reduction='sum')\n"
        "    return ll + neg_kl, ll, neg_kl\n"
        "for i in range(5):\n"
        "    elbo, ll, neg_kl = terms(x)\n"
        "    loss = -elbo\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n",
    ],
)
def test_minus_the_kl_subtracted_or_negated_with_its_elbo_stays_silent(loop: str) -> None:
    recorded_silently(_VAE + loop)


_GROUP_NORM = """import torch, torch.nn as nn
torch.manual_seed(0)
def group_norm(x, G, eps=1e-5):
    N, C, H, W = x.shape
    x = x.view(N, G, -1)
    x = (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True) + eps).sqrt()
    return x.view(N, C, H, W)
conv = nn.Conv2d(3, 8, 3, padding=1)
y = group_norm(conv(torch.randn(2, 3, 4, 4)), G=4)
y.relu().mean().backward()
print(tuple(y.shape))
"""


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        ("", ""),
        # a module's names for them
        ("x.view(N, G, -1)", "x.reshape(N, num_groups, -1)"),
        ("x.view(N, C, H, W)", "x.reshape(N, channels, H, W)"),
    ],
)
def test_a_group_norm_with_as_many_groups_as_rows_stays_silent(wrong: str, right: str) -> None:
    source = _GROUP_NORM.replace(wrong, right).replace(
        "    N, C, H, W = x.shape\n", "    N, C, H, W = x.shape\n    num_groups, channels = G, C\n"
    )
    recorded_silently(source)


def test_heads_merged_by_reshape_to_minus_one_after_attn_at_v_is_said() -> None:
    source = """import torch, torch.nn as nn
torch.manual_seed(0)
b, n, heads = 2, 7, 4
q, k, v = nn.Linear(16, 48)(torch.randn(b, n, 16)).chunk(3, dim=-1)
q, k, v = (t.reshape(b, n, heads, -1).transpose(1, 2) for t in (q, k, v))
attn = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(dim=-1)
out = (attn @ v).reshape(b, n, -1)
out.sum().backward()
print(tuple(out.shape))
"""
    said = the_pitfall(source, "reshape-instead-of-permute", 7)
    assert said.title == "reshape mixes heads with positions: (2, 4, 7, 4) cut into (2, 7, 16)"
    recorded_silently(source.replace("(attn @ v).reshape", "(attn @ v).transpose(1, 2).reshape"))


_FINETUNE = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(8, 3))
# batch size 1: keep batch norm on its pretrained running statistics
model.eval()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for i in range(4):
    loss = F.cross_entropy(model(torch.randn(1, 3, 8, 8)), torch.randint(0, 3, (1,)))
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        ("", ""),
        (
            "# batch size 1: keep batch norm on its pretrained running statistics\nmodel.eval()",
            "model.eval()  # no dropout: log-probs must match the sampling policy",
        ),
    ],
)
def test_eval_mode_whose_comment_says_why_stays_silent(wrong: str, right: str) -> None:
    recorded_silently(_FINETUNE.replace(wrong, right))


def test_eval_mode_without_a_reason_is_still_said() -> None:
    source = _FINETUNE.replace("# batch size 1: keep batch norm on its pretrained running statistics\n", "")
    the_pitfall(source, "eval-mode-in-training", 4)


_GAN = """import torch, torch.nn as nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Dropout(0.3), nn.Linear(16, 1))
optG = torch.optim.Adam(G.parameters(), lr=1e-3)
optD = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for it in range(4):
    D.eval()
    lossG = bce(D(G(torch.randn(16, 4))), torch.ones(16, 1))
    optG.zero_grad(); lossG.backward(); optG.step()
    D.train()
    lossD = bce(D(torch.randn(16, 2) + 2), torch.ones(16, 1)) + bce(D(G(torch.randn(16, 4)).detach()), torch.zeros(16, 1))
    optD.zero_grad(); lossD.backward(); optD.step()
print(round(lossD.item(), 4))
"""


def test_a_discriminator_in_eval_for_the_generator_s_step_stays_silent() -> None:
    recorded_silently(_GAN)


def test_a_discriminator_left_in_eval_for_its_own_step_is_said() -> None:
    source = _GAN.replace("    D.train()\n", "")
    the_pitfall(source, "eval-mode-in-training", 9)


_SCHEDULE = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(10, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
def batch():
    x = torch.randn(16, 10)
    return x, x.sum(1, keepdim=True)
loader = [batch() for _ in range(5)]
epochs = 8
total_steps = epochs * len(loader)
sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[total_steps // 4, total_steps // 2], gamma=0.3)
for epoch in range(epochs):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        sched.step()
print(opt.param_groups[0]["lr"])
"""


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # milestones counted in steps: at a quarter and at half the run
        ("", ""),
        ("milestones=[total_steps // 4, total_steps // 2]", "milestones=[total_steps // 2]"),
        # one batch an epoch (a full-batch loader): per batch is per epoch
        ("range(5)]\nepochs = 8", "range(1)]\nepochs = 8"),
    ],
)
def test_milestones_counted_in_steps_or_a_batch_an_epoch_stay_silent(wrong: str, right: str) -> None:
    recorded_silently(_SCHEDULE.replace(wrong, right))


def test_milestones_in_epochs_stepped_at_each_epoch_s_last_batch_stay_silent() -> None:
    # two batches an epoch: the scheduler steps half as often as the optimizer, once an epoch
    source = _SCHEDULE.replace("total_steps // 4, total_steps // 2", "2, 4").replace("range(5)]", "range(2)]")
    source = source.replace(
        "        sched.step()\n", "        if i == len(loader) - 1:\n            sched.step()\n"
    )
    recorded_silently(source)


def test_milestones_counted_in_epochs_stepped_per_batch_are_still_said() -> None:
    source = _SCHEDULE.replace("total_steps // 4, total_steps // 2", "2, 4")
    said = the_pitfall(source, "scheduler-stepped-past-its-period", 16)
    assert "milestones=[m * len(loader) for m in [2, 4]]" in said.fix


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # detectron-style milestones in iterations, and an iteration-based while loop
        (
            "milestones=[total_steps // 4, total_steps // 2]",
            "milestones=[total_steps * 2 // 3, total_steps * 8 // 9]",
        ),
        ("for epoch in range(epochs):", "it = 0\nwhile it < total_steps:"),
    ],
)
def test_iteration_counted_milestones_stay_silent(wrong: str, right: str) -> None:
    source = _SCHEDULE.replace(wrong, right)
    if "while" in source:
        source = source.replace("        sched.step()\n", "        sched.step()\n        it += 1\n")
    recorded_silently(source)
