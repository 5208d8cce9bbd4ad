"""What a plain run's graphs really hold, measured without gradwalk (hunt 56).

:func:`plain_memory` runs a snippet WITHOUT gradwalk, seeded as gradwalk seeds it, and takes
samples of the bytes held by tensors saved for backward: after every op whose output has a
``grad_fn`` (a ``TorchFunctionMode`` of the checker's: only such an op saves anything, so
the peaks are all seen, a graph made and dropped within one line included), before and
after each top-level backward call (and before a call made within one: reentrant
checkpointing's recomputed graph), and before and after each optimizer step (PyTorch's
global step hooks; a subclass's ``super().step()`` is part of its step).

A sample (:func:`saved_bytes_now`) finds every tensor alive (``gc.get_objects()``: in
lists, dicts, namespaces, closures, cyclic garbage not yet collected), and every autograd
node a Python object holds, walks ``next_functions`` from their ``grad_fn``s and sums the
bytes of the distinct storages of each node's saved tensors (``_raw_saved_*``, whose
``data`` is what the node holds; a freed one raises and holds nothing). It follows the
engine's documented view (NOTE [Saved-tensor accounting] in engine/memory.py): a storage
is counted once, whole (a saved ``x[0:2]`` of a big tensor holds all of it), a saved leaf
the snippet also holds counts, and a tensor packed by the snippet's own saved-tensor hooks
(``save_on_cpu``, checkpoint's, a pack to float16) is left out: gradwalk's pack hook never
sees it (NOTE [Saved tensors packed by other hooks are not read] in engine/graph.py). A
custom Function's ctx attributes (``ctx.k = t``) are not saved tensors and are not counted.
A ``SavedTensor`` made outside any node and kept in a list (non-reentrant checkpointing's
saved inputs, which gradwalk's pack hook counts) is counted. Left out as the engine
cannot see them: a Python number an op wraps (``w * 2`` saves 2 as an 8-byte tensor that
PyTorch never hands to saved-tensor hooks). Not sampled: a snippet's own threads (the
mode is per thread). Known to differ, left open: a saved leaf given memory of another size
by ``w.data = new`` before backward holds the new storage; gradwalk counts the one saved.

The run freezes what exists before it (``gc.freeze()``, so a sample scans only what the
snippet made) and keeps the collector off, as a recording does (NOTE [Garbage collection
while recording] in engine/recorder.py): cyclic garbage stays until the end, in both.
Never uses saved-tensor hooks: that is how the engine measures.
"""

from __future__ import annotations

import contextlib
import gc
import io
import sys
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.overrides import TorchFunctionMode

import engine.api
import gradwalk
from tests.engine.snippets import plain_main

__all__ = ["Mark", "PlainMemory", "Stepped", "plain_memory", "saved_bytes_now"]

FILENAME = "plain_memory.py"
_SAVED_TENSOR = torch._C._autograd.SavedTensor
_RAW_NAMES: dict[type, tuple[str, ...]] = {}
_PLAIN = frozenset({dict, list, tuple, set, str, type, types.FunctionType, types.CodeType, types.CellType})


def _raw_names(node: Any) -> tuple[str, ...]:
    kind = type(node)
    names = _RAW_NAMES.get(kind)
    if names is None:
        names = _RAW_NAMES[kind] = tuple(a for a in dir(node) if a.startswith("_raw_saved_"))
    return names


def _held(saved: Any, storages: dict[tuple[int, int], int]) -> None:
    """Add the storage of one ``SavedTensor`` (or a list of them) to ``storages``."""
    if isinstance(saved, list | tuple):
        for s in saved:
            _held(s, storages)
        return
    if saved is None:
        return
    try:
        if saved.unpack_hook is not None:  # the snippet's own hooks packed it: not counted
            return
    except AttributeError:
        pass
    try:
        t = saved.data
    except RuntimeError:  # freed by a backward: the node holds nothing
        return
    if not isinstance(t, torch.Tensor) or _wrapped_number(t):
        return
    try:
        storage = t.untyped_storage()
        storages.setdefault((storage.data_ptr(), t.get_device()), storage.nbytes())
    except (RuntimeError, NotImplementedError):
        pass


