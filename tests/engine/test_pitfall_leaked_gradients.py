"""gradient-leaked-from-other-loss: an optimizer's step that follows the gradient another
network's loss left in its ``.grad``, its ``zero_grad()`` having run before that loss's
backward() (NOTE [Leaked gradients] in engine/pitfalls/leaked_gradients.py). Said at the
leaking backward(), with the numbers plain PyTorch gives; each fix, and the patterns that
accumulate on purpose, stay silent."""

from __future__ import annotations

from typing import Any

import torch

from tests.engine.snippets import gan_loop, recorded_silently, the_pitfall

_GAN = """import torch
import torch.nn as nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(64, 2) * 0.5 + 2
for it in range(5):
    opt_d.zero_grad()
    opt_g.zero_grad()
    fake = G(torch.randn(64, 2))
    d_loss = bce(D(real), torch.ones(64, 1)) + bce(D(fake), torch.zeros(64, 1))
    d_loss.backward(retain_graph=True)
    opt_d.step()
    g_loss = bce(D(fake), torch.ones(64, 1))
    g_loss.backward()
    opt_g.step()
print(round(g_loss.item(), 3))
"""

_ACTOR_CRITIC = """import torch
import torch.nn as nn
torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 1), nn.Tanh())
critic = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
opt_actor = torch.optim.Adam(actor.parameters(), lr=1e-3)
opt_critic = torch.optim.Adam(critic.parameters(), lr=1e-3)
for it in range(5):
    s = torch.randn(64, 3)
    a = torch.rand(64, 1) * 2 - 1
    r = torch.randn(64, 1)
    opt_actor.zero_grad()
    opt_critic.zero_grad()
    actor_loss = -critic(torch.cat([s, actor(s)], 1)).mean()
    actor_loss.backward()
    opt_actor.step()
    q = critic(torch.cat([s, a], 1))
    critic_loss = ((q - r) ** 2).mean()
    critic_loss.backward()
    opt_critic.step()
print(round(critic_loss.item(), 3))
"""

_WGAN = """import torch
import torch.nn as nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
C = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
opt_g = torch.optim.RMSprop(G.parameters(), lr=5e-5)
opt_c = torch.optim.RMSprop(C.parameters(), lr=5e-5)
real = torch.randn(32, 2) + 1
for it in range(3):
    opt_g.zero_grad()
    for _ in range(5):
        opt_c.zero_grad()
        c_loss = C(G(torch.randn(32, 4))).mean() - C(real).mean()
        c_loss.backward()
        opt_c.step()
        for p in C.parameters():
            p.data.clamp_(-0.01, 0.01)
    g_loss = -C(G(torch.randn(32, 4))).mean()
    g_loss.backward()
    opt_g.step()
print(round(g_loss.item(), 4))
"""

_SAC = """import torch
import torch.nn as nn
torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 2))
q1 = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
q2 = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
opt_pi = torch.optim.Adam(policy.parameters(), lr=3e-4)
opt_q = torch.optim.Adam(list(q1.parameters()) + list(q2.parameters()), lr=3e-4)
for it in range(5):
    s = torch.randn(64, 3); a = torch.rand(64, 1) * 2 - 1; y = torch.randn(64, 1)
    opt_q.zero_grad()
    opt_pi.zero_grad()
    mu, log_std = policy(s).chunk(2, 1)
    act = torch.tanh(mu + log_std.exp() * torch.randn_like(mu))
    sa = torch.cat([s, act], 1)
    pi_loss = (0.2 * log_std - torch.min(q1(sa), q2(sa))).mean()
    pi_loss.backward()
    opt_pi.step()
    sa_data = torch.cat([s, a], 1)
    q_loss = ((q1(sa_data) - y) ** 2).mean() + ((q2(sa_data) - y) ** 2).mean()
    q_loss.backward()
    opt_q.step()
print(round(q_loss.item(), 3))
"""

_HEADS = """import torch
import torch.nn as nn
torch.manual_seed(0)
trunk = nn.Linear(8, 8); h1 = nn.Linear(8, 2); h2 = nn.Linear(8, 3)
opt_t = torch.optim.SGD(trunk.parameters(), lr=0.1)
opt_h1 = torch.optim.SGD(h1.parameters(), lr=0.1)
opt_h2 = torch.optim.SGD(h2.parameters(), lr=0.1)
x = torch.randn(16, 8); y1 = torch.randint(0, 2, (16,)); y2 = torch.randint(0, 3, (16,))
for it in range(4):
    opt_t.zero_grad(); opt_h1.zero_grad(); opt_h2.zero_grad()
    loss1 = nn.functional.cross_entropy(h1(trunk(x)), y1)
    loss1.backward()
    opt_h1.step()
    loss2 = nn.functional.cross_entropy(h2(trunk(x)), y2)
    loss2.backward()
    opt_h2.step()
    opt_t.step()
print(round(loss2.item(), 4))
"""


