"""Eleven lessons of the gallery: a vector's backward(), finite differences, a broadcast bias's
summed gradient, a frozen layer, a loop that steps its parameters by hand, gradients added up
over small batches on purpose, and five training loops gone wrong (no zero_grad(), zero_grad()
before step(), p = p - lr * p.grad, softmax into NLLLoss, a learning rate that explodes). Each lesson is recorded as the gallery serves it,
and each figure its text or its "try" quotes is read back from the trace; the "try" is
recorded with the change it asks for."""

from __future__ import annotations

import itertools
import math

from engine import record
from engine.events import Trace
from tests.server.lesson_traces import BY_ID, optimizer_steps, stdout_text, stepper_timeline, tried


def _pitfalls(trace: Trace) -> list[tuple[str, int | None]]:
    return [(e.kind, e.line) for e in trace.events if e.type == "pitfall"]


def _rounded(values: list[float], digits: int = 6) -> list[float]:
    return [round(v, digits) for v in values]


def test_vector_backward_opens_where_the_seed_v_arrives_and_its_try_holds() -> None:
    lesson = BY_ID["vector-backward"]
    trace = record(lesson.source)
    name, at = stepper_timeline(trace)[lesson.step or 0]
    started = next(e for e in trace.events if e.type == "backward_started")
    assert _rounded(started.seed[0].flat) == [1.0, 0.1, 0.01]  # the seed is v, not 1
    assert name == "PowBackward0" and _rounded(at.grad_in[0].flat) == [1.0, 0.1, 0.01]
    assert _rounded(at.grad_out[0].flat) == [2.0, 0.4, 0.06]
    assert "PowBackward0 receives v = [1, 0.1, 0.01] and sends v · 2x = [2, 0.4, 0.06]" in lesson.text
    assert stdout_text(trace) == "tensor([2.0000, 0.4000, 0.0600])\n"
    # the try: a sum seeds [1, 1, 1] (Try it's first press); no argument at all (its second,
    # Then ▶) fails with PyTorch's words
    assert "Replace y.backward(v) with y.sum().backward()" in lesson.try_next
    summed = record(lesson.tried(1))
    assert (
        "\ny.sum().backward()  # as y.backward(torch.ones(3))\nprint(x.grad)  # 2x = [2, 4, 6]\n"
        in lesson.tried(1)
    )
    assert stdout_text(summed) == "tensor([2., 4., 6.])\n"
    assert "y now receives [1, 1, 1], as if v were all ones, and x.grad is 2x = [2, 4, 6]" in lesson.try_next
    bare = record(lesson.tried(2))
    assert "\ny.backward()  # no argument\n" in lesson.tried(2)
    assert "Then try y.backward() with no argument" in lesson.try_next
    error = next(e for e in bare.events if e.type == "error")
    assert error.message == "grad can be implicitly created only for scalar outputs"
    assert f"it fails, {error.message}." in lesson.try_next


