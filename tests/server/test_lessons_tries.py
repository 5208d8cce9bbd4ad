"""The lessons' tries: their try steps (the changes the card's Try it makes, a step a press)
refused where they do not fit their code, and the tries of the first lessons and of the pitfall
lessons recorded with the change they ask for and held to what they say will happen (tried()
checks a try's one edit is the change recorded)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from engine import queries as q
from engine import record
from engine.events import Trace
from server.lessons import TryEdit
from server.lessons.tries import read_tries
from tests.server.lesson_traces import (
    BY_ID,
    LESSONS,
    optimizer_steps,
    quoted,
    stdout_text,
    stepper_timeline,
    tried,
)


def _grads(trace: Trace, digits: int = 2) -> dict[str, object]:
    """Each leaf's final .grad, rounded."""
    out: dict[str, object] = {}
    for name, grad in q.final_grads(trace).items():
        out[name] = [round(v, digits) for v in grad] if isinstance(grad, list) else round(grad, digits)
    return out


def _held_kib(trace: Trace) -> tuple[float, ...]:
    """The memory chart's first, peak, floor after the first and last bytes held, in KiB to 0.1."""
    held = [e.saved_bytes for e in trace.events if e.type == "memory"]
    return tuple(round(b / 1024, 1) for b in (held[0], max(held), min(held[1:]), held[-1]))


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
        "Change the first call to y.backward(retain_graph=True) and run: both calls succeed and x.grad doubles to 24. "
        "The walk reopens at the end of the first call (x.grad None → 12); two steps on, the second call's "
        "AccumulateGrad adds 12 + 12 → 24",
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
        "Replace total += loss with total += loss.item() and run: the warning goes away. Tick compare with the "
        "run before on the charts: the kept graphs climb dashed to 250 KiB, far above the fix, whose line only "
        "steps between 12 and 24.6 KiB (each batch's graph is built before loss lets go of the last one) and "
        "never climbs: its floor stays at 12.6 KiB",
        lambda t: (
            "loss-tensor-accumulated" not in _pitfall_kinds(t)
            and not q.errors(t)
            and _held_kib(t) == (12.0, 24.6, 12.6, 12.6)
        ),
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
        "The printed loss stays 0.54437, as w is all zeros and pred is 0 either way; w.grad is what changes, "
        "on the Backward tab's last card: from [[-0.039], [0.006], [0.041], [0.034]] to "
        "[[-0.038], [0.111], [-0.062], [-0.288]]",
        lambda t: (
            "broadcast-in-loss" not in _pitfall_kinds(t)
            and not q.errors(t)
            and q.stdout(t).startswith("0.54437")
            and _grads(t, 3) == {"w": [-0.038, 0.111, -0.062, -0.288]}
        ),
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


def test_a_try_edit_that_does_not_fit_its_code_is_refused_by_name() -> None:
    code = "lr = 0.5\nprint(lr)\n"

    def one(edit: object) -> object:
        return read_tries({"try_edit": edit}, "x", code)

    assert read_tries({}, "x", code) == ()  # a try that is not edits
    assert one({"replace": "0.5", "with": "0.05"}) == ((TryEdit("0.5", "0.05"),),)
    with pytest.raises(
        ValueError, match=r"lesson 'x': try_edit replaces '0\.1', which its code holds 0 times"
    ):
        one({"replace": "0.1", "with": "0.01"})
    with pytest.raises(ValueError, match="lesson 'x': try_edit replaces 'lr', which its code holds 2 times"):
        one({"replace": "lr", "with": "rate"})
    with pytest.raises(ValueError, match="lesson 'x': try_edit's result 'print' is in its code already"):
        one({"replace": "lr = 0.5", "with": "print"})
    with pytest.raises(ValueError, match=r"lesson 'x': try_edit must be \{"):
        one({"replace": "0.5", "by": "0.05"})


def test_try_steps_are_read_against_the_code_as_each_edit_finds_it() -> None:
    code = "lr = 0.5\nprint(lr)\n"

    def steps(*edits: list[tuple[str, str]]) -> object:
        entry = {"try_steps": [[{"replace": a, "with": b} for a, b in step] for step in edits]}
        return read_tries(entry, "x", code)

    # the second step finds what the first made; an edit finds what the one before it made
    made = steps([("0.5", "0.05")], [("0.05", "0.005"), ("print(lr)", "print(lr * 2)")])
    assert [len(step) for step in made] == [1, 2]  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"try_steps step 2 edit 1 replaces '0\.5', which its code holds 0 times"
    ):
        steps([("0.5", "0.05")], [("0.5", "0.25")])
    # a step whose results are all in the code already would read as made
    with pytest.raises(
        ValueError, match=r"try_steps step 2 edit 1's result 'lr = 0.05' is in its code already"
    ):
        steps([("0.5", "0.05")], [("print(lr)", "lr = 0.05")])
    # an edit that undoes the step's earlier result: the step would never read as made
    with pytest.raises(
        ValueError, match=r"try_steps step 1 edit 1's result 'rate = ' is undone by the step's next edit"
    ):
        steps([("lr = ", "rate = "), ("rate", "lr")])
    with pytest.raises(ValueError, match="try_steps must be a list of steps, each a list of edits"):
        read_tries({"try_steps": [{"replace": "0.5", "with": "0.05"}]}, "x", code)
    with pytest.raises(ValueError, match="try_edit and try_steps both given"):
        read_tries({"try_edit": {"replace": "0.5", "with": "0.05"}, "try_steps": []}, "x", code)


