"""Count the bytes held by tensors saved for backward, as they are packed and freed.

# NOTE [Saved-tensor accounting]
A ``saved_tensors_hooks`` pack hook wraps each saved tensor in a small holder whose
``__del__`` runs when autograd releases it (after ``backward()`` frees the graph, or when
the graph is garbage). The holder keeps a ``detach()``-ed alias of a saved output, not
the tensor itself, so no reference cycle through ``grad_fn`` is created. Storages are
counted once however many nodes save them, which is what the graph really holds in memory.

PyTorch does not check saved tensors for in-place changes while such hooks are active, so
the unpack hook does that check itself, with the same version counters: a snippet that
modifies a saved tensor fails exactly as it would without gradwalk.

# NOTE [Saved inputs are kept as they are]
Without hooks PyTorch keeps a saved input (a leaf, or a non-leaf made by an earlier op) as
the tensor object itself, and copies only a saved output (whose ``grad_fn`` is the saving
node: the cycle). What a snippet does to that object before backward then shows:
``w.data = new`` after the forward makes backward use the new values, and ``h.detach_()``
of a saved non-leaf makes backward fail ("Trying to use a saved tensor that has been
detached in-place"). An alias, sharing only the old storage and the version counter, saw
neither: the trace's gradient differed from PyTorch's, or backward ran where it fails. In
full detail the holder therefore keeps a saved input itself (``original``), beside the
alias that names it: a leaf, or a tensor whose ``grad_fn`` has an id in this run (a node
made by an earlier op; the node being built has none yet). Anything else is taken for an
output and aliased. Metrics-only steps keep a leaf itself and alias the rest, as before.

torch.func's ``grad``, ``vjp``, ``jacrev`` and ``hessian`` refuse to run while any
saved-tensor hooks are on the stack (they enter
``torch.autograd.graph.disable_saved_tensors_hooks``). While recording, that context manager
is replaced by one that first takes gradwalk's hooks off the stack and puts them back after,
so such snippets run as they do without gradwalk; what those transforms save internally is
not counted.

# NOTE [Changes autograd cannot see]
``x.data`` shares ``x``'s memory but not its version counter, so an in-place change through
it (``x.data.mul_(2)``) of a tensor a node saved moves no version the unpack hook checks, and
``w.data = new`` gives the saved ``w`` itself new memory with its version unmoved: backward
runs and uses the new values (data_edit.py says so). Each holder takes a serial as it is
packed (``packs``). The detector asks :meth:`SavedMemory.saved_storage` of the target of each
in-place op of a step recorded in full; where the target's storage is one a live holder
saved, :meth:`SavedMemory.note_write` puts the write into ``unseen_writes`` by storage, with
the last serial packed before the op and the bytes it wrote. The unpack hook, once the version
check passed, notes in ``unseen_uses`` a holder with each such write made to its storage after
it was packed (data_edit.py keeps those that met its bytes), or whose kept input now has other
memory than its alias. A clean run pays a counter per pack, a truthiness test per unpack and,
in full detail, one ``data_ptr`` comparison per saved input kept as it is; writes to storages
no holder saved are not kept, and a storage's writes go when its last holder does.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch.autograd import graph
from torch.autograd.graph import saved_tensors_hooks

from .dispatch import modes_aside
from .values import has_storage, same_view

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = [
    "SavedBy",
    "SavedMemory",
    "UnseenUse",
    "UnseenWrite",
    "cuda_allocated",
    "saved_by",
    "saved_source",
]

_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")
_HINT = (
    " Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
    "with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)
_ANOMALY_HINT = (
    " Hint: the backtrace further above shows the operation that failed to compute its gradient. "
    "The variable in question was changed in there or anywhere later. Good luck!"
)
_DETACHED_IN_PLACE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()."
    "This is not supported, please use out-of-place `.detach()` instead"
)
_SOURCE = "_gradwalk_source"
_SAVED_BY = "_gradwalk_saved_by"
_PLAIN_TYPES = frozenset({torch.Tensor, torch.nn.Parameter})
_MAX_WRITES = 8  # unseen writes kept per storage: the first ones, then the newest in the last place
_MAX_USES = 64  # unseen uses kept between two reads of them


class SavedBy(NamedTuple):
    """Which node saved a tensor, under which name, and the tensor's id then."""

    node: str  # the grad_fn's class name
    node_id: int  # its id in the trace
    label: str  # what the node calls it: self, other, result, ...
    tensor: int | None  # the tensor's id when it was saved
    line: int | None  # the snippet line of the op that made the node
    path: str | None  # the module the op ran in (net.fc1), if any


