"""Fidelity hunt 62: some 110 snippets of autograd's corners recorded and run plain. All
agreed but these, each fixed:

- a graph more than ~43,000 nodes deep killed the recording with a segfault (no trace) when it
  was freed, at the end of the run or by the snippet's ``del``: a node Python has seen is
  freed recursively (NOTE [Room on the stack for freeing deep graphs] in engine/stack_room.py);
- ``backward()`` called on a leaf itself (``x.backward(g)``) recorded no walk: its
  AccumulateGrad, which PyTorch runs, was never met by an op, and ``.grad`` went from None to
  ``g`` with no accumulation in the trace;
- a snippet that replaced a Tensor method written in Python with a wrapper of its own
  (``torch.Tensor.split = counted``) had the wrapper called twice per call (NOTE [Tensor
  methods the snippet replaced] in engine/tape.py);
- a function's local that an outer scope binds to another tensor named an intermediate
  (tests/engine/test_naming.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

from engine import queries as q
from tests.engine.snippets import assert_as_plain
from tests.engine.truth import assert_truthful

ROOT = Path(__file__).resolve().parents[2]

DEEP = """
from engine import record, queries as q
from engine.events import Limits
source = '''
import torch
x = torch.zeros(1, requires_grad=True)
h = x
for i in range(60000):
    h = h + 0.0
h.sum().backward()
del h
h = x
for i in range(60000):
    h = h * 1.0
print(x.grad)
'''
trace = record(source, limits=Limits(max_ops=1000, max_nodes=1000))
print(repr(q.stdout(trace)), trace.events[-1].status, trace.events[-1].counts.nodes)
"""


def test_a_graph_60000_nodes_deep_is_freed_as_plain_pytorch_frees_it() -> None:
    # in a process of its own: the fault was a segfault (exit -11), freeing the first chain
    # at `del h` and the second with the snippet's namespace
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", DEEP], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "'tensor([1.])\\n' ok 120003\n"


LEAF_ROOTS = """
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
x.backward(torch.tensor([3.0, 4.0]))
s = torch.tensor(5.0, requires_grad=True)
s.backward()
x.backward(torch.tensor([1.0, 1.0]))
print(x.grad, s.grad)
"""


def test_backward_on_a_leaf_runs_its_accumulate_grad_in_the_trace() -> None:
    trace = assert_truthful(LEAF_ROOTS)
    walks = [q.backward_order(trace, i) for i in range(3)]
    assert walks == [["AccumulateGrad"]] * 3  # were three empty walks
    assert q.accumulations(trace, "x") == [
        (None, [3.0, 4.0], [3.0, 4.0]),
        ([3.0, 4.0], [1.0, 1.0], [4.0, 5.0]),
    ]
    assert q.accumulations(trace, "s") == [(None, 1.0, 1.0)]
    assert [e.nodes_executed for e in q.events_of(trace, "backward_finished")] == [1, 1, 1]


WRAPPED_METHODS = """
import torch
counts = {}
def wrap(name):
    orig = getattr(torch.Tensor, name)
    def counted(self, *a, **k):
        counts[name] = counts.get(name, 0) + 1
        return orig(self, *a, **k)
    setattr(torch.Tensor, name, counted)
for n in ["split", "norm", "register_hook", "__repr__", "unique", "__format__", "backward"]:
    wrap(n)
x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
a, b = x.split(2)
n = x.norm()
x.register_hook(lambda g: g)
r = repr(x)
u = x.detach().unique()
s = f"{n:.2f}"
(a * b).sum().backward()
print(counts, x.grad)
"""


def test_a_tensor_method_the_snippet_wrapped_runs_its_wrapper_once_per_call() -> None:
    originals = {
        n: vars(torch.Tensor)[n]
        for n in ("split", "norm", "register_hook", "__repr__", "unique", "__format__", "backward")
    }
    try:
        trace = assert_as_plain(WRAPPED_METHODS, leaves=("x",))  # every count was 2 (__format__ 6)
    finally:
        for name, method in originals.items():
            setattr(torch.Tensor, name, method)
    assert "'split': 1" in q.stdout(trace)
    ops = [(e.name, e.api) for e in q.events_of(trace, "op")]
    assert ("split", "Tensor.split") in ops and ("unique", "Tensor.unique") in ops
