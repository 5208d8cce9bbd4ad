"""A tensor made from uninitialised memory and read before anything filled it
(parameter-never-initialised).

``torch.Tensor(3, 2)``, ``torch.FloatTensor(3, 2)`` and ``torch.empty(3, 2)`` hand back
whatever bytes the allocator had: zeros on one run, 1e38 or NaN on the next. A custom layer
written after old tutorials, ``nn.Parameter(torch.Tensor(n_out, n_in))`` with no
``nn.init.…`` after it, trains from those bytes.

# NOTE [Judged by what the code did]
# The values differ from run to run, so nothing here reads them to decide: the judgement is
# which code made the tensor (uninitialised_sites.py: the snippet's own call, not PyTorch's
# modules, whose ``torch.empty`` is followed by their ``reset_parameters``) and whether an op
# read it before any op wrote it. A write is an in-place op on its memory (``nn.init.*``,
# ``.uniform_()``, ``.copy_()``, ``[...] =``, through ``.data`` too), an ``out=`` op,
# ``.data = other``, or ``load_state_dict`` (its ``copy_``), or a version-counter move that
# the tape did not see. A tensor is followed by its storage, so that an ``nn.Parameter``
# wrapped around it, a view of it, or a ``.data`` alias of it are the same memory; views,
# shape reads, ``zeros_like`` and the second tensor of ``view_as`` are no reads, and a copy
# (``.to``, ``.clone()``) carries the garbage on. A write through ``t.numpy()`` is one the tape
# cannot see: a tensor the source writes so is not said (uninitialised_sites.py reads it). The values are read only for the message, once.
#
# Cost: the recorder calls :meth:`Unfilled.after_op` for each op recorded in full only while
# :attr:`Unfilled.watching`, which is ``False`` unless the snippet's source makes such a
# tensor: a clean run pays one attribute read per op.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch import nn
from torch.multiprocessing.reductions import StorageWeakRef

from ..source import is_module, quoted_code
from ..tensor_facts import version_of
from .uninitialised_said import held_values, never_initialised_said
from .uninitialised_sites import VISIBLE_MAKERS, MakerSite, maker_sites, written_through_numpy

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["EXPLAINED_BY_UNFILLED", "Unfilled"]

# kinds judged from values that a tensor holding the allocator's bytes makes meaningless:
# once parameter-never-initialised is said, they are left unsaid
EXPLAINED_BY_UNFILLED = frozenset(
    {
        "non-finite-loss",
        "non-finite-gradient",
        "loss-diverging",
        "symmetric-weights",
        "relu-units-dead",
        "vanishing-gradients",
    }
)
# in-place by name, and no write of values
_NOT_WRITES = frozenset({"requires_grad", "share_memory", "retain_grad"})
# ops with tensor outputs that read no value of their inputs (their shape, dtype, device)
_NO_READS = frozenset(
    {
        "requires_grad",
        "zeros_like",
        "ones_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "empty_like",
        "new_zeros",
        "new_ones",
        "new_full",
        "new_empty",
        "new_tensor",
        "new",
    }
)
# ops that read only the shape, dtype or device of their second tensor (``vec.view_as(w)``,
# as ``vector_to_parameters`` does before it writes ``w``): their first input is judged
_SHAPE_OF_SECOND = frozenset({"view_as", "expand_as", "reshape_as", "type_as"})
# copies that carry the bytes on to a new tensor: the copy is followed, not judged
_CARRIES = frozenset(
    {"to", "type", "float", "double", "half", "bfloat16", "cuda", "cpu", "clone", "contiguous", "pin_memory"}
)


class _Held(NamedTuple):
    """A tensor made from uninitialised memory, not read nor written yet: where it was made,
    a weak reference to its storage, and its version counter then."""

    site: MakerSite
    storage: StorageWeakRef
    version: int | None


def _storage(t: torch.Tensor) -> int | None:
    """The address of ``t``'s memory (its storage's, whatever view of it ``t`` is); ``None``
    for a tensor without memory, or none at all."""
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # a meta tensor, a functorch wrapper, a sparse tensor
        return None
    return ptr or None


class Unfilled:
    """parameter-never-initialised for one run: ``rec``, the recorder; ``say``, PitfallWatch's.

    :attr:`watching` tells the recorder to call :meth:`after_op`; :attr:`said`, that the kind
    was said (the kinds of :data:`EXPLAINED_BY_UNFILLED` are then left unsaid).
    """

    def __init__(self, rec: Recorder, say: Callable[..., None]) -> None:
        self._rec = rec
        self._say = say
        sites = maker_sites("\n".join(rec.source_lines))
        self.watching = bool(sites)
        self.said = False
        self._visible = {line: site for site in sites if site.visible for line in site.lines}
        # the class calls the tape cannot see, until their tensor is met
        # (NOTE [Makers the tape cannot see] in uninitialised_sites.py)
        self._hidden = [site for site in sites if not site.visible]
        self._held: dict[int, _Held] = {}  # storage address -> the tensor not filled yet
        # while ``_hidden`` waits: the memory in-place ops wrote, and that ops made, by address
        # (weakly: a freed block's address, handed out again, is another tensor's)
        self._written: dict[int, StorageWeakRef] = {}
        self._made: dict[int, StorageWeakRef] = {}

    def after_op(
        self,
        short: str,
        inplace: bool,
        args: tuple[Any, ...],
        inputs: list[torch.Tensor],
        outputs: list[torch.Tensor],
        line: int | None,
        frame: FrameType | None,
    ) -> None:
        """Look at an op recorded in full (NOTE [Judged by what the code did]): ``short`` its
        name, in place or not, its ``args``, the tensors it read and made, its snippet ``line``
        and the snippet ``frame`` it ran in."""
        try:
            self._after_op(short, inplace, args, inputs, outputs, line, frame)
        except Exception:
            self._rec.observation_failed()

    def _after_op(
        self,
        short: str,
        inplace: bool,
        args: tuple[Any, ...],
        inputs: list[torch.Tensor],
        outputs: list[torch.Tensor],
        line: int | None,
        frame: FrameType | None,
    ) -> None:
        if self._writes(short, inplace, inputs, outputs):
            for t in outputs:
                ptr = _storage(t)
                if ptr is not None:
                    self._held.pop(ptr, None)
                    if self._hidden:
                        self._written[ptr] = StorageWeakRef(t.untyped_storage())
            if self._hidden:  # ``nn.init.kaiming_uniform_(self.weight)``: met, and filled
                self._resolve(inputs, frame, filled=True)
            return
        site = self._visible.get(line) if short in VISIBLE_MAKERS and line is not None else None
        if site is not None:
            if short == "new" and not _sizes(args[1:]):
                return  # x.new([1, 2]): values given
            for t in outputs:
                self._hold(t, site)
            return
        if self._hidden:
            self._resolve(inputs, frame, filled=False)
            read = {_storage(t) for t in inputs}
            for t in outputs:
                ptr = _storage(t)
                if ptr is not None and ptr not in read:
                    self._made[ptr] = StorageWeakRef(t.untyped_storage())
        if self._held and short not in _NO_READS:
            self._judge(short, inputs, outputs, line)

    def _writes(
        self, short: str, inplace: bool, inputs: list[torch.Tensor], outputs: list[torch.Tensor]
    ) -> bool:
        """Whether the op wrote the memory of its outputs: in place, ``out=``, ``.data = …``."""
        if short == "set_data":  # ``w.data = other``: other's bytes, judged as other's
            ptr = _storage(inputs[0]) if inputs else None
            return ptr is None or ptr not in self._held
        if inplace:
            return short not in _NOT_WRITES
        if short in _CARRIES or short in _NO_READS:
            return False  # ``x.float()`` of a float tensor hands ``x`` back: no write
        ids = {id(t) for t in inputs}
        return any(id(t) in ids for t in outputs)

    def _hold(self, t: torch.Tensor, site: MakerSite) -> None:
        ptr = _storage(t)
        if ptr is not None and t.numel():
            self._held[ptr] = _Held(site, StorageWeakRef(t.untyped_storage()), version_of(t))

    def _resolve(self, inputs: list[torch.Tensor], frame: FrameType | None, *, filled: bool) -> None:
        """Find among ``inputs`` the tensor of a class call the tape could not see (NOTE
        [Makers the tape cannot see]), by where the source put it; hold it unless ``filled``
        (or written, or made by an op the tape saw)."""
        for site in list(self._hidden):
            for t in inputs:
                if not self._is_target(site, t, frame):
                    continue
                self._hidden.remove(site)
                ptr = _storage(t)
                written = _alive(self._written, ptr) or _alive(self._made, ptr) or (version_of(t) or 0) > 0
                if not filled and not written and ptr is not None and t.numel():
                    self._held[ptr] = _Held(site, StorageWeakRef(t.untyped_storage()), 0)
                break
        if not self._hidden:
            self._written.clear()
            self._made.clear()

    def _is_target(self, site: MakerSite, t: torch.Tensor, frame: FrameType | None) -> bool:
        """Whether ``t`` is what ``site``'s target holds, seen from snippet ``frame``."""
        target = site.target
        if target is None or frame is None:
            return False
        if site.owner is not None:  # ``self.weight`` in class ``owner``
            attribute = target.removeprefix("self.")
            holder = frame.f_locals.get("self")
            if holder is None or not _is_instance_of(holder, site.owner):
                holder = self._holder_of(t, frame, site.owner)
            return holder is not None and _lookup(holder, attribute) is t
        if site.function is None:
            first, _, rest = target.partition(".")
            value = frame.f_globals.get(first)
        elif frame.f_code.co_name == site.function:
            first, _, rest = target.partition(".")
            value = frame.f_locals.get(first)
        else:
            return False
        return (_lookup(value, rest) if rest else value) is t

    def _holder_of(self, t: torch.Tensor, frame: FrameType, owner: str) -> Any:
        """The module of class ``owner`` whose parameter or buffer ``t`` is, by its name."""
        modules = self._rec.modules
        name = modules.param_name(t)[0] or modules.buffer_name(t)
        if not name or "." not in name:
            return None
        path = name.rsplit(".", 1)[0]
        first, _, rest = path.partition(".")
        root = frame.f_locals.get(first, frame.f_globals.get(first))
        holder = _lookup(root, rest) if rest else root
        return holder if _is_instance_of(holder, owner) else None

    def _judge(
        self, short: str, inputs: list[torch.Tensor], outputs: list[torch.Tensor], line: int | None
    ) -> None:
        """Say the first input of this reading op that holds the allocator's bytes."""
        made = None
        for t in inputs[:1] if short in _SHAPE_OF_SECOND else inputs:
            ptr = _storage(t)
            held = self._held.get(ptr) if ptr is not None else None
            if ptr is None or held is None:
                continue
            if held.storage.expired():
                del self._held[ptr]  # freed, and its address handed to this tensor
                continue
            if made is None:
                made = {_storage(o) for o in outputs}
            if ptr in made:
                continue  # a view of it (``w.t()``, ``w[0]``, ``w.detach()``): read later
            if short in _CARRIES:
                for o in outputs:
                    self._hold(o, held.site)
                continue
            del self._held[ptr]
            version = version_of(t)
            if held.version is not None and version is not None and version > held.version:
                continue  # written where the tape did not see it (a step recorded metrics-only)
            if self._numpy_wrote(t, held.site):
                continue  # written through ``t.numpy()``, which the tape does not see either
            self._report(t, held.site, line)
            return

    def _numpy_wrote(self, t: torch.Tensor, site: MakerSite) -> bool:
        """Whether the snippet's source writes ``t`` through ``.numpy()`` (by its name, or the
        name ``site`` gave it): asked once, of the tensor about to be said."""
        tid = self._rec.tensors.known(t)
        names = {n for n in (site.target, self._rec.tensors.names.get(tid) if tid is not None else None) if n}
        return bool(names) and written_through_numpy("\n".join(self._rec.source_lines), names)

    def _report(self, t: torch.Tensor, site: MakerSite, line: int | None) -> None:
        """Say ``t`` (or the parameter whose memory it is a view of) read at ``line``."""
        rec = self._rec
        ptr = _storage(t)
        owner, name = next(((p, n) for p, n in rec.modules.all_params() if _storage(p) == ptr), (t, None))
        if name is None:
            tid = rec.tensors.known(t)
            name = rec.tensors.names.get(tid) if tid is not None else None
        said = never_initialised_said(
            name or site.target or "the tensor",
            site,
            line,
            quoted_code(rec.statement_lines, line),
            held_values(owner),
            tuple(owner.shape),
            isinstance(owner, nn.Parameter),
            owner.requires_grad and owner.grad_fn is None,
        )
        self.said = True
        self._say("parameter-never-initialised", site.line, *said)


