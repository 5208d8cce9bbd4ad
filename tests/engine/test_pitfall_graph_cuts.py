"""Values copied off the graph (engine/pitfalls/copied_out.py) and a loss rewrapped as a
leaf (step-without-gradients, engine/pitfalls/no_gradients.py): said at the line that cut
the graph, with the fix in the snippet's own code; the near misses stay silent."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_stdout, recorded_silently

COPIED = """
import torch
a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
v = torch.tensor([a * b, a + b])
loss = (v ** 2).sum(){more}
loss.backward()
print(a.grad, b.grad)
"""


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True")
def test_a_list_of_tensors_copied_by_torch_tensor_is_said_with_torch_stack_in_its_place() -> None:
    trace = record(COPIED.format(more=""))
    (p,) = q.pitfalls(trace)
    assert (p.kind, p.line) == ("tensor-copied-off-graph", 5)
    assert (
        "Line 5 (v = torch.tensor([a * b, a + b])) copies the values of tensors that require grad"
        in p.message
    )
    assert (
        p.fix
        == "Build it with torch.stack, which keeps each element's history: v = torch.stack([a * b, a + b])."
    )
    # backward() then fails, and its hint names the same line instead of listing every way to cut a graph
    (error,) = q.errors(trace)
    assert error.line == 7
    assert error.hint is not None and "Line 5 (v = torch.tensor([a * b, a + b])) cuts the chain" in error.hint
    assert "v = torch.stack([a * b, a + b])" in error.hint


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True")
def test_a_copy_that_another_path_hides_is_said_and_the_gradients_stay_pytorchs() -> None:
    source = COPIED.format(more=" + a")  # backward runs: a.grad is 1, the path through v is lost
    trace = record(source)
    assert trace.events[-1].status == "ok"
    assert [(p.kind, p.line) for p in q.pitfalls(trace)] == [("tensor-copied-off-graph", 5)]
    assert q.stdout(trace) == plain_stdout(source) == "tensor(1.) None\n"


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
def test_torch_tensor_of_a_tensor_that_requires_grad_is_said_with_the_general_fix() -> None:
    source = """
import torch
w = torch.randn(3, requires_grad=True)
y = torch.tensor(w * 2, dtype=torch.float64)
(y.sum() + w.sum()).backward()
"""
    (p,) = q.pitfalls(record(source))
    assert (p.kind, p.line) == ("tensor-copied-off-graph", 4)
    assert "copies the values of a tensor that requires grad" in p.message
    assert p.fix.startswith("Build it with torch.stack([...]) (torch.cat for tensors with a dimension)")


NEAR_MISSES = {
    "numbers": "v = torch.tensor([1.0, 2.0], requires_grad=True)\nloss = (v * a).sum()",
    "values read on purpose": "v = torch.tensor([a.item(), b.item()])\nloss = (v * a).sum()",
    "under no_grad": "with torch.no_grad():\n    v = torch.tensor([a * b, a + b])\nloss = (v * a).sum()",
    "detached first": "v = torch.tensor([(a * b).detach(), (a + b).detach()])\nloss = (v * a).sum()",
    "as_tensor of a tensor (handed back as it is)": "v = torch.as_tensor(a * b)\nloss = v * 2",
    "torch.stack": "v = torch.stack([a * b, a + b])\nloss = (v ** 2).sum()",
    "a value kept with .item(), for a log": "logged = torch.tensor((a * b).item())\nloss = a * b",
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    source = (
        "import torch\na = torch.tensor(2.0, requires_grad=True)\nb = torch.tensor(3.0, requires_grad=True)\n"
        + NEAR_MISSES[name]
        + "\nloss.backward()\n"
    )
    recorded_silently(source)


REWRAPPED = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(32, 4), torch.randn(32, 1)
for i in range(5):
    opt.zero_grad()
{lines}
    loss.backward()
    opt.step()
"""
REWRAPS = {
    "a new tensor from .item()": (
        "    err = ((model(X) - Y) ** 2).mean().item()\n    loss = torch.tensor(err, requires_grad=True)",
        "line 10 (loss = torch.tensor(err, requires_grad=True)) made it a new tensor with no history",
        "Line 9 (err = ((model(X) - Y) ** 2).mean().item()) cuts the chain back to the leaves: .item() gives "
        "a Python number",
    ),
    "requires_grad set on a detached loss": (
        "    pred = model(X).detach()\n    loss = ((pred - Y) ** 2).mean()\n    loss.requires_grad = True",
        "line 11 (loss.requires_grad = True) lets it require grad, but it has no history (no grad_fn)",
        "Line 9 (pred = model(X).detach()) cuts the chain back to the leaves: .detach() gives a value",
    ),
    "requires_grad_() on a loss made by torch.tensor": (
        "    loss = torch.tensor(((model(X) - Y) ** 2).mean().item()).requires_grad_()",
        "line 9 (loss = torch.tensor(((model(X) - Y) ** 2).mean().item()).requires_grad_()) made it a new "
        "tensor with no history",
        "",
    ),
}


