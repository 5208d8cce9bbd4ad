"""Two lessons on what autograd keeps: torch.utils.checkpoint, whose graph holds a block's input
instead of what its ops save and runs the block again inside backward(), and
torch.inference_mode(), whose tensors autograd can never save, so a head trained on features
made under it fails at once. Each lesson is recorded as the gallery serves it; each figure its
text or its "try" quotes is read back from the trace, and the "try" is recorded with the change
it asks for."""

from __future__ import annotations

import torch

from engine import queries as q
from engine import record
from engine.events import Trace
from tests.server.lesson_traces import BY_ID, optimizer_steps, stdout_text, stepper_timeline, tried

KIB = 1024
CHECKPOINTED = "y = cp.checkpoint(\n    block, x, use_reentrant=False)"


def _quoted(text: str, *fragments: str) -> None:
    """Each fragment, as the lesson's text quotes it."""
    for fragment in fragments:
        assert fragment in text, fragment


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
    _quoted(
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
    _quoted(
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
    _quoted(
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
    _quoted(lesson.try_next, "the head trains, and the loss is 0.3891 after 20 steps")
