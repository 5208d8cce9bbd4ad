"""Gradients in a trace equal PyTorch's own ``.grad``, and recording never changes them."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import queries as q
from engine import record
from engine.events import FullValue

UNARY = [
    "torch.tanh({})",
    "torch.sigmoid({})",
    "torch.exp({} * 0.1)",
    "({}) ** 2",
    "torch.relu({})",
    "torch.sin({})",
    "({}).abs()",
    "torch.log1p(({}) ** 2)",
]
BINARY = ["({} + {})", "({} * {})", "({} - {})", "({} / (1.5 + ({}) ** 2))"]


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(["a", "b", "c", "(a * 0 + 2.0)", "a * b"]))
    if draw(st.booleans()):
        return draw(st.sampled_from(UNARY)).format(draw(expressions(depth - 1)))
    left, right = draw(expressions(depth - 1)), draw(expressions(depth - 1))
    return draw(st.sampled_from(BINARY)).format(left, right)


def _snippet(expr: str, values: list[float], reduce: str) -> str:
    a, b, c = values
    return (
        "import torch\n"
        f"a = torch.tensor([{a!r}, {b!r}], requires_grad=True)\n"
        f"b = torch.tensor([{c!r}, {a!r}], requires_grad=True)\n"
        f"c = torch.tensor({b!r}, requires_grad=True)\n"
        f"out = ({expr}).{reduce}() + 0.0 * (a.sum() + b.sum() + c)\n"
        "out.backward()\n"
    )


@settings(max_examples=40, deadline=None)
@given(
    expr=expressions(),
    values=st.lists(st.floats(-3, 3, allow_nan=False, width=32), min_size=3, max_size=3),
    reduce=st.sampled_from(["sum", "mean"]),
)
def test_trace_grads_equal_plain_pytorch(expr: str, values: list[float], reduce: str) -> None:
    source = _snippet(expr, values, reduce)
    plain: dict[str, object] = {}
    exec(compile(source, "plain", "exec"), plain)
    trace = record(source)
    assert trace.events[-1].status == "ok", trace.events[-1].message
    finals = {e.name: e.grad for e in trace.events if e.type == "tensor_final"}
    for name in "abc":
        want = plain[name].grad  # type: ignore[attr-defined]
        got = finals[name]
        assert isinstance(got, FullValue)
        assert torch.equal(torch.tensor(got.flat, dtype=want.dtype).reshape(want.shape), want), (name, expr)


def test_accumulated_value_in_the_walk_equals_grad() -> None:
    trace = record(
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = (x.exp() * x).sum()\ny.backward()\n"
    )
    ((before, added, after),) = q.accumulations(trace, "x")
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x.exp() * x).sum().backward()
    assert before is None and added == after == x.grad.tolist()


MLP = """
import torch
import torch.nn as nn
torch.manual_seed(1)
model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
X, Y = torch.randn(128, 20), torch.randint(0, 5, (128,))
for step in range(6):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(X), Y)
    loss.backward()
    opt.step()
"""


def test_recording_leaves_training_bitwise_identical() -> None:
    from engine.recorder import Recorder
    from engine.source import SNIPPET_FILENAME

    plain: dict[str, object] = {"__name__": "__main__"}
    exec(compile(MLP, "plain", "exec"), plain)
    recorded: dict[str, object] = {"__name__": "__main__"}
    events: list[object] = []
    with Recorder(events.append):
        exec(compile(MLP, SNIPPET_FILENAME, "exec"), recorded)
    assert any(e["type"] == "node_executed" for e in events)  # type: ignore[index]
    for p_plain, p_rec in zip(plain["model"].parameters(), recorded["model"].parameters(), strict=True):  # type: ignore[attr-defined]
        assert torch.equal(p_plain, p_rec)
        assert torch.equal(p_plain.grad, p_rec.grad)
