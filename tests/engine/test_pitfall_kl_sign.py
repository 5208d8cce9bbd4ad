"""kl-term-sign-flipped: a VAE's ``0.5 * sum(1 + logvar - mu**2 - exp(logvar))``, minus the KL
divergence, added to the loss, so each step raises the KL and the loss falls without bound.
Each silent near miss is one edit away from a snippet that is said."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

_VAE = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
enc, dec = nn.Linear(20, 8), nn.Linear(4, 20)
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
data = torch.rand(64, 20)
for epoch in range(30):
    mu, logvar = enc(data).chunk(2, dim=1)
    z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
    rec = F.binary_cross_entropy(torch.sigmoid(dec(z)), data, reduction="sum")
    kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    loss = rec + kl
    opt.zero_grad(); loss.backward(); opt.step()
print(round(rec.item(), 1), round(kl.item(), 1))
"""

# the PyTorch examples' VAE, its loss function with the minus dropped
_EXAMPLES_VAE = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
enc, dec = nn.Linear(20, 8), nn.Linear(4, 20)

def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x, reduction="sum")
    KLD = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD

opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-3)
data = torch.rand(64, 20)
for epoch in range(10):
    mu, logvar = enc(data).chunk(2, dim=1)
    z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
    loss = loss_function(torch.sigmoid(dec(z)), data, mu, logvar)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 2))
"""


def test_minus_the_kl_added_to_the_loss_is_said_with_the_run_s_numbers() -> None:
    said = the_pitfall(_VAE, "kl-term-sign-flipped", 10)
    assert said.title == "The KL term is minus the KL divergence, and the loss adds it"
    assert said.message.startswith(
        "kl at line 10 (kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())) is minus the KL divergence"
    )
    assert "Line 11 adds it into the loss backward() runs on" in said.message
    assert "; kl is -" in said.message and "at the end of this run" in said.message
    assert (
        "the KL term falls without bound and the loss falls with it (here the loss ends at -" in said.message
    )
    assert said.fix == (
        "Make it the KL divergence with a minus: kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()); "
        "or subtract it at line 11."
    )


def test_a_loss_function_returning_it_is_said_at_the_term_with_the_return_line() -> None:
    said = the_pitfall(_EXAMPLES_VAE, "kl-term-sign-flipped", 7)
    assert said.message.startswith("KLD at line 7 (KLD = 0.5 * torch.sum(")
    assert "Line 8 adds it into the loss" in said.message
    assert said.fix.startswith("Make it the KL divergence with a minus: KLD = -0.5 * torch.sum(")


def test_a_term_written_inline_in_the_loss_is_told_to_be_subtracted() -> None:
    source = _VAE.replace(
        "    kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n    loss = rec + kl\n",
        "    loss = rec + 0.1 * torch.mean(0.5 * torch.sum(1 + logvar - mu ** 2 - torch.exp(logvar), dim=1))\n"
        "    kl = loss - rec\n",
    )
    said = the_pitfall(source, "kl-term-sign-flipped", 10)
    assert said.message.startswith(
        "The KL term at line 10, torch.sum(1 + logvar - mu ** 2 - torch.exp(logvar), dim=1)"
    )
    assert said.fix.startswith("Subtract it at line 10")


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # the textbook sign
        ("kl = 0.5 * torch.sum(", "kl = -0.5 * torch.sum("),
        # minus the KL, subtracted
        ("loss = rec + kl", "loss = rec - kl"),
        # the KL written term by term with the other signs
        (
            "kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())",
            "kl = 0.5 * torch.sum(mu.pow(2) + logvar.exp() - 1 - logvar)",
        ),
        # an ELBO that adds minus the KL, negated before backward()
        ("loss = rec + kl", "elbo = -rec + kl\n    loss = -elbo / data.shape[0]"),
        # the minus in front of a mean of per-sample sums
        (
            "kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())",
            "kl = torch.mean(-0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1))",
        ),
    ],
)
def test_the_kl_divergence_with_its_sign_right_stays_silent(wrong: str, right: str) -> None:
    assert wrong in _VAE
    recorded_silently(_VAE.replace(wrong, right))
