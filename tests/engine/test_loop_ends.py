"""The code after a training loop is recorded in full again (NOTE [Code after the loop] in
engine/loop_ends.py), with PyTorch's own values; loops wrapped to say so run as written."""

from __future__ import annotations

from typing import Any

import torch

from engine import queries as q
from engine import record
from engine.events import Limits, Trace
from tests.engine.test_as_without_gradwalk import recorded_as_plain

EPOCHS = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(8, 3), torch.randn(8, 1)
for epoch in range(3):
    for i in range(4):
        opt.zero_grad()
        loss = (model(X) - Y).pow(2).mean()
        loss.backward()
        opt.step()
    val = model(X).mean()
pred = model(X)
"""


def _plain(source: str) -> dict[str, Any]:
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, "plain.py", "exec"), scope)
    return scope


def _op_lines(trace: Trace) -> list[int]:
    return [op.line for op in q.events_of(trace, "op")]


def _value_of_output(trace: Trace, line: int) -> Any:
    """The value of the last op of ``line``'s first output."""
    op = [op for op in q.events_of(trace, "op") if op.line == line][-1]
    values = {e.id: q.value_of(e.value) for e in q.events_of(trace, "tensor")}
    return values[op.outputs[0]]


def test_the_code_after_a_training_loop_is_on_the_tape_with_pytorchs_values() -> None:
    trace = record(EPOCHS)
    assert trace.events[-1].status == "ok"
    steps = q.optimizer_steps(trace)
    assert [s.detail for s in steps] == [True] * 3 + [False] * 9
    lines = _op_lines(trace)
    # the first 3 steps' forwards, then nothing until the loop is over: the per-epoch
    # validation (line 12) ran metrics-only, the outer loop's end records line 13 again
    assert lines.count(9) == 3 * 4  # linear, sub, pow, mean
    assert 12 not in lines
    assert lines[-1] == 13
    assert _value_of_output(trace, 13) == _plain(EPOCHS)["pred"].flatten().tolist()


def test_a_loop_left_by_return_break_or_its_end_records_what_follows() -> None:
    source = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
def train(n):
    for i in range(n):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        if i == 5:
            return i
after_return = train(10) + w
k = 0
while True:
    k += 1
    opt.zero_grad(); (w ** 2).sum().backward(); opt.step()
    if k > 6:
        break
after_break = w + 1
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    lines = _op_lines(trace)
    # 3 steps in full, then the add after train() returned from inside its loop; the while
    # loop's first iteration runs in full (the step after a loop is recorded), then its end
    assert lines == [2, 7, 7, 7, 7, 7, 7, 11, 15, 15, 18]
    plain = _plain(source)
    assert _value_of_output(trace, 11) == plain["after_return"].tolist()
    assert _value_of_output(trace, 18) == plain["after_break"].tolist()


def test_the_loop_that_ends_recording_metrics_only_is_the_outermost_one_on_the_stack() -> None:
    # a loop inside the step (over parameters) and a helper's loop do not end it: the epoch
    # loop the module level runs does
    source = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor(0.5, requires_grad=True)
opt = torch.optim.SGD([w, b], lr=0.1)
def step():
    opt.zero_grad()
    ((w * w).sum() + b).backward()
    opt.step()
    for p in (w, b):
        p.detach().clamp_(-10, 10)
for epoch in range(2):
    for i in range(5):
        step()
    h = w
    for _ in range(3):
        h = h * 2
final = h + b
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    lines = _op_lines(trace)
    assert 16 not in lines and lines[-1] == 17
    assert _value_of_output(trace, 17) == _plain(source)["final"].tolist()


def test_a_hand_loops_end_records_what_follows() -> None:
    source = """import torch
x = torch.linspace(-1, 1, 20)
y = 3 * x - 1
w = torch.zeros((), requires_grad=True)
c = torch.zeros((), requires_grad=True)
for t in range(40):
    loss = (w * x + c - y).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        c -= 0.1 * c.grad
        w.grad = None
        c.grad = None
fit = w * 2 + c
"""
    trace = record(source, limits=Limits(detail_calls=2))
    assert trace.events[-1].status == "ok"
    assert len(q.events_of(trace, "backward_counted")) == 38
    assert _op_lines(trace)[-2:] == [14, 14]
    assert _value_of_output(trace, 14) == _plain(source)["fit"].item()


def test_an_error_in_a_metrics_only_iteration_keeps_its_line_and_hint() -> None:
    source = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for j in range(8):
    opt.zero_grad(); (w ** 2).sum().backward(); opt.step()
    if j == 6:
        raise ValueError("boom")
"""
    trace = record(source)
    (error,) = q.errors(trace)
    assert (error.line, error.metrics_only_after) == (7, 7)
    assert 'line 7, in <module>\n    raise ValueError("boom")' in error.traceback
    assert error.traceback.count("line ") == 1  # the wrapped loop adds no frame or line


def test_wrapped_loops_run_as_written() -> None:
    # for/else, while/else, continue, break, a generator's loop, a loop in a class body, an
    # exception caught inside a loop, a return from a loop within try/finally, async for
    recorded_as_plain(
        """import asyncio, torch