def _parts(source: str, leaking: str, model: str, step: str, iteration: int) -> tuple[float, float, float]:
    """Run ``source`` plainly and return, at iteration ``iteration``, the norm of what the
    statement ``leaking`` (a backward() just after ``model``'s gradients were zeroed) put
    into them, of what was added to it before the statement ``step``, and their cosine."""
    grads = f"[p.grad.clone() for p in {model}.parameters()]"
    marked = source.replace(f"    {leaking}\n", f"    {leaking}\n    __leak.append({grads})\n").replace(
        f"    {step}\n", f"    __total.append({grads})\n    {step}\n"
    )
    leaks: list[list[torch.Tensor]] = []
    totals: list[list[torch.Tensor]] = []
    scope: dict[str, Any] = {"__name__": "__main__", "__leak": leaks, "__total": totals}
    torch.manual_seed(0)
    exec(compile(marked, "plain.py", "exec"), scope)
    leak, total = (torch.cat([g.flatten() for g in got[iteration]]).double() for got in (leaks, totals))
    own = total - leak
    return float(leak.norm()), float(own.norm()), float(leak @ own / (leak.norm() * own.norm()))


def test_a_gan_whose_generator_was_zeroed_before_the_discriminator_loss_is_said_at_that_backward() -> None:
    said = the_pitfall(_GAN, "gradient-leaked-from-other-loss", 15)
    assert said.title == "opt_g.step() also followed d_loss's gradient"
    assert (
        "d_loss.backward() at line 15 filled the gradients of G as well as D's; opt_d.step() at line 16 "
        "used its own and left G's in .grad, since opt_g.zero_grad() (line 12) ran before that "
        "backward(), not after it. g_loss.backward() at line 18 added to them, so opt_g.step() at line 19 followed the "
        "sum of both losses' gradients."
    ) in said.message
    leak, own, cosine = _parts(_GAN, "d_loss.backward(retain_graph=True)", "G", "opt_g.step()", 1)
    assert f"d_loss's part has norm {leak:.3g} and g_loss's {own:.3g}" in said.message
    assert f"pointing against it (cosine {cosine:.2f}): d_loss's part undoes g_loss's" in said.message
    assert cosine < -0.9  # the discriminator's loss pushes G toward fakes that look fake
    assert said.fix.startswith(
        "Move opt_g.zero_grad() from line 12 to just before g_loss.backward() (line 18), "
        "after opt_d.step() (line 16): opt_g.step() then follows g_loss alone."
    )
    assert "D(fake.detach())" in said.fix
    assert "meant to follow" not in said.fix  # the two parts pull apart: not on purpose


def test_each_fix_of_the_gan_is_silent_and_so_is_the_dcgan_order() -> None:
    the_pitfall(_GAN, "gradient-leaked-from-other-loss", 15)
    moved = _GAN.replace("    opt_g.zero_grad()\n", "").replace(
        "    g_loss.backward()\n", "    opt_g.zero_grad()\n    g_loss.backward()\n"
    )
    recorded_silently(moved)
    recorded_silently(
        _GAN.replace("bce(D(fake), torch.zeros", "bce(D(fake.detach()), torch.zeros").replace(
            "d_loss.backward(retain_graph=True)", "d_loss.backward()"
        )
    )
    recorded_silently(gan_loop(4))


def test_an_actor_loss_that_leaks_into_the_critic_is_said_without_a_detach() -> None:
    said = the_pitfall(_ACTOR_CRITIC, "gradient-leaked-from-other-loss", 15)
    assert said.title == "opt_critic.step() also followed actor_loss's gradient"
    assert (
        "actor_loss.backward() at line 15 filled the gradients of critic as well as actor's" in said.message
    )
    leak, own, cosine = _parts(_ACTOR_CRITIC, "actor_loss.backward()", "critic", "opt_critic.step()", 1)
    assert f"actor_loss's part has norm {leak:.3g} and critic_loss's {own:.3g}" in said.message
    assert f"(cosine {cosine:.2f})" in said.message
    assert (
        "Move opt_critic.zero_grad() from line 13 to just before critic_loss.backward() (line 19)" in said.fix
    )
    assert ".detach()" not in said.fix  # the actor loss calls the critic itself: nothing to detach
    fixed = _ACTOR_CRITIC.replace("    opt_critic.zero_grad()\n", "").replace(
        "    critic_loss.backward()\n", "    opt_critic.zero_grad()\n    critic_loss.backward()\n"
    )
    recorded_silently(fixed)


def test_a_wgan_critic_loop_counts_the_backward_calls_that_leaked() -> None:
    said = the_pitfall(_WGAN, "gradient-leaked-from-other-loss", 14)
    assert said.title == "opt_g.step() also followed c_loss's gradient"
    assert (
        "c_loss.backward() at line 14 (5 calls of it) filled the gradients of G as well as C's"
        in said.message
    )
    assert "Move opt_g.zero_grad() from line 10 to just before g_loss.backward() (line 19)" in said.fix
    assert "keep c_loss off G: compute it from a .detach()ed copy of what G made" in said.fix
    recorded_silently(
        _WGAN.replace("C(G(torch.randn(32, 4))).mean() - C", "C(G(torch.randn(32, 4)).detach()).mean() - C")
    )


