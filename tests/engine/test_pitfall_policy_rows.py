"""softmax-over-batch, read by rows: a policy written for one state, ``nn.Softmax(dim=0)`` (or
``F.softmax(…, dim=0)``) over its 1-D scores, run on a batch of states, whose rows are then read
as each sample's distribution over the actions (``gather(1, a)``, ``Categorical``,
``multinomial``). Each column sums to 1 across the batch instead, and a sample's probabilities
depend on the rest of its batch. The single-state policy stays silent."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

_BATCHED = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
policy = nn.Linear(4, 2)
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(5):
    states = torch.randn(8, 4)
    probs = F.softmax(policy(states), dim=0)
    actions = torch.multinomial(probs, 1).squeeze(1)
    log_probs = probs.log().gather(1, actions.unsqueeze(1)).squeeze(1)
    loss = -(log_probs * torch.randn(8)).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""

_CATEGORICAL = """import torch, torch.nn as nn
from torch.distributions import Categorical
torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3), nn.Softmax(dim=0))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(5):
    states = torch.randn(8, 4)
    dist = Categorical(policy(states))
    a = dist.sample()
    loss = -(dist.log_prob(a) * torch.randn(8)).mean()
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 4))
"""


def test_a_batch_s_rows_drawn_and_gathered_from_a_softmax_over_dim_0_are_said() -> None:
    said = the_pitfall(_BATCHED, "softmax-over-batch", 7)
    assert said.title.startswith("softmax over dim 0, then each row read as a distribution: the rows sum to ")
    assert (
        "normalises over dim 0, the 8 samples of the batch, and at line 8 multinomial draws from each row"
        in (said.message)
    )
    assert said.fix.startswith("Normalise each sample's row: softmax(…, dim=1)")


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        (
            "    actions = torch.multinomial(probs, 1).squeeze(1)\n",
            "    actions = torch.randint(0, 2, (8,))\n",
        ),
        (
            "    actions = torch.multinomial(probs, 1).squeeze(1)\n",
            "    actions = probs.detach().argmax(1)\n",
        ),
    ],
)
def test_a_gather_alone_is_said_at_the_softmax(wrong: str, right: str) -> None:
    said = the_pitfall(_BATCHED.replace(wrong, right), "softmax-over-batch", 7)
    assert "at line 9 gather(1, …) picks each sample's entry of its row" in said.message


def test_categorical_of_a_policy_ending_in_softmax_dim_0_is_said_with_its_layer() -> None:
    said = the_pitfall(_CATEGORICAL, "softmax-over-batch", 8)
    assert "(the nn.Softmax built at line 4)" in said.message
    assert "Categorical reads each row as one sample's distribution" in said.message
    assert said.fix.startswith("Normalise each sample's row: nn.Softmax(dim=1) at line 4 (or dim=-1)")


@pytest.mark.parametrize(
    ("source", "wrong", "right"),
    [
        # normalised over the actions
        (_BATCHED, "dim=0)", "dim=1)"),
        (_CATEGORICAL, "nn.Softmax(dim=0)", "nn.Softmax(dim=-1)"),
        # one state at a time: 1-D scores, where dim=0 is the actions
        (_CATEGORICAL, "states = torch.randn(8, 4)", "states = torch.randn(4)"),
    ],
)
def test_a_policy_normalised_over_its_actions_stays_silent(source: str, wrong: str, right: str) -> None:
    assert wrong in source
    source = source.replace(wrong, right)
    if "torch.randn(4)" in right:
        source = source.replace("torch.randn(8)).mean()", "torch.randn(())).mean()")
    recorded_silently(source)
