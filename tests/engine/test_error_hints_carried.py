"""backward() through a graph the last iteration freed, because a tensor is carried from one
iteration into the next (engine/explain_carried.py): the hint names the carried tensor and
its line and gives detach() (or .item()), not retain_graph=True."""

from __future__ import annotations

import re

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


@pytest.mark.parametrize("name", ["an RNN cell's hidden state", "an LSTM cell's two states"])
def test_retain_graph_taken_as_the_fix_fails_next_at_the_step_and_is_said(name: str) -> None:
    # PyTorch's own suggestion for the error above; the next backward() then meets the weights
    # opt.step() changed in place, and the plain in-place hint blamed an `x += 1` there is none of
    source = CASES[name][0].replace("loss.backward()", "loss.backward(retain_graph=True)")
    (error,) = q.errors(record(source))
    assert "modified by an inplace operation" in error.message
    assert str(plain_error(source)) == error.message
    assert error.hint is not None
    assert error.hint.startswith(
        "This backward() walks back into the previous iteration's graph: h carries it from one "
        "iteration to the next (line 10: "
    )
    assert "retain_graph=True kept that graph alive" in error.hint
    assert "the optimizer's step() changed in place the weights that graph saved, so" in error.hint
    assert "h = h.detach()" in error.hint
    assert "Then drop retain_graph=True: each backward() walks its own iteration's graph only." in error.hint
    # what the recorder saw: the node that saved the weight and the step that changed it
    assert re.search(
        r"Here AddmmBackward0 \(in cell\) saved .+ for backward \(line 10\); then opt\.step\(\) \(line 14\) "
        r"changed it in place\.$",
        error.hint,
    )
    assert (
        "x += 1" not in error.hint
        and "Run every backward() over this graph before the step" not in error.hint
    )


_TBPTT = """import torch
import torch.nn as nn

torch.manual_seed(0)
rnn = nn.RNN(4, 8, batch_first=True)
head = nn.Linear(8, 1)
opt = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=0.01)
data, targets = torch.randn(6, 2, 5, 4), torch.randn(6, 2, 1)
h = torch.zeros(1, 2, 8)
for x, t in zip(data, targets):
    out, h = rnn(x, h)
    loss = ((head(out[:, -1]) - t) ** 2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()
"""


def test_the_tensor_the_error_names_is_said_where_the_step_was_not_recorded() -> None:
    # an nn.RNN's weights go into one fused op: the recorder saw no saved tensor to name
    (error,) = q.errors(record(_TBPTT))
    assert "modified by an inplace operation" in error.message
    assert str(plain_error(_TBPTT)) == error.message
    assert error.hint is not None
    assert "h carries it from one iteration to the next (line 11: out, h = rnn(x, h))" in error.hint
    assert "the weights that graph saved (the [8, 8] tensor the error names is one of them)" in error.hint
    assert "h = h.detach()" in error.hint


def test_an_in_place_change_of_the_snippet_s_own_keeps_its_hint() -> None:
    # nothing carried: the line that changed the saved tensor is named as before
    source = "import torch\nw = torch.ones(3, requires_grad=True)\ny = w.exp()\ny += 1\ny.sum().backward()\n"
    (error,) = q.errors(record(source))
    assert error.hint is not None
    assert error.hint.startswith(
        "ExpBackward0 saved y for backward (line 3); then line 4 (y += 1) changed it"
    )