def test_broadcast_sums_opens_at_the_add_that_sums_the_rows_and_its_try_holds() -> None:
    lesson = BY_ID["broadcast-sums"]
    trace = record(lesson.source)
    name, at = stepper_timeline(trace)[lesson.step or 0]
    assert name == "AddBackward0" and at.grad_in[0].shape == [3, 2]
    assert at.grad_in[0].flat == [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    assert at.grad_out[0] is None and at.grad_out[1].flat == [18.0, 24.0]  # nothing to X
    assert "2 · out = [2, 4], [6, 8] and [10, 12] add up to [18, 24]" in lesson.text
    assert "X needs no gradient, so nothing is sent to it" in lesson.text
    assert stdout_text(trace) == "tensor([18., 24.])\n"
    bias = "b = torch.zeros(2, requires_grad=True)"
    column = tried(
        lesson, bias, "b = torch.zeros(3, 1, requires_grad=True)", asks="Make b a column, torch.zeros(3, 1)"
    )
    assert stdout_text(column) == "tensor([[ 6.],\n        [14.],\n        [22.]])\n"
    assert "b.grad sums each row: [[6], [14], [22]]" in lesson.try_next


def test_freeze_layer_ends_the_walk_at_the_layer_that_trains_and_its_try_walks_on() -> None:
    lesson = BY_ID["freeze-layer"]
    trace = record(lesson.source)
    nodes = [(e.name, e.module_path) for e in trace.events if e.type == "node"]
    assert {path for _, path in nodes} == {"model.2", None}  # no node for model.0 or the ReLU
    name, at = stepper_timeline(trace)[lesson.step or 0]
    assert name == "AddmmBackward0" and at.grad_out[1] is None  # nothing to the ReLU's output
    assert at.grad_out[0] is not None and at.grad_out[2] is not None  # the bias; TBackward0
    walked = [name for name, _ in stepper_timeline(trace)]
    assert walked[:3] == ["MeanBackward0", "PowBackward0", "AddmmBackward0"]  # then model.2's leaves
    assert walked[3:] == ["AccumulateGrad", "TBackward0", "AccumulateGrad", "end"]
    assert stdout_text(trace).startswith("None\n")  # model.0.weight.grad
    assert "model.0.weight.grad stays None" in lesson.text and "the walk ends at model.2" in lesson.text
    frozen = "for p in model[0].parameters():\n    p.requires_grad_(False)\n"
    trained = tried(lesson, frozen, "", asks="Delete the for loop's two lines")
    walked = [(e.name, e.module_path) for e in trained.events if e.type == "node"]
    assert ("ReluBackward0", "model.1") in walked and ("AddmmBackward0", "model.0") in walked
    order = [name for name, _ in stepper_timeline(trained)]
    assert order.index("ReluBackward0") < order.index("end")
    assert stdout_text(trained).startswith("tensor([[")  # model.0.weight.grad is filled


def test_update_by_hand_falls_to_12_29_and_its_try_raises_on_the_in_place_update() -> None:
    lesson = BY_ID["update-by-hand"]
    trace = record(lesson.source)
    assert not any(e.type == "optimizer_step" for e in trace.events)  # no optimizer
    calls = [e for e in trace.events if e.type == "backward_counted"]
    detailed = sum(e.type == "backward_started" for e in trace.events)
    assert detailed + len(calls) == 2000 and f"{calls[-1].loss:.4g}" == "12.29"
    assert "a point per backward() call" in lesson.text and "it falls to 12.29 at the 2,000th" in lesson.text
    update = "    with torch.no_grad():  # the update itself must not join the graph"
    unguarded = tried(
        lesson,
        update,
        update.replace("with torch.no_grad():", "if True:"),
        asks="Replace with torch.no_grad(): by if True:",
    )
    error = next(e for e in unguarded.events if e.type == "error")
    assert error.message == "a leaf Variable that requires grad is being used in an in-place operation."
    assert error.line == lesson.source.splitlines().index("        a -= learning_rate * a.grad") + 1
    assert f"the first update fails, {error.message}" in lesson.try_next


def test_rebound_update_leaves_the_loss_flat_and_its_try_trains() -> None:
    lesson = BY_ID["rebound-update"]
    trace = record(lesson.source)
    assert _pitfalls(trace) == [("loop-variable-rebound", 17)]
    calls = [e for e in trace.events if e.type == "backward_counted"]
    assert sum(e.type == "backward_started" for e in trace.events) + len(calls) == 50  # "runs 50 times"
    assert {f"{e.loss:.4g}" for e in calls} == {"106.6"} and stdout_text(trace).startswith("106.62")
    assert "the loss chart is a flat line at 106.6" in lesson.text
    rebound = "p = p - lr * p.grad"
    line = next(line for line in lesson.source.splitlines() if rebound in line)
    fixed = tried(
        lesson, line, line.split("p = ")[0] + "p -= lr * p.grad", asks="Write the update as p -= lr * p.grad"
    )
    assert _pitfalls(fixed) == []
    assert f"{float(stdout_text(fixed)):.2g}" == "0.0087"
    assert "the pitfall goes quiet and the loss falls to 0.0087 after 50 passes" in lesson.try_next


def test_forgot_zero_grad_swings_every_7_steps_and_its_try_falls() -> None:
    lesson = BY_ID["forgot-zero-grad"]
    trace = record(lesson.source)
    assert "zero_grad" not in lesson.source.replace("# no opt.zero_grad()", "")
    assert _pitfalls(trace) == [("missing-zero-grad", 14)]
    losses = [s.loss for s in optimizer_steps(trace)]
    assert len(losses) == 50
    assert [f"{losses[i]:.4g}" for i in (0, 3, 7, 49)] == ["106.6", "0.05125", "107.8", "111.9"]
    assert "falls from 106.6 to 0.051 at step 4" in lesson.text
    assert (
        "climbs back to 107.8 at step 8" in lesson.text and "after 50 steps the loss is 111.9" in lesson.text
    )
    lows = [i + 1 for i in range(1, 49) if losses[i] < losses[i - 1] and losses[i] < losses[i + 1]]
    assert lows == [4, 11, 18, 25, 32, 39, 46]  # "a swing every 7 steps that never settles"
    norms = [s.grad_norm for s in optimizer_steps(trace)]
    assert f"{min(norms):.2g} {max(norms):.4g}" == "4.1 149.5"
    assert "between 4.1 and 149.5" in lesson.text
    # the try: zero_grad() before backward()
    backward = "    loss.backward()"
    assert lesson.source.count(backward) == 1
    fixed = optimizer_steps(
        tried(
            lesson,
            backward,
            "    opt.zero_grad()\n" + backward,
            asks="Add opt.zero_grad() before loss.backward()",
        )
    )
    falling = [s.loss for s in fixed]
    assert all(b < a for a, b in itertools.pairwise(falling))  # "falls at every step"
    assert f"{falling[-1]:.3g}" == "0.0252" and "to 0.0252 after 50" in lesson.try_next


def test_step_without_gradients_changes_nothing_and_its_try_learns() -> None:
    lesson = BY_ID["step-without-gradients"]
    trace = record(lesson.source)
    steps = optimizer_steps(trace)
    assert len(steps) == 50 and {f"{s.loss:.4g}" for s in steps} == {"106.6"}
    assert all(s.update_norm == 0.0 and s.grad_norm is None for s in steps)
    assert "a flat line at 106.6, the update norm is 0 at every step, and there is no gradient norm" in (
        lesson.text
    )
    assert _pitfalls(trace) == [("step-without-gradients", 16)]
    lines = lesson.source.splitlines()
    assert [lines[13].strip(), lines[14].split("#")[0].strip()] == ["loss.backward()", "opt.zero_grad()"]
    wrong = "    loss.backward()\n    opt.zero_grad()"
    fixed = optimizer_steps(
        tried(
            lesson,
            wrong,
            "    opt.zero_grad()\n    loss.backward()",
            asks="Move opt.zero_grad() above loss.backward()",
        )
    )
    assert f"{fixed[1].loss:.3g} {fixed[-1].loss:.2g}" == "0.104 0.0087"
    assert all(s.update_norm > 0 for s in fixed)
    assert "the loss falls to 0.104 at step 2 and 0.0087 at step 50" in lesson.try_next


def test_softmax_nll_gives_a_negative_loss_and_its_try_a_positive_one() -> None:
    lesson = BY_ID["softmax-nll"]
    trace = record(lesson.source)
    steps = optimizer_steps(trace)
    assert _pitfalls(trace) == [("nll-loss-without-log-softmax", 13)]
    assert len(steps) == 60 and all(-1 < s.loss < 0 for s in steps)
    assert f"{steps[0].loss:.3f} {steps[-1].loss:.3f}" == "-0.342 -0.755"
    assert (
        "it starts at -0.342, can never go below -1, and creeps down to -0.755 after 60 steps" in lesson.text
    )
    assert f"{steps[0].grad_norm:.2f} {steps[-1].grad_norm:.2g}" == "0.16 0.073"
    assert "(a norm near 0.16, falling to 0.073)" in lesson.text
    assert stdout_text(trace) == "loss -0.755, accuracy 0.85\n" and "to an accuracy of 0.85" in lesson.text
    softmax = "nn.Softmax(dim=1)"
    fixed = tried(
        lesson, softmax, "nn.LogSoftmax(dim=1)", asks=f"Replace {softmax} with nn.LogSoftmax(dim=1)"
    )
    losses = [s.loss for s in optimizer_steps(fixed)]
    assert f"{losses[0]:.3f} {losses[-1]:.3f}" == "1.136 0.198" and _pitfalls(fixed) == []
    assert stdout_text(fixed) == "loss 0.198, accuracy 0.97\n"
    assert "the loss starts at 1.136 and falls to 0.198, and the accuracy reaches 0.97" in lesson.try_next


def test_exploding_loss_reaches_inf_then_nan_and_its_try_converges() -> None:
    lesson = BY_ID["exploding-loss"]
    loop = BY_ID["training-loop"]
    assert "lr=0.5" in lesson.source and "lr=0.05" in loop.source  # "10 times higher"
    data = [line for line in lesson.source.splitlines() if line.startswith(("X = ", "y = "))]
    assert data and all(line in loop.source for line in data)  # "the same line fit"
    trace = record(lesson.source)
    losses = [s.loss for s in optimizer_steps(trace)]
    assert [f"{v:,.0f}" for v in losses[1:3]] == ["8,143", "622,044"] and f"{losses[0]:.1f}" == "106.6"
    assert round(losses[1] / losses[0]) == round(losses[2] / losses[1]) == 76
    assert "grows about 76-fold a step: 106.6, 8,143, 622,044" in lesson.text
    first_inf = next(i for i, v in enumerate(losses) if math.isinf(v)) + 1
    first_nan = next(i for i, v in enumerate(losses) if math.isnan(v)) + 1
    assert (first_inf, first_nan) == (20, 43) and all(math.isnan(v) for v in losses[42:])
    assert "to inf at step 20" in lesson.text and "NaN, from step 43 on" in lesson.text
    assert _pitfalls(trace) == [("non-finite-loss", 15)]
    fixed = [s.loss for s in optimizer_steps(tried(lesson, "lr=0.5", "lr=0.05", asks="Set lr=0.05 and run"))]
    assert f"{fixed[1]:.3g} {fixed[-1]:.2g}" == "0.104 6.5e-07"
    assert "the loss falls from 106.6 to 0.104 at step 2 and to 6.5e-07 after 400 steps" in lesson.try_next


def test_finite_differences_estimate_what_autograd_gets_exactly_and_rounding_spoils_small_h() -> None:
    lesson = BY_ID["finite-differences"]
    trace = record(lesson.source)
    name, at = stepper_timeline(trace)[lesson.step or 0]
    added = next(e for e in trace.events if e.type == "grad_accumulated" and e.node == at.node)
    assert name == "AccumulateGrad" and added.after.flat == [14.75]
    # the estimate's evaluations of f are on the tape, under no_grad, with no nodes
    estimate = [e for e in trace.events if e.type == "op" and e.grad_mode == "no_grad"]
    assert len(estimate) == 10 and all(e.nodes == [] for e in estimate)
    assert "(the tape shows them under no_grad, with no nodes)" in lesson.text

    def estimate_with(h: str) -> float:
        source = lesson.source.replace("h = 0.01\n", f"h = {h}\n")
        assert source != lesson.source or h == "0.01"
        grad, est = stdout_text(record(source)).split()
        assert grad == "14.75"  # autograd's does not move
        return float(est)

    assert f"{estimate_with('0.01'):.4f}" == "14.7501" and "With h = 0.01 it reads 14.7501" in lesson.text
    assert round(estimate_with("0.01") - 14.75, 4) == 0.0001  # off by h² (f''' = 6)
    assert f"{estimate_with('0.001'):.4f}" == "14.7490" and "h = 0.001 reads 14.7490" in lesson.text
    assert f"{estimate_with('0.000001'):.2f}" == "14.31" and "h = 0.000001 reads 14.31" in lesson.text
    assert f"{estimate_with('0.0001'):.4f}" == "14.7343"
    assert "Set h = 0.0001 and run: the estimate falls to 14.7343 while x.grad stays 14.75" in lesson.try_next


def test_accumulate_batches_fills_grad_as_the_whole_batch_does_and_its_try_overshoots_4_times() -> None:
    lesson = BY_ID["accumulate-batches"]
    trace = record(lesson.source)
    timeline = stepper_timeline(trace)
    assert sum(name == "end" for name, _ in timeline) == 5  # one batch of 8, then 4 of 2
    name, at = timeline[lesson.step or 0]
    assert name == "AccumulateGrad" and at.backward == 4
    weight = next(e.id for e in trace.events if e.type == "tensor" and e.name == "model.weight")
    added = [e for e in trace.events if e.type == "grad_accumulated" and e.tensor == weight]
    whole, last = added[0].after.flat, added[-1]
    assert last.node == at.node and last.backward == 4
    assert [f"{v:.3f}" for v in last.after.flat] == ["0.753", "-1.979", "-2.223"]
    assert all(abs(a - b) < 1e-6 for a, b in zip(last.after.flat, whole, strict=True))  # allclose
    assert (
        "brings model.weight.grad to [0.753, -1.979, -2.223], the gradient of the batch of 8" in lesson.text
    )
    divided = [e for name, e in timeline if name == "DivBackward0"]
    assert len(divided) == 4 and all(e.grad_out[0].flat == [0.25] for e in divided)
    assert "DivBackward0 sends 0.25" in lesson.text
    assert stdout_text(trace) == "True\n"
    call = "(loss / 4).backward()"
    summed = tried(lesson, call, "loss.backward()", asks="Write loss.backward() without the / 4")
    assert stdout_text(summed) == "False\n"
    weight = next(e.id for e in summed.events if e.type == "tensor" and e.name == "model.weight")
    end = [e for e in summed.events if e.type == "grad_accumulated" and e.tensor == weight][-1]
    assert [f"{v:.3f}" for v in end.after.flat] == ["3.014", "-7.915", "-8.891"]
    assert all(abs(a - 4 * b) < 1e-5 for a, b in zip(end.after.flat, whole, strict=True))
    # Try it reopens at the lesson's step 32, past the shorter walk's end: the end card shows it
    shorter = stepper_timeline(summed)
    assert len(shorter) == 30 and len(timeline) == 34  # four DivBackward0 fewer
    assert (lesson.step or 0) >= len(shorter) - 1 and shorter[-1][0] == "end"
    assert "model.weight.grad ends at [[3.014, -7.915, -8.891]], 4 times the batch of 8's gradient" in (
        lesson.try_next
    )
