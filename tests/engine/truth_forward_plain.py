"""The plain side of tests/engine/truth_forward.py: a snippet run WITHOUT gradwalk, its ops
noted by a ``TorchFunctionMode`` of the checker's own (none of gradwalk's code).

Each call of the snippet's code that returns a tensor is one :class:`PlainOp`: the
function's name and, per tensor output, an :class:`Out` taken right after the call. Library
calls gradwalk records as one op (a DataLoader's batch, ``clip_grad_*``, a module's
``to`` / ``float`` / …, ``torch.autograd.grad``, a custom Function's ``apply``) are wrapped
here the same way; optimizer steps (but a closure's ops) and backward calls are off the tape.
"""

from __future__ import annotations

import contextlib
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.nn as nn
import torch.nn.utils as nn_utils
import torch.nn.utils.clip_grad as clip_grad
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.overrides import TorchFunctionMode
from torch.utils.data.dataloader import _BaseDataLoaderIter

from tests.engine.snippets import plain_main

__all__ = ["Out", "PlainOp", "PlainTape", "plain_tape"]

_FILE = "plain_forward.py"
_ATTRIBUTE_OPS = {"T", "mT", "H", "mH", "real", "imag"}
_WRITES = {"requires_grad": "requires_grad", "data": "set_data"}
_SETUP = {"__init__", "reset_parameters", "_reset_parameters", "reset_running_stats"}
_UNSET = {"empty", "empty_like", "new_empty", "empty_strided", "Tensor", "FloatTensor"}
_UNSET_CALL = re.compile(r"torch\.(Float)?Tensor\(\s*\w")
_MODULE_CALLS = ("to", "cuda", "cpu", "type", "float", "double", "half", "bfloat16")


@dataclass
class Out:
    """One tensor an op returned, as it was right after the op."""

    value: torch.Tensor | None
    shape: list[int]
    dtype: str
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    edges: list[tuple[str | None, int]]
    saved: dict[str, torch.Tensor]
    input_index: int | None  # the op's input it is (flattened as the call passed them)
    changed: bool  # the op moved its version


@dataclass
class PlainOp:
    """One op of the snippet's: the function's name and its tensor outputs."""

    name: str
    outputs: list[Out] = field(default_factory=list)
    library: bool = False  # a library call: compared by name only
    inputs: list[Any] = field(default_factory=list)  # each input's clone before the op


def _tensors(obj: Any, out: list[torch.Tensor]) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, list | tuple):
        for o in obj:
            _tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out)
    return out


def _version(t: torch.Tensor) -> int | None:
    try:
        return t._version
    except RuntimeError:
        return None


def _clone(t: Any) -> Any:
    try:
        with torch.no_grad():
            return t.detach().clone()
    except Exception:
        return None


def _from_snippet() -> bool:
    """Whether the snippet's code made this call, not a library module's initialisation."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename == _FILE:
            return True
        if f.f_code.co_name in _SETUP and "torch" in f.f_code.co_filename:
            return False
        f = f.f_back
    return False


def _out(t: torch.Tensor, inputs: list[torch.Tensor], versions: list[int | None], name: str) -> Out:
    fn = t.grad_fn
    saved: dict[str, torch.Tensor] = {}
    edges: list[tuple[str | None, int]] = []
    if fn is not None:
        edges = [(type(n).__name__ if n is not None else None, nr) for n, nr in fn.next_functions]
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                with contextlib.suppress(Exception):
                    v = getattr(fn, attr)
                    if isinstance(v, torch.Tensor):
                        saved[attr[7:]] = _clone(v)
    index = next((i for i, x in enumerate(inputs) if x is t), None)
    return Out(
        value=_clone(t),
        shape=list(t.shape),
        dtype=str(t.dtype).removeprefix("torch."),
        requires_grad=t.requires_grad,
        is_leaf=t.is_leaf,
        grad_fn=type(fn).__name__ if fn is not None else None,
        edges=edges,
        saved=saved,
        input_index=index,
        changed=index is not None and _version(t) != versions[index],
    )


def _same_view(t: torch.Tensor, value: Any) -> bool:
    """``t.data = value`` where ``value`` is ``t``'s own data (``w.data -= x`` writes it back)."""
    look = (t.data_ptr(), t.shape, t.stride(), t.dtype)
    return (
        isinstance(value, torch.Tensor)
        and (value.data_ptr(), value.shape, value.stride(), value.dtype) == look
    )


