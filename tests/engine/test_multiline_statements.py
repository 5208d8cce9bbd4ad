"""Error hints read a statement split over several lines (a call's arguments one to a line,
a bracketed expression) whole, as they read it on one line: the hint that names the cause
still fires, and the code it quotes is the statement, not its first line cut short."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from engine.source import statement_lines

from .snippets import raised_as_plain

SPLIT = {
    "a leaf rebound under no_grad": (
        "import torch\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "x = torch.randn(3)\n"
        "for step in range(3):\n"
        "    loss = ((w * x).sum() - 1) ** 2\n"
        "    loss.backward()\n"
        "    with torch.no_grad():\n"
        "        w = (w -   # a step by hand\n"
        "             0.1 * w.grad)\n",
        6,
        "w no longer requires grad: line 8 (w = (w - 0.1 * w.grad)) inside torch.no_grad()",
    ),
    "a gradient penalty from a .grad": (
        "import torch\n"
        "x = torch.randn(5, requires_grad=True)\n"
        "(x ** 2).sum().backward()\n"
        "penalty = (x.grad\n"
        "           .pow(2).sum())\n"
        "penalty.backward()\n",
        6,
        "penalty is computed from x.grad at line 4 (penalty = (x.grad.pow(2).sum())), which backward() (line 3)",
    ),
    "a detach on the way": (
        "import torch\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "h = (w * 2\n"
        "     ).detach()\n"
        "loss = (h ** 2).sum()\n"
        "loss.backward()\n",
        6,
        "(h = (w * 2).detach()) cuts the chain back to the leaves",
    ),
    "the .grad of a non-leaf": (
        "import torch\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "y = x * 2\n"
        "(y ** 2).sum().backward()\n"
        "print(y.grad\n"
        "      .sum())\n",
        6,  # Python names the line of the failing attribute, the statement's second
        "y.grad is None because y is not a leaf but the result of an op (MulBackward0), made at line 3",
    ),
    "a number given to .grad": (
        "import torch\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "(w * 2).sum().backward()\n"
        "w.grad = (\n"
        "    0.0)\n",
        4,
        "this line gives it (0.0), a Python float",
    ),
}


@pytest.mark.parametrize("case", SPLIT, ids=list(SPLIT))
def test_a_statement_split_over_lines_gets_the_hint_it_gets_on_one(case: str) -> None:
    source, line, expected = SPLIT[case]
    err = raised_as_plain(source, line)
    assert expected in (err.hint or ""), err.hint


def test_each_line_of_a_statement_reads_the_whole_statement() -> None:
    lines = [
        "for step in range(3):  # the loop",
        "    loss = F.cross_entropy(",
        "        logits,  # scores",
        "        targets,",
        "    )",
        "    total = 1 + \\",
        "        2",
        "    print([1,",
        "           2])",
        "def f(a,",
        "      b):",
        "    return a",
    ]
    assert statement_lines(lines) == [
        "for step in range(3):  # the loop",
        *["    loss = F.cross_entropy(logits, targets)"] * 4,
        *["    total = 1 + 2"] * 2,
        *["    print([1, 2])"] * 2,
        *["def f(a, b):"] * 2,
        "    return a",
    ]
    # a snippet Python cannot tokenize comes back as it is
    assert statement_lines(["x = (1,", "y = 2"]) == ["x = (1,", "y = 2"]


def test_a_pitfall_quotes_a_split_statement_whole_and_names_its_first_line() -> None:
    by_hand = record(
        "import torch\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "x = torch.randn(3)\n"
        "for step in range(5):\n"
        "    loss = ((w * x).sum() -\n"
        "            1) ** 2\n"
        "    loss.backward()\n"
        "    with torch.no_grad():\n"
        "        w -= (0.1 *\n"
        "              w.grad)\n"
    )
    (stale,) = [p for p in q.pitfalls(by_hand) if p.kind == "missing-zero-grad"]
    assert "(line 9: w -= (0.1 * w.grad))" in stale.message, stale.message
    rebuilt = record(
        "import torch\n"
        "model = torch.nn.Linear(3, 1)\n"
        "x, y = torch.randn(8, 3), torch.randn(8, 1)\n"
        "for step in range(5):\n"
        "    opt = torch.optim.SGD(\n"
        "        model.parameters(), lr=0.1, momentum=0.9)\n"
        "    opt.zero_grad()\n"
        "    torch.nn.functional.mse_loss(model(x), y).backward()\n"
        "    opt.step()\n"
    )
    (again,) = [p for p in q.pitfalls(rebuilt) if p.kind == "optimizer-rebuilt"]
    assert again.line == 5, again