# a dtype a Python number takes, and one that a wrapped number of it never promotes
_BELOW = {torch.int64: torch.uint8, torch.float64: torch.float16, torch.complex128: torch.complex64}


def _wrapped_number(t: torch.Tensor) -> bool:
    """Whether ``t`` is a Python number an op wrapped (``w * 2`` saves 2 as a 0-dim CPU
    tensor): PyTorch never hands one to saved-tensor hooks. Told by type promotion, where a
    wrapped number ranks below a 0-dim tensor: ``result_type`` of a float16 0-dim tensor and
    a wrapped float is float16, and of it and a float64 0-dim tensor float64."""
    below = _BELOW.get(t.dtype)
    return (
        below is not None
        and t.dim() == 0
        and t.device.type == "cpu"
        and torch.result_type(torch.zeros((), dtype=below), t) == below
    )


def saved_bytes_now() -> int:
    """Bytes of the distinct storages every live graph saved for backward, now."""
    roots: list[Any] = []
    loose: list[Any] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for o in gc.get_objects():
            if isinstance(o, torch.Tensor):
                try:
                    fn = o.grad_fn
                except RuntimeError:
                    continue
                if fn is not None:
                    roots.append(fn)
            elif type(o) is list:
                # a SavedTensor made outside any node (checkpoint's saved inputs, in a list)
                loose += [e for e in o if type(e) is _SAVED_TENSOR]
            elif type(o) not in _PLAIN and isinstance(o, torch.autograd.graph.Node):
                roots.append(o)
    seen: dict[int, Any] = {}  # held, so ids stay unique
    storages: dict[tuple[int, int], int] = {}
    _held(loose, storages)
    while roots:
        node = roots.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        for name in _raw_names(node):
            try:
                saved = getattr(node, name)
            except RuntimeError:
                continue
            _held(saved, storages)
        roots.extend(n for n, _ in node.next_functions)
    return sum(storages.values())


@dataclass
class Mark:
    """One sample: ``what`` is ``op``, ``backward_before``, ``backward_after``, ``nested``,
    ``step_before``, ``step_after`` or ``end``; ``index`` the backward call's or the step's."""

    what: str
    held: int
    index: int = -1


@dataclass
class Stepped:
    """One optimizer step as the plain run made it."""

    label: str
    step: int  # this optimizer's own count, from 1
    loss: float | None  # the root of the latest top-level backward, when it had one element
    lr: list[float]
    opt: int  # id() of the optimizer


@dataclass
class PlainMemory:
    marks: list[Mark] = field(default_factory=list)
    steps: list[Stepped] = field(default_factory=list)
    losses: list[float | None] = field(default_factory=list)  # each top-level backward call's
    metrics: list[tuple[str, float, int | None]] = field(default_factory=list)
    stdout: str = ""


def _snippet_frame() -> FrameType | None:
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename != FILENAME:
        f = f.f_back
    return f


def _label(opt: Any) -> str:
    """``opt (Adam)``: the variable (or ``obj.attr``) holding ``opt`` where the snippet stepped it."""
    frame = _snippet_frame()
    kind = type(opt).__name__
    scopes = [] if frame is None else [frame.f_locals, frame.f_globals]
    for scope in scopes:
        for k, v in scope.items():
            if v is opt and not k.startswith("_"):
                return f"{k} ({kind})"
    for scope in scopes:
        for k, v in scope.items():
            attrs = getattr(v, "__dict__", None)
            if isinstance(attrs, dict) and not k.startswith("_") and not isinstance(v, type):
                for a, held in attrs.items():
                    if held is opt and not a.startswith("__"):
                        return f"{k}.{a} ({kind})"
    return kind


class _AfterEachOp(TorchFunctionMode):
    """Samples after every op the snippet runs: a graph made and dropped within one line
    (the old ``y`` of ``y = f(w)`` lives until the new one is bound) peaks between lines."""

    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self.watch = watch

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        # only an op whose output has a grad_fn saved anything: the rest cannot make a peak
        if any(_has_grad_fn(t) for t in (out if isinstance(out, list | tuple) else [out])):
            self.watch.sample("op")
        return out


