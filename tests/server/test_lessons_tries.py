"""The tries of the first lessons, each recorded with the change it asks for (the lesson's
try_edit, the change the card's Try it makes: tried() checks the two are one), and held to
what the try says will happen."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from engine import queries as q
from engine.events import Trace
from tests.server.lesson_traces import BY_ID, optimizer_steps, stdout_text, tried


def _grads(trace: Trace, digits: int = 2) -> dict[str, object]:
    """Each leaf's final .grad, rounded."""
    out: dict[str, object] = {}
    for name, grad in q.final_grads(trace).items():
        out[name] = [round(v, digits) for v in grad] if isinstance(grad, list) else round(grad, digits)
    return out


def _pitfall_kinds(trace: Trace) -> set[str]:
    return {p.kind for p in q.pitfalls(trace)}


def _exploded(losses: list[float]) -> bool:
    """The loss grew a millionfold or beyond what a float holds (then NaN)."""
    return any(not math.isfinite(loss) or loss > 1e6 * losses[0] for loss in losses)


def _ops(trace: Trace) -> list[str]:
    return [e.name for e in q.events_of(trace, "op")]


# lesson: (the text changed, what it becomes, what the try says, what must then hold)
TRIES: dict[str, tuple[str, str, str, Callable[[Trace], bool]]] = {
    "scalar": (
        "torch.tensor(2.5,",
        "torch.tensor(1.0,",
        "Change 2.5 to 1.0 and run again: x.grad should be 3·1² − 4 = −1",
        lambda t: stdout_text(t) == "tensor(-1.)\n",
    ),
    "leaf-grad": (
        "h = x * 3\n",
        "h = x * 3\nh.retain_grad()\n",
        "Add h.retain_grad() right after h = x * 3 and run: h.grad becomes [6, 12]",
        lambda t: "h.grad: tensor([ 6., 12.])\n" in stdout_text(t),
    ),
    "graph-freed": (
        "y.backward()\ny.backward()",
        "y.backward(retain_graph=True)\ny.backward()",
        "Change the first call to y.backward(retain_graph=True) and run: both calls succeed and x.grad doubles to 24",
        lambda t: not q.errors(t) and _grads(t) == {"x": 24.0},
    ),
    "inplace": (
        "b.mul_(2)",
        "b = b * 2",
        "Write b = b * 2 instead of b.mul_(2) and run again",
        lambda t: not q.errors(t) and _grads(t) == {"a": [0.39, 0.21, 0.09]},
    ),
    "holding-graph": (
        "total += loss ",
        "total += loss.item() ",
        "Replace total += loss with total += loss.item() and run: the warning goes away",
        lambda t: "loss-tensor-accumulated" not in _pitfall_kinds(t) and not q.errors(t),
    ),
    "detach": (
        "frozen = y.detach()             # same value, cut out of the graph",
        "frozen = y                      # y itself: still in the graph",
        "Replace y.detach() with y and run",
        lambda t: _grads(t) == {"w": 33.0},
    ),
    "define-by-run": (
        "-1.5",
        "-1.0",
        "Change −1.5 in h to −1.0 and run: the largest |z| is now 1.0, and the relu branch is recorded instead",
        lambda t: "relu" in _ops(t) and "div" not in _ops(t),
    ),
    "training-loop": (
        "lr=0.05",
        "lr=0.5",
        "Set lr=0.5 and run: the steps overshoot and the loss explodes instead of falling",
        lambda t: _exploded([s.loss or 0.0 for s in optimizer_steps(t)]),
    ),
    "copy-vs-stack": (
        "v = torch.tensor([a * b, a + b])",
        "v = torch.stack([a * b, a + b])",
        "(v = torch.stack([a * b, a + b])) and run: the walk goes through v, and a.grad becomes 47 and b.grad 34",
        lambda t: _grads(t) == {"a": 47.0, "b": 34.0},
    ),
    "nan-gradient": (
        "torch.sqrt(x)",
        "torch.sqrt(torch.where(x > 0, x, 1.0))",
        "Replace torch.sqrt(x) with torch.sqrt(torch.where(x > 0, x, 1.0)) (the 'double where') and run: x.grad "
        "becomes [0, 0, 0.25]",
        lambda t: _grads(t) == {"x": [0.0, 0.0, 0.25]} and not _pitfall_kinds(t),
    ),
    "never-train": (
        "self.layers = [nn.Linear(4, 8), nn.Linear(8, 1)]",
        "self.layers = nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 1)])",
        "Wrap the list in nn.ModuleList([...]) and run: net.parameters() now has 6 tensors",
        lambda t: {len(s.params) for s in optimizer_steps(t)} == {6} and not _pitfall_kinds(t),
    ),
    "hooks": (
        "y.register_hook(lambda grad: grad * 10)",
        "y.register_hook(lambda grad: grad)",
        "Make the hook return grad unchanged (or print it and return nothing) and run again: x.grad becomes "
        "[18, 36]",
        lambda t: _grads(t) == {"x": [18.0, 36.0]},
    ),
    "second-derivative": (
        "torch.autograd.grad(y, x, create_graph=True)",
        "torch.autograd.grad(y, x)",
        "Remove create_graph=True and run: dy_dx comes back as a plain number with no grad_fn, and the second "
        "grad() fails: element 0 of tensors does not require grad",
        lambda t: (
            [e.message for e in q.errors(t)]
            == ["element 0 of tensors does not require grad and does not have a grad_fn"]
        ),
    ),
    "custom-function": (
        "return grad * 3 * x ** 2",
        "return grad * 2 * x",
        "Make backward return grad * 2 * x and run: x.grad becomes 4 (2 · 2) where the rule gives 12, and nothing complains",
        lambda t: _grads(t) == {"x": 4.0} and not q.errors(t),
    ),
    "forgotten-grad-output": (
        "return 2 * x  # the local derivative alone: grad_output is never read",
        "return grad_output * 2 * x",
        "Return grad_output * 2 * x and run: SquareBackward sends [6, 12]",
        lambda t: _grads(t) == {"x": [6.0, 12.0]} and not _pitfall_kinds(t),
    ),
    "finite-differences": (
        "h = 0.01",
        "h = 0.0001",
        "Set h = 0.0001 and run: the estimate falls to 14.7343 while x.grad stays 14.75",
        lambda t: [round(float(v), 4) for v in stdout_text(t).split()] == [14.75, 14.7343],
    ),
    "broadcasting": (
        "y = torch.randn(32)",
        "y = torch.randn(32, 1)",
        "Make the shapes agree with y = torch.randn(32, 1)",
        lambda t: "broadcast-in-loss" not in _pitfall_kinds(t) and not q.errors(t),
    ),
    "flat-steps": (
        "loss = (pred - y) ** 2",
        "loss = (p - y) ** 2",
        "Compute the loss from p instead of pred (loss = (p - y) ** 2) and run: the walk skips round, and "
        "w.grad becomes [0.2722, 0.5444]",
        lambda t: _grads(t, 4) == {"w": [0.2722, 0.5444]} and "RoundBackward0" not in q.backward_order(t),
    ),
    "own-metrics": (
        "    schedule.step()\n",
        '    schedule.step()\n    gradwalk.log("train_loss", loss.item(), step=epoch)\n',
        'Log the training loss too, once per epoch: gradwalk.log("train_loss", loss.item(), step=epoch)',
        lambda t: [e.step for e in q.events_of(t, "metric") if e.name == "train_loss"] == list(range(30)),
    ),
}


@pytest.mark.parametrize("lesson_id", list(TRIES))
def test_the_try_does_what_it_says(lesson_id: str) -> None:
    lesson = BY_ID[lesson_id]
    old, new, asks, holds = TRIES[lesson_id]
    assert lesson.try_edit is not None and lesson.try_edit.replace == old  # Try it makes this change
    trace = tried(lesson, old, new, asks=asks)
    assert holds(trace), (lesson_id, stdout_text(trace), _grads(trace), _pitfall_kinds(trace))
