"""Hints for a snippet that does not compile because of how it was pasted (a hunt over pasted
source): curly quotes, a dash or a times sign from a word processor, a PDF or a chat app;
spaces Python does not read as spaces (non-breaking, zero-width), which the editor shows as a
space or as nothing; a notebook's magics and shell commands, its `In [3]:` labels; the `>>>`
prompts of documentation; a whole paste indented. Each error is plain Python's at its line,
and the fix the hint names runs. A syntax error of another kind keeps Python's message alone."""

from __future__ import annotations

from typing import Any

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import fixed_runs

T = "import torch\n"

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    "curly quotes on two lines": (
        T + "x = torch.ones(2)\nprint(“sum”, x.sum())\nprint(“mean”, x.mean())\n",
        3,
        [
            "A curly quote “ came with the paste",
            'Python needs a straight quote "',
            "Retype them on lines 3 and 4",
        ],
        [("“sum”", '"sum"'), ("“mean”", '"mean"')],
    ),
    "a dash for a minus": (
        T + "x = torch.ones(2)\ny = x – 1\nprint(y)\n",
        3,
        ["A dash – came with the paste", "Python needs a minus sign -", "Retype it on line 3"],
        [("x – 1", "x - 1")],
    ),
    "a times sign": (
        T + "y = torch.ones(2) × 3\nprint(y)\n",
        2,
        ["A times sign ×", "Python needs `*`"],
        [("×", "*")],
    ),
    "a non-breaking space": (
        T + "x = torch.ones(2)\ny = x +\u00a01\nprint(y)\n",
        3,
        ["Line 3 holds a non-breaking space (U+00A0) (column 8)", "type a plain space where one belongs."],
        [("\u00a0", " ")],
    ),
    "a zero-width space": (
        T + "x\u200b = torch.ones(2)\nprint(x)\n",
        2,
        ["Line 2 holds a zero-width space (U+200B) (column 2)", "the editor shows as a space or not at all"],
        [("\u200b", "")],
    ),
    "a magic": (
        T + "%matplotlib inline\nprint(torch.ones(2))\n",
        2,
        ["Line 2 (`%matplotlib inline`) is a Jupyter magic, not Python: delete it."],
        [("%matplotlib inline\n", "")],
    ),
    "a cell magic": (
        T + "%%time\nprint(torch.ones(2))\n",
        2,
        ["Line 2 (`%%time`) is a Jupyter magic"],
        [("%%time\n", "")],
    ),
    "a notebook's pip install": (
        "!pip install torch\n" + T + "print(torch.ones(2))\n",
        1,
        ["Line 1 (`!pip install torch`) is a notebook's shell command", "Nothing can be installed"],
        [("!pip install torch\n", "")],
    ),
    "prompts copied from documentation": (
        ">>> import torch\n>>> x = torch.ones(2)\n>>> print(x)\n",
        1,
        ["Line 1 starts with `>>>`", "remove the `>>> ` and `... `"],
        [(">>> ", "")],
    ),
    "a whole paste indented": (
        "    import torch\n    x = torch.ones(2)\n    print(x)\n",
        1,
        ["The whole snippet is indented by 4 spaces", "remove 4 from the start of every line"],
        [("    ", "")],
    ),
    "a notebook's cell labels": (
        "In [1]: import torch\nIn [2]: print(torch.ones(2))\n",
        1,
        ["The line starts with `In [1]:`, a notebook's cell label"],
        [("In [1]: ", ""), ("In [2]: ", "")],
    ),
}


def compiled_as_plain(source: str, line: int) -> Any:
    """The error the recording of ``source`` ends with, checked to be the one Python's own
    ``compile`` raises (type, message, line) at snippet ``line``."""
    (err,) = q.errors(record(source))
    with pytest.raises(SyntaxError) as plain:
        compile(source, "plain.py", "exec", dont_inherit=True)
    assert (err.exc_type, err.message, err.line) == (plain.type.__name__, plain.value.msg, line), err
    return err


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hint_names_the_pasted_character_and_the_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    err = compiled_as_plain(source, line)
    for phrase in phrases:
        assert phrase in (err.hint or ""), (phrase, err.hint)
    fixed_runs(source, edits)


@pytest.mark.parametrize(
    "source, line",
    [
        (T + "x = (1 +\n", 2),  # '(' was never closed
        (T + "def f():\n    return 1\n        y = 2\n", 4),  # an indent further down
    ],
)
def test_a_syntax_error_of_another_kind_keeps_pythons_message_alone(source: str, line: int) -> None:
    assert compiled_as_plain(source, line).hint is None
