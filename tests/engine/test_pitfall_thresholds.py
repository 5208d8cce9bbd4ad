"""probability-thresholded-at-zero: ``torch.sigmoid(out) > 0`` is True everywhere (a
probability is never below 0), so every sample is predicted positive. Said at the comparison
with the count; thresholds at 0.5, logits compared with 0 and checks of the values stay
silent."""

from __future__ import annotations

import pytest
import torch

from tests.engine.snippets import plain_stdout, recorded_silently, the_pitfall

_EVAL = """import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(64, 4)
y = (X[:, 0] > 0).float()
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
loss_fn = nn.BCEWithLogitsLoss()
for epoch in range(20):
    logits = model(X).squeeze(1)
    loss = loss_fn(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    probs = torch.sigmoid(model(X).squeeze(1))
    pred = (probs > 0).float()
    print("accuracy", round((pred == y).float().mean().item(), 3))
"""


def test_probabilities_compared_with_zero_are_said_with_the_count_and_the_fix() -> None:
    said = the_pitfall(_EVAL, "probability-thresholded-at-zero", 18)
    assert said.title == "probs > 0 is True everywhere: a probability is never below 0"
    assert "compares probs, the output of sigmoid (line 17), with 0" in said.message
    assert "True for all 64 elements" in said.message
    assert "probs > 0.5" in said.fix
    # what the mistake costs: the accuracy is the share of positive labels
    torch.manual_seed(0)
    share = round((torch.randn(64, 4)[:, 0] > 0).float().mean().item(), 3)
    assert plain_stdout(_EVAL) == f"accuracy {share}\n"


def test_the_comparison_written_the_other_way_round_is_said_too() -> None:
    the_pitfall(_EVAL.replace("(probs > 0)", "(0 < probs)"), "probability-thresholded-at-zero", 18)


@pytest.mark.parametrize(
    "edit",
    [
        ("(probs > 0)", "(probs > 0.5)"),  # the fix
        ("(probs > 0)", "(model(X).squeeze(1) > 0)"),  # logits compared with 0
        ("pred = (probs > 0).float()", "assert (probs > 0).all()\n    pred = (probs > 0.5).float()"),
        ("torch.sigmoid(model(X).squeeze(1))", "torch.tanh(model(X).squeeze(1))"),  # tanh can be < 0
    ],
)
def test_thresholds_that_mean_what_they_say_are_silent(edit: tuple[str, str]) -> None:
    assert edit[0] in _EVAL
    recorded_silently(_EVAL.replace(*edit))
