"""backward() through a graph the last iteration freed, because a tensor is carried from one
iteration into the next (engine/explain_carried.py): the hint names the carried tensor and
its line and gives detach() (or .item()), not retain_graph=True."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.conftest import case_source
from tests.engine.snippets import plain_error, recorded_silently

RNN = """
import torch, torch.nn as nn
torch.manual_seed(0)
cell = nn.{cell}(4, 8)
head = nn.Linear(8, 1)
opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.1)
{state}
for batch in range(3):
    x, y = torch.randn(2, 4), torch.randn(2, 1)
    {step}
    loss = ((head(h) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
CASES = {
    "an RNN cell's hidden state": (
        RNN.format(cell="RNNCell", state="h = torch.zeros(2, 8)", step="h = cell(x, h)"),
        "h carries it from one iteration to the next (line 10: h = cell(x, h))",
        "Detach it once per iteration, before it is used: h = h.detach()",
    ),
    "an LSTM cell's two states": (
        RNN.format(
            cell="LSTMCell",
            state="h, c = torch.zeros(2, 8), torch.zeros(2, 8)",
            step="h, c = cell(x, (h, c))",
        ),
        "h carries it from one iteration to the next (line 10: h, c = cell(x, (h, c)))",
        "h = h.detach()",
    ),
    "a running total backpropagated every iteration": (
        "import torch\nw = torch.ones(3, requires_grad=True)\ntotal = 0\nfor i in range(3):\n"
        "    loss = (w * i).sum()\n    total = total + loss\n    total.backward()\n",
        "total carries it from one iteration to the next (line 6: total = total + loss)",
        "Accumulate a number instead: total += loss.item()",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_tensor_carried_across_iterations_is_named_in_the_hint(name: str) -> None:
    source, carried, fix = CASES[name]
    (error,) = q.errors(record(source))
    assert "backward through the graph a second time" in error.message
    assert str(plain_error(source)) == error.message  # PyTorch's own error, unchanged
    assert error.hint is not None and carried in error.hint and fix in error.hint
    assert "retain_graph=True would only hide the error" in error.hint


def test_the_state_detached_each_iteration_runs() -> None:
    recorded_silently(
        RNN.format(cell="RNNCell", state="h = torch.zeros(2, 8)", step="h = cell(x, h.detach())")
    )


def test_backward_twice_on_one_graph_keeps_its_own_hint() -> None:
    (error,) = q.errors(record(case_source("backward_twice_error.py")))
    assert error.hint is not None and error.hint.startswith(
        "The first backward() freed the graph's saved tensors"
    )
