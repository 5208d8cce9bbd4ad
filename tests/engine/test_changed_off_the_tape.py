"""Tensors changed with no op of their own keep the trace truthful: written through ``.data``
(NOTE [Changed through .data] in engine/tensors.py), added into by backward (a ``.grad``
that was there already), stepped by an optimizer or changed through a view (NOTE [Changed
off the tape]), or given an attribute (NOTE [Attribute writes] in engine/attributes.py). Each op reads the values, shape and flags its tensors had when it ran."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from engine import queries as q
from engine import record
from engine.events import Limits, Trace


def _ops(trace: Trace) -> list[Any]:
    return q.events_of(trace, "op")


def _tensors(trace: Trace) -> dict[int, Any]:
    return {e.id: e for e in q.events_of(trace, "tensor")}


def _value(trace: Trace, tid: int) -> Any:
    return q.value_of(_tensors(trace)[tid].value)


# the old tutorials' loop by hand: the step through .data, the gradient zeroed in place
BY_HAND = """import torch
w = torch.ones(3, requires_grad=True)
for i in range(3):
    loss = (w * w).sum()
    loss.backward()
    w.data -= 0.25 * w.grad
    w.grad.zero_()
"""


def test_a_step_through_data_makes_a_new_version_of_the_leaf_that_the_next_forward_reads() -> None:
    trace = record(BY_HAND)
    assert trace.events[-1].status == "ok"
    ops = _ops(trace)
    names = q.tensor_names(trace)
    forwards = [op for op in ops if op.name == "mul" and op.line == 4]
    steps = [op for op in ops if op.name == "sub"]
    assert len(forwards) == len(steps) == 3
    # w is 1, then 0.5 (w - 0.25 * 2w), then 0.25: each forward reads w as it is then
    assert [_value(trace, op.inputs[0]) for op in forwards] == [[1.0] * 3, [0.5] * 3, [0.25] * 3]
    for step, after in zip(steps, forwards[1:], strict=False):
        data, changed_w = step.outputs[0], step.outputs[1]
        assert [names.get(t) for t in (step.inputs[0], data, changed_w)] == ["w.data", "w.data", "w"]
        assert step.inplace and after.inputs == [changed_w, changed_w]
        assert _tensors(trace)[changed_w].requires_grad
    # w.data goes in as it was before the step and comes out as after it
    assert _value(trace, steps[0].inputs[0]) == [1.0] * 3
    assert _value(trace, steps[0].outputs[0]) == [0.5] * 3
    # `w.data -= …` ends with w.data = <the same memory>: no op of its own
    assert "set_data" not in {op.name for op in ops}
    assert q.final_values(trace)["w"] == [0.125] * 3


def test_a_change_through_a_held_data_read_makes_a_new_version_the_next_op_reads() -> None:
    # h = y.data: a variable holds the alias, of a non-leaf (y) or of a leaf (x); an in-place
    # op on it changes y's memory with no bump of y's version counter, so z = y * 2 read
    # the y from before the change
    source = """import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
h = y.data
h.add_(1)
z = y * 2
xd = x.data
xd.mul_(10)
u = x + 0
y.data.sub_(3)
v = y * 1
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    names = q.tensor_names(trace)
    by_line = {op.line: op for op in _ops(trace)}
    scope: dict[str, Any] = {}
    exec(compile(source, "plain.py", "exec"), scope)
    # each change through .data makes a new version of the alias and one of the tensor it changed
    tensors = _tensors(trace)
    for line, alias, changed in ((5, "h", "y"), (8, "xd", "x"), (10, "y.data", "y")):
        op = by_line[line]
        assert names.get(op.inputs[0]) == alias  # y.data: no variable holds it
        assert tensors[op.outputs[0]].version_of == op.inputs[0]
        assert names.get(op.outputs[1]) == changed
    # and the next op reads that version, with PyTorch's values
    for line, made in ((6, "z"), (9, "u"), (11, "v")):
        op = by_line[line]
        assert op.inputs[0] == by_line[line - 1].outputs[1]
        assert _value(trace, op.outputs[0]) == scope[made].tolist()
    assert _value(trace, by_line[6].inputs[0]) == [3.0, 5.0]


def test_a_change_through_the_data_of_a_tensor_no_op_used_yet_links_to_it() -> None:
    # w.grad has not gone into any op when its .data is zeroed: it is met there, by its
    # name, and the next op reads the version the zero_ made (before, it read a w.grad with
    # no link to the change)
    source = """import torch
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
(w * 2).sum().backward()
w.grad.data.zero_()
y = w.grad + 1
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    names = q.tensor_names(trace)
    tensors = _tensors(trace)
    by_line = {op.line: op for op in _ops(trace)}
    zero, add = by_line[4], by_line[5]
    assert [names.get(t) for t in (*zero.inputs, *zero.outputs)] == ["w.grad.data", "w.grad.data", "w.grad"]
    met = tensors[zero.outputs[1]].version_of
    assert met is not None and names.get(met) == "w.grad" and tensors[met].line == 4
    assert _value(trace, met) == [2.0, 2.0, 2.0]  # w.grad as backward left it
    assert add.inputs == [zero.outputs[1]]
    assert _value(trace, add.inputs[0]) == [0.0, 0.0, 0.0]


def test_a_grad_added_into_in_place_is_a_new_version_the_next_op_reads() -> None:
    trace = record(BY_HAND)
    ops = _ops(trace)
    names = q.tensor_names(trace)
    scaled = [op for op in ops if op.name == "rmul"]  # 0.25 * w.grad, once a step
    assert [names.get(op.inputs[0]) for op in scaled] == ["w.grad"] * 3
    # 2w each time, added into the zeroed .grad in place: 2, then 1, then 0.5
    assert [_value(trace, op.inputs[0]) for op in scaled] == [[2.0] * 3, [1.0] * 3, [0.5] * 3]
    zeroed = [op for op in ops if op.name == "zero"]
    # each step's gradient is a version of its own, not the zeroed one of the step before
    assert [op.inputs[0] for op in scaled[1:]] != [op.outputs[0] for op in zeroed[:-1]]


def test_gradients_accumulating_with_no_zeroing_read_as_they_grow() -> None:
    source = """import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