def gen(n):
    for i in range(n):
        yield torch.tensor(float(i))
print([t.item() for t in gen(3)])
for i in range(3):
    if i == 1:
        continue
    print("i", i)
else:
    print("for-else")
n = 0
while n < 5:
    n += 1
    if n == 3:
        break
else:
    print("never")
print("n", n)
class Table:
    rows = []
    for k in range(2):
        rows.append(k)
print(Table.rows)
for bad in ("x", 2):
    try:
        torch.tensor(bad)
    except TypeError as exc:
        print("caught", type(exc).__name__)
    else:
        print("ok", bad)
def first_big(ts):
    try:
        for t in ts:
            if t.item() > 1:
                return t.item()
    finally:
        print("finally")
print(first_big(gen(5)))
async def agen():
    for i in range(2):
        yield i
async def main():
    async for i in agen():
        print("async", i)
asyncio.run(main())
"""
    )


def test_an_exception_caught_around_a_loop_is_the_snippets() -> None:
    # the wrapper re-raises the very exception, with its traceback and context
    source = """import torch
try:
    for i in range(3):
        try:
            raise KeyError(i)
        except KeyError:
            torch.tensor([1.0]) / 0
            raise ValueError("inner")
except ValueError as exc:
    print(type(exc.__context__).__name__, exc.__traceback__.tb_lineno, exc.__traceback__.tb_next is None)
"""
    trace = recorded_as_plain(source)
    assert q.stdout(trace) == "KeyError 8 True\n"
    assert torch.is_grad_enabled()


def test_a_loop_left_by_an_exception_the_snippet_catches_records_from_the_handler_on() -> None:
    # a training loop stopped by an exception (Ctrl+C in a script), caught around it, then
    # the evaluation
    source = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
try:
    for j in range(8):
        opt.zero_grad(); (w ** 2).sum().backward(); opt.step()
        if j == 6:
            raise KeyboardInterrupt
except KeyboardInterrupt:
    stopped = w * 1
final = w + 1
"""
    trace = record(source)
    assert trace.events[-1].status == "ok" and not q.errors(trace)
    lines = _op_lines(trace)
    assert lines[-2:] == [10, 11]
    assert 6 in lines and lines.count(6) == 3 * 2  # steps 1-3 in full, 4-7 metrics-only
    plain = _plain(source)
    assert _value_of_output(trace, 11) == plain["final"].tolist()


def test_loops_nested_past_what_the_wrapped_code_compiles_run_as_written() -> None:
    # 20 nested loops compile (Python allows 20 blocks), the wrapper's try would make 22:
    # the snippet is compiled as written instead, its loops unwrapped
    depth = 20
    source = "".join(
        "    " * i + f"for i{i} in range(2 if {i} == {depth - 1} else 1):\n" for i in range(depth)
    )
    source += "    " * depth + "print('inner')\nprint('after')\n"
    trace = recorded_as_plain(source)
    assert q.stdout(trace) == "inner\ninner\nafter\n"


def test_an_expression_too_deep_for_python_to_compile_is_an_error_event() -> None:
    # Python itself cannot compile it (RecursionError during compilation): an error event
    # saying so, not a crash of the run; one it can compile runs (the wrapper walks
    # statements only, never an expression's depth)
    trace = record("x = 1" + " + 1" * 3000 + "\n")
    (error,) = q.errors(trace)
    assert error.exc_type == "RecursionError" and "recursion depth" in error.message
    assert trace.events[-1].status == "error"
    assert q.stdout(recorded_as_plain("x = 1" + " + 1" * 800 + "\nprint(x)\n")) == "801\n"


MODE_AROUND_THE_LOOP = """import torch
from torch.overrides import TorchFunctionMode
class Count(TorchFunctionMode):
    calls = 0
    def __torch_function__(self, func, types, args=(), kwargs=None):
        Count.calls += 1
        return func(*args, **(kwargs or {}))
w = torch.tensor([1.0, 2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
with Count():
    for j in range(8):
        opt.zero_grad(); (w ** 2).sum().backward(); opt.step()
inside = Count.calls
after = w + 1
print("mode off after its block:", Count.calls == inside)
"""


def test_recording_in_full_again_inside_a_snippets_mode_leaves_its_with_block_intact() -> None:
    # NOTE [The tape mode under the snippet's modes]: the tape mode, put back on top of the
    # snippet's mode, was what the snippet's `with` popped: `after` was not recorded and
    # the snippet's mode stayed on. At the loop's end, and at a detail step mid-loop
    for limits in (Limits(), Limits(detail_steps=1, detail_every=3)):
        trace = record(MODE_AROUND_THE_LOOP, limits=limits)
        assert trace.events[-1].status == "ok"
        assert q.stdout(trace) == "mode off after its block: True\n"
        assert _op_lines(trace)[-1] == 14
        assert _value_of_output(trace, 14) == _plain(MODE_AROUND_THE_LOOP)["after"].tolist()
        assert torch._C._len_torch_function_stack() == 0
