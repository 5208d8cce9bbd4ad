"""Three lessons on what autograd keeps and what a mode changes: torch.utils.checkpoint, whose
graph holds a block's input instead of what its ops save and runs the block again inside
backward(); torch.inference_mode(), whose tensors autograd can never save, so a head trained on
features made under it fails at once; and BatchNorm in train() mode, where one sample's loss
sends a gradient to every sample of the batch (and in eval() to its own row only). Each lesson is recorded as the gallery serves it; each figure its
text or its "try" quotes is read back from the trace, and the "try" is recorded with the change
it asks for."""

from __future__ import annotations

import pytest
import torch

from engine import queries as q
from engine import record
from engine.events import Trace
from tests.server.lesson_traces import BY_ID, optimizer_steps, quoted, stdout_text, stepper_timeline, tried

KIB = 1024
CHECKPOINTED = "y = cp.checkpoint(\n    block, x, use_reentrant=False)"


def _graph_bytes(trace: Trace) -> list[int]:
    """The graph memory chart's points: the bytes saved for backward after each change."""
    return [e.saved_bytes for e in trace.events if e.type == "memory"]


def _saved_bytes_of(trace: Trace, node: str) -> list[int]:
    """The bytes each ``node`` of the graph saved, in the order the graph was built."""
    return [sum(s.bytes for s in e.saved) for e in trace.events if e.type == "node" and e.name == node]


def _printed_inside_backward(trace: Trace) -> list[str]:
    """What the snippet printed while a backward() call ran."""
    inside, out = False, []
    for e in trace.events:
        if e.type == "backward_started":
            inside = True
        elif e.type == "backward_finished":
            inside = False
        elif e.type == "output" and inside:
            out.append(e.text)
    return out


def _plain_grad_norm(checkpointed: bool) -> float:
    """x.grad's norm as PyTorch computes it for the lesson's block, without gradwalk."""
    torch.manual_seed(0)
    x = torch.randn(1024, requires_grad=True)

    def block(h: torch.Tensor) -> torch.Tensor:
        return h.tanh().tanh().tanh()

    y = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) if checkpointed else block(x)
    y.sum().backward()
    assert x.grad is not None
    return x.grad.norm().item()


def test_the_checkpoint_lesson_holds_the_block_input_only_and_runs_the_block_again_in_backward() -> None:
    lesson = BY_ID["checkpoint"]
    trace = record(lesson.source)
    name, at = stepper_timeline(trace)[lesson.step or 0]
    assert name == "TanhBackward0" and at.backward == 0
    assert _saved_bytes_of(trace, "TanhBackward0") == [0, 0, 0]  # "this TanhBackward0 has no saved tensors"
    assert max(_graph_bytes(trace)) == 4 * KIB and _graph_bytes(trace)[-1] == 0  # x alone, then freed
    assert stdout_text(trace).count("block runs") == 2
    assert _printed_inside_backward(trace) == ["block runs\n"]  # the second run is backward's
    norm = _plain_grad_norm(checkpointed=True)
    assert f"x.grad norm {round(norm, 4)}\n" in stdout_text(trace) and round(norm, 4) == 17.6053
    assert abs(q.final_grads(trace)["x"] - norm) < 1e-4  # the trace's x.grad is PyTorch's
    assert lesson.source.splitlines()[9].strip() == "return h.tanh().tanh().tanh()"
    quoted(
        lesson.text,
        "three of them on 1,024 floats hold 12 KiB",
        "the graph keeps only block's input x, 4 KiB",
        "the output reads 'block runs' twice, the second time inside loss.backward()",
        "x.grad's norm 17.6053",
    )


def test_the_checkpoint_lesson_try_saves_each_tanh_output_and_holds_three_times_the_memory() -> None:
    lesson = BY_ID["checkpoint"]
    trace = tried(lesson, CHECKPOINTED, "y = block(x)", "with y = block(x)")
    assert _saved_bytes_of(trace, "TanhBackward0") == [4 * KIB] * 3  # "saves its 4 KiB output"
    assert max(_graph_bytes(trace)) == 12 * KIB and _graph_bytes(trace)[-1] == 0
    assert stdout_text(trace).count("block runs") == 1 and _printed_inside_backward(trace) == []
    norm = _plain_grad_norm(checkpointed=False)
    assert round(norm, 4) == 17.6053 and abs(q.final_grads(trace)["x"] - norm) < 1e-4
    quoted(
        lesson.try_next,
        "block runs once, each TanhBackward0 saves its 4 KiB output",
        "graph memory peaks at 12 KiB against the checkpointed run's 4 KiB",
        "x.grad's norm is 17.6053 again",
    )