class UnseenWrite(NamedTuple):
    """An in-place write autograd cannot see, to memory a live graph saved (NOTE [Changes
    autograd cannot see])."""

    after: int  # the serial of the last holder packed before the op that wrote
    line: int | None  # the snippet line of that op
    span: tuple[int, int] | None = None  # the bytes of the storage it wrote, [start, end)


class UnseenUse(NamedTuple):
    """A saved tensor backward used after a change autograd could not see."""

    saved: torch.Tensor  # what the holder keeps (saved_by and saved_source read it)
    used: torch.Tensor  # what the unpack hook handed back
    write: UnseenWrite | None  # the write that changed its memory; None: its memory was swapped


def saved_by(saved: torch.Tensor) -> SavedBy | None:
    """Which node saved ``saved`` (a tensor the unpack hook hands back), where
    :meth:`SavedMemory.note_saver` was told."""
    by: SavedBy | None = saved.__dict__.get(_SAVED_BY)
    return by


def saved_source(saved: torch.Tensor) -> weakref.ref[torch.Tensor] | None:
    """A weak reference to the tensor autograd saved, given what a node's ``_saved_*``
    attribute returns; ``None`` when ``saved`` did not come through the recorder's pack
    hook (the caller must then match it some other way)."""
    ref: weakref.ref[torch.Tensor] | None = saved.__dict__.get(_SOURCE)
    return ref


def _stepping_aside(
    memory: SavedMemory, original: Callable[[str], AbstractContextManager[None]]
) -> Callable[[str], AbstractContextManager[None]]:
    """``disable_saved_tensors_hooks`` that first takes ``memory``'s hooks off the stack."""

    @contextlib.contextmanager
    def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
        memory.step_aside()
        try:
            with original(error_message):
                yield
        finally:
            memory.step_back()

    return disable_saved_tensors_hooks


def cuda_allocated() -> int | None:
    """Bytes PyTorch holds on the current CUDA device; ``None`` where CUDA was never started.

    Asks ``is_initialized()`` first: ``is_available()`` costs microseconds, and this runs
    on every memory change and optimizer step.
    """
    if torch.cuda.is_initialized() and torch.cuda.is_available():
        return torch.cuda.memory_allocated()
    return None


class _Held:
    """One saved tensor, as the pack hook kept it.

    ``tensor`` is what gradwalk reads (the alias that names it, in full detail); ``original``
    the saved input itself, handed back to backward instead where it is kept (NOTE [Saved
    inputs are kept as they are]); ``made_by`` the ``(output_nr, node class name)`` of an
    aliased non-leaf when it was saved: for a saved output, the node that saved it.
    """

    __slots__ = (
        "__weakref__",
        "key",
        "made_by",
        "original",
        "original_had_history",
        "owner",
        "serial",
        "snippet_hooks",
        "tensor",
        "version",
    )

    def __init__(
        self,
        tensor: torch.Tensor,
        key: tuple[int, int],
        owner: SavedMemory,
        original: torch.Tensor | None = None,
        made_by: tuple[int, str] | None = None,
    ) -> None:
        self.tensor = tensor
        self.version = tensor._version
        owner.packs += 1
        self.serial = owner.packs  # NOTE [Changes autograd cannot see]
        self.key = key
        self.owner = owner
        self.original = original
        # a non-leaf kept as it is: backward refuses it once detached in place
        self.original_had_history = original is not None and not original.is_leaf
        self.made_by = made_by
        self.snippet_hooks: tuple[object, Callable[[object], torch.Tensor]] | None = None  # saved_hooks.py

    def __del__(self) -> None:
        self.owner._release(self.key)


