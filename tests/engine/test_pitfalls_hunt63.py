"""Pitfalls a README-vs-reality hunt found saying the wrong thing, or nothing:

- parameter-not-optimized said of a GAN's generator that its optimizer holds and never steps
  (or never reached, the run failing first), naming the generator's optimizer as built from
  the discriminator's parameters; it now leaves what an optimizer holds to
  optimizer-never-stepped, and names the optimizer that did step;
- softmax-over-batch missed a softmax over dim 0 taken the log of (``torch.log`` or ``.log()``)
  before nll_loss or cross_entropy, from ``F.softmax`` or an ``nn.Softmax(dim=0)`` layer;
- ``backbone.requires_grad = False`` beside an optimizer of the head alone was said as
  parameter-not-optimized, whose fix gave the backbone to the optimizer: it is
  requires-grad-set-on-module, which explains the attribute;
- probability-thresholded-at-zero said "sigmoid's output, the output of sigmoid (line 4)".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import recorded_silently, the_pitfall

# --- parameter-not-optimized: what an optimizer holds is not "held by no optimizer" -------

GAN_NEVER_STEPPED = """import torch, torch.nn as nn
G = nn.Linear(4, 4); D = nn.Linear(4, 1)
opt_g = torch.optim.SGD(G.parameters(), lr=0.01)
opt_d = torch.optim.SGD(D.parameters(), lr=0.01)
for i in range(2):
    opt_d.zero_grad(); opt_g.zero_grad()
    D(G(torch.randn(8, 4))).sum().backward()
    opt_d.step()
"""


def test_a_generator_whose_optimizer_never_steps_is_said_once_as_never_stepped() -> None:
    # it was also said as parameter-not-optimized: "the optimizer (line 3) was built from the
    # parameters of D only", line 3 being opt_g, built from G
    p = the_pitfall(GAN_NEVER_STEPPED, "optimizer-never-stepped", 3)
    assert p.title == "opt_g is never stepped: nothing is trained"


# both optimizers on one line, and the run fails at the second backward() before opt_g.step()
GAN_FAILS_FIRST = """import torch, torch.nn as nn
torch.manual_seed(0)
G = nn.Linear(4, 4); D = nn.Linear(4, 1)
opt_g = torch.optim.SGD(G.parameters(), lr=0.01); opt_d = torch.optim.SGD(D.parameters(), lr=0.01)
bce = nn.BCEWithLogitsLoss()
for i in range(4):
    real = torch.randn(8, 4); z = torch.randn(8, 4)
    opt_d.zero_grad(); opt_g.zero_grad()
    fake = G(z)
    d_loss = bce(D(real), torch.ones(8, 1)) + bce(D(fake), torch.zeros(8, 1))
    d_loss.backward()
    opt_d.step()
    g_loss = bce(D(fake), torch.ones(8, 1))
    g_loss.backward()
    opt_g.step()
"""


def test_a_generator_whose_step_the_run_never_reached_is_not_said_unoptimized() -> None:
    trace = record(GAN_FAILS_FIRST)
    assert trace.events[-1].status == "error"
    assert q.pitfalls(trace) == []


# G is given to no optimizer; the first optimizer line (3) builds opt_h, which never steps
NO_OPTIMIZER_FOR_G = """import torch, torch.nn as nn
G = nn.Linear(4, 4); D = nn.Linear(4, 1); H = nn.Linear(4, 4)
opt_h = torch.optim.SGD(H.parameters(), lr=0.01)
opt_d = torch.optim.SGD(D.parameters(), lr=0.01)
for i in range(2):
    opt_d.zero_grad(); opt_h.zero_grad()
    D(G(H(torch.randn(8, 4)))).sum().backward()
    opt_d.step()
