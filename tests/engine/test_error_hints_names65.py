"""Hints for a name Python does not know: a learner's first errors. A name misspelt (Python's
terminal adds "Did you mean" after the message, which the message alone lacks, and gradwalk
showed the message alone), a module used without its import, a name given its value further
down or inside a function, a function's assignment that makes a module's name its own
(UnboundLocalError), a PyTorch function written without its module, a notebook's own name.
Each error is plain Python's at the line given, and the fix the hint names runs. A name no
hint knows (one never written anywhere, one deleted) keeps Python's message alone. A snippet
that does not compile shows Python's own report: its line, with a caret where it went wrong."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

T = "import torch\n"

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    "a misspelt name": (
        T + "lenght = 3\nx = torch.ones(length)\nprint(x.sum())\n",
        3,
        ["Did you mean 'lenght' (line 2)?"],
        [("ones(length)", "ones(lenght)")],
    ),
    "a name in another case": (
        T + "X = torch.ones(2)\nprint(x)\n",
        3,
        ["Did you mean 'X' (line 2)?"],
        [("print(x)", "print(X)")],
    ),
    "torch without its import": (
        "x = torch.ones(3, requires_grad=True)\nx.sum().backward()\nprint(x.grad)\n",
        1,
        ["add `import torch` at the top"],
        [("x = torch", "import torch\nx = torch")],
    ),
    "nn without its import": (
        T + "model = nn.Linear(2, 1)\nprint(model(torch.ones(1, 2)).shape)\n",
        2,
        ["add `import torch.nn as nn` at the top"],
        [("model =", "import torch.nn as nn\nmodel =")],
    ),
    "a name given its value further down": (
        T + "print(w * 2)\nw = torch.ones(2)\n",
        2,
        ["'w' gets its first value at line 3, below line 2", "move line 3"],
        [("print(w * 2)\nw = torch.ones(2)\n", "w = torch.ones(2)\nprint(w * 2)\n")],
    ),
    "a function called before a name it reads is made": (
        T + "def double():\n    return w * 2\ny = double()\nw = torch.ones(2)\nprint(y)\n",
        3,
        ["gets its first value at line 5, below line 4 (which called the code at line 3)", "above line 4"],
        [("y = double()\nw = torch.ones(2)\n", "w = torch.ones(2)\ny = double()\n")],
    ),
    "a name made inside a function": (
        T + "def make():\n    w = torch.ones(2, requires_grad=True)\nmake()\nprint(w)\n",
        5,
        ["'w' is a name inside make() (line 3)", "`return w`", "`w = make()`"],
        [
            ("2, requires_grad=True)\n", "2, requires_grad=True)\n    return w\n"),
            ("make()\nprint", "w = make()\nprint"),
        ],
    ),
    "a running total a function makes its own": (
        T + "total = 0.0\ndef train():\n    for i in range(3):\n        total += i\ntrain()\nprint(total)\n",
        5,
        [
            "'total' is given a value inside train() (line 5)",
            "not the module's 'total' (line 2)",
            "`global total` as train()'s first line",
        ],
        [("def train():\n", "def train():\n    global total\n")],
    ),
    "relu without its module": (
        T + "x = torch.randn(3)\nprint(relu(x).shape)\n",
        3,
        ["'relu' is PyTorch's `torch.relu`"],
        [("print(relu(", "print(torch.relu(")],
    ),
    "relu where F is imported": (
        T + "import torch.nn.functional as F\nx = torch.randn(3)\nprint(relu(x).shape)\n",
        4,
        ["'relu' is PyTorch's `F.relu`"],
        [("print(relu(", "print(F.relu(")],
    ),
    "a layer without nn": (
        T + "import torch.nn as nn\nlayer = Linear(2, 1)\nprint(layer.weight.shape)\n",
        3,
        ["'Linear' is PyTorch's `nn.Linear`", "from torch.nn import Linear"],
        [("layer = Linear", "layer = nn.Linear")],
    ),
    "a notebook's cell label read as a name": (
        "In [1]: x = 1\nIn [2]: print(x)\n",
        1,
        ["The line starts with `In [1]:`, a notebook's cell label"],
        [("In [1]: ", ""), ("In [2]: ", "")],
    ),
    "a notebook's display": (
        T + "display(torch.ones(2))\n",
        2,
        ["'display' is Jupyter's own", "use print()"],
        [("display(", "print(")],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hint_names_the_cause_and_the_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)


@pytest.mark.parametrize(
    "source, line",
    [
        (T + "print(never_written_anywhere)\n", 2),  # nothing close, no import makes it
        (T + "x = torch.ones(2)\ndel x\nprint(x)\n", 4),  # deleted: Python's message says it
    ],
)
def test_a_name_no_hint_knows_keeps_pythons_message_alone(source: str, line: int) -> None:
    assert raised_as_plain(source, line).hint is None


@pytest.mark.parametrize(
    "source, shown",
    [
        (
            T + "x = (1 +\ny = 2\n",
            "  File \"snippet.py\", line 2\n    x = (1 +\n        ^\nSyntaxError: '(' was never closed\n",
        ),
        (
            T + "x = torch.ones(3)\nif x.sum() > 2\n    print(x)\n",
            "  File \"snippet.py\", line 3\n    if x.sum() > 2\n                  ^\nSyntaxError: expected ':'\n",
        ),
    ],
)
def test_a_snippet_that_does_not_compile_shows_its_line_with_a_caret(source: str, shown: str) -> None:
    (error,) = q.errors(record(source))
    assert error.exc_type == "SyntaxError"
    assert error.traceback == shown
