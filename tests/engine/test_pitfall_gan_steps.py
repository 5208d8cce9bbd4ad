"""step-without-gradients where backward() reached only other optimizers' parameters: a GAN's
generator step whose loss comes from ``fake = G(z).detach()``, the copy made for the
discriminator, so ``opt_g.step()`` finds G's parameters without gradients while D's have
them. Said with the parameters it did reach and the line that cut G off; a GAN that detaches
only for the discriminator stays silent."""

from __future__ import annotations

import torch

from tests.engine.snippets import recorded_silently, the_pitfall

_DETACHED_FOR_BOTH = """import torch
import torch.nn as nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(64, 2) * 0.5 + 2
for it in range(10):
    fake = G(torch.randn(64, 2)).detach()
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(64, 1)) + bce(D(fake), torch.zeros(64, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(fake), torch.ones(64, 1))
    g_loss.backward()
    opt_g.step()
print(round(g_loss.item(), 3))
"""


def test_a_generator_step_from_the_detached_fake_is_said_with_the_line_that_cut_it_off() -> None:
    said = the_pitfall(_DETACHED_FOR_BOTH, "step-without-gradients", 19)
    assert said.title == "opt_g.step() found no gradients: its loss does not reach its parameters"
    assert (
        "backward() did run, but it reached only parameters another optimizer steps "
        "(D.0.weight, D.0.bias, D.2.weight, D.2.bias)"
    ) in said.message
    assert "Line 11 (fake = G(torch.randn(64, 2)).detach()) cuts them off" in said.message
    assert "D(fake.detach())" in said.fix


def test_what_the_message_says_is_what_pytorch_does() -> None:
    # plain PyTorch: G never changes, D does
    namespace: dict[str, object] = {}
    torch.manual_seed(0)
    exec(
        _DETACHED_FOR_BOTH.replace(
            "for it in range(10):", "g0 = [p.clone() for p in G.parameters()]\nfor it in range(10):"
        ),
        namespace,
    )
    g, d = namespace["G"], namespace["D"]
    assert isinstance(g, torch.nn.Module) and isinstance(d, torch.nn.Module)
    g0 = namespace["g0"]
    assert isinstance(g0, list)
    assert all(torch.equal(p, p0) for p, p0 in zip(g.parameters(), g0, strict=True))
    assert all(p.grad is None for p in g.parameters())


def test_a_gan_that_detaches_for_the_discriminator_only_is_silent() -> None:
    recorded_silently(
        _DETACHED_FOR_BOTH.replace(
            "fake = G(torch.randn(64, 2)).detach()", "fake = G(torch.randn(64, 2))"
        ).replace("bce(D(fake), torch.zeros(64, 1))", "bce(D(fake.detach()), torch.zeros(64, 1))")
    )