"""


def test_a_model_no_optimizer_holds_is_said_with_the_optimizer_that_stepped() -> None:
    found = q.pitfalls(record(NO_OPTIMIZER_FOR_G))
    assert [(p.kind, p.line) for p in found] == [
        ("parameter-not-optimized", 2),
        ("optimizer-never-stepped", 3),
    ]
    p = found[0]
    assert p.title == "G is used but no optimizer holds its parameters"
    assert "opt_d (line 4) was built from the parameters of D only" in p.message
    assert "(line 3)" not in p.message + p.fix
    assert "add list(G.parameters()) to what opt_d (line 4) is built from" in p.fix


def test_a_model_beside_two_stepped_optimizers_names_each_with_its_models() -> None:
    source = NO_OPTIMIZER_FOR_G.replace("opt_d.step()", "opt_d.step(); opt_h.step()")
    (p,) = q.pitfalls(record(source))
    assert (p.kind, p.line) == ("parameter-not-optimized", 2)
    assert (
        "opt_h (line 3) was built from the parameters of H only, and opt_d (line 4) from those of D"
        in p.message
    )
    assert "add list(G.parameters()) to what opt_h (line 3) or opt_d (line 4) is built from" in p.fix


def test_a_gan_that_steps_both_optimizers_stays_silent() -> None:
    recorded_silently(GAN_NEVER_STEPPED.replace("opt_d.step()", "opt_d.step(); opt_g.step()"))


# --- softmax-over-batch: a softmax over dim 0, then its log, into the loss --------------

SOFTMAX_THEN_LOG = """import torch, torch.nn as nn, torch.nn.functional as F
model = nn.Linear(3, 4)
X = torch.randn(32, 3); y = torch.randint(0, 4, (32,))
probs = F.softmax(model(X), dim=0)
loss = F.nll_loss(torch.log(probs), y)
loss.backward()
"""

SOFTMAX_LAYER_THEN_LOG = """import torch, torch.nn as nn
model = nn.Sequential(nn.Linear(3, 4), nn.Softmax(dim=0))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(8, 3); y = torch.randint(0, 4, (8,))
for i in range(3):
    opt.zero_grad()
    probs = model(X)
    loss = nn.functional.nll_loss(torch.log(probs), y)
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize(
    ("source", "line", "softmax_line"),
    [
        (SOFTMAX_THEN_LOG, 5, 4),
        (SOFTMAX_THEN_LOG.replace("torch.log(probs)", "probs.log()"), 5, 4),
        (
            SOFTMAX_THEN_LOG.replace(
                "probs = F.softmax(model(X), dim=0)", "logp = torch.log(torch.softmax(model(X), dim=0))"
            ).replace("torch.log(probs)", "logp"),
            5,
            4,
        ),
        (SOFTMAX_THEN_LOG.replace("F.nll_loss", "F.cross_entropy"), 5, 4),
        (SOFTMAX_LAYER_THEN_LOG, 8, 7),
    ],
    ids=[
        "torch.log",
        "Tensor.log",
        "log on the softmax's line",
        "into cross_entropy",
        "nn.Softmax(dim=0) layer",
    ],
)
def test_the_log_of_a_softmax_over_the_batch_into_the_loss_is_said(
    source: str, line: int, softmax_line: int
) -> None:
    p = the_pitfall(source, "softmax-over-batch", line)
    assert p.title == "softmax over dim 0: normalised across the batch, not the classes"
    assert f"softmax at line {softmax_line} normalises over dim 0" in p.message
    assert "and its log keeps that" in p.message
    assert "not those of each row across the 4 classes" in p.message
    assert "softmax(…, dim=1)" in p.fix
    assert "log_softmax(…, dim=1) in place of the log of a softmax" in p.fix


@pytest.mark.parametrize(
    "edit",
    [
        ("dim=0", "dim=1"),
        ("dim=0", "dim=-1"),
        ("F.nll_loss(torch.log(probs), y)", "F.nll_loss(F.log_softmax(model(X), dim=1), y)"),
    ],
)
def test_the_log_of_a_softmax_over_the_classes_is_silent(edit: tuple[str, str]) -> None:
    assert edit[0] in SOFTMAX_THEN_LOG
    recorded_silently(SOFTMAX_THEN_LOG.replace(*edit))


def test_the_log_of_a_softmax_over_one_sample_s_scores_is_silent() -> None:
    # an unbatched 1-D vector of class scores: dim 0 is its classes
    recorded_silently(
        """import torch, torch.nn as nn, torch.nn.functional as F
model = nn.Linear(3, 4)
x = torch.randn(3); y = torch.tensor(2)
loss = F.nll_loss(torch.log(F.softmax(model(x), dim=0)), y)
loss.backward()
"""
    )


def test_the_log_of_a_softmax_over_the_classes_into_cross_entropy_is_silent() -> None:
    # log-probabilities into cross_entropy: its log_softmax leaves them as they are
    recorded_silently(SOFTMAX_THEN_LOG.replace("dim=0", "dim=1").replace("F.nll_loss", "F.cross_entropy"))