def test_a_policy_loss_that_leaks_into_two_critics_names_both() -> None:
    said = the_pitfall(_SAC, "gradient-leaked-from-other-loss", 17)
    assert (
        "pi_loss.backward() at line 17 filled the gradients of q1 and q2 as well as policy's" in said.message
    )
    assert "Move opt_q.zero_grad() from line 11 to just before q_loss.backward() (line 21)" in said.fix
    recorded_silently(
        _SAC.replace("    opt_q.zero_grad()\n    opt_pi", "    opt_pi").replace(
            "    q_loss.backward()", "    opt_q.zero_grad()\n    q_loss.backward()"
        )
    )


def test_a_generator_never_zeroed_is_missing_zero_grad_alone() -> None:
    the_pitfall(_GAN, "gradient-leaked-from-other-loss", 15)
    # its gradients pile up from step to step: one pitfall, the older kind, not two
    the_pitfall(_GAN.replace("    opt_g.zero_grad()\n", ""), "missing-zero-grad", 14)


def test_a_trunk_that_follows_every_head_loss_on_purpose_is_silent() -> None:
    # the trunk's own optimizer steps on the sum of the heads' losses, each head stepped on its
    # own: accumulated on purpose, in either order of the last two steps
    recorded_silently(_HEADS)
    recorded_silently(
        _HEADS.replace("    opt_h2.step()\n    opt_t.step()", "    opt_t.step()\n    opt_h2.step()")
    )
    # but a trunk with a loss of its own, added after the heads stepped on theirs, leaked them
    own = _HEADS.replace("    opt_t.step()\n", "    trunk(x).pow(2).mean().backward()\n    opt_t.step()\n")
    said = the_pitfall(own, "gradient-leaked-from-other-loss", 12)
    assert said.title == "opt_t.step() also followed loss1's gradient"


def test_gradient_accumulation_and_two_optimizers_over_one_loss_are_silent() -> None:
    the_pitfall(_GAN, "gradient-leaked-from-other-loss", 15)
    recorded_silently(
        """import torch
import torch.nn as nn
torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(8, 4), nn.ReLU())
dec = nn.Linear(4, 8)
opt_enc = torch.optim.Adam(enc.parameters(), lr=1e-3)
opt_dec = torch.optim.SGD(dec.parameters(), lr=1e-2)
x = torch.randn(32, 8)
for it in range(5):
    opt_enc.zero_grad()
    opt_dec.zero_grad()
    for chunk in x.split(8):
        loss = ((dec(enc(chunk)) - chunk) ** 2).mean()
        loss.backward()
    opt_enc.step()
    opt_dec.step()
print(round(loss.item(), 4))
"""
    )


def test_an_encoder_stepped_on_the_decoder_loss_plus_its_own_is_said_with_the_one_backward_fix() -> None:
    source = """import torch
import torch.nn as nn
torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(8, 4), nn.ReLU())
dec = nn.Linear(4, 8)
opt_enc = torch.optim.Adam(enc.parameters(), lr=1e-3)
opt_dec = torch.optim.SGD(dec.parameters(), lr=1e-2)
x = torch.randn(32, 8)
for it in range(5):
    enc.zero_grad()
    opt_dec.zero_grad()
    z = enc(x)
    recon = ((dec(z) - x) ** 2).mean()
    recon.backward(retain_graph=True)
    opt_dec.step()
    reg = z.pow(2).mean()
    reg.backward()
    opt_enc.step()
print(round(recon.item(), 4))
"""
    said = the_pitfall(source, "gradient-leaked-from-other-loss", 14)
    assert "left enc's in .grad, since enc.zero_grad() (line 10) ran before that backward()" in said.message
    assert said.fix.startswith("Move enc.zero_grad() from line 10 to just before reg.backward() (line 17)")
    # reconstruction may be meant for the encoder too: the fix says how to write that
    assert (
        "(If opt_enc is meant to follow recon too, say so in one backward(): (recon + reg).backward()"
        in said.fix
    )


def test_the_parts_are_measured_before_a_clip_rescales_the_sum() -> None:
    clipped = _GAN.replace(
        "    g_loss.backward()\n",
        "    g_loss.backward()\n    nn.utils.clip_grad_norm_(G.parameters(), 0.01)\n",
    )
    said = the_pitfall(clipped, "gradient-leaked-from-other-loss", 15)
    leak, own, cosine = _parts(
        clipped,
        "d_loss.backward(retain_graph=True)",
        "G",
        "nn.utils.clip_grad_norm_(G.parameters(), 0.01)",
        1,
    )
    assert f"d_loss's part has norm {leak:.3g} and g_loss's {own:.3g}" in said.message
    assert f"(cosine {cosine:.2f})" in said.message
