"""Six lessons on the gradients a training step is made of and what the step does with them: a
Linear layer's weight gradient (the outer product of the output's gradient and the input),
cross-entropy's (softmax minus one-hot), a gradient clipped to a norm of 1, momentum's steps,
Adam's steps of about lr whatever the gradient, and the whole gradient a residual connection's
add hands its skip path. Each lesson is recorded as the gallery serves it; each figure its text
or its "try" quotes is read back from the trace, and the "try" is recorded with the change it
asks for."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from engine import queries as q
from engine import record
from engine.events import Trace
from server.lessons import Lesson
from tests.server.lesson_traces import BY_ID, optimizer_steps, quoted, stdout_text, stepper_timeline, tried


def _rounded(values: list[float], digits: int = 4) -> list[float]:
    return [round(v, digits) for v in values]


def _grad_sent(trace: Trace, node: str) -> list[list[float] | None]:
    """What the first run of ``node`` sent along each of its edges, rounded."""
    at = next(e for name, e in stepper_timeline(trace) if name == node)
    return [None if g is None else _rounded(g.flat) for g in at.grad_out]


def _recorded_on_the_charts(lesson: Lesson) -> Trace:
    """A training-step lesson, which opens on the charts with the two it says nothing of (the
    learning rate, memory) hidden, recorded."""
    assert lesson.view == "charts" and lesson.charts is not None
    assert lesson.charts.hide == ("lr", "memory")
    return record(lesson.source)


def _unclipped(trace: Trace) -> list[float]:
    """What the clipping lesson logged as "unclipped", step by step."""
    metrics = [e for e in trace.events if e.type == "metric" and e.name == "unclipped"]
    return [e.value for e in metrics]


def test_linear_weight_grad_opens_at_the_addmm_whose_weight_gradient_is_x_times_g() -> None:
    lesson = BY_ID["linear-weight-grad"]
    trace = record(lesson.source)
    name, at = stepper_timeline(trace)[lesson.step or 0]
    assert name == "AddmmBackward0" and at.grad_in[0].flat == [1.0, -2.0]
    bias, x, weight_t = at.grad_out
    assert bias.flat == [1.0, -2.0] and x is None
    assert weight_t.shape == [3, 2] and weight_t.flat == [1.0, -2.0, 2.0, -4.0, 3.0, -6.0]
    assert _grad_sent(trace, "TBackward0") == [[1.0, 2.0, 3.0, -2.0, -4.0, -6.0]]
    quoted(
        lesson.text,
        "the bias gets them as they are, summed over the batch rows, [1, -2]; x needs none",
        "Wᵀ gets xᵀ @ grad, a (3, 2) matrix, [[1, -2], [2, -4], [3, -6]]",
        "layer.weight.grad is [[1, 2, 3], [-2, -4, -6]]: row i is g[i] times x",
        "AddmmBackward0 (line 9)",
    )
    assert lesson.source.splitlines()[8] == "out = layer(x)"
    assert stdout_text(trace) == "tensor([[ 1.,  2.,  3.],\n        [-2., -4., -6.]])\ntensor([ 1., -2.])\n"
    one = "x = torch.tensor([[1.0, 2.0, 3.0]])"
    two = "x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])"
    both = tried(lesson, one, two, asks=f"Give x a second sample, {two}")
    assert stdout_text(both) == "tensor([[ 1.,  3.,  3.],\n        [-2., -6., -6.]])\ntensor([ 2., -4.])\n"
    assert (
        "layer.weight.grad becomes [[1, 3, 3], [-2, -6, -6]] and layer.bias.grad [2, -4]" in lesson.try_next
    )


def test_cross_entropy_grad_opens_where_log_softmax_sends_softmax_minus_one_hot() -> None:
    lesson = BY_ID["cross-entropy-grad"]
    trace = record(lesson.source)
    assert [name for name, _ in stepper_timeline(trace)] == [
        "NllLossBackward0",
        "LogSoftmaxBackward0",
        "AccumulateGrad",
        "end",
    ]
    name, at = stepper_timeline(trace)[lesson.step or 0]
    assert name == "LogSoftmaxBackward0" and at.grad_in[0].flat == [0.0, 0.0, -1.0]
    assert _rounded(at.grad_out[0].flat) == [0.659, 0.2424, -0.9014]
    # PyTorch's own softmax of the lesson's scores, and its grad, as the text quotes them
    z = torch.tensor([[2.0, 1.0, 0.1]], requires_grad=True)
    assert _rounded(F.softmax(z, dim=1)[0].tolist()) == [0.659, 0.2424, 0.0986]
    F.cross_entropy(z, torch.tensor([2])).backward()
    assert z.grad is not None and _rounded(z.grad[0].tolist()) == _rounded(at.grad_out[0].flat)
    quoted(
        lesson.text,
        "NllLossBackward0 sends -1 to the right class, 2, and 0 to the others: [0, 0, -1]",
        "softmax(z) is [0.659, 0.2424, 0.0986] and Σ grad is -1",
        "z.grad = [0.659, 0.2424, 0.0986 − 1] = [0.659, 0.2424, -0.9014]",
        "LogSoftmaxBackward0 (line 9)",
    )
    assert lesson.source.splitlines()[8] == "loss = F.cross_entropy(z, y)"
    printed = "tensor([[ 0.6590,  0.2424, -0.9014]])\n"
    assert stdout_text(trace) == printed * 2  # z.grad, then softmax minus one-hot by hand
    right = "y = torch.tensor([2])"
    zero = tried(lesson, right, "y = torch.tensor([0])", asks="y = torch.tensor([0])")
    sent = _grad_sent(zero, "LogSoftmaxBackward0")[0]
    assert sent == [-0.341, 0.2424, 0.0986]
    assert "z.grad becomes [-0.341, 0.2424, 0.0986]" in lesson.try_next
    # the edge labels' norms, as the graph rounds them
    assert (
        f"reads ‖·‖ {torch.tensor(sent).norm():.2f} where it read {torch.tensor(at.grad_out[0].flat).norm():.2f}"
        in (lesson.try_next)
    )


def test_clip_grad_norm_caps_the_bad_batch_s_gradient_and_its_try_lets_it_through() -> None:
    lesson = BY_ID["clip-grad-norm"]
    trace = _recorded_on_the_charts(lesson)
    steps, unclipped = optimizer_steps(trace), _unclipped(trace)
    assert len(steps) == len(unclipped) == 80
    bad = [k for k, s in enumerate(steps, 1) if s.loss is not None and s.loss > 100]
    assert bad == list(range(6, 80, 8))  # "Every 8th step (6, 14, … 78)"
    assert "Every 8th step (6, 14, … 78) its batch comes round with a loss over 100" in lesson.text
    assert round(unclipped[5], 2) == 8.83 and all(7.8 < unclipped[k - 1] < 9 for k in bad)
    assert "a gradient norm near 8: 8.83 at step 6" in lesson.text
    others = [k for k in range(1, 81) if k not in bad and unclipped[k - 1] > 1]
    assert max(others) == 17  # "from step 18 on no other batch passes 1"
    assert "from step 18 on no other batch passes 1" in lesson.text
    # what the step used: the clipped gradient, and lr × that at most
    assert max(s.grad_norm or 0.0 for s in steps) <= 1.0 + 1e-6
    assert max(s.update_norm or 0.0 for s in steps) <= 0.1 + 1e-6
    assert all(abs(s.grad_norm - 1.0) < 1e-5 for s in steps if s.step in bad)  # type: ignore[operator]
    assert stdout_text(trace) == "w 1.037\nb 0.556\n"
    assert "the line ends at w 1.037, b 0.556" in lesson.text
    # the x at y[45], where the bad label sits: the line y = x + 0.5 gives 0.93 there
    assert f"where the line gives {torch.linspace(-1, 1, 64)[45].item() + 0.5:.2f}" in lesson.text
    loose = tried(lesson, "clip(params, 1.0)", "clip(params, 1000.0)", asks="clip(params, 1000.0)")
    loose_steps = optimizer_steps(loose)
    # nothing clipped: the step used the gradient clip_grad_norm_ measured
    for s, u in zip(loose_steps, _unclipped(loose), strict=True):
        assert s.grad_norm is not None and abs(s.grad_norm - u) <= 1e-6 * u
    assert round(loose_steps[5].update_norm or 0.0, 3) == 0.887
    assert stdout_text(loose) == "w 1.296\nb 0.893\n"
    assert "step 6 moves the parameters 0.887 instead of 0.1, and the run ends at w 1.296, b 0.893" in (
        lesson.try_next
    )


def test_momentum_s_steps_part_from_lr_times_the_gradient_and_its_try_is_plain_sgd() -> None:
    lesson = BY_ID["momentum"]
    trace = _recorded_on_the_charts(lesson)
    steps = optimizer_steps(trace)
    assert len(steps) == 100 and {s.lr[0] for s in steps} == {0.01}
    by_step = {s.step: s for s in steps}

    def carried(k: int) -> float:  # how many times lr × ‖grad‖ step k moved the parameters
        s = by_step[k]
        assert s.update_norm is not None and s.grad_norm is not None
        return s.update_norm / (0.01 * s.grad_norm)

    four, seven = by_step[4], by_step[7]
    assert round(four.grad_norm or 0.0, 2) == 5.28 and round(four.update_norm or 0.0, 3) == 1.217
    assert round(carried(4)) == 23
    assert "at step 4 the gradient is 5.28 but the step moves the parameters 1.217, 23 times" in lesson.text
    assert round(seven.grad_norm or 0.0, 2) == 45.11 and round(seven.update_norm or 0.0, 4) == 0.0393
    assert carried(7) < 0.1  # the velocity turning round
    assert "at step 7 the gradient is 45.11 and the step only 0.0393" in lesson.text
    assert carried(1) == pytest.approx(1.0)  # the first step has no velocity yet
    losses = {k: round(by_step[k].loss or 0.0, 3) for k in (4, 7, 11)}
    assert losses == {4: 0.747, 7: 52.259, 11: 0.158}
    assert "the loss swings, 0.747 at step 4, 52.26 at step 7, 0.158 at step 11" in lesson.text
    # the swings shrink: each peak of the loss lower than the one before
    loss = [s.loss or 0.0 for s in steps]
    peaks = [loss[i] for i in range(1, 99) if loss[i - 1] < loss[i] > loss[i + 1]]
    assert len(peaks) >= 10 and all(b < a for a, b in itertools.pairwise(peaks[:6])), peaks
    assert stdout_text(trace) == "loss 0.0008\nw 3.003\nb 1.987\n"
    assert "after 100 steps it is 0.0008, with w 3.003 and b 1.987" in lesson.text
    plain = tried(lesson, "momentum=0.9)", "momentum=0.0)", asks="Make it momentum=0.0")
    plain_steps = optimizer_steps(plain)
    assert all(abs(s.update_norm - 0.01 * s.grad_norm) < 1e-6 for s in plain_steps)  # type: ignore[operator]
    plain_loss = [s.loss or 0.0 for s in plain_steps]
    assert all(b < a for a, b in itertools.pairwise(plain_loss))  # "without a swing"
    assert stdout_text(plain) == "loss 0.0192\nw 3.113\nb 1.641\n"
    assert round(loss[-1], 6) == 0.000752  # the loss chart's last reading, 7.52e-4
    assert "to 0.0192 after 100 steps against the momentum run's 7.52e-4, with w 3.113 and b 1.641" in (
        lesson.try_next
    )


def test_adam_s_steps_are_about_lr_long_whatever_the_gradient_and_its_try_scales_the_gradient() -> None:
    lesson = BY_ID["adam"]
    trace = _recorded_on_the_charts(lesson)
    steps = optimizer_steps(trace)
    assert len(steps) == 100 and {s.lr[0] for s in steps} == {0.1}
    assert all(s.grad_norm is not None and s.update_norm is not None for s in steps)
    by_step = {s.step: s for s in steps}
    first = by_step[1]
    # each of the two parameters moves exactly lr at step 1: 0.1 · √2
    assert round(first.grad_norm or 0.0, 2) == 64.44
    assert (
        first.update_norm == pytest.approx(0.1 * 2**0.5, rel=1e-5) and round(first.update_norm, 4) == 0.1414
    )
    assert round(0.01 * (first.grad_norm or 0.0), 3) == 0.644  # SGD's step with lr=0.01: lr × gradient
    assert max(s.update_norm or 0.0 for s in steps) <= 0.1 * 2**0.5 + 1e-6  # "no later step is longer"
    thirtieth = by_step[30]  # the gradient 13 times smaller, the step 2 times
    assert round(thirtieth.grad_norm or 0.0, 2) == 4.92 and round(thirtieth.update_norm or 0.0, 4) == 0.0687
    assert round((first.grad_norm or 0.0) / (thirtieth.grad_norm or 1.0)) == 13
    assert round((first.update_norm or 0.0) / (thirtieth.update_norm or 1.0)) == 2
    # the gradient turns round at step 35 (its smallest), and the steps are shortest at step 46
    grads = [s.grad_norm or 0.0 for s in steps]
    updates = [s.update_norm or 0.0 for s in steps]
    assert grads.index(min(grads[:60])) + 1 == 35 and updates.index(min(updates[:60])) + 1 == 46
    assert round(grads[45], 2) == 4.93 and round(updates[45], 3) == 0.003
    quoted(
        lesson.text,
        "m̂ = m / (1 − 0.9ᵗ), v̂ = v / (1 − 0.999ᵗ) at step t. It steps lr × m̂ / √v̂",
        "At step 1 the gradient is 64.44, m̂ is that gradient and v̂ its square, so both parameters move exactly "
        "lr = 0.1, an update norm of 0.1414 (0.1 × √2), where SGD at lr=0.01 would move them 0.644",
        "No later step is longer",
        "at step 30 the gradient is 4.92, 13 times smaller, and the step 0.0687, only 2 times smaller",
        "At step 35 the line overshoots and the gradient turns round",
        "at step 46 the gradient is 4.93 and the step 0.003",
        "After 100 steps the loss is 0.1318, w 2.694 and b 2.929",
    )
    assert stdout_text(trace) == "loss 0.1318\nw 2.694\nb 2.929\n"
    assert [e for e in trace.events if e.type == "pitfall"] == []
    cents = tried(lesson, "y = 3 * X + 2", "y = 300 * X + 200", asks="Make it y = 300 * X + 200")
    cent_steps = optimizer_steps(cents)
    grown = (cent_steps[0].grad_norm or 0.0) / (first.grad_norm or 1.0)
    assert round(cent_steps[0].grad_norm or 0.0) == 6741 and round(grown) == 105
    assert round(cent_steps[0].update_norm or 0.0, 4) == 0.1414
    updates = [s.update_norm or 0.0 for s in cent_steps]
    assert len(updates) == 100 and min(updates) >= 0.139 and max(updates) <= 0.1 * 2**0.5 + 1e-6
    assert stdout_text(cents) == "loss 1085836.0000\nw 9.931\nb 10.474\n"
    quoted(
        lesson.try_next,
        "the gradient starts at 6741, 105 times as large, and Adam's first step is 0.1414 again, every step "
        "of the 100 between 0.139 and 0.1414 (SGD's would have grown 105-fold)",
        "after 100 steps w is 9.931 and the loss 1,085,836",
    )


def test_residual_opens_where_an_add_hands_its_skip_the_whole_gradient_and_its_try_loses_it() -> None:
    lesson = BY_ID["residual"]
    trace = record(lesson.source)
    timeline = stepper_timeline(trace)
    name, at = timeline[lesson.step or 0]
    assert name == "AddBackward0" and [n for n, _ in timeline[:5]].count("AddBackward0") == 2
    received = _rounded(at.grad_in[0].flat)
    assert received == [0.4387, 1.1538, 0.848, 1.2822]
    assert [_rounded(g.flat) for g in at.grad_out] == [received, received]  # both terms, whole
    # what arrived: the last add's skip share plus what came back through the last branch
    last_add = timeline[1][1]
    assert last_add.grad_out[0].flat == [1.0, 1.0, 1.0, 1.0]
    branch = _grad_sent(trace, "MmBackward0")[0]
    assert branch == [-0.5613, 0.1538, -0.152, 0.2822]
    assert _rounded([1.0 + b for b in branch]) == received
    quoted(
        lesson.text,
        "This AddBackward0 (line 14), the last layer but one's, receives [0.4387, 1.1538, 0.848, 1.2822]",
        "the [1, 1, 1, 1] the last add sent down its skip plus the [-0.5613, 0.1538, -0.152, 0.2822]",
        "x.grad's norm is 2.1746",
    )
    assert lesson.source.splitlines()[13] == "    h = h + torch.sigmoid(h @ w)"
    assert stdout_text(trace) == "tensor([[0.3655, 1.0288, 1.5373, 1.0833]])\ntensor(2.1746)\n"
    skip = "h = h + torch.sigmoid(h @ w)"
    plain = tried(lesson, skip, "h = torch.sigmoid(h @ w)", asks="h = torch.sigmoid(h @ w)")
    assert stdout_text(plain).endswith("tensor(0.0008)\n")
    norm = float(torch.tensor(q.final_grads(plain)["x"]).norm())
    assert round(float(torch.tensor(q.final_grads(trace)["x"]).norm()) / norm, -2) == 2600, norm
    assert "x.grad's norm falls to 0.0008, about 2,600 times smaller" in lesson.try_next
