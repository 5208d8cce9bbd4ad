"""A model whose ``__init__`` never called ``super().__init__()`` has none of nn.Module's
tables: PyTorch raises where the snippet uses it, and the recorder, which walks the modules
it finds (to name layers and parameters, and for the pitfalls), must neither crash on one nor
make a snippet that runs without gradwalk fail. Each error gets the fix as its hint."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_stdout, raised_as_plain

HINT = "Call super().__init__() first thing in the model's __init__"

BROKEN = """
import torch, torch.nn as nn
class Scale(nn.Module):
    def __init__(self):
        self.k = 3{layer}
    def forward(self, x):
        return x * self.k
"""

RAISES = {
    # assigning a layer raises at once
    "a layer assigned": (BROKEN.format(layer="\n        self.fc = nn.Linear(2, 1)") + "m = Scale()\n", 6),
    # plain attributes go in; calling it raises (the recorder crashed at the run's end on it)
    "called": (BROKEN.format(layer="") + "m = Scale()\ny = m(torch.ones(2))\n", 9),
    # never called: the run's end walked it, and the recorder raised out of record()
    "in scope at an error of its own": (
        BROKEN.format(layer="") + "m = Scale()\nraise ValueError('mine')\n",
        9,
    ),
}


@pytest.mark.parametrize("name", sorted(RAISES))
def test_a_model_without_super_init_raises_as_it_does_without_gradwalk(name: str) -> None:
    source, line = RAISES[name]
    err = raised_as_plain(source, line)
    if err.exc_type == "AttributeError":
        assert err.hint is not None and HINT in err.hint, err.hint


def test_a_model_holding_one_it_never_calls_records_as_it_runs_without_gradwalk() -> None:
    # net.sub cannot be walked, and named_modules() of net raises: the recorder named net's
    # layers through it at net.fc's call, and the snippet failed there under gradwalk only
    source = BROKEN.format(layer="") + (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(2, 1)\n        self.sub = Scale()\n"
        "net = Net()\nopt = torch.optim.SGD(net.fc.parameters(), lr=0.1)\nfor i in range(3):\n"
        "    opt.zero_grad()\n    loss = net.fc(torch.ones(4, 2)).pow(2).mean()\n    loss.backward()\n"
        "    opt.step()\nprint(round(loss.item(), 6), net.fc.weight.grad.tolist())\n"
    )
    trace = record(source)
    assert q.errors(trace) == []
    assert q.stdout(trace) == plain_stdout(source)
    assert q.final_grads(trace)["net.fc.weight"] is not None
