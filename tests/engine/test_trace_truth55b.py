"""Hunt 55b: the forward side of a trace, checked against PyTorch's own (tests/engine/truth_forward.py).

The checker runs each snippet without gradwalk under a ``TorchFunctionMode`` of its own
and compares, op by op, the trace's ``op`` events (their order and names), the ``tensor``
events of their outputs (the value right after the op, bitwise when whole, its shape,
dtype, requires_grad and leafness; an input changed in place as a new version of its id),
and the ``node`` events of their grad_fns (class, edges, the values of the saved tensors
each lists). The bugs it found come first; then snippets that agree (in-place ops on
views, ``out=``, ``index_put_``, ``masked_fill_``, ``copy_``, several outputs, dtype
promotion, integer and bool outputs, ``.data`` writes, ``requires_grad_()``, ``detach_()``,
tensors from lists and NumPy, seeded random ops, large tensors as summaries), as a guard.
What gradwalk legitimately shows otherwise is listed in the checker's docstring.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import queries as q
from engine.events import Limits
from tests.engine.snippets import corpus
from tests.engine.truth_forward import assert_forward_truthful

GUARD = corpus(Path(__file__).with_name("truth55b_snippets.txt"))

# --- bug 1: a node's saved running statistics named their value from before the op -------


def test_batch_norm_node_saves_the_updated_running_statistics() -> None:
    """``F.batch_norm`` in training saves ``running_mean`` and ``running_var`` and updates
    them in place: NativeBatchNormBackward0 listed them as the op's inputs (zeros and ones,
    the statistics before the update) where the node holds the updated buffers."""
    trace = assert_forward_truthful(
        "import torch, torch.nn as nn\n"
        "bn = nn.BatchNorm1d(3)\n"
        "x = torch.randn(4, 3, requires_grad=True)\n"
        "y = bn(x)\n"
    )
    op = next(e for e in q.events_of(trace, "op") if e.name == "batch_norm")
    node = next(e for e in q.events_of(trace, "node") if e.name == "NativeBatchNormBackward0")
    saved = {s.name: s.tensor for s in node.saved}
    assert [saved["running_mean"], saved["running_var"]] == op.outputs[1:3]


def test_conv_step_saved_running_statistics() -> None:
    assert_forward_truthful(
        "import torch, torch.nn as nn\n"
        "net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())\n"
        "x = torch.randn(3, 1, 8, 8)\n"
        "net(x).sum().backward()\n"
    )


def test_instance_norm_reads_its_running_statistics_as_they_were_before_it_updates_them() -> None:
    """``nn.InstanceNorm1d(track_running_stats=True)``: ``instance_norm`` copies the updated
    statistics in, which moves their version counters, so its inputs named the updated values
    (a version made off the tape) where the op read zeros and ones; the next forward read
    them a step ahead too."""
    trace = assert_forward_truthful(
        "import torch, torch.nn as nn\n"
        "norm = nn.InstanceNorm1d(3, track_running_stats=True)\n"
        "x = torch.randn(2, 3, 5, requires_grad=True)\n"
        "y = norm(x)\n"
        "y2 = norm(x * 2)\n"
        "y2.sum().backward()\n"
        "norm.eval()\n"
        "print(norm(x).sum().item())\n"
    )
    first = next(e for e in q.events_of(trace, "op") if e.name == "instance_norm")
    values = {e.id: e.value.flat for e in q.events_of(trace, "tensor")}
    assert [values[i] for i in first.inputs[1:3]] == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]


# --- bug 2: torch.unique and torch.lu showed api boolean_dispatch.<locals>.fn ------------


@pytest.mark.parametrize("call", ["torch.unique(x)", "torch.unique(x, return_counts=True)"])
def test_boolean_dispatched_function_keeps_its_name(call: str) -> None:
    """``torch.unique`` is made by ``boolean_dispatch``: its qualified name is
    ``boolean_dispatch.<locals>.fn``, which the tape showed as the call's api."""
    trace = assert_forward_truthful(f"import torch\nx = torch.tensor([3, 1, 3, 2])\nu = {call}\n")
    assert [e.api for e in q.events_of(trace, "op")] == ["torch.tensor", "torch.unique"]


def test_torch_lu_keeps_its_name() -> None:
    trace = assert_forward_truthful("import torch\na = torch.randn(3, 3)\nlu, piv = torch.lu(a)\n")
    assert q.events_of(trace, "op")[-1].api == "torch.lu"


# --- guard: snippets whose every op agreed ------------------------------------------------


@pytest.mark.parametrize("name", list(GUARD))
def test_forward_equals_pytorch(name: str) -> None:
    assert_forward_truthful(GUARD[name])


@pytest.mark.parametrize(
    "name", ["view_iadd", "out_arg", "several_outputs", "promotion", "int_bool", "nan_inf", "negative_zero"]
)
def test_forward_as_summaries_equals_pytorch(name: str) -> None:
    """Every value a summary (``max_value_elements=0``): integers, bools, NaN, inf, -0.0."""
    assert_forward_truthful(GUARD[name], Limits(max_value_elements=0))


@pytest.mark.parametrize(
    "example", ["cubic", "small_net", "custom_function", "autograd_grad", "clean_training"]
)
def test_app_example_forward_equals_pytorch(example: str) -> None:
    """The app's own examples (server/examples): the tape a learner reads first."""
    assert_forward_truthful((Path(__file__).parents[2] / "server" / "examples" / f"{example}.py").read_text())
