"""Hints for names and shapes a learner writes wrong (engine/explain_names.py,
engine/explain_shaping.py): a misspelt attribute of a tensor, a layer or an optimizer, a
layer the model never made, a loss function's name rebound to its value, a tensor called
like a function, torch.tensor of a list of tensors, expand of a dimension that is not 1,
and an LSTM given 4 dimensions. Each snippet raises as it does without gradwalk; where the
hint gives a fix, the fix runs."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

NET = """import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(3, 4)
        self.layer2 = nn.Linear(4, 1)
    def forward(self, x):
        return self.layer3(torch.relu(self.layer1(x)))
y = Net()(torch.randn(2, 3))
print(y.shape)
"""

SHADOWED = """import torch
from torch import nn
torch.manual_seed(0)
loss = nn.MSELoss()
model = nn.Linear(2, 1)
for i in range(2):
    loss = loss(model(torch.randn(4, 2)), torch.randn(4, 1))
    loss.backward()
print(loss.shape)
"""

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, (wrong, right) or None, printed once fixed)
    "backwards for backward": (
        "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backwards()\nprint(x.grad)\n",
        3,
        ["no attribute 'backwards'; the closest name it has is backward(), as in (x * 2).sum().backward()"],
        (".backwards()", ".backward()"),
        "tensor([2., 2.])\n",
    ),
    "weights for a layer's weight": (
        "import torch\nfrom torch import nn\nmodel = nn.Sequential(nn.Linear(3, 4), nn.ReLU())\n"
        "print(model[0].weights.shape)\n",
        4,
        ["This Linear has no attribute 'weights'; the closest name it has is weight,"],
        (".weights", ".weight"),
        "torch.Size([4, 3])\n",
    ),
    "zero_grads for an optimizer's zero_grad": (
        "import torch\nfrom torch import nn\nm = nn.Linear(3, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "opt.zero_grads()\nprint('cleared')\n",
        5,
        [
            "This SGD has no attribute 'zero_grads'; the closest name it has is zero_grad(), as in opt.zero_grad()"
        ],
        ("zero_grads", "zero_grad"),
        "cleared\n",
    ),
    "a layer the model never made": (
        NET,
        9,
        ["nothing set self.layer3 (the layers its __init__ made are layer1, layer2)"],
        ("self.layer3(", "self.layer2("),
        "torch.Size([2, 1])\n",
    ),
    "a loss function's name rebound to the loss": (
        SHADOWED,
        7,
        ["loss names two things: what line 4 made it (nn.MSELoss()), and, after line 7 ran once"],
        ("loss = nn.MSELoss()", "criterion = nn.MSELoss()"),
        "torch.Size([])\n",
    ),
    "torch.tensor of a list of tensors": (
        "import torch\nxs = [torch.ones(3) for _ in range(4)]\nt = torch.tensor(xs)\nprint(t.shape)\n",
        3,
        ["this list holds tensors of several elements", "torch.stack(xs)"],
        ("torch.tensor(xs)", "torch.stack(xs)"),
        "torch.Size([4, 3])\n",
    ),
    "expand of a dimension that is not 1": (
        "import torch\na = torch.ones(2, 3)\nb = a.expand(4, 6)\nprint(b.shape)\n",
        3,
        ["dimension 1 has 3, which it cannot make 6", "use .repeat(2, 2), which makes [4, 6] from [2, 3]"],
        ("a.expand(4, 6)", "a.repeat(2, 2)"),
        "torch.Size([4, 6])\n",
    ),
    "an LSTM given four dimensions": (
        "import torch\nfrom torch import nn\nlstm = nn.LSTM(10, 20, batch_first=True)\nx = torch.ones(4, 1, 7, 10)\n"
        "out, _ = lstm(x)\nprint(out.shape)\n",
        5,
        ["this input has 4", "x.squeeze(1)"],
        ("lstm(x)", "lstm(x.squeeze(1))"),
        "torch.Size([4, 7, 20])\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_name_or_shape_written_wrong_gets_what_was_meant(name: str) -> None:
    source, line, phrases, fix, printed = CASES[name]
    hinted(source, line, phrases)
    rebound = (
        [("loss = loss(", "loss = criterion(")]
        if name == "a loss function's name rebound to the loss"
        else []
    )
    fixed_runs(source, [fix, *rebound], printed)


def test_a_tensor_called_like_a_function_is_named() -> None:
    err = raised_as_plain("import torch\nW = torch.ones(3, 3)\nx = torch.ones(3)\ny = W(x)\n", 4)
    assert err.hint is not None and err.hint.startswith("W is a tensor here, and a tensor cannot be called")


@pytest.mark.parametrize(
    "source",
    [
        # no name on the tensor comes close: no guess
        "import torch\nx = torch.ones(2)\nprint(x.frobnicate)\n",
        # a tensor expanded by a mask's broadcast, not by expand(): not this hint's
        "import torch\nscores = torch.ones(2, 4, 5)\nmask = torch.ones(2, 3, 5, dtype=torch.bool)\n"
        "scores.masked_fill_(mask, 0.0)\n",
    ],
    ids=["an attribute nothing resembles", "an in-place fill whose mask does not broadcast"],
)
def test_errors_these_hints_cannot_tie_to_a_slip_get_none_of_them(source: str) -> None:
    err = q.errors(record(source))[0]
    assert "closest name" not in (err.hint or "") and "expand() stretches" not in (err.hint or ""), err.hint


def test_a_rebound_name_gets_two_names_to_write_and_the_line_that_called_it() -> None:
    # the fix wrote `criterion = …` and `criterion = criterion(…)`, one name twice, and said "the
    # next pass" of a snippet with no loop
    in_a_loop = hinted(SHADOWED, 7, ["so the next pass calls a tensor"])
    assert in_a_loop.hint.endswith(
        "Give them two names: criterion = nn.MSELoss() for the function, and loss = criterion(…) for its value."
    )
    straight = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 1)\ncriterion = nn.MSELoss()\n"
        "x, y = torch.randn(4, 3), torch.randn(4, 1)\ncriterion = criterion(model(x), y)\n"
        "criterion.backward()\nval = criterion(model(x), y)\n"
    )
    said = hinted(
        straight, 8, ["after line 6 ran once, the tensor that calling it returned, so line 8 calls a tensor"]
    )
    assert said.hint.endswith(
        "Give them two names: criterion = nn.MSELoss() for the function, and loss = criterion(…) for its value."
    )
    model = hinted(
        "import torch\nfrom torch import nn\nmodel = nn.Linear(3, 1)\nmodel = model(torch.ones(2, 3))\n"
        "print(model(torch.ones(2, 3)))\n",
        5,
        ["model names two things"],
    )
    assert "model = nn.Linear(3, 1) for the function, and out = model(…) for its value" in model.hint
