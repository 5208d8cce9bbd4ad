"""Hints for a DataLoader's batches taken apart wrong (engine/explain_loaders.py): each
snippet raises as it does without gradwalk, the hint says what the loop bound, and the
fix it gives runs."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import raised_as_plain

HEAD = (
    "import torch\nimport torch.nn as nn\nfrom torch.utils.data import TensorDataset, DataLoader\n"
    "loader = DataLoader(TensorDataset(torch.randn(20, 4), torch.randn(20, 1)), batch_size=5)\n"
    "model = nn.Linear(4, 1)\n"
)

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the snippet fixed)
    "enumerate(loader) unpacked as the batch": (
        HEAD + "for xb, yb in enumerate(loader):\n    out = model(xb)\n",
        7,
        ["xb is a number, the batch's index", "for i, (xb, yb) in enumerate(loader):"],
        HEAD + "for i, (xb, yb) in enumerate(loader):\n    out = model(xb)\n",
    ),
    "the whole batch into the model": (
        HEAD + "for batch in loader:\n    out = model(batch)\n",
        7,
        ["batch is the whole batch, a list [inputs, targets]", "for xb, yb in loader:"],
        HEAD + "for xb, yb in loader:\n    out = model(xb)\n",
    ),
    "the pair (X, y) as the dataset": (
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "X, y = torch.randn(20, 4), torch.randint(0, 2, (20,))\nloader = DataLoader((X, y), batch_size=4)\n"
        "for xb, yb in loader:\n    print(xb.shape, yb.shape)\n",
        5,
        ["Line 4 gives DataLoader the pair (X, y) as its dataset", "DataLoader(TensorDataset(X, y), …)"],
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "X, y = torch.randn(20, 4), torch.randint(0, 2, (20,))\nloader = DataLoader(TensorDataset(X, y), batch_size=4)\n"
        "for xb, yb in loader:\n    print(xb.shape, yb.shape)\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_batch_taken_apart_wrong_is_told_what_the_loop_bound(name: str) -> None:
    source, line, phrases, fixed = CASES[name]
    err = raised_as_plain(source, line)
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)
    assert q.errors(record(fixed)) == []  # the fix the hint gives runs


def test_an_int_from_elsewhere_is_not_blamed_on_enumerate() -> None:
    # enumerate(loader) unpacked right, and a count passed to the model: the int hint stays
    source = HEAD + "for i, (xb, yb) in enumerate(loader):\n    out = model(i)\n"
    err = raised_as_plain(source, 7)
    assert err.hint is not None and "batch's index" not in err.hint, err.hint
