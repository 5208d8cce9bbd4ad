"""sample-instead-of-rsample: a VAE's ``z = q.sample()`` from a distribution whose parameters
carry a graph: sample() runs under no_grad, so nothing the loss computes from z trains the
encoder. Said at the sample() line at the next backward(); rsample(), the trick by hand,
REINFORCE's scored draws, a Categorical and draws under no_grad stay silent."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import Normal

from tests.engine.snippets import recorded_silently, the_pitfall

_KIND = "sample-instead-of-rsample"

_VAE = """import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal

torch.manual_seed(0)
X = torch.rand(64, 8)
enc = nn.Linear(8, 4)
dec = nn.Linear(2, 8)
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-2)
for step in range(5):
    h = enc(X)
    mu, logvar = h[:, :2], h[:, 2:]
    std = torch.exp(0.5 * logvar)
    q = Normal(mu, std)
    z = q.sample()
    recon = torch.sigmoid(dec(z))
    kl = -0.5 * torch.sum(1 + logvar - mu ** 2 - logvar.exp()) / len(X)
    loss = F.binary_cross_entropy(recon, X) + kl
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 4))
"""


def test_a_vae_drawing_with_sample_is_said_at_the_draw() -> None:
    said = the_pitfall(_VAE, _KIND, 16)
    assert said.title == "z is drawn with sample(): no gradient reaches mu and std through it"
    assert "Line 16 (z = q.sample()) draws z from a Normal whose mu and std require grad" in said.message
    assert "z came out with requires_grad=False and no graph" in said.message
    assert "only terms that read mu and std directly (a KL term) train them" in said.message
    assert said.fix.startswith(
        "Draw with the reparameterisation trick, which keeps the graph: z = q.rsample()"
    )
    assert "mu + std * torch.randn_like(std)" in said.fix


def test_what_the_message_says_is_what_pytorch_does() -> None:
    # through sample(), mu learns only from the term that reads it directly; through rsample(),
    # from the loss on z too
    torch.manual_seed(0)
    mu = torch.zeros(3, requires_grad=True)
    std = torch.ones(3, requires_grad=True)
    z = Normal(mu, std).sample()
    assert not z.requires_grad and z.grad_fn is None
    (((z - 1) ** 2).sum() + mu.sum()).backward()
    assert mu.grad is not None and bool((mu.grad == 1).all())
    mu.grad = None
    z = Normal(mu, std).rsample()
    (((z - 1) ** 2).sum() + mu.sum()).backward()
    assert torch.allclose(mu.grad, 2 * (z.detach() - 1) + 1)


@pytest.mark.parametrize(
    ("edit", "line", "fixed"),
    [
        (("z = q.sample()", "z = Normal(mu, std).sample()"), 16, "z = Normal(mu, std).rsample()"),
        (
            ("q = Normal(mu, std)", "q = torch.distributions.Independent(Normal(mu, std), 1)"),
            16,
            "z = q.rsample()",
        ),
        (("z = q.sample()", "z = q.sample((1,))[0]"), 16, "z = q.rsample((1,))[0]"),
    ],
)
def test_other_spellings_are_said_with_their_line_rewritten(
    edit: tuple[str, str], line: int, fixed: str
) -> None:
    said = the_pitfall(_VAE.replace(*edit), _KIND, line)
    assert f"the graph: {fixed} (or by hand" in said.fix


_RSAMPLE = _VAE.replace("z = q.sample()", "z = q.rsample()")
_PREVIEW = _RSAMPLE.replace(
    "    opt.zero_grad()\n",
    "    with torch.no_grad():\n        preview = dec(Normal(mu, std).sample())\n    opt.zero_grad()\n",
)


@pytest.mark.parametrize(
    ("source", "twin", "line"),
    [
        (_RSAMPLE, _VAE, 16),
        (_VAE.replace("z = q.sample()", "z = mu + std * torch.randn_like(std)"), _VAE, 16),
        # a preview drawn under no_grad each step, before the backward()
        (
            _PREVIEW,
            _PREVIEW.replace("    with torch.no_grad():\n        preview", "    if True:\n        preview"),
            21,
        ),
    ],
)
def test_draws_that_keep_the_graph_or_need_none_stay_silent(source: str, twin: str, line: int) -> None:
    recorded_silently(source)
    the_pitfall(twin, _KIND, line)  # the same snippet drawing with sample() where it trains is said


@pytest.mark.parametrize(
    "source",
    [
        # REINFORCE with a Normal policy: the sample is scored by log_prob, a constant on purpose
        """import torch
import torch.nn as nn
from torch.distributions import Normal

torch.manual_seed(0)
policy = nn.Linear(3, 2)
log_std = nn.Parameter(torch.zeros(1))
opt = torch.optim.Adam([*policy.parameters(), log_std], lr=1e-2)
for episode in range(5):
    s = torch.randn(16, 3)
    dist = Normal(policy(s)[:, 0], log_std.exp())
    a = dist.sample()
    R = -(a - 1.0) ** 2
    loss = -(dist.log_prob(a) * R).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
        # a Categorical has no rsample: its draws (pseudo-labels here) have no gradient to lose
        """import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(0)
model = nn.Linear(3, 4)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(5):
    logits = model(torch.randn(16, 3))
    pseudo = Categorical(logits=logits).sample()
    loss = F.cross_entropy(logits, pseudo)
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
        # noise from fixed parameters, in the training loop
        _RSAMPLE.replace(
            "z = q.rsample()", "z = q.rsample() + 0.01 * Normal(torch.zeros(2), torch.ones(2)).sample()"
        ),
    ],
)
def test_draws_meant_as_constants_stay_silent(source: str) -> None:
    recorded_silently(source)