@pytest.mark.parametrize("name", sorted(REWRAPS))
def test_a_loss_rewrapped_as_a_leaf_names_the_line_that_did_it(name: str) -> None:
    lines, made, cut = REWRAPS[name]
    source = REWRAPPED.format(lines=lines)
    found = q.pitfalls(record(source))
    backward_line = next(i for i, t in enumerate(source.splitlines(), 1) if "loss.backward()" in t)
    assert [(p.kind, p.line) for p in found] == [("step-without-gradients", backward_line + 1)]
    p = found[0]
    assert p.message.startswith(f"backward() (line {backward_line}) started from loss, a leaf: {made}, ")
    assert cut in p.message
    assert p.fix.startswith("Compute loss from the model's output with tensor operations only")


def test_an_item_on_the_way_to_a_failing_backward_is_named_in_its_hint() -> None:
    source = """
import torch
w = torch.tensor(2.0, requires_grad=True)
s = (w * 3).item()
loss = torch.tensor(s) ** 2
loss.backward()
"""
    (error,) = q.errors(record(source))
    assert error.hint is not None
    assert (
        "Line 4 (s = (w * 3).item()) cuts the chain back to the leaves: .item() gives a Python number"
        in error.hint
    )


def test_a_leaf_made_of_a_number_item_read_off_the_graph_is_said() -> None:
    # backward() runs and fills the new leaf's .grad; w, which the number came from, gets none
    source = (
        "import torch\nw = torch.randn(3, requires_grad=True)\nx = torch.randn(3)\n"
        "loss = torch.tensor((w * x).sum().item() ** 2, requires_grad=True)\nloss.backward()\n"
        "print(w.grad)\n"
    )
    assert plain_stdout(source) == "None\n"
    (p,) = q.pitfalls(record(source))
    assert (p.kind, p.line, p.title) == (
        "tensor-copied-off-graph",
        4,
        "torch.tensor(….item()) copies a value off the graph",
    )
    assert "reads a number off w with .item()" in p.message
    assert "w, which it was computed from, gets none through it (its .grad stays None" in p.message
    assert p.fix.startswith("Keep the tensor: compute with (w * x).sum() itself, not (w * x).sum().item()")


def test_a_prediction_rewrapped_as_a_leaf_before_the_loss_names_its_line() -> None:
    # the leaf is the prediction, not the loss: the pitfall said zero_grad() may have cleared
    # the gradients, and its fix moved zero_grad()
    source = REWRAPPED.format(
        lines="    out = torch.tensor(model(X).tolist(), requires_grad=True)\n    loss = ((out - Y) ** 2).mean()"
    )
    found = q.pitfalls(record(source))
    assert [(p.kind, p.line) for p in found] == [("step-without-gradients", 12)]
    p = found[0]
    assert (
        "backward() did run (line 11), but the loss does not reach them: line 9 (out = "
        "torch.tensor(model(X).tolist(), requires_grad=True)) made out a new tensor from the model's numbers"
    ) in p.message
    assert "zero_grad() sets .grad to None" not in p.message
    assert p.fix.startswith("Compute out from the model's output with tensor operations only")