seen = []
for i in range(3):
    (w * w).sum().backward()
    seen.append(w.grad * 1)
"""
    trace = record(source)
    reads = [op for op in _ops(trace) if op.name == "mul" and op.line == 6]
    # 2w added three times: 2w, 4w, 6w
    assert [_value(trace, op.inputs[0]) for op in reads] == [[2.0, 4.0], [4.0, 8.0], [6.0, 12.0]]
    assert [_value(trace, op.outputs[0]) for op in reads] == [[2.0, 4.0], [4.0, 8.0], [6.0, 12.0]]


def test_setting_requires_grad_is_an_op_whose_new_version_requires_grad() -> None:
    source = """import torch
x = torch.tensor([1.0, 2.0])
x.requires_grad = True
y = (x ** 2).sum()
y.backward()
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    made, flag, square = _ops(trace)[:3]
    assert (flag.name, flag.api, flag.line, flag.inplace) == (
        "requires_grad",
        "Tensor.requires_grad_",
        3,
        True,
    )
    assert flag.inputs == made.outputs and square.inputs == flag.outputs
    tensors = _tensors(trace)
    assert not tensors[made.outputs[0]].requires_grad
    new = tensors[flag.outputs[0]]
    assert new.requires_grad and new.is_leaf and q.tensor_names(trace)[new.id] == "x"
    assert q.final_grads(trace)["x"] == [2.0, 4.0]


@pytest.mark.parametrize(
    ("write", "shape", "value"),
    [
        ("w.data = torch.zeros(4)", [4], [0.0] * 4),  # another shape
        ("w.data = w.data - 0.5 * w.grad", [2], [0.0, 0.0]),  # the step by hand, out of place
    ],
)
def test_swapping_data_is_an_op_and_the_next_op_reads_the_new_memory(
    write: str, shape: list[int], value: list[float]
) -> None:
    source = f"""import torch
w = torch.ones(2, requires_grad=True)
(w * w).sum().backward()
{write}
z = w * 3
"""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    ops = _ops(trace)
    (swap,) = [op for op in ops if op.line == 4 and op.name == "set_data"]
    assert swap.api == "Tensor.data" and swap.inplace
    names = q.tensor_names(trace)
    assert names.get(swap.inputs[1]) == "w" and [names.get(t) for t in swap.outputs] == ["w"]
    tensors = _tensors(trace)
    (new,) = swap.outputs
    assert tensors[new].shape == shape and q.value_of(tensors[new].value) == value
    assert tensors[new].requires_grad
    (times,) = [op for op in ops if op.line == 5]
    assert times.inputs == [new] and q.value_of(tensors[times.outputs[0]].value) == [v * 3 for v in value]


def test_the_forward_after_an_optimizer_step_reads_the_stepped_parameters() -> None:
    source = """import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = torch.tensor([[1.0, 2.0]])
for step in range(3):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""
    trace = record(source, limits=Limits(detail_steps=3))
    assert trace.events[-1].status == "ok"
    names = q.tensor_names(trace)
    linears = [op for op in _ops(trace) if op.name == "linear"]
    assert len(linears) == 3
    assert {names.get(op.inputs[1]) for op in linears} == {"model.weight"}
    assert len({op.inputs[1] for op in linears}) == 3  # a version a step
    # d(sum)/dw = x: each step takes 0.5 * [1, 2] off the weight
    plain: dict[str, Any] = {"__name__": "__main__"}
    torch.manual_seed(0)
    exec(compile(source.replace("range(3)", "range(0)"), "plain.py", "exec"), plain)
    w0 = plain["model"].weight.reshape(-1).tolist()
    want = [[w0[0] - 0.5 * k, w0[1] - 1.0 * k] for k in range(3)]
    got = [_value(trace, op.inputs[1]) for op in linears]
    for row, wanted in zip(got, want, strict=True):
        assert row == pytest.approx(wanted)
    assert _value(trace, linears[0].inputs[1]) == w0  # the first reads the initial weight, bitwise


def test_an_in_place_op_on_a_view_shows_in_the_base_the_next_op_reads() -> None:
    source = """import torch
x = torch.zeros(4)
x[0:2].add_(1)
y = x * 2
"""
    trace = record(source)
    ops = _ops(trace)
    made, view, add, times = ops
    assert (view.name, add.name, times.name) == ("getitem", "add", "mul")
    # the view goes in as it was and comes out changed; x, its base, is read changed
    assert _value(trace, add.inputs[0]) == [0.0, 0.0] and _value(trace, add.outputs[0]) == [1.0, 1.0]
    assert times.inputs != made.outputs and q.tensor_names(trace)[times.inputs[0]] == "x"
    assert _value(trace, times.inputs[0]) == [1.0, 1.0, 0.0, 0.0]
    assert _value(trace, times.outputs[0]) == [2.0, 2.0, 0.0, 0.0]
