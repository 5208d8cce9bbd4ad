"""Library calls recorded as one op each: a DataLoader's batch, gradient clipping, a
module's conversion (``model.to(device)``).

# NOTE [Library calls as one op]
Some library functions a training loop calls run many tensor ops of their own plumbing, on
one line of the snippet, building no graph. A DataLoader with ``num_workers=0`` (the
default, and the app sandbox's only choice) makes each batch on the snippet's own thread:
the sampler's ``randperm``, one ``getitem`` per sample and tensor, the collate's ``stack`` (65
ops for a batch of 32 pairs, more than a small model's own: the tape of a training loop
opened on a page of ``getitem X, 88 → X[88]``). ``clip_grad_norm_`` runs 12 (five ``to``,
``_foreach_norm``, ``stack``, ``linalg_vector_norm``, ``add``, ``rdiv``, ``clamp``,
``_foreach_mul_``), three times a small model's forward. ``model.to(device)``, which nearly
every snippet runs, is one ``to`` per parameter and buffer (nine for a small MLP with a batch
norm); worse, a conversion that changes a tensor (``model.double()``, ``model.cuda()``)
swaps the parameter's ``.data`` under the same Python object, which the tape then went on
showing with the dtype and device it had before (a float32 ``model.weight`` fed to a float64
``linear``), the converted copies ``to`` made appearing as nameless tensors.

While recording in full detail these calls are wrapped: the ops inside still run through the
tape mode (the snippet's own torch-function modes and tensor subclasses see them as without
gradwalk) but are not recorded, not counted and not shown to the detectors
(:attr:`LibraryCalls.making`, which the tape mode reads). The call is then recorded as one
op at the line that made it:

- ``DataLoader`` (api ``DataLoader.__next__``), whose outputs are the batch's tensors (in a
  tuple, list or dict, nested). Ops in a snippet's own ``Dataset.__getitem__`` or
  ``collate_fn`` are part of making the batch.
- ``clip_grad_norm_`` / ``clip_grad_value_`` (under no_grad, as they run), whose inputs are
  the gradients it read and whose outputs are the total norm it returns and the gradients
  it changed in place, as new versions (as ``_foreach_mul_`` made them).
- ``to`` / ``cuda`` / ``cpu`` / ``type`` / ``float`` / ``double`` / ``half`` / ``bfloat16`` of
  an ``nn.Module`` (api ``Module.to`` …, under no_grad, as ``Module._apply`` converts),
  whose inputs are the module's parameters and buffers and whose outputs are the same
  tensors after: one the call changed is a new version with its new dtype and device (the
  same name), one it left as it was is handed back with the same id (``model.to(device)``
  on the device it is on already). Gradients it converts along are not shown.
- ``torch.cond`` (api ``torch.cond``), whose inputs are the predicate and the operands and
  whose outputs are what the branch it took returned, their node ``CondAutogradOpBackward``
  (NOTE [PyTorch's own compiles] in eager.py: the branches run compiled, off the tape).

``torch.manual_seed`` is wrapped too, though not recorded as an op, and so are
``random.seed`` and ``numpy.random.seed`` (where NumPy is imported, as torch imports it): each
call of the snippet's is shown to the seed-reset-in-loop detector (:attr:`LibraryCalls.seeds`,
engine/pitfalls/reseeds.py) with the generator it resets, whatever the detail. So are
``random.shuffle`` and ``numpy.random.shuffle``, called from the snippet's own code, shown to
inputs-shuffled-apart-from-labels (engine/pitfalls/in_place_shuffles.py), and the ``sample``
of each ``torch.distributions`` class, its draws shown to sample-instead-of-rsample
(engine/pitfalls/samples.py), with its ``rsample`` (the distributions drawn from that way).
The shuffles only where the snippet's source says ``shuffle``, the draws only where it says
``sample`` (some 40 methods to put in place and take back at each entry of the recorder,
which a benchmark enters once a step), and neither with the detectors off. Likewise
``nn.Module``'s ``register_forward_hook``, ``register_forward_pre_hook``,
``register_full_backward_hook`` and ``register_full_backward_pre_hook``, each only where the
source names it: a call from the snippet's own code is shown to hook-registered-in-loop
(engine/pitfalls/piled_module_hooks.py) with the handle it returned, which the snippet gets
as it is; hooks that library code registers (``spectral_norm``'s) are not.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import random
import sys
import threading
import types
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
import torch.distributions as distributions
import torch.nn as nn
import torch.nn.utils as nn_utils
import torch.nn.utils.clip_grad as clip_grad
from torch.utils.data.dataloader import _BaseDataLoaderIter

from .op_arguments import tensors_in
from .pitfalls.piled_module_hooks import MODULE_HOOKS
from .pitfalls.reseeds import Reseeds
from .source import SNIPPET_FILENAME, find_name, snippet_frame
from .tracebacks import drop_gradwalk_frames

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["LibraryCalls"]

_CLIPPERS = ("clip_grad_norm_", "clip_grad_value_")


def _tracing() -> bool:
    """Whether TorchDynamo or torch.export is tracing the code running now."""
    return torch.compiler.is_dynamo_compiling() or torch.compiler.is_exporting()


# where torch.cond is found (NOTE [PyTorch's own compiles] in eager.py)
_COND_OWNERS = (torch, torch._higher_order_ops, sys.modules["torch._higher_order_ops.cond"])
_CONVERSIONS = ("to", "to_empty", "cuda", "cpu", "type", "float", "double", "half", "bfloat16")


class _Making(threading.local):
    """How deep one thread is in a library call recorded as one op (0: in none); ``with
    making:`` is one deeper for its block."""

    depth = 0

    def __enter__(self) -> None:
        self.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1


def DataLoader() -> None:
    """A stand-in the tape's ``op_names`` reads as ``(DataLoader, DataLoader.__next__)``; never called."""


