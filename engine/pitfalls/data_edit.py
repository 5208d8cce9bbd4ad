"""A saved tensor changed through ``.data`` before backward used it (data-edit-hidden-from-autograd).

``x.data`` is another tensor on ``x``'s memory with a version counter of its own. A node that
saved ``x`` for backward checks ``x``'s version when backward unpacks it; a change made through
``x.data`` (``x.data.mul_(2)``, ``w.data.clamp_(0, 1)``, ``self.weight.data.div_(norm)`` in a
forward after the weight was used) moves no version it checks, so backward runs without an
error and computes the gradient from the new values. ``w.data = new`` after the forward does
the same where a node saved ``w`` itself (``w * x``; ``F.linear`` saves ``weight.t()``, a view
that keeps the old memory, so it is not changed). With ``x.detach().mul_(2)`` or ``x.mul_(2)``
under ``torch.no_grad()`` PyTorch raises instead ("one of the variables needed for gradient
computation has been modified by an inplace operation").

How it is told, for certain (NOTE [Changes autograd cannot see] in memory.py): the target of
every in-place op of a step recorded in full is looked up by storage
(``SavedMemory.saved_storage``, which finds nothing where no live graph saved that memory), and
a hit the snippet's own code made is noted (``SavedMemory.note_write``); the unpack hook notes
each saved tensor backward then uses whose memory such a write changed after it was saved, and
each kept input given new memory with other values; after the backward() returns, each is said
at the line that changed it, with the node that saved it, that backward()'s line and the
gradient it made.

Silent: optimizer steps (in place under no_grad: the version moves, and they run after
backward); the manual update after backward (``w.data -= lr * w.grad``: the graph is freed,
nothing is saved); a ``.data`` change of a tensor no live graph saved, or made before the
forward that saves it; ``.data`` reads; weight clipping after a step (``p.data.clamp_(-c, c)``,
the WGAN critic's: its graph is freed); a graph that is never backpropagated; new memory with
the same values (``w.data = w.data.clone()``); library code's own changes (gradcheck perturbs
its inputs through ``.data`` and puts them back); and, read by data_edit_writes.py, a write to
bytes of the storage the node did not save (``buf.data[n] = x`` while it holds ``buf[:n]``), a
clamp that changed no value (none sits at a bound), a multiplication or division by exactly 1
(or an addition of exactly 0) everywhere, and a write that changes nothing made twice (a clamp,
a fill, a 0/1 mask) made as the last write to that memory was, with no optimizer step since (a
cell that clips its weight at every time step); and an operand a product kept only for the
gradients of operands that need none (a frozen convolution's input). A step recorded
metrics-only does not record ops, so its changes are not seen: the steps of a loop recorded in
full come first and run the same lines.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
import torch.overrides

from ..memory import SavedBy, UnseenUse, saved_by, saved_source
from ..source import SNIPPET_FILENAME
from .data_edit_said import changed_in_place, swapped_memory
from .data_edit_writes import (
    CLAMPS,
    IDEMPOTENT,
    RepeatedWrites,
    byte_span,
    clamped_nothing,
    identity_write,
    overlap,
    written_span,
)
from .kinds import Said

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["DATA_EDIT_OPS", "DataEdits"]

# in-place ops that change a tensor's metadata (its shape, strides, flags), not its values
_NO_WRITE = frozenset(
    {
        "requires_grad_",
        "share_memory_",
        "detach_",
        "resize_",
        "resize_as_",
        "set_",
        "as_strided_",
        "squeeze_",
        "unsqueeze_",
        "t_",
        "transpose_",
        "swapdims_",
        "swapaxes_",
        "rename_",
    }
)
_IN_PLACE_DUNDERS = frozenset(
    {
        "__setitem__",
        "__iadd__",
        "__isub__",
        "__imul__",
        "__itruediv__",
        "__ifloordiv__",
        "__imod__",
        "__ipow__",
        "__imatmul__",
        "__iand__",
        "__ior__",
        "__ixor__",
        "__ilshift__",
        "__irshift__",
    }
)
# the names the tape mode sees for ops that write into their first argument: Tensor's and
# nn.init's in-place methods and functions, and the in-place operators
DATA_EDIT_OPS = (
    frozenset(
        name
        for source in (torch.Tensor, torch.nn.init)
        for name in dir(source)
        if name.endswith("_") and not name.startswith("_")
    )
    - _NO_WRITE
) | _IN_PLACE_DUNDERS
# the nodes that keep each operand for the gradients of the others only (x * w keeps x for w's)
_PRODUCTS = frozenset(
    {
        "MulBackward0",
        "MmBackward0",
        "BmmBackward0",
        "DotBackward0",
        "VdotBackward0",
        "MvBackward0",
        "ConvolutionBackward0",
    }
)
_SHOWN_VALUES = 8  # a leaf's .grad is quoted when it has at most this many elements
_NODES_SEARCHED = 10_000  # nodes walked from backward's roots to find the one that saved it
_VERSIONS_WALKED = 10_000  # a tensor's versions walked back (each in-place change makes one)
# where the frames between the snippet's call and this detector live: gradwalk's engine,
# torch's dispatch to a mode, and torch (an op's own Python wrapper)
_ENGINE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_OVERRIDES = torch.overrides.__file__
_TORCH = os.path.dirname(torch.__file__) + os.sep


class DataEdits:
    """The in-place writes of one run that autograd could not see, and what backward did with
    them; ``rec``: the run's recorder. :class:`~.op_checks.OpChecks` calls :meth:`wrote`,
    :class:`~.detectors.PitfallWatch` the backward hooks."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._roots: list[weakref.ref[torch.Tensor]] = []
        self._repeats = RepeatedWrites()  # the last writes that change nothing made twice

    def wrote(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], line: int | None) -> None:
        """Op ``name`` (in :data:`DATA_EDIT_OPS`) at snippet ``line`` has just changed its
        first argument in place (``args[0]``, or nn.init's ``tensor=`` in ``kwargs``): kept
        where a live graph saved that memory and the snippet's own code made the op."""
        try:
            self._wrote(name, args, kwargs, line)
        except Exception:  # what is read of the write must never fail the snippet's op
            self._rec.observation_failed()

    def _wrote(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], line: int | None) -> None:
        target = args[0] if args else kwargs.get("tensor", kwargs.get("input"))
        if not isinstance(target, torch.Tensor):
            return
        if not self._rec.detail:
            if self._repeats:
                self._repeats.forget()  # writes not seen: none is known to be the last
            return
        repeated = (self._repeats or name in IDEMPOTENT) and self._repeats.repeats(
            name, target, args, kwargs, self._rec.training.total_steps
        )
        memory = self._rec.memory
        key = memory.saved_storage(target)
        if key is None or repeated or identity_write(name, args, kwargs):
            return
        if name in CLAMPS and clamped_nothing(name, target, args, kwargs):
            return
        if _called_by_the_snippet(name):
            memory.note_write(key, line, written_span(name, target, args))

    def before_backward(self, roots: Sequence[Any]) -> None:
        """A backward() from ``roots`` is about to run: what was unpacked before it is not its use."""
        memory = self._rec.memory
        if memory.unseen_uses:
            memory.unseen_uses.clear()
        if memory.unseen_writes or self._rec.detail:
            self._roots = [weakref.ref(r) for r in roots if isinstance(r, torch.Tensor)]

    def after_backward(self, line: int | None) -> list[tuple[Said, list[int]]]:
        """What the backward() at snippet ``line``, which has just returned, used of memory
        changed where autograd could not see it: one report per line that changed it, with
        the trace id of the node that saved what it changed."""
        memory = self._rec.memory
        uses, roots = list(memory.unseen_uses), self._roots
        memory.unseen_uses.clear()
        self._roots = []
        said: dict[int, tuple[Said, list[int]]] = {}
        for use in uses:
            if use.write is not None and use.write.line in said:
                continue  # said already, from another tensor it changed
            if use.write is not None and not overlap(use.write.span, byte_span(use.saved)):
                continue  # bytes of the storage the node did not save (``buf.data[n] = x``)
            by = saved_by(use.saved)
            report = self._report(use, by, line, roots)
            if report is not None and report[0].line is not None and report[0].line not in said:
                said[report[0].line] = report
        return list(said.values())

    def _report(
        self, use: UnseenUse, by: SavedBy | None, line: int | None, roots: list[weakref.ref[torch.Tensor]]
    ) -> tuple[Said, list[int]] | None:
        """The report of ``use`` (saved by ``by``, where known) by the backward() at ``line``
        from ``roots``, with the saving node's trace id; None where no snippet line made the change."""
        rec = self._rec
        name = self._name(use, by)
        node = _node_of(by.node_id, roots, rec.graph.node_id) if by is not None else None
        grads = self._leaf_grads(node, use.saved) if node is not None else None
        saver = (by.node, by.line) if by is not None else None
        tensors = [by.tensor] if by is not None and by.tensor is not None else []
        nodes = [by.node_id] if by is not None else []
        if use.write is None and _same_values(use.saved, use.used):
            return None  # new memory with the same values (w.data = w.data.clone()): nothing changed
        if by is not None and node is not None and _serves_no_gradient(by.node, node, use.saved):
            return None  # saved for the gradient of an operand that needs none (a frozen weight's)
        at = use.write.line if use.write is not None else self._swapped_at(use.used, by)
        if at is None:
            return None  # a change at no line of the snippet
        if use.write is not None:
            ref = saved_source(use.saved)
            source = ref() if ref is not None else use.used
            copyable = source is not None and not (source.is_leaf and source.requires_grad)
            param = self._parameter_on(use.used)
            title, message, fix = changed_in_place(
                name, at, rec.source_lines, saver, line, grads, copyable, param
            )
        else:
            title, message, fix = swapped_memory(name, at, rec.source_lines, saver, line, grads)
        return Said("data-edit-hidden-from-autograd", at, title, message, fix, tensors), nodes

    def _name(self, use: UnseenUse, by: SavedBy | None) -> str | None:
        """The snippet's name of the saved tensor, as it was when saved."""
        names = self._rec.tensors.names
        if by is not None and by.tensor is not None and by.tensor in names:
            return names[by.tensor]
        ref = saved_source(use.saved)
        source = ref() if ref is not None else None
        tid = self._rec.tensors.known(source) if source is not None else None
        return names.get(tid) if tid is not None else None

    def _swapped_at(self, used: torch.Tensor, by: SavedBy | None) -> int | None:
        """The line of the ``used.data = …`` (op ``set_data``) that gave ``used`` the memory it
        has now, since it was saved: the first such change in its versions after that."""
        tensors = self._rec.tensors
        tid = tensors.known(used)
        first = None
        for _ in range(_VERSIONS_WALKED):
            if tid is None or (by is not None and tid == by.tensor):
                break
            if tid in tensors.off_tape:
                tid = tensors.off_tape[tid]
                continue
            change = tensors.changes.get(tid)
            if change is None:
                break
            if change[1] == "Tensor.data":
                first = tensors.lines.get(tid)
            tid = change[0]
        return first

    def _leaf_grads(self, node: Any, saved: torch.Tensor) -> tuple[str, list[float] | None] | None:
        """``(name, values)`` of the leaf whose ``.grad`` the gradient ``node`` computed from
        ``saved`` reached (values when it has at most :data:`_SHOWN_VALUES` elements): where the
        node sends a gradient to one input only, or to two where one is the saved leaf itself
        (``w * x`` saves ``w`` for ``x``'s gradient), and a chain of one-input nodes leads from
        it to a named leaf; else None (the saved tensor may have served any of several)."""
        ref = saved_source(saved)
        source = ref() if ref is not None else None
        for _ in range(4):
            nexts = [n for n, _ in node.next_functions if n is not None]
            if len(nexts) == 2 and source is not None and source.is_leaf:
                nexts = [n for n in nexts if getattr(n, "variable", None) is not source]
            if len(nexts) != 1:
                return None
            node = nexts[0]
            if type(node).__name__ == "AccumulateGrad":
                leaf = node.variable
                name = self._leaf_name(leaf)
                grad = leaf.grad
                if name is None or grad is None:
                    return None
                values = grad.detach().reshape(-1).tolist() if grad.numel() <= _SHOWN_VALUES else None
                return name, values
        return None

    def _parameter_on(self, t: torch.Tensor) -> str | None:
        """The module name of the parameter whose memory ``t`` is on (``model.2.weight`` for
        the ``weight.t()`` F.linear saved), if any."""
        storage = t.untyped_storage().data_ptr()
        for p, name in self._rec.modules.all_params():
            if p.untyped_storage().data_ptr() == storage:
                return name
        return None

    def _leaf_name(self, leaf: torch.Tensor) -> str | None:
        """A leaf's module name (``net.fc1.weight``), else the snippet's name of it or of an
        earlier version of it (a version an in-place change made may have none yet)."""
        name = self._rec.modules.param_name(leaf)[0]
        if name:
            return name
        tensors = self._rec.tensors
        tid = tensors.known(leaf)
        for _ in range(_VERSIONS_WALKED):
            if tid is None or tid in tensors.names:
                break
            change = tensors.changes.get(tid)
            tid = change[0] if change is not None else tensors.off_tape.get(tid)
        return tensors.names.get(tid) if tid is not None else None


