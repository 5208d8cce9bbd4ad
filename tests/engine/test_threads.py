"""A snippet's threads are recorded as its own (NOTE [Threads] in engine/threads.py): their
ops on the tape at their lines, their backward() walks node by node, with PyTorch's numbers."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch

from engine import record
from engine.events import Trace
from engine.run import record_stream

START_JOIN = """import torch, threading
x = torch.tensor(2.0, requires_grad=True)
def work():
    (x ** 3).backward()
t = threading.Thread(target=work)
t.start()
t.join()
print(x.grad.item())
"""


def _of(trace: Trace, kind: str) -> list[Any]:
    return [e for e in trace.events if e.type == kind]


def _nodes(trace: Trace) -> dict[int, str]:
    return {e.id: e.name for e in _of(trace, "node")}


def test_a_thread_started_and_joined_records_its_op_and_walks_its_backward() -> None:
    trace = record(START_JOIN)
    assert trace.events[-1].type == "run_finished" and trace.events[-1].status == "ok"
    pow_op = next(e for e in _of(trace, "op") if e.name == "pow")
    assert pow_op.line == 4  # the thread's own line, in work()
    names = _nodes(trace)
    assert "PowBackward0" in [names[n] for n in pow_op.nodes]
    walked = [names[e.node] for e in _of(trace, "node_executed")]
    assert walked == ["PowBackward0", "AccumulateGrad"]
    (added,) = _of(trace, "grad_accumulated")
    assert added.after.flat == [12.0]  # d(x**3)/dx at 2, as PyTorch's x.grad
    assert "".join(e.text for e in _of(trace, "output")) == "12.0\n"
    # the recorder is gone from threading once the run is over
    assert threading.Thread.start.__qualname__ == "Thread.start"


def test_a_thread_subclass_with_its_own_run_is_recorded() -> None:
    trace = record(
        "import torch, threading\nw = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "class Worker(threading.Thread):\n    def run(self):\n        (w * w).sum().backward()\n"
        "t = Worker()\nt.start()\nt.join()\n"
    )
    assert [e.name for e in _of(trace, "op")][-2:] == ["mul", "sum"]
    assert {e.line for e in _of(trace, "op")[-2:]} == {5}
    final = next(e for e in _of(trace, "tensor_final") if e.name == "w")
    assert final.grad.flat == [2.0, 4.0]


def test_threads_that_run_at_once_each_get_their_own_walk_with_pytorchs_gradients() -> None:
    # four threads at once, each asking autograd.grad of its own sin(x) * x ** 2: one op or
    # backward call is recorded at a time, and events stay numbered in order
    source = (
        "import torch\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "xs = [torch.tensor(float(i), requires_grad=True) for i in range(8)]\n"
        "def grad_of(x):\n    y = torch.sin(x) * x ** 2\n    return torch.autograd.grad(y, x)[0]\n"
        "with ThreadPoolExecutor(4) as pool:\n    gs = list(pool.map(grad_of, xs))\n"
    )
    trace = record(source)
    assert [e.seq for e in trace.events] == list(range(len(trace.events)))
    assert trace.events[-1].type == "run_finished" and trace.events[-1].status == "ok"
    started = _of(trace, "backward_started")
    assert sorted(e.index for e in started) == list(range(8))
    names = _nodes(trace)
    by_call: dict[int, list[str]] = {}
    for e in _of(trace, "node_executed"):
        by_call.setdefault(e.backward, []).append(names[e.node])
    assert all(sorted(walk) == ["MulBackward0", "PowBackward0", "SinBackward0"] for walk in by_call.values())
    assert len(by_call) == 8
    # each call's gradient, handed back to x, is PyTorch's own d/dx (sin(x) x^2)
    made = {e.outputs[0]: e for e in _of(trace, "op") if e.name == "tensor"}
    for call in started:
        x_id = next(e for e in _of(trace, "op") if e.name == "grad" and e.inputs[0] == call.roots[0]).inputs[
            1
        ]
        x = torch.tensor(made[x_id].constants[0].value, requires_grad=True)
        (want,) = torch.autograd.grad(torch.sin(x) * x**2, x)
        sent = [e for e in _of(trace, "node_executed") if e.backward == call.index]
        mul = next(e for e in sent if names[e.node] == "MulBackward0")
        assert mul.grad_in[0].flat == [1.0]
        got = sum(
            v.flat[0]
            for e in sent
            if names[e.node] in ("SinBackward0", "PowBackward0")
            for v in e.grad_out
            if v
        )
        assert abs(got - want.item()) < 1e-5, (call.index, got, want.item())


def test_a_thread_that_outlives_the_run_records_nothing_after_it() -> None:
    events: list[dict[str, Any]] = []
    record_stream(
        "import torch, threading, time\nx = torch.ones(3, requires_grad=True)\n"
        "def outlive():\n    for _ in range(100):\n        (x * 2).sum()\n        time.sleep(0.002)\n"
        "threading.Thread(target=outlive, name='outliver', daemon=True).start()\ntime.sleep(0.02)\n"
        "(x * 3).sum().backward()\n",
        events.append,
        validate=False,
    )
    trace = Trace(source="", events=events)  # type: ignore[arg-type]
    assert any(e.line == 5 for e in _of(trace, "op"))  # the thread's ops while the run lasted
    final = next(e for e in _of(trace, "tensor_final") if e.name == "x")
    assert final.grad.flat == [3.0, 3.0, 3.0]
    outliver = next(t for t in threading.enumerate() if t.name == "outliver")
    outliver.join()  # it ran on after the run, its tape mode idle
    assert len(events) == len(trace.events) and events[-1]["type"] == "run_finished"
    assert events[-1]["status"] == "ok"


BODIES = {
    "a custom autograd.Function": (
        "class Cube(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n        return x ** 3\n    @staticmethod\n"
        "    def backward(ctx, g):\n        (x,) = ctx.saved_tensors\n        return 3 * x ** 2 * g\n"
        "x = torch.tensor(2.0, requires_grad=True)\ndef work():\n    Cube.apply(x).backward()\n"
    ),
    "a training step": (
        "torch.manual_seed(0)\nnet = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "def work():\n    opt.zero_grad()\n    loss = net(torch.ones(4, 3)).pow(2).mean()\n    loss.backward()\n"
        "    opt.step()\n"
    ),
}


def _what_it_recorded(trace: Trace) -> tuple[Any, ...]:
    names = _nodes(trace)
    return (
        [(e.name, e.line, e.module_path) for e in _of(trace, "op")],
        [names[e.node] for e in _of(trace, "node_executed")],
        [(e.before, e.added, e.after) for e in _of(trace, "grad_accumulated")],
        [e.text for e in _of(trace, "output")],
        [(e.step, e.loss, e.grad_norm, e.update_norm, e.graph_bytes) for e in _of(trace, "optimizer_step")],
    )


@pytest.mark.parametrize("name", sorted(BODIES))
def test_work_run_in_a_thread_records_what_it_records_run_directly(name: str) -> None:
    body = "import torch, threading\n" + BODIES[name]
    direct = record(body + "work()\nprint('done')\n")
    threaded = record(body + "t = threading.Thread(target=work)\nt.start()\nt.join()\nprint('done')\n")
    assert threaded.events[-1].status == direct.events[-1].status == "ok"
    assert _what_it_recorded(threaded) == _what_it_recorded(direct)
    assert _of(direct, "node_executed")  # something to compare
    assert len(_of(threaded, "optimizer_step")) == (name == "a training step")