class SavedMemory:
    """Live total of distinct storages saved for backward (``saved_bytes``)."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._storages: dict[tuple[int, int], list[int]] = {}
        self.saved_bytes = 0
        self.reported = 0
        # the most held since the last optimizer step (its event carries it: take_peak), and
        # whether a metrics-only backward built a graph no memory event has shown yet
        self.peak = 0
        self.peak_unreported = False
        self._ctx: saved_tensors_hooks | None = None
        self.active = False
        self._original_disable: Callable[[str], AbstractContextManager[None]] | None = None
        self._aside = 0
        self._popped = False
        # the saved tensor backward found changed in place, for the error's explanation
        self.changed: torch.Tensor | None = None
        # what the op being recorded saved (full detail only), weakly (the holder's __del__
        # is what counts the bytes freed): cleared after each op
        self.recent: list[weakref.ref[_Held]] = []
        # NOTE [Changes autograd cannot see]: holders packed so far, the writes autograd did not
        # see by storage, and the saved tensors backward used after one (data_edit.py reads them)
        self.packs = 0
        self.unseen_writes: dict[tuple[int, int], list[UnseenWrite]] = {}
        self.unseen_uses: list[UnseenUse] = []

    def install(self) -> None:
        self.active = True
        self._ctx = self.hooks()
        self._ctx.__enter__()
        self._original_disable = graph.disable_saved_tensors_hooks
        graph.disable_saved_tensors_hooks = _stepping_aside(self, self._original_disable)  # type: ignore[assignment]

    def hooks(self) -> saved_tensors_hooks:
        """The saved-tensor hooks that count what graphs hold, to enter on a thread's own
        stack (the recorder's thread: :meth:`install`; a snippet's threads: threads.py)."""
        return saved_tensors_hooks(self._pack, self._unpack)

    def remove(self) -> None:
        self.active = False
        if self._original_disable is not None:
            graph.disable_saved_tensors_hooks = self._original_disable  # type: ignore[assignment]
            self._original_disable = None
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None

    def take_peak(self) -> int:
        """The most bytes held at any moment since the last call (an optimizer step's
        ``graph_peak_bytes``); the count starts again from what is held now."""
        peak = max(self.peak, self.saved_bytes)
        self.peak = self.saved_bytes
        self.peak_unreported = False
        return peak

    def step_aside(self) -> None:
        """Take the hooks off the stack (nests) while torch.func forbids saved-tensor hooks."""
        self._aside += 1
        if self._aside == 1:
            top = torch._C._autograd._top_saved_tensors_default_hooks(False)
            if top is not None and top[0] == self._pack:
                torch._C._autograd._pop_saved_tensors_default_hooks()
                self._popped = True

    def step_back(self) -> None:
        self._aside -= 1
        if self._aside == 0 and self._popped:
            self._popped = False
            torch._C._autograd._push_saved_tensors_default_hooks(self._pack, self._unpack)

    def _pack(self, t: torch.Tensor) -> object:
        if not self.active:
            return t
        if type(t) in _PLAIN_TYPES and not torch._C._is_torch_function_mode_enabled():
            return self._held(t)
        # autograd saves where the snippet's code runs too (a checkpointed block recomputed
        # in backward, with the tape mode on the stack): the reads below go to neither the
        # mode nor a tensor subclass's own __torch_function__, which counted them as its ops
        with torch._C.DisableTorchFunction():
            return self._held(t)

    def _held(self, t: torch.Tensor) -> object:
        """What :meth:`_pack` keeps of ``t``: ``t`` itself when it cannot be read."""
        try:
            storage = t.untyped_storage()
            key = (storage.data_ptr(), t.get_device())
            entry = self._storages.get(key)
            if entry is None:
                nbytes = storage.nbytes()
                self._storages[key] = [1, nbytes]
                self.saved_bytes += nbytes
                if self.saved_bytes > self.peak:
                    self.peak = self.saved_bytes
            else:
                entry[0] += 1
        except (RuntimeError, NotImplementedError):
            return t
        if self._rec.detail:
            alias = self._detached(t)
            # lets the node's description name the tensor it saved (see saved_source)
            alias.__dict__[_SOURCE] = weakref.ref(t)
            original, made_by = self._input_or_output(t)
            held = _Held(alias, key, self, original, made_by)
            self.recent.append(weakref.ref(held))
            return held
        # a leaf (an input, a parameter) cannot lead back to the node saving it: no alias needed
        return _Held(t if t.is_leaf else self._detached(t), key, self)

    def note_saver(self, value: torch.Tensor, by: SavedBy) -> None:
        """Note which node saved ``value`` (what one of its ``_saved_*`` attributes returns:
        a fresh alias on every read, so it is matched by memory to what the op saved), for
        :func:`saved_by` to read should backward find it changed."""
        if value.layout is not torch.strided or not has_storage(value):
            return  # a sparse or wrapped tensor has no one block of memory to match by
        for ref in self.recent:
            held = ref()
            if held is not None and same_view(held.tensor, value):
                held.tensor.__dict__.setdefault(_SAVED_BY, by)
                return

    def saved_storage(self, t: torch.Tensor) -> tuple[int, int] | None:
        """The key of ``t``'s storage where a live holder saved it, else None (NOTE [Changes
        autograd cannot see])."""
        if not self._storages:
            return None
        try:
            key = (t.untyped_storage().data_ptr(), t.get_device())
        except (RuntimeError, NotImplementedError):
            return None
        # (every empty tensor's memory is at address 0: nothing in it to change)
        return key if key[0] != 0 and key in self._storages else None

    def note_write(self, key: tuple[int, int], line: int | None, span: tuple[int, int] | None = None) -> None:
        """Note that the op at snippet ``line`` has just changed storage ``key`` (what
        :meth:`saved_storage` answered for its target) in place, for the unpack hook to tell
        a saved tensor changed where autograd could not see it (NOTE [Changes autograd cannot
        see])."""
        # what this op packed itself was saved after the write, not before it
        write = UnseenWrite(self.packs - len(self.recent), line, span)
        writes = self.unseen_writes.setdefault(key, [])
        if len(writes) < _MAX_WRITES:
            writes.append(write)
        else:
            writes[-1] = write

    def _used_unseen(self, held: _Held, used: torch.Tensor) -> None:
        """Note ``held``, unpacked as ``used``, with each write autograd did not see to its
        storage after it was packed (data_edit.py keeps those that wrote bytes it saved)."""
        for write in self.unseen_writes.get(held.key, ()):
            if write.after >= held.serial and len(self.unseen_uses) < _MAX_USES:
                self.unseen_uses.append(UnseenUse(held.tensor, used, write))

    def _used_swapped(self, held: _Held, used: torch.Tensor) -> None:
        """Note ``held``, whose kept input ``used`` has other memory than when it was packed."""
        if len(self.unseen_uses) < _MAX_USES:
            self.unseen_uses.append(UnseenUse(held.tensor, used, None))

    def _input_or_output(self, t: torch.Tensor) -> tuple[torch.Tensor | None, tuple[int, str] | None]:
        """``(original, made_by)`` for a tensor being saved in full detail: ``t`` itself as
        ``original`` when it is a saved input (a leaf, or made by a node recorded before);
        else, for what is taken for an output, its output number and node class now (NOTE
        [Saved inputs are kept as they are])."""
        if t.is_leaf:
            return t, None
        try:
            fn = t.grad_fn
        except RuntimeError:  # a view PyTorch will not describe (changed under no_grad)
            return None, None
        if fn is None:
            return None, None
        if self._rec.graph.node_id(fn) is not None:
            return t, None
        if t._is_view():
            # made inside the op (F.linear's weight.t()): only its base can change in place, and
            # PyTorch then names the AsStrided node it regenerates for the view
            return None, (0, "AsStridedBackward0")
        return None, (t.output_nr, type(fn).__name__)

    def _detached(self, t: torch.Tensor) -> torch.Tensor:
        """``t.detach()``, never recorded as the snippet's op. Within an op the tape mode is
        off already (a mode is popped while it handles an op); a custom Function's
        ``save_for_backward`` is packed outside any op, where the detach showed in the tape."""
        if not torch._C._is_torch_function_mode_enabled():
            with modes_aside():
                return t.detach()
        with self._rec.mute():
            return t.detach()

    @staticmethod
    def _unpack(held: object) -> torch.Tensor:
        if not isinstance(held, _Held):
            return held  # type: ignore[return-value]
        if held.snippet_hooks is not None:  # NOTE [A snippet's hooks on one saved tensor]
            return held.snippet_hooks[1](held.snippet_hooks[0])
        original = held.original
        t = held.tensor if original is None else original
        if type(t) not in _PLAIN_TYPES:
            with torch._C.DisableTorchFunction():  # a subclass's handler sees no check (see _pack)
                return SavedMemory._checked(held, original, t)
        return SavedMemory._checked(held, original, t)

    @staticmethod
    def _checked(held: _Held, original: torch.Tensor | None, t: torch.Tensor) -> torch.Tensor:
        """``t``, what ``held`` hands back, once PyTorch's checks pass."""
        # PyTorch's own checks, skipped when saved-tensor hooks are active, in its order and
        # words (2.13's): an input detached in place, then a version that moved on
        if held.original_had_history and original is not None and original.grad_fn is None:
            raise RuntimeError(_DETACHED_IN_PLACE)
        if t._version != held.version:
            # the alias: it carries what explain.py reads (saved_by, saved_source)
            held.owner.changed = held.tensor
            # the detached alias shares the original's version counter
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{t.type()} {list(t.shape)}]{_output_clause(held)} is at version {t._version}; "
                f"expected version {held.version} instead.{_ANOMALY_HINT if torch.is_anomaly_enabled() else _HINT}"
            )
        owner = held.owner  # NOTE [Changes autograd cannot see]
        if owner.unseen_writes and held.key in owner.unseen_writes:
            owner._used_unseen(held, t)
        elif original is not None and original.data_ptr() != held.tensor.data_ptr():
            owner._used_swapped(held, t)  # `w.data = new` since it was saved
        return t

    def _release(self, key: tuple[int, int]) -> None:
        entry = self._storages.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            del self._storages[key]
            self.saved_bytes -= entry[1]
            if self.unseen_writes:
                self.unseen_writes.pop(key, None)