def test_the_inference_mode_lesson_fails_where_the_head_first_meets_the_features() -> None:
    lesson = BY_ID["inference-mode"]
    trace = record(lesson.source)
    (error,) = q.errors(trace)
    assert error.exc_type == "RuntimeError" and error.line == 19
    assert lesson.source.splitlines()[18].strip() == "out = head(feats)"
    assert error.hint.startswith(
        "feats was made under torch.inference_mode() (line 14), so it is an inference tensor"
    )
    assert "feats = feats.clone()" in error.hint
    # the tape: the encoder ran under inference_mode and built no node; no backward() ran
    names = q.tensor_names(trace)
    (encoder,) = [e for e in trace.events if e.type == "op" and e.name == "linear"]
    assert encoder.grad_mode == "inference_mode" and encoder.nodes == [] and encoder.line == 14
    assert [names[t] for t in encoder.outputs] == ["feats"]
    assert not q.events_of(trace, "backward_started") and not optimizer_steps(trace)
    quoted(
        lesson.text,
        "the tape shows encoder's linear run under inference_mode, building no node",
        "the run fails at line 19 on its first step, before any backward()",
    )


def test_the_inference_mode_lesson_trains_under_no_grad_or_on_a_clone() -> None:
    lesson = BY_ID["inference-mode"]
    under_no_grad = tried(
        lesson, "torch.inference_mode()", "torch.no_grad()", "Write torch.no_grad() in place of"
    )
    cloned = tried(
        lesson,
        "    feats = encoder(x)\n",
        "    feats = encoder(x)\nfeats = feats.clone()\n",
        "feats = feats.clone()",
    )
    for trace in (under_no_grad, cloned):
        assert not q.errors(trace) and len(optimizer_steps(trace)) == 20
        assert stdout_text(trace) == "loss 0.3891\n"
    (encoder,) = [e for e in under_no_grad.events if e.type == "op" and e.line == 14]
    assert encoder.name == "linear" and encoder.grad_mode == "no_grad" and encoder.nodes == []
    quoted(lesson.try_next, "the head trains, and the loss is 0.3891 after 20 steps")


def _plain_batch_norm_grad(evaluating: bool) -> list[list[float]]:
    """x.grad as PyTorch computes it for the lesson's batch, without gradwalk."""
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(2)
    x = torch.randn(4, 2).requires_grad_()
    if evaluating:
        bn.eval()
    bn(x)[0].sum().backward()
    assert x.grad is not None
    return x.grad.tolist()


def test_the_batch_norm_lesson_sends_sample_zeros_loss_to_every_sample() -> None:
    lesson = BY_ID["batch-norm"]
    trace = record(lesson.source)
    name, at = stepper_timeline(trace)[lesson.step or 0]
    assert name == "NativeBatchNormBackward0"
    assert at.grad_in[0].flat == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # row 0 only
    to_x, to_weight, to_bias = at.grad_out
    plain = [v for row in _plain_batch_norm_grad(evaluating=False) for v in row]
    assert to_x.shape == [4, 2] and to_x.flat == pytest.approx(plain, abs=1e-6)  # PyTorch's own
    assert all(abs(v) > 0.05 for v in to_x.flat)  # "a gradient in every row"
    assert abs(sum(to_x.flat[0::2])) < 1e-6 and abs(sum(to_x.flat[1::2])) < 1e-6  # each column sums to 0
    assert [round(v, 4) for v in to_weight.flat] == [1.3207, -0.2544] and to_bias.flat == [1.0, 1.0]
    assert stdout_text(trace) == (
        "tensor([[ 0.2216,  0.8408],\n        [ 0.1278, -0.2330],\n"
        "        [-0.0523, -0.3972],\n        [-0.2971, -0.2105]])\n"
    )
    assert [e for e in trace.events if e.type == "pitfall"] == []
    quoted(
        lesson.text,
        "SelectBackward0 hands this NativeBatchNormBackward0 a gradient of 1 in row 0 and 0 in rows 1 to 3",
        "x.grad = [[0.2216, 0.8408], [0.1278, -0.233], [-0.0523, -0.3972], [-0.2971, -0.2105]]",
        "Each column sums to 0",
        "bn.weight gets sample 0's normalised values, [1.321, -0.2544], and bn.bias [1, 1]",
    )


def test_the_batch_norm_lesson_try_evaluates_each_sample_on_its_own() -> None:
    lesson = BY_ID["batch-norm"]
    trace = tried(
        lesson, "out = bn(x)\n", "bn.eval()\nout = bn(x)\n", "Add bn.eval() on the line before out = bn(x)"
    )
    sent = next(e for name, e in stepper_timeline(trace) if name == "NativeBatchNormBackward0").grad_out[0]
    plain = _plain_batch_norm_grad(evaluating=True)
    assert sent.flat == pytest.approx([v for row in plain for v in row], abs=1e-6)
    assert sent.flat[:2] == pytest.approx([(1 + 1e-5) ** -0.5] * 2) and sent.flat[2:] == [0.0] * 6
    assert stdout_text(trace).startswith("tensor([[1.0000, 1.0000],\n        [0.0000, 0.0000],")
    quoted(lesson.try_next, "x.grad is 1.0000 in row 0 and 0 in rows 1 to 3")