def _alive(memory: dict[int, StorageWeakRef], ptr: int | None) -> bool:
    """Whether ``memory`` holds the storage at address ``ptr``, still alive (so the same)."""
    ref = memory.get(ptr) if ptr is not None else None
    return ref is not None and not ref.expired()


def _sizes(args: tuple[Any, ...]) -> bool:
    """Whether ``x.new(*args)``'s arguments are sizes (``x.new(3, 2)``), not values."""
    if len(args) == 1 and isinstance(args[0], torch.Size):
        return True
    return bool(args) and all(isinstance(a, int) and not isinstance(a, bool) for a in args)


def _is_instance_of(value: Any, owner: str) -> bool:
    """Whether ``value``'s class is, or derives from, a class named ``owner``."""
    return any(k.__name__ == owner for k in type(value).__mro__)


def _lookup(value: Any, dotted: str) -> Any:
    """``value.<dotted>`` read from a module's tables (no property, no ``__getattr__``)."""
    for attr in dotted.split(".") if dotted else ():
        if is_module(value):
            tables = [vars(value).get(t, {}) for t in ("_parameters", "_buffers", "_modules")]
            value = next((t[attr] for t in tables if attr in t), vars(value).get(attr))
        else:
            value = getattr(value, "__dict__", {}).get(attr)
    return value
