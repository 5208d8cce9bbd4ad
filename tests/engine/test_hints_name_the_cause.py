"""Hints that named a wrong tensor or gave a fix that fails: each now names the cause the
snippet shows. An LSTM whose h is detached and c is not; a batch of one squeezed to a
scalar; NumPy's conversion of a tensor that requires grad; an in-place activation on an
input leaf; .grad read after torch.autograd.grad; a step before its backward(). Each
snippet raises as it does without gradwalk."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import raised_as_plain

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, phrases it must not)
    "an LSTM's cell state carried undetached": (
        "import torch\nimport torch.nn as nn\nlstm = nn.LSTM(3, 5)\n"
        "opt = torch.optim.SGD(lstm.parameters(), lr=0.01)\n"
        "h = torch.zeros(1, 1, 5)\nc = torch.zeros(1, 1, 5)\nfor t in range(3):\n"
        "    out, (h, c) = lstm(torch.randn(1, 1, 3), (h, c))\n    loss = out.pow(2).sum()\n"
        "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n    h = h.detach()\n",
        11,
        ["c carries it from one iteration to the next", "c = c.detach()", "h is detached already, c is not"],
        ["h carries it"],
    ),
    # the LSTM's state kept as one pair, h = (h0, c0): the hint said "retain_graph=True"
    "an LSTM's state carried as a pair": (
        "import torch\nimport torch.nn as nn\nlstm = nn.LSTM(3, 4)\n"
        "opt = torch.optim.SGD(lstm.parameters(), lr=0.1)\nh = (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))\n"
        "for step in range(3):\n    out, h = lstm(torch.randn(5, 2, 3), h)\n    loss = out.pow(2).mean()\n"
        "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
        10,
        [
            "h carries it from one iteration to the next (line 7: out, h = lstm(torch.randn(5, 2, 3), h))",
            "h = tuple(t.detach() for t in h)",
        ],
        ["Recompute the forward pass"],
    ),
    # h.detach() on a line of its own keeps nothing: it had been taken for the fix being there
    "a hidden state detached and thrown away": (
        "import torch\nimport torch.nn as nn\nrnn = nn.GRU(3, 4)\nopt = torch.optim.SGD(rnn.parameters(), lr=0.1)\n"
        "h = torch.zeros(1, 2, 4)\nfor step in range(3):\n    h.detach()\n    out, h = rnn(torch.randn(5, 2, 3), h)\n"
        "    loss = out.pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
        11,
        [
            "h carries it from one iteration to the next",
            "h = h.detach()",
            "Line 7 (h.detach()) makes a detached copy and throws it away",
        ],
        ["Recompute the forward pass"],
    ),
    "a batch of one squeezed to a scalar": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 1)\nx = torch.randn(1, 4)\n"
        "y = torch.tensor([1.0])\nlogits = model(x).squeeze()\nloss = nn.BCEWithLogitsLoss()(logits, y)\n",
        7,
        [
            "the input is a single number, shape ()",
            "squeeze() drops every dimension of size 1",
            ".squeeze(1)",
        ],
        ["y.squeeze(1)", "logits.unsqueeze(1)"],  # each of those raised "Dimension out of range"
    ),
    "np.array of a prediction that requires grad": (
        "import torch\nimport numpy as np\nw = torch.randn(3, requires_grad=True)\n"
        "pred = w * 2\npreds_np = np.array(pred)\n",
        5,
        [
            "pred is part of the autograd graph",
            "NumPy's conversion of pred calls pred.numpy()",
            "pred.detach().numpy()",
        ],
        ["y.detach()"],
    ),
    "nn.ReLU(inplace=True) on an input that requires grad": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(4, 2))\n"
        "x = torch.randn(3, 4, requires_grad=True)\nscore = model(x)[:, 1].sum()\n",
        5,
        ["relu ran in place on x", "inplace=True", "nn.ReLU()", "x.clone()"],
        ["w -= lr * w.grad"],
    ),
    ".grad read after torch.autograd.grad": (
        "import torch\nw = torch.randn(3, requires_grad=True)\nloss = (w ** 2).sum()\n"
        "grads = torch.autograd.grad(loss, w)\nwith torch.no_grad():\n    w -= 0.1 * w.grad\n",
        6,
        ["torch.autograd.grad (line 4) returns the gradients instead of storing them in .grad", "grads[0]"],
        ["no backward() has reached w"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hint_names_the_cause_the_snippet_shows(name: str) -> None:
    source, line, phrases, absent = CASES[name]
    err = raised_as_plain(source, line)
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)
    for phrase in absent:
        assert phrase not in err.hint, (phrase, err.hint)


def test_a_step_before_its_backward_says_to_swap_them() -> None:
    # it said "No backward() ran before this step", where one runs right after it
    source = (
        "import torch\nimport torch.nn as nn\nX = torch.randn(32, 2); y = X.sum(1, keepdim=True)\n"
        "model = nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(3):\n"
        "    opt.zero_grad()\n    loss = nn.functional.mse_loss(model(X), y)\n    opt.step()\n"
        "    loss.backward()\n"
    )
    (p,) = q.pitfalls(record(source))
    assert (p.kind, p.line) == ("step-without-gradients", 9)
    assert "loss.backward() at line 10 comes after opt.step() (line 9)" in p.message, p.message
    assert p.fix.startswith("Swap the two lines: loss.backward() before opt.step()"), p.fix
    # the step-less iteration stays as it was said: a backward() nowhere below the step
    plain = source.replace("    loss.backward()\n", "")
    (p,) = q.pitfalls(record(plain))
    assert p.message.startswith("No backward() ran before this step"), p.message