def test_each_try_makes_code_that_runs_and_the_lesson_tests_record() -> None:
    # tried() (lesson_traces.py) refuses an edit other than a lesson's one edit for the same
    # text, so the figures those tests check are the ones the Try it button shows
    edited = {lesson.id for lesson in LESSONS if lesson.try_steps}
    assert len(edited) == 44 and {"momentum", "checkpoint", "freeze-layer", "batch-norm"} <= edited
    shapes = {lesson.id: [len(step) for step in lesson.try_steps] for lesson in LESSONS}
    several = {lesson_id: shape for lesson_id, shape in shapes.items() if shape not in ([], [1])}
    assert several == {
        "data-edit": [1, 2],
        "uninitialised": [2],
        "vector-backward": [2, 1],
        "vanishing-gradients": [1, 1],
    }
    for lesson in LESSONS:
        for count in range(1, len(lesson.try_steps) + 1):
            changed = lesson.tried(count)
            assert changed != lesson.tried(count - 1)
            compile(changed, lesson.file, "exec")


@pytest.mark.parametrize("lesson_id", list(TRIES))
def test_the_try_does_what_it_says(lesson_id: str) -> None:
    lesson = BY_ID[lesson_id]
    old, new, asks, holds = TRIES[lesson_id]
    assert lesson.try_steps == ((TryEdit(old, new),),)  # Try it makes this change
    trace = tried(lesson, old, new, asks=asks)
    assert holds(trace), (lesson_id, stdout_text(trace), _grads(trace), _pitfall_kinds(trace))


@pytest.mark.slow
def test_the_dead_relu_lesson_s_try_keeps_fc1_learning() -> None:
    lesson = BY_ID["dead-relu"]
    labels = "y = ((X - 50).norm(dim=1) < 40).long()  # 1 inside the circle\n"
    scaled = "X = (X - X.mean(0)) / X.std(0)"
    trace = tried(lesson, labels, f"{labels}{scaled}\n", asks=f"add {scaled} after the line that makes y")
    steps = [e for e in trace.events if e.type == "optimizer_step"]
    assert len(steps) == 60
    assert all(p.grad_norm > 0 for s in steps for p in s.params if p.name.startswith("fc1."))
    assert [e for e in trace.events if e.type == "pitfall"] == []
    printed = "".join(e.text for e in trace.events if e.type == "output" and e.stream == "stdout")
    assert printed == "loss 0.238, accuracy 0.95\n"
    assert "the loss falls to 0.238 and accuracy reaches 0.95" in lesson.try_next


@pytest.mark.slow
def test_the_vanishing_gradients_lesson_s_try_brings_fc1_s_gradient_up() -> None:
    lesson = BY_ID["vanishing-gradients"]
    sgd, adam = "torch.optim.SGD(model.parameters(), lr=0.1)", "torch.optim.Adam(model.parameters(), lr=0.01)"
    assert "nn.Sigmoid()" in lesson.source and sgd in lesson.source
    assert (
        "Replace nn.Sigmoid() with nn.ReLU() and run" in lesson.try_next
        and f"optimizer {adam} too" in lesson.try_next
    )
    trace = tried(lesson, "nn.Sigmoid()", "nn.ReLU()", asks="Replace nn.Sigmoid() with nn.ReLU() and run")
    relu = lesson.source.replace("nn.Sigmoid()", "nn.ReLU()")
    steps = [e for e in trace.events if e.type == "optimizer_step"]
    first = {p.name: p.grad_norm for p in steps[0].params}
    assert (
        f"{first['fc1.weight']:.2g}" == "0.00016"
        and round(first["fc10.weight"] / first["fc1.weight"], -1) == 120
    )
    assert [e for e in trace.events if e.type == "pitfall"] == []
    printed = "".join(e.text for e in trace.events if e.type == "output" and e.stream == "stdout")
    assert printed == "loss 0.694\n"
    assert "fc1's gradient is 0.00016, about 120 times under fc10's" in lesson.try_next
    assert "the loss still ends at 0.694 after 30 steps" in lesson.try_next
    assert lesson.tried(2) == relu.replace(sgd, adam)  # Try it's second press, Then ▶
    trace = record(relu.replace(sgd, adam))
    printed = "".join(e.text for e in trace.events if e.type == "output" and e.stream == "stdout")
    assert printed == "loss 0.202\n" and "the loss falls to 0.202" in lesson.try_next
    assert [e for e in trace.events if e.type == "pitfall"] == []