def _called_by_the_snippet(name: str) -> bool:
    """Whether the op ``name`` the tape mode is handling was called by the snippet's own code,
    not by a library function such as gradcheck, which perturbs its inputs in place and puts
    them back: the first frame outside gradwalk, outside torch's dispatch to the mode and
    outside the op's own Python wrapper (``nn.init.normal_``) is the snippet's."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_filename == SNIPPET_FILENAME:
            return True
        inside = code.co_filename.startswith(_ENGINE) or code.co_filename == _OVERRIDES
        if not inside and not (code.co_filename.startswith(_TORCH) and code.co_name in (name, "wrapped")):
            return False
        frame = frame.f_back
    return False


def _serves_no_gradient(node_class: str, node: Any, saved: torch.Tensor) -> bool:
    """Whether ``saved``, an operand a product-like node (``node_class``: a multiplication, a
    matrix product, a convolution) kept for backward, serves no gradient this graph computes:
    such a node keeps each operand for the others' gradients only, and no other operand
    requires one (a frozen convolution's input, saved for its weight's gradient)."""
    if node_class not in _PRODUCTS:
        return False
    ref = saved_source(saved)
    source = ref() if ref is not None else None
    if source is None:
        return False
    needing = [n for n, _ in node.next_functions if n is not None]
    its_own = [n for n in needing if n is source.grad_fn or getattr(n, "variable", None) is source]
    return len(its_own) <= 1 and len(needing) == len(its_own)  # (x * x keeps x for x's gradient)


def _same_values(old: torch.Tensor, new: torch.Tensor) -> bool:
    """Whether ``new`` holds the very values of ``old`` (the alias of a kept input's old memory)."""
    if old.shape != new.shape or old.dtype != new.dtype or old.device != new.device:
        return False
    with torch.no_grad():
        return bool(torch.equal(old, new))


def _node_of(node_id: int, roots: list[weakref.ref[torch.Tensor]], id_of: Any) -> Any:
    """The graph node with trace id ``node_id``, found from ``roots`` (None when not found)."""
    queue = [fn for r in roots if (t := r()) is not None and (fn := t.grad_fn) is not None]
    seen: set[Any] = set()
    while queue and len(seen) < _NODES_SEARCHED:
        node = queue.pop()
        if node in seen:
            continue
        seen.add(node)
        if id_of(node) == node_id:
            return node
        queue.extend(n for n, _ in node.next_functions if n is not None)
    return None
