"""Hunt 56: a trace's graph memory and training metrics, checked against PyTorch's own
(tests/engine/truth_memory.py, tests/engine/truth_memory_compare.py).

The checker runs each snippet without gradwalk and samples what its graphs really hold
(every autograd node reachable from live tensors, the distinct storages of what each
saved) after every op, at each line, around each backward call and each optimizer step;
it compares each step's optimizer label, step, loss, learning rates, ``graph_bytes`` and
``graph_peak_bytes``, each metrics-only call's loss and bytes, the memory events, the
snippet's own ``gradwalk.log`` metrics and what it printed. The bugs it found come first;
then the corpus (tests/engine/truth56_snippets.txt) and the shared cases, as a guard.

Legitimately different views, left out (see the checker's docstring): what the snippet's
own saved-tensor hooks packed, a Python number an op wraps (``w * 2``), a custom
Function's ctx attributes, a snippet's own threads (sampled on the main thread only), and
a saved leaf given other memory by ``w.data = bigger`` before backward (gradwalk counts the
storage it saved).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from engine import queries as q
from engine import record
from engine.events import Limits, Trace
from tests.conftest import case_source
from tests.engine.snippets import corpus
from tests.engine.truth_memory import plain_memory
from tests.engine.truth_memory_compare import describe, memory_differences

GUARD = corpus(Path(__file__).with_name("truth56_snippets.txt"))


def assert_memory_truthful(source: str, limits: Limits | None = None) -> Trace:
    """Record ``source`` and check its memory and step metrics against a plain run's."""
    plain = plain_memory(source)
    trace = record(source, limits=limits)
    found = memory_differences(trace, plain, limits)
    assert found == [], "\n".join(found[:20]) + f"\nplain: {describe(plain)[:40]}"
    return trace


# --- bug 1: a step's loss was an earlier backward call's ---------------------------------


def test_step_after_a_backward_with_no_loss_has_no_loss() -> None:
    """``aux.backward()`` then ``out.backward(torch.ones(6))`` before each step: the step's
    loss (the root of the last backward) read ``aux``'s value, as the last call whose root
    had one element, where the call the step followed has none."""
    trace = assert_memory_truthful(GUARD["scalar_then_vector_backward"])
    assert [e.loss for e in q.events_of(trace, "optimizer_step")] == [None] * 4


def test_metrics_only_call_with_no_loss_has_no_loss() -> None:
    """A loop that steps by hand, its counted calls' roots a vector: their loss was the
    scalar call's before the loop."""
    trace = assert_memory_truthful(
        "import torch\n"
        "w = torch.randn(4, requires_grad=True)\n"
        "(w * w).sum().backward()\n"
        "for i in range(14):\n"
        "    w.exp().backward(torch.ones(4))\n"
        "    with torch.no_grad():\n"
        "        w -= 0.01 * w.grad\n"
        "        w.grad = None\n"
    )
    counted = q.events_of(trace, "backward_counted")
    assert counted and [e.loss for e in counted] == [None] * len(counted)


# --- bug 2: two optimizers stepped in turn under one label -------------------------------

OPTIMIZERS_IN_A_LIST = """
import torch, torch.nn as nn
a = nn.Linear(3, 1); b = nn.Linear(3, 1)
opts = [torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.SGD(b.parameters(), lr=0.01)]
x = torch.randn(5, 3)
for i in range(4):
    for o in opts:
        o.zero_grad()
    loss = (a(x) - b(x)).pow(2).mean()
    loss.backward()
    for o in opts:
        o.step()
"""

OPTIMIZERS_IN_A_DICT = """
import torch, torch.nn as nn
a = nn.Linear(3, 1); b = nn.Linear(3, 1)
opts = {"a": torch.optim.Adam(a.parameters(), lr=0.1), "b": torch.optim.Adam(b.parameters(), lr=0.01)}
x = torch.randn(5, 3)
for i in range(4):
    loss = (a(x) * b(x)).mean()
    loss.backward()
    opts["a"].step()
    opts["b"].step()
"""


@pytest.mark.parametrize(
    ("source", "labels"),
    [
        (OPTIMIZERS_IN_A_LIST, ["opts[0] (SGD)", "opts[1] (SGD)"]),
        (OPTIMIZERS_IN_A_DICT, ["opts['a'] (Adam)", "opts['b'] (Adam)"]),
    ],
    ids=["list", "dict"],
)
def test_optimizers_stepped_in_turn_have_labels_of_their_own(source: str, labels: list[str]) -> None:
    """``for o in opts: o.step()`` labelled both ``o (SGD)``, ``opts["a"].step()`` both
    ``Adam``: the charts, a series per label, gave the second's values to the first from
    step 2 on (NOTE [Optimizers of one name] in engine/chart_labels.py)."""
    trace = assert_memory_truthful(source)
    steps = q.events_of(trace, "optimizer_step")
    assert [e.optimizer for e in steps] == labels * 4
    assert [e.step for e in steps] == [1, 1, 2, 2, 3, 3, 4, 4]


# --- the pitfall's bytes ------------------------------------------------------------------


def test_total_of_loss_tensors_climbs_and_of_items_stays_flat() -> None:
    """``total += loss`` keeps every batch's graph: the bytes the steps report climb by one
    graph a step, as PyTorch's do; ``total += loss.item()`` keeps none."""
    climbing = [
        e.graph_bytes for e in q.events_of(assert_memory_truthful(GUARD["total_tensor"]), "optimizer_step")
    ]
    flat = [e.graph_bytes for e in q.events_of(assert_memory_truthful(GUARD["total_item"]), "optimizer_step")]
    assert all(b > a for a, b in itertools.pairwise(climbing)) and climbing[0] > 0
    assert flat == [0] * len(flat)


# --- guard: snippets whose memory and metrics agreed --------------------------------------


@pytest.mark.parametrize("name", list(GUARD))
def test_memory_and_metrics_equal_pytorch(name: str) -> None:
    assert_memory_truthful(GUARD[name])


@pytest.mark.parametrize(
    "name", ["hand_loop_long", "long_with_metrics", "accumulate_four", "total_tensor_long"]
)
def test_memory_with_detail_every_fourth_step_equals_pytorch(name: str) -> None:
    """Steps and calls recorded in full between metrics-only ones: each detailed backward
    starts from what PyTorch holds then."""
    assert_memory_truthful(GUARD[name], Limits(detail_every=4, detail_calls=3))


@pytest.mark.parametrize("case", ["rent_regression", "clean_training", "pitfall_loss_tensor_total"])
def test_shared_cases_memory_equals_pytorch(case: str) -> None:
    assert_memory_truthful(case_source(f"{case}.py"))


def test_shared_pitfall_and_its_item_twin() -> None:
    """The shared case keeps every batch's graph (``total += loss``): what is held climbs to
    twenty graphs; its ``.item()`` twin holds one batch's at most (two while the next is
    built), as PyTorch does."""
    source = case_source("pitfall_loss_tensor_total.py")
    twin = source.replace("total += loss ", "total += loss.item() ")
    assert "loss.item()" in twin
    climbing = [e.saved_bytes for e in q.events_of(assert_memory_truthful(source), "memory")]
    flat = [e.saved_bytes for e in q.events_of(assert_memory_truthful(twin), "memory")]
    assert max(climbing) >= 19 * flat[-1] and max(flat) <= 2 * flat[-1]