@pytest.mark.slow
def test_the_data_edit_lesson_s_try_lets_autograd_see_the_change_then_makes_it_after_the_step() -> None:
    lesson = BY_ID["data-edit"]
    clamp = "        p.data.clamp_(-0.2, 0.2)\n"
    checked = "with torch.no_grad(): p.clamp_(-0.2, 0.2)"
    asks = f"writing line 16 as: {checked}. Run: backward() now raises"
    trace = tried(lesson, clamp, f"        {checked}\n", asks=asks)
    assert lesson.try_steps[0] == (TryEdit(clamp, f"        {checked}\n"),)  # Try it's first press
    assert trace.events[-1].status == "error"
    error = next(e for e in trace.events if e.type == "error")
    names = {e.id: e.name for e in trace.events if e.type == "node"}
    assert error.node is not None and names[error.node] == "AddmmBackward0"
    assert error.hint.startswith("AddmmBackward0 (in model.2) saved its mat2 for backward (line 13)")
    assert "backward() now raises, naming model.2's AddmmBackward0" in lesson.try_next
    # after opt.step(): the first backward() multiplies by the weight the forward used, the
    # clamp made through .data (by hand) or under no_grad (Try it's second press, "Then ▶")
    loop = "    for p in model.parameters():\n" + clamp
    moved = lesson.source.replace(loop, "").replace("    opt.step()\n", "    opt.step()\n" + loop)
    assert moved.index("opt.step()") < moved.index("p.data.clamp_")
    then = lesson.tried(2)
    assert then.index("opt.step()") < then.index(f"for p in model.parameters():\n        {checked}")
    for code in (moved, then):
        trace = record(code)
        assert trace.events[-1].status == "ok" and [e for e in trace.events if e.type == "pitfall"] == []
        name, at = stepper_timeline(trace)[lesson.step or 0]
        assert name == "AddmmBackward0" and f"{at.grad_out[1].norm:.4g}" == "0.02398"
    assert "where the weight the forward used gives 0.02398" in lesson.text
    assert "move the two clamp lines after opt.step()" in lesson.try_next
    assert "the pitfall goes quiet and at this AddmmBackward0 the hidden layer's gradient is ‖·‖ 0.02398" in (
        lesson.try_next
    )


@pytest.mark.slow
def test_the_activation_twice_lesson_s_try_lets_the_loss_fall_past_the_floor() -> None:
    lesson = BY_ID["activation-twice"]
    second = "prob = torch.sigmoid(model(X))  # a second sigmoid"
    trace = tried(
        lesson, second, "prob = model(X)", asks="Delete the second sigmoid, prob = model(X), and run"
    )
    assert [e for e in trace.events if e.type == "pitfall"] == []
    assert stdout_text(trace) == "loss 0.024, accuracy 1.00\n"
    assert "the pitfall goes quiet and the loss falls to 0.024" in lesson.try_next


@pytest.mark.slow
def test_the_uninitialised_lesson_s_try_starts_from_the_same_values_on_every_run() -> None:
    lesson = BY_ID["uninitialised"]
    made = "        self.weight = nn.Parameter(torch.Tensor(n_out, n_in))  # sizes, not values\n"
    init = "nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))"
    assert made in lesson.source
    assert f"Add import math at the top and {init} on the line after self.weight is made" in lesson.try_next
    fixed = "import math\n" + lesson.source.replace(made, f"{made}        {init}\n")
    assert lesson.tried() == fixed  # Try it makes both edits on one press
    traces = [record(fixed) for _ in range(2)]
    runs = [[e.loss for e in trace.events if e.type == "optimizer_step"] for trace in traces]
    assert runs[0] == runs[1] and len(runs[0]) == 20  # "on every run"
    assert f"{runs[0][0]:.2f} {runs[0][-1]:.3f}" == "5.38 0.038"
    assert "the loss falls from 5.38 to 0.038 in 20 steps, on every run" in lesson.try_next
    assert [e for e in traces[0].events if e.type == "pitfall"] == []


@pytest.mark.slow
def test_the_mlp_classifier_lesson_s_try_leaves_one_linear_map_that_calls_every_point_outside() -> None:
    lesson = BY_ID["mlp-classifier"]
    layers = (
        "model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))"
    )
    trace = tried(
        lesson, layers, layers.replace(" nn.ReLU(),", ""), asks="Remove both nn.ReLU() layers and run"
    )
    losses = [e.loss for e in optimizer_steps(trace)]
    assert len(losses) == 150 and f"{losses[-1]:.3f}" == "0.499"
    assert stdout_text(trace).endswith("accuracy on the training points: 80.1%\n")
    data: dict[str, Any] = {}
    exec(lesson.source[: lesson.source.index("model =")], data)  # the snippet's points and labels
    assert f"{1 - data['y'].float().mean().item():.1%}" == "80.1%"  # the share outside the circle
    quoted(
        lesson.try_next,
        "The loss stalls at 0.499 and accuracy at 80.1%, the share of points outside the circle",
    )
