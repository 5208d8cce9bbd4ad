"""An optimizer built anew each iteration carries on the count of the one it replaced
(NOTE [Rebuilt optimizers] in engine/lineage.py), and optimizer-rebuilt says why that hurts
an optimizer that keeps state."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_stdout, recorded_silently, the_pitfall

LOOP = (
    "import torch\nimport torch.nn as nn\n\ntorch.manual_seed(0)\nmodel = nn.Linear(4, 1)\n"
    "X, y = torch.randn(16, 4), torch.randn(16, 1)\nfor step in range(20):\n"
    "    opt = torch.optim.{make}\n    opt.zero_grad()\n    loss = ((model(X) - y) ** 2).mean()\n"
    "    loss.backward()\n    opt.step()\n    print(round(loss.item(), 6))\n"
)


def test_a_rebuilt_optimizer_is_one_series_recorded_in_full_for_its_first_steps_only() -> None:
    source = LOOP.format(make="Adam(model.parameters(), lr=0.01)")
    trace = record(source)
    steps = q.optimizer_steps(trace)
    assert [(s.optimizer, s.step) for s in steps] == [("opt (Adam)", n) for n in range(1, 21)]
    assert [s.detail for s in steps] == [True] * 3 + [False] * 17  # Limits.detail_steps, as for one optimizer
    assert q.stdout(trace) == plain_stdout(source)  # the losses are PyTorch's own
    (p,) = q.pitfalls(trace)
    assert (p.kind, p.line) == ("optimizer-rebuilt", 8)
    assert p.title == "A new Adam every iteration: its state restarts at every step"
    assert "opt is built anew before each step, at line 8 (opt = torch.optim.Adam(" in p.message
    assert "the running averages of the gradient and of its square start from nothing every time" in p.message
    assert p.fix.startswith(
        "Build the optimizer once, before the loop (opt = torch.optim.Adam(…) above the for line)"
    )


def test_an_optimizer_without_state_rebuilt_is_counted_on_and_not_flagged() -> None:
    trace = record(LOOP.format(make="SGD(model.parameters(), lr=0.1)"))
    assert [s.step for s in q.optimizer_steps(trace)] == list(range(1, 21))
    assert q.pitfalls(trace) == []
    # with momentum it keeps a buffer: flagged
    (p,) = q.pitfalls(record(LOOP.format(make="SGD(model.parameters(), lr=0.1, momentum=0.9)")))
    assert p.kind == "optimizer-rebuilt" and "the state it keeps from step to step (momentum" in p.message


def test_a_second_phase_with_a_new_optimizer_counts_on_unflagged() -> None:
    """Fine-tuning with a fresh optimizer after 5 steps is not a rebuild at every step; its
    steps continue the curve, and one of another class starts its own."""
    source = (
        "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Linear(4, 1)\n"
        "X, y = torch.randn(16, 4), torch.randn(16, 1)\n"
        "for lr, make in ((0.1, torch.optim.Adam), (0.01, torch.optim.Adam), (0.01, torch.optim.SGD)):\n"
        "    opt = make(model.parameters(), lr=lr)\n    for step in range(5):\n        opt.zero_grad()\n"
        "        ((model(X) - y) ** 2).mean().backward()\n        opt.step()\n"
    )
    trace = record(source)
    assert [(s.optimizer, s.step) for s in q.optimizer_steps(trace)] == [
        *(("opt (Adam)", n) for n in range(1, 11)),
        *(("opt (SGD)", n) for n in range(1, 6)),
    ]
    assert q.pitfalls(trace) == []


EPOCHS = """import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
data = [(torch.randn(16, 8), torch.randn(16, 1)) for _ in range(5)]
for epoch in range(4):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in data:
        loss = F.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    print(epoch, round(loss.item(), 4))
"""


def test_an_optimizer_rebuilt_every_epoch_is_said_with_its_steps_per_epoch() -> None:
    p = the_pitfall(EPOCHS, "optimizer-rebuilt", 6)
    assert p.title == "A new Adam every epoch: its state restarts every 5 steps"
    assert p.message.startswith(
        "opt is built anew every 5 steps, at line 6 (opt = torch.optim.Adam(model.parameters(), lr=1e-3)), "
        "with the same settings over the same parameters"
    )
    assert p.fix.startswith("Build the optimizer once, before the epoch loop")


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # a new phase with another learning rate each time
        ("lr=1e-3)", "lr=1e-3 * 0.5 ** epoch)"),
        # two epochs: one rebuild
        ("range(4)", "range(2)"),
        # a new model each time (folds, trials)
        ("    opt = torch.optim.Adam(", "    model = nn.Linear(8, 1)\n    opt = torch.optim.Adam("),
        # an optimizer without state
        ("torch.optim.Adam(model.parameters(), lr=1e-3)", "torch.optim.SGD(model.parameters(), lr=1e-3)"),
        # built once
        (
            "for epoch in range(4):\n    opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n",
            "opt = torch.optim.Adam(model.parameters(), lr=1e-3)\nfor epoch in range(4):\n",
        ),
    ],
)
def test_an_optimizer_kept_or_rebuilt_for_a_reason_stays_silent(wrong: str, right: str) -> None:
    assert wrong in EPOCHS
    recorded_silently(EPOCHS.replace(wrong, right))