# --- requires-grad-set-on-module: the backbone "frozen" by attribute, the head optimized ---

FROZEN_BY_ATTRIBUTE_HEAD_ONLY = """import torch, torch.nn as nn
backbone = nn.Linear(2, 4)
head = nn.Linear(4, 1)
backbone.requires_grad = False
opt = torch.optim.SGD(head.parameters(), lr=0.1)
X = torch.randn(8, 2); y = torch.randn(8, 1)
for i in range(3):
    opt.zero_grad()
    loss = ((head(backbone(X)) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def test_a_module_frozen_by_attribute_and_left_out_of_the_optimizer_is_said_so() -> None:
    # it was said as parameter-not-optimized, whose first fix gave backbone to the optimizer
    p = the_pitfall(FROZEN_BY_ATTRIBUTE_HEAD_ONLY, "requires-grad-set-on-module", 4)
    assert p.title == "backbone.requires_grad = False freezes nothing: backbone still gets gradients"
    assert "an nn.Module has no requires_grad of its own" in p.message
    assert "backward() computes their gradients at every step" in p.message
    assert "no zero_grad() clears them" in p.message
    assert "backbone.requires_grad_(False)" in p.fix
    assert "optimizer" not in p.fix


def test_the_method_that_freezes_the_module_is_silent() -> None:
    recorded_silently(
        FROZEN_BY_ATTRIBUTE_HEAD_ONLY.replace(
            "backbone.requires_grad = False", "backbone.requires_grad_(False)"
        )
    )


def test_a_module_left_out_of_the_optimizer_without_the_attribute_is_still_unoptimized() -> None:
    source = FROZEN_BY_ATTRIBUTE_HEAD_ONLY.replace("backbone.requires_grad = False\n", "")
    p = the_pitfall(source, "parameter-not-optimized", 2)
    assert p.title == "backbone is used but no optimizer holds its parameters"


# --- probability-thresholded-at-zero: sigmoid's output named once ------------------------

SIGMOID_INLINE = """import torch, torch.nn as nn
model = nn.Linear(3, 1)
X = torch.randn(64, 3); y = torch.randint(0, 2, (64, 1)).float()
pred = (torch.sigmoid(model(X)) > 0).float()
print((pred == y).float().mean())
"""


def test_an_unnamed_sigmoid_compared_with_zero_is_named_once() -> None:
    p = the_pitfall(SIGMOID_INLINE, "probability-thresholded-at-zero", 4)
    assert "compares sigmoid's output with 0." in p.message
    assert "the output of sigmoid" not in p.message
    assert "True for all 64 elements" in p.message


def test_a_named_sigmoid_compared_with_zero_keeps_its_name_and_line() -> None:
    source = SIGMOID_INLINE.replace(
        "pred = (torch.sigmoid(model(X)) > 0).float()",
        "probs = torch.sigmoid(model(X))\npred = (probs > 0).float()",
    )
    p = the_pitfall(source, "probability-thresholded-at-zero", 5)
    assert "compares probs, the output of sigmoid (line 4), with 0." in p.message


# --- README.md quotes what these say -----------------------------------------------------

_README = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())


@pytest.mark.parametrize(
    ("source", "kind", "fragment"),
    [
        (
            SOFTMAX_THEN_LOG,
            "softmax-over-batch",
            "softmax at line 4 normalises over dim 0, the 32 samples of the batch, and its log keeps that",
        ),
        (
            NO_OPTIMIZER_FOR_G,
            "parameter-not-optimized",
            "opt_d (line 4) was built from the parameters of D only",
        ),
        (
            FROZEN_BY_ATTRIBUTE_HEAD_ONLY,
            "requires-grad-set-on-module",
            "backbone.requires_grad = False freezes nothing: backbone still gets gradients",
        ),
    ],
    ids=["softmax-over-batch", "parameter-not-optimized", "requires-grad-set-on-module"],
)
def test_readme_quotes_what_is_said(source: str, kind: str, fragment: str) -> None:
    (p,) = [p for p in q.pitfalls(record(source)) if p.kind == kind]
    assert fragment in " ".join(f"{p.title} {p.message}".split())
    assert fragment in _README