DataLoader.__qualname__ = "DataLoader.__next__"
DataLoader.__module__ = "torch.utils.data"


@functools.cache
def _drawing_methods() -> tuple[tuple[type, str], ...]:
    """``(class, "sample" or "rsample")`` for each ``torch.distributions`` class that defines
    that method itself, listed once."""
    return tuple(
        (kind, name)
        for kind in vars(distributions).values()
        if isinstance(kind, type) and issubclass(kind, distributions.Distribution)
        for name in ("sample", "rsample")
        if name in vars(kind)
    )


class LibraryCalls:
    """Wraps the calls of NOTE [Library calls as one op] between :meth:`install` and :meth:`remove`."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._originals: list[tuple[Any, str, Any]] = []  # (owner, attribute, original)
        # (attribute, id(original)) -> (original, its wrapper), made once (see _replace)
        self._made: dict[tuple[str, int], tuple[Any, Any]] = {}
        #: per thread: nonzero inside a wrapped call (the tape mode records nothing then)
        self.making = _Making()
        #: the snippet's seed calls in loops (seed-reset-in-loop)
        self.seeds = Reseeds(rec)
        # which of "shuffle", "sample" and the module hook methods the snippet's source says,
        # with the detectors on: the shuffles, the distributions' sample and rsample and each
        # hook method are wrapped only then (None: not yet read)
        self._source_says: set[str] | None = None
        # numpy.random and numpy.random.mtrand, read at the first entry that finds NumPy imported
        # (numpy's module __getattr__ answers ``numpy.random``: some 0.6 us an entry)
        self._numpy_owners: tuple[Any, Any] | None = None

    def install(self) -> None:
        self._replace(_BaseDataLoaderIter, "__next__", self._next_batch)
        for name in _CLIPPERS:
            self._replace_shared((clip_grad, nn_utils), name, self._clipping)
        for name in _CONVERSIONS:
            self._replace(nn.Module, name, self._converting)
        self._replace_shared((torch, torch.random), "manual_seed", self._seeding)
        self._replace_shared(_COND_OWNERS, "cond", self._conditional)
        self._replace(random, "seed", self._seeding_random)
        if self._numpy_owners is None:
            numpy_random = getattr(sys.modules.get("numpy"), "random", None)  # (torch imported it)
            if numpy_random is not None:
                self._numpy_owners = (numpy_random, getattr(numpy_random, "mtrand", None))
        numpy_owners = self._numpy_owners
        if numpy_owners is not None:
            self._replace_shared(numpy_owners, "seed", self._seeding_numpy)
        if self._source_says is None:  # (the source is the recorder's once it is entered)
            words = ("shuffle", "sample", *MODULE_HOOKS) if self._rec.pitfalls.enabled else ()
            self._source_says = {w for w in words if any(w in line for line in self._rec.source_lines)}
        if "shuffle" in self._source_says:
            if numpy_owners is not None:
                self._replace_shared(numpy_owners, "shuffle", self._shuffling_numpy)
            self._replace(random, "shuffle", self._shuffling)
        if "sample" in self._source_says:  # some 40 methods: put in place only for a snippet that draws
            for kind, name in _drawing_methods():
                self._replace(kind, name, self._sampling if name == "sample" else self._rsampling)
        for name in MODULE_HOOKS:
            if name in self._source_says:
                self._replace(nn.Module, name, self._hooking)

    def remove(self) -> None:
        while self._originals:
            owner, name, original = self._originals.pop()
            setattr(owner, name, original)

    def _replace_shared(self, owners: tuple[Any, ...], name: str, wrap: Callable[[Any], Any]) -> None:
        """:meth:`_replace` ``name`` on each of ``owners`` (a function and its re-exports)
        where it is the same object as on the first."""
        original = getattr(owners[0], name)
        for owner in owners:
            if owner is not None and getattr(owner, name, None) is original:
                self._replace(owner, name, wrap)

    def _replace(self, owner: Any, name: str, wrap: Callable[[Any], Any]) -> None:
        """Put ``wrap(original)`` in place of ``owner.name``. A recorder is entered once per
        run, or once per step by the benchmark and by ``gradwalk.watch_call``: the wrapper
        made the last time is put back while the original is the same (``functools.wraps``
        made the install half of entering's cost)."""
        original = getattr(owner, name)
        key = (name, id(original))  # a function and its re-export share one wrapper
        made = self._made.get(key)
        if made is None or made[0] is not original:
            made = self._made[key] = (original, wrap(original))
        self._originals.append((owner, name, original))
        setattr(owner, name, made[1])

    def _recording_here(self) -> bool:
        """Whether a call now is the tape's: in full detail, on a thread the tape records."""
        rec = self._rec
        return rec.active and rec.detail and not rec.in_optimizer and rec.threads.on_tape()

    def _as_one_op(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``original(*args, **kwargs)`` run as the library call being recorded: the ops it
        runs are the call's own (:attr:`making` one deeper meanwhile)."""
        with self.making:
            return original(*args, **kwargs)

    def _snippet_caller(self) -> FrameType | None:
        """The frame that called the wrapper calling this, where it is the snippet's own code
        (not a library's) and the call is no part of another one recorded as one op, in a run
        being recorded; ``None`` otherwise."""
        if not (self._rec.active and self.making.depth == 0):
            return None
        caller = sys._getframe(2)
        return caller if caller.f_code.co_filename == SNIPPET_FILENAME else None

    def _show(self, look: Callable[..., None], *args: Any) -> None:
        """``look(*args)``, a detector's look at a call of the snippet's, unrecorded; what it
        fails to read is counted (``Recorder.observation_failed``), and the snippet runs on."""
        try:
            with self._rec.mute():
                look(*args)
        except Exception:
            self._rec.observation_failed()

    def _next_batch(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        making = self.making

        def __next__(iterator: _BaseDataLoaderIter) -> Any:
            try:
                if not self._recording_here():
                    return original(iterator)
                batch = self._as_one_op(original, iterator)
            except BaseException as exc:  # a Dataset's error, the end of an epoch
                drop_gradwalk_frames(exc)  # NOTE [Errors leave without gradwalk's frames]
                raise
            if making.depth == 0:
                outputs: list[torch.Tensor] = []
                tensors_in(batch, outputs)
                self._record(DataLoader, [], outputs, ())
            return batch

        return __next__

    def _clipping(self, original: Callable[..., Any]) -> Callable[..., Any]:
        making = self.making

        @functools.wraps(original)
        def clip(parameters: Any, *args: Any, **kwargs: Any) -> Any:
            if self._rec.active and making.depth == 0:
                self._rec.pitfalls.on_clip(original.__name__)
                given = parameters  # what it was given (a generator: listed, below)
                if isinstance(parameters, types.GeneratorType):
                    # read here to see whether something else read it before (a generator
                    # made empty is not one that was started), and handed on as a generator
                    started = inspect.getgeneratorstate(parameters) != inspect.GEN_CREATED
                    name = find_name(parameters, snippet_frame()[0])
                    given = read = list(parameters)
                    if started and not read:
                        self._rec.pitfalls.on_clip_empty(original.__name__, name)
                    parameters = (p for p in read)
                if self._rec.pitfalls.enabled:  # clip-on-other-parameters
                    self._rec.pitfalls.clips.clipped(original.__name__, given, args, kwargs)
            if not self._recording_here():
                return original(parameters, *args, **kwargs)
            # read the parameters once, and hand them on as they came: a generator as a
            # generator (an empty one makes PyTorch warn), so the call runs as without gradwalk
            is_generator = isinstance(parameters, types.GeneratorType)
            params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            with torch._C.DisableTorchFunctionSubclass():  # a subclass parameter sees no read of gradwalk's
                grads = [p.grad for p in params if isinstance(p, torch.Tensor) and p.grad is not None]
            result = self._as_one_op(
                original, (p for p in params) if is_generator else params, *args, **kwargs
            )
            if making.depth == 0:
                outputs = [result] if isinstance(result, torch.Tensor) else []
                with torch.no_grad():  # the grad mode it ran in (PyTorch's _no_grad decorator)
                    self._record(original, grads, outputs + grads, (None, *args), kwargs)
            return result

        return clip

    def _conditional(self, original: Callable[..., Any]) -> Callable[..., Any]:
        making = self.making

        @functools.wraps(original)
        def cond(*args: Any, **kwargs: Any) -> Any:
            # traced (torch.export), the call is the tracer's: the real one, unrecorded
            if _tracing() or not self._recording_here():
                return original(*args, **kwargs)
            result = self._as_one_op(original, *args, **kwargs)
            if making.depth == 0:
                inputs: list[torch.Tensor] = []
                tensors_in((*args, *kwargs.values()), inputs)
                outputs: list[torch.Tensor] = []
                tensors_in(result, outputs)
                self._record(original, inputs, outputs, args, kwargs)
            return result

        return cond

    def _seeding(self, original: Callable[..., Any], generator: str = "torch") -> Callable[..., Any]:
        rec = self._rec
        making = self.making
        seeds = self.seeds

        @functools.wraps(original)
        def manual_seed(*args: Any, **kwargs: Any) -> Any:
            seed = args[0] if args else next(iter(kwargs.values()), None)  # (a=, seed=)
            looked = rec.active and rec.pitfalls.enabled and making.depth == 0
            seeded = seeds.before(seed, generator) if looked else None
            result = original(*args, **kwargs)
            if seeded is not None:
                seeds.after(seeded)
            return result

        return manual_seed

    def _seeding_random(self, original: Callable[..., Any]) -> Callable[..., Any]:
        return self._seeding(original, "random")

    def _seeding_numpy(self, original: Callable[..., Any]) -> Callable[..., Any]:
        return self._seeding(original, "numpy")

    def _shuffling(self, original: Callable[..., Any], generator: str = "random") -> Callable[..., Any]:
        rec = self._rec
        in_place = rec.pitfalls.shuffles.in_place

        @functools.wraps(original)
        def shuffle(x: Any, *args: Any, **kwargs: Any) -> Any:
            if in_place.calls_left and rec.pitfalls.enabled and not (args or kwargs):
                caller = self._snippet_caller()
                if caller is not None:
                    self._show(in_place.before, x, original, generator, caller)
            return original(x, *args, **kwargs)

        # the generator it draws from, as on the bound method it stands for (seed_loops.py reads it)
        shuffle.__self__ = getattr(original, "__self__", None)  # type: ignore[attr-defined]
        return shuffle

    def _shuffling_numpy(self, original: Callable[..., Any]) -> Callable[..., Any]:
        return self._shuffling(original, "numpy")

    def _sampling(self, original: Callable[..., Any]) -> Callable[..., Any]:
        rec = self._rec
        draws = rec.pitfalls.draws

        @functools.wraps(original)
        def sample(dist: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(dist, *args, **kwargs)
            if draws.calls_left > 0 and rec.pitfalls.enabled and torch.is_grad_enabled():
                caller = self._snippet_caller()
                if caller is not None:
                    self._show(draws.sampled, dist, result, caller)
            return result

        return sample

    def _rsampling(self, original: Callable[..., Any]) -> Callable[..., Any]:
        rec = self._rec
        draws = rec.pitfalls.draws

        @functools.wraps(original)
        def rsample(dist: Any, *args: Any, **kwargs: Any) -> Any:
            if (
                draws.calls_left > 0
                and rec.active
                and sys._getframe(1).f_code.co_filename == SNIPPET_FILENAME
            ):
                with contextlib.suppress(TypeError):  # (a sample() of it later is a constant on purpose)
                    draws.rsampled.add(dist)
            return original(dist, *args, **kwargs)

        return rsample

    def _hooking(self, original: Callable[..., Any]) -> Callable[..., Any]:
        rec = self._rec
        method = original.__name__

        @functools.wraps(original)
        def register(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
            handle = original(module, *args, **kwargs)
            caller = self._snippet_caller()  # (None for a library's own hook)
            if caller is not None:
                hook = args[0] if args else kwargs.get("hook")
                self._show(rec.pitfalls.on_module_hook, module, method, hook, caller.f_lineno, handle)
            return handle

        return register

    def _converting(self, original: Callable[..., Any]) -> Callable[..., Any]:
        making = self.making

        @functools.wraps(original)
        def convert(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
            if not self._recording_here():
                return original(module, *args, **kwargs)
            before = [(t, t.dtype, t.device) for t in _tensors_of(module)]
            if making.depth == 0:
                # met as they go in: a conversion may change a tensor in place (param.data swapped)
                with self._rec.serial, self._rec.mute():
                    self._rec.modules.name_if_new(module)
                    for t, _, _ in before:
                        self._rec.tensors.before_change(t)
            result = self._as_one_op(original, module, *args, **kwargs)
            if making.depth == 0:
                self._rec.modules.reread(module)
                after = _tensors_of(module)
                pairs = list(zip(before, after, strict=False))
                kept = {
                    id(t)
                    for (old, dtype, device), t in pairs
                    if t is old and t.dtype == dtype and t.device == device
                }
                replaced = {id(t): old for (old, _, _), t in pairs if t is not old}  # a buffer: a new object
                with torch.no_grad():  # the grad mode Module._apply converts in
                    inputs = [t for t, _, _ in before]
                    self._record(original, inputs, after, (None, *args), kwargs, kept, replaced)
            return result

        return convert

    def _record(
        self,
        func: Any,
        inputs: list[torch.Tensor],
        outputs: list[torch.Tensor],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None = None,
        handed_back: set[int] | None = None,
        replacing: dict[int, torch.Tensor] | None = None,
    ) -> None:
        rec = self._rec
        if not outputs:
            return
        try:
            with rec.serial, rec.mute():
                rec.on_op(
                    func, inputs, outputs, args, kwargs=kwargs, handed_back=handed_back, replacing=replacing
                )
        except Exception:
            rec.observation_failed()  # the call is the snippet's; only its record is lost


def _tensors_of(module: nn.Module) -> list[torch.Tensor]:
    """A module's parameters and buffers, each once, in the order ``Module._apply`` visits them."""
    return [*module.parameters(), *module.buffers()]