class _Tape(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[PlainOp] = []
        self.off = 0  # inside an optimizer step, a backward call or a library call
        self.set = True  # no uninitialised memory (torch.empty) made yet: values compare

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        inputs = _tensors((args, tuple(kwargs.values())), [])
        versions = [_version(t) for t in inputs]
        before = [_clone(t) for t in inputs] if self.set and not self.off else []
        name = getattr(func, "__name__", "")
        rewrite = (
            name == "__set__" and len(args) == 2 and isinstance(args[0], torch.Tensor) and _same_view(*args)
        )
        result = func(*args, **kwargs)
        if self.off or not _from_snippet():
            return result
        if name in ("__get__", "__set__"):
            attr = getattr(getattr(func, "__self__", None), "__name__", None)
            if name == "__get__" and attr in _ATTRIBUTE_OPS:
                name = attr
            elif name == "__set__" and attr in _WRITES and not (attr == "data" and rewrite):
                name, result = _WRITES[attr], args[0]
            else:
                return result
        outputs = [args[0]] if name == "__setitem__" else _tensors(result, [])
        if outputs:
            self.set = self.set and name not in _UNSET
            outs = [_out(t, inputs, versions, name) for t in outputs]
            self.ops.append(
                PlainOp(name, [o if self.set else replace(o, value=None) for o in outs], inputs=before)
            )
        return result

    def wrap(self, fn: Any, name: str, ops_inside: bool = False) -> Any:
        """``fn`` recorded as one op called ``name``; the ops inside it kept only with ``ops_inside``."""

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            top = not self.off and _from_snippet()
            self.off += not ops_inside
            result, returned = None, False
            try:
                result = fn(*args, **kwargs)
                returned = True
                return result
            finally:
                self.off += ops_inside  # (the clones below are no ops)
                if top and returned:
                    outs = [_out(t, [], [], name) for t in _tensors(result, [])]
                    self.ops.append(
                        PlainOp(name, [replace(o, value=o.value if self.set else None) for o in outs], True)
                    )
                self.off -= 1

        return wrapped


@contextlib.contextmanager
def _patched(tape: _Tape) -> Any:
    """Wrap the library calls gradwalk records as one op, and switch the tape off inside
    optimizer steps and backward calls."""
    saved: list[tuple[Any, str, Any]] = []

    def put(owner: Any, attr: str, new: Any) -> None:
        saved.append((owner, attr, owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)))
        setattr(owner, attr, new)

    put(_BaseDataLoaderIter, "__next__", tape.wrap(_BaseDataLoaderIter.__next__, "__next__"))
    for owner in (nn_utils, clip_grad):
        for attr in ("clip_grad_norm_", "clip_grad_value_"):
            put(owner, attr, tape.wrap(getattr(clip_grad, attr), attr))
    for attr in _MODULE_CALLS:
        put(nn.Module, attr, tape.wrap(getattr(nn.Module, attr), attr))
    apply = torch.autograd.Function.__dict__["apply"].__func__
    put(torch.autograd.Function, "apply", classmethod(tape.wrap(apply, "apply", ops_inside=True)))
    put(torch.autograd, "backward", tape.wrap(torch.autograd.backward, ""))
    put(torch.autograd, "grad", tape.wrap(torch.autograd.grad, "grad"))

    def pre(opt: Any, args: Any, kwargs: Any) -> Any:
        tape.off += 1
        closure = args[1] if len(args) > 1 else kwargs.get("closure")  # (args[0] is the optimizer)
        if closure is None:
            return None

        def recorded() -> Any:  # a closure's ops are the snippet's (LBFGS)
            tape.off -= 1
            try:
                return closure()
            finally:
                tape.off += 1

        if len(args) > 1:
            return (args[0], recorded, *args[2:]), kwargs
        return args, {**kwargs, "closure": recorded}

    def post(*_: Any) -> None:
        tape.off -= 1

    hooks = [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]
    try:
        yield
    finally:
        for h in hooks:
            h.remove()
        for owner, attr, old in reversed(saved):
            setattr(owner, attr, old)


@dataclass
class PlainTape:
    """A plain run: its ops, its module namespace, and whether its values are settled (no
    uninitialised memory: ``torch.empty``, ``torch.Tensor(2, 3)``)."""

    ops: list[PlainOp]
    scope: dict[str, Any]
    settled: bool


def plain_tape(source: str) -> PlainTape:
    """Run ``source`` without gradwalk, seeded as gradwalk seeds it, noting its ops (an error
    ends the run, as it ends the trace)."""
    tape = _Tape()
    tape.set = not _UNSET_CALL.search(source)  # torch.Tensor(2, 3) reaches no mode
    with plain_main() as scope:
        try:
            with contextlib.redirect_stdout(None), _patched(tape), tape:
                exec(compile(source, _FILE, "exec"), scope)
        except Exception:
            pass
    # a backward call is no op (the wrapper named "" only switched the tape off inside)
    return PlainTape([op for op in tape.ops if op.name], scope, tape.set)
