"""parameter-not-optimized for a target network: ``q_target = copy.deepcopy(q)`` whose output
reaches the loss with its graph gets gradients no optimizer uses. Said as a copy of the
trained model, with the no_grad fix, where it blamed "layers kept in a plain Python list";
the target computed under no_grad, or the copy frozen, stays silent."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

_TARGET_WITH_GRAPH = """import copy
import torch
import torch.nn as nn
torch.manual_seed(0)
q = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
q_target = copy.deepcopy(q)
opt = torch.optim.Adam(q.parameters(), lr=1e-3)
for step in range(10):
    s, a, r, s2 = torch.randn(32, 4), torch.randint(0, 2, (32,)), torch.randn(32), torch.randn(32, 4)
    q_sa = q(s).gather(1, a[:, None]).squeeze(1)
    target = r + 0.99 * q_target(s2).max(1).values
    loss = nn.functional.smooth_l1_loss(q_sa, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        q_target.load_state_dict(q.state_dict())
print(round(loss.item(), 3))
"""


def test_a_target_network_that_gets_gradients_is_said_as_a_copy_of_the_trained_model() -> None:
    said = the_pitfall(_TARGET_WITH_GRAPH, "parameter-not-optimized", 6)
    assert said.title == "q_target, a copy of q no optimizer steps, gets gradients"
    assert (
        "Line 6 (q_target = copy.deepcopy(q)) made q_target a copy of q, which an optimizer trains"
        in said.message
    )
    assert "plain Python list" not in said.message
    assert "torch.no_grad()" in said.fix and "q_target.requires_grad_(False) once after line 6" in said.fix


@pytest.mark.parametrize(
    "edit",
    [
        (
            "    target = r + 0.99 * q_target(s2).max(1).values",
            "    with torch.no_grad():\n        target = r + 0.99 * q_target(s2).max(1).values",
        ),
        ("q_target = copy.deepcopy(q)", "q_target = copy.deepcopy(q).requires_grad_(False)"),
    ],
)
def test_a_target_network_kept_off_the_graph_is_silent(edit: tuple[str, str]) -> None:
    assert edit[0] in _TARGET_WITH_GRAPH
    recorded_silently(_TARGET_WITH_GRAPH.replace(*edit))


def test_a_model_of_its_own_left_out_of_the_optimizer_is_said_by_name() -> None:
    # an attention layer used beside the encoder, its parameters never given to AdamW: the
    # message blamed "layers kept in a plain Python list"
    said = the_pitfall(
        """import torch, torch.nn as nn
torch.manual_seed(0)
enc = nn.Linear(8, 8)
head = nn.Linear(8, 3)
opt = torch.optim.AdamW(list(enc.parameters()) + list(head.parameters()), lr=1e-3)
mha = nn.MultiheadAttention(8, 2)
for step in range(3):
    x, y = torch.randn(5, 4, 8), torch.randint(0, 3, (4,))
    a, _ = mha(enc(x), enc(x), enc(x))
    loss = nn.functional.cross_entropy(head(a.mean(0)), y)
    opt.zero_grad(); loss.backward(); opt.step()
print(round(loss.item(), 3))
""",
        "parameter-not-optimized",
        6,
    )
    assert said.title == "mha is used but no optimizer holds its parameters"
    assert "the optimizer (line 5) was built from the parameters of enc and head only" in said.message
    assert "plain Python list" not in said.message
    assert "add list(mha.parameters()) to what the optimizer (line 5) is built from" in said.fix
