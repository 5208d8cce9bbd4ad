"""Snippet families beyond ``loss.backward()``, recorded as they run without gradwalk.

Each test runs a snippet plainly (seeded as ``record`` seeds it) and recorded, and compares
what it printed, what it raised and the final ``.grad`` of its leaves, bitwise.
"""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path
from typing import Any

import torch

from engine import queries as q
from engine import record
from engine.events import FullValue, Trace

_SNIPPET = "plain.py"
_EXAMPLES = Path(__file__).resolve().parents[2] / "server" / "examples"


def _run_plain(source: str) -> tuple[str, tuple[str, str] | None, dict[str, Any]]:
    """Run ``source`` without gradwalk, seeded as :func:`engine.record` seeds it: what it
    printed, the exception that escaped it (type name, message) or ``None``, its namespace."""
    out = io.StringIO()
    scope: dict[str, Any] = {"__name__": "__main__"}
    error = None
    torch.manual_seed(0)
    random.seed(0)
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(source, _SNIPPET, "exec"), scope)
        except Exception as exc:
            error = (type(exc).__name__, str(exc))
    return out.getvalue(), error, scope


def _assert_as_plain(source: str, leaves: tuple[str, ...] = ()) -> Trace:
    """Record ``source``; check it printed and raised what it does without gradwalk, and
    that each of ``leaves`` ends with PyTorch's own ``.grad``, bitwise."""
    printed, error, scope = _run_plain(source)
    trace = record(source)
    errors = q.errors(trace)
    assert ((errors[0].exc_type, errors[0].message) if errors else None) == error
    assert q.stdout(trace) == printed
    finals = {e.name: e for e in q.events_of(trace, "tensor_final")}
    for name in leaves:
        want = scope[name].grad
        grad = finals[name].grad
        assert isinstance(grad, FullValue), name
        got = torch.tensor(grad.flat, dtype=want.dtype).reshape(grad.shape)
        assert torch.equal(got, want), (name, got, want)
    return trace


def test_a_checkpointed_function_runs_once_forward_and_once_in_backward() -> None:
    # describing each node made inside the checkpoint read what it saved, and checkpoint's
    # unpack hook, called outside backward, recomputed the whole function for each read:
    # its print came out five times, and without preserve_rng_state the recomputations
    # drew from the RNG, so the dropout mask backward used was another one
    source = """
import torch
from torch.utils.checkpoint import checkpoint
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
drop = torch.nn.Dropout(0.5)
def f(t):
    print("f runs")
    return drop(t * w).sin().exp()
x = torch.ones(3, requires_grad=True)
y = checkpoint(f, x, use_reentrant=False, preserve_rng_state=False)
print("forward done")
y.sum().backward()
print(torch.rand(2))
"""
    _assert_as_plain(source, leaves=("x", "w"))


def test_the_snippets_own_unpack_hook_runs_only_when_backward_unpacks() -> None:
    # the same read of each node's saved tensors called the snippet's own unpack hook, and
    # a custom Function's save_for_backward under it
    source = """
import torch
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g
def pack(t):
    print("pack", list(t.shape))
    return t
def unpack(t):
    print("unpack", list(t.shape))
    return t
x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = Square.apply(x.exp() * x)
with torch.autograd.graph.save_on_cpu():
    z = y.sin()
(z * x).sum().backward()
"""
    trace = _assert_as_plain(source, leaves=("x",))
    saved = [(e.name, sorted(s.name for s in e.saved)) for e in q.events_of(trace, "node")]
    # what the snippet's hooks and save_on_cpu packed is left unread; gradwalk's, described
    assert [s for s in saved if s[0] != "AccumulateGrad"] == [
        ("ExpBackward0", []),
        ("MulBackward0", []),
        ("SquareBackward", []),
        ("SinBackward0", []),
        ("MulBackward0", ["other", "self"]),
        ("SumBackward0", ["self_sym_sizes"]),
    ]


def test_the_snippets_dispatch_mode_sees_only_the_aten_ops_it_runs() -> None:
    # gradwalk's own work ran under the snippet's mode: the detach of each tensor the pack
    # hook aliases, the tape's and the walk's reads of values (_local_scalar_dense), the
    # backward's seed (ones_like). One detach per saved tensor backward unpacks is
    # PyTorch's own under any saved-tensor hooks, and is left out of the comparison
    source = """
import torch
from torch.utils._python_dispatch import TorchDispatchMode
class Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))
x = torch.tensor([1.0, 2.0], requires_grad=True)
with Ops() as forward:
    y = (x * 2).sin().sum()
print(forward.seen)
with Ops() as backward:
    y.backward()
print([op for op in backward.seen if op != "aten.detach.default"])
"""
    _assert_as_plain(source, leaves=("x",))


def test_a_tensor_saved_or_copied_while_recording_carries_nothing_of_gradwalk() -> None:
    # a tensor's id was an attribute on the object: torch.save, pickle and deepcopy carried
    # it out of the run, and the snippet's own vars(x) showed it
    _assert_as_plain(
        "import copy, io, pickle\n"
        "import torch\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = (x * x).sum()\n"
        "y.backward()\n"
        "buf = io.BytesIO()\n"
        "torch.save({'x': x, 'y': y.detach()}, buf)\n"
        "buf.seek(0)\n"
        "loaded = torch.load(buf)\n"
        "print(vars(x), vars(y), vars(loaded['x']), vars(loaded['y']))\n"
        "print(vars(copy.deepcopy(x)), vars(pickle.loads(pickle.dumps(x.detach()))))\n",
        leaves=("x",),
    )


def test_a_saved_detached_copy_is_named_as_itself_not_as_what_it_shares_storage_with() -> None:
    # h * h.detach() saves the detached d (it shares h's storage and shape): the storage match
    # named it h, so the card read "grad · h" for the factor d
    trace = _assert_as_plain(
        "import torch\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "h = x * 2\n"
        "d = h.detach()\n"
        "y = (h * d).sum()\n"
        "y.backward()\n",
        leaves=("x",),
    )
    names = q.tensor_names(trace)
    mul = [e for e in q.events_of(trace, "node") if e.name == "MulBackward0"][-1]
    assert [(s.name, names.get(s.tensor)) for s in mul.saved] == [("other", "d")]


def test_an_intermediate_that_retains_its_grad_ends_with_pytorchs_grad() -> None:
    # h.retain_grad() keeps h.grad: the trace held no h.grad at all (only leaves had a final state)
    source = (_EXAMPLES / "leaf_retain_grad.py").read_text()
    trace = _assert_as_plain(source, leaves=("x", "h"))
    _, _, scope = _run_plain(source)
    assert scope["h"].grad.tolist() == [6.0, 12.0]
    assert [e.name for e in q.events_of(trace, "tensor_final")] == ["x", "h"]