def _has_grad_fn(t: Any) -> bool:
    try:
        return isinstance(t, torch.Tensor) and t.grad_fn is not None
    except RuntimeError:  # a view PyTorch will not describe (made under no_grad, changed since)
        return False


class _Watch:
    def __init__(self, run: PlainMemory) -> None:
        self.run = run
        self.depth = 0
        self.calls = 0
        self.loss: float | None = None
        self.counts: dict[int, int] = {}
        self.sampling = False
        self.inside: dict[int, int] = {}  # step() calls in progress, by optimizer
        self.whats: list[str] = []
        self.helds: list[int] = []
        self.indexes: list[int] = []

    def sample(self, what: str, index: int = -1) -> None:
        if self.sampling:  # a sample's own reads, seen by the mode
            return
        self.sampling = True
        try:
            held = saved_bytes_now()
        finally:
            self.sampling = False
        # plain ints and strings in flat lists: nothing a later sample's scan walks again
        self.whats.append(what)
        self.helds.append(held)
        self.indexes.append(index)

    def wrap(self, fn: Any, root_key: str) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if self.depth:  # reentrant checkpointing's, in backward: its recomputed graph is built
                self.sample("nested")
                return fn(*args, **kwargs)
            index = self.calls
            self.calls += 1
            given = args[0] if args else kwargs.get(root_key)
            roots = [given] if isinstance(given, torch.Tensor) else list(given or ())
            loss = None
            if len(roots) == 1 and roots[0].numel() == 1:
                loss = float(roots[0].detach().item())
            self.run.losses.append(loss)
            self.loss = loss
            self.sample("backward_before", index)
            self.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth -= 1
                self.sample("backward_after", index)

        return wrapped

    def pre(self, opt: Any, args: Any, kwargs: Any) -> None:
        self.inside[id(opt)] = self.inside.get(id(opt), 0) + 1
        if self.inside[id(opt)] == 1:  # (a subclass's super().step() is part of its step)
            self.sample("step_before", len(self.run.steps))

    def post(self, opt: Any, args: Any, kwargs: Any) -> None:
        self.inside[id(opt)] = max(self.inside.get(id(opt), 0) - 1, 0)
        if self.inside[id(opt)]:
            return
        count = self.counts[id(opt)] = self.counts.get(id(opt), 0) + 1
        lr = [float(g.get("lr", 0.0)) for g in opt.param_groups]
        self.run.steps.append(Stepped(_label(opt), count, self.loss, lr, id(opt)))
        self.sample("step_after", len(self.run.steps) - 1)

    def log(self, name: str, value: Any, step: int | None = None) -> None:
        number = float(value.detach()) if isinstance(value, torch.Tensor) else float(value)
        self.run.metrics.append((str(name), number, step))


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    was = gc.isenabled()
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was:
            gc.enable()


def plain_memory(source: str) -> PlainMemory:
    """Run ``source`` without gradwalk and sample what its graphs hold (see the module's doc)."""
    torch.optim.SGD([torch.zeros(1, requires_grad=True)])  # its first one imports torch._dynamo: not traced
    run = PlainMemory()
    watch = _Watch(run)
    originals = torch.autograd.backward, torch.autograd.grad, engine.api.log
    torch.autograd.backward = watch.wrap(originals[0], "tensors")
    torch.autograd.grad = watch.wrap(originals[1], "outputs")
    engine.api.log = watch.log  # gradwalk.log, a no-op outside a recording, reports here
    gradwalk.log = watch.log
    out = io.StringIO()
    handles = [register_optimizer_step_pre_hook(watch.pre), register_optimizer_step_post_hook(watch.post)]
    try:
        with plain_main() as scope, contextlib.redirect_stdout(out), _collector_off():
            code = compile(source, FILENAME, "exec")
            with _AfterEachOp(watch):
                exec(code, scope)
            watch.sample("end")
    finally:
        torch.autograd.backward, torch.autograd.grad, engine.api.log = originals
        gradwalk.log = originals[2]
        for h in handles:
            h.remove()
    run.stdout = out.getvalue()
    run.marks = [Mark(*m) for m in zip(watch.whats, watch.helds, watch.indexes, strict=True)]
    return run