def _output_clause(held: _Held) -> str:
    """PyTorch's ``, which is output N of X,`` for a saved tensor changed in place: for a saved
    input kept as it is, of its grad_fn now (its in-place op's, or the ``AsStrided`` of a view
    whose base changed); for a saved output, of the node that saved it. Empty for a leaf, or
    where gradwalk does not know (a step recorded metrics-only)."""
    original = held.original
    if original is None:
        by = saved_by(held.tensor)
        if held.made_by is not None:
            return _which_output(*held.made_by)
        if by is not None and by.label.startswith("result"):
            return _which_output(by.label[6:] or 0, by.node)
        return ""
    try:
        fn = original.grad_fn
    except RuntimeError:  # a view PyTorch will not describe (changed under no_grad)
        return ""
    if fn is None:
        return ""
    return _which_output(original.output_nr, type(fn).__name__)


def _which_output(nr: int | str, node: str) -> str:
    """``, which is output 0 of Sigmoid,`` for output ``nr`` of node class ``node``, the node
    named as this PyTorch names it there."""
    return f", which is output {nr} of {node if _SUFFIX_KEPT else _BACKWARD_SUFFIX.sub('', node)},"


def _pytorch_keeps_the_backward_suffix() -> bool:
    """Whether this PyTorch's in-place error names a node by its class (``output 0 of
    ExpBackward0``, torch 2.11) or without the suffix (``output 0 of Exp``, torch 2.13): asked
    of PyTorch once, at import, on a tensor of one element. Not later: inside a recording,
    gradwalk's own saved-tensor hooks are on, and under them PyTorch skips this check."""
    try:
        with torch.enable_grad(), torch.inference_mode(False):
            y = torch.ones(1, requires_grad=True).exp()
            y.add_(1)
            y.backward()
    except RuntimeError as exc:
        return "ExpBackward" in str(exc)
    return False


_SUFFIX_KEPT = _pytorch_keeps_the_backward_suffix()
