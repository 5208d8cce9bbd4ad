"""Give tensors small stable ids and introduce each one to the trace once.

An id is kept by the table, found by the tensor object's ``id()`` and checked against a weak
reference to that object, so a tensor that has reused a freed one's address is told apart
(NOTE [Ids off the tensor]). An in-place op makes a new version of a tensor: the object gets
a fresh id, so every id in a trace names one value.
"""

from __future__ import annotations

import weakref
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .held_places import held_places
from .source import SNIPPET_FILENAME, bound_name, caller_name, is_a, nameless, snippet_frame, snippet_frames
from .tensor_facts import DEVICE_NAMES, DTYPE_NAMES, autograd_of, device_name, dtype_name, version_of
from .values import has_storage, same_view, shape_list, to_value

if TYPE_CHECKING:
    from torch.autograd.graph import Node

    from .recorder import Recorder

__all__ = ["TensorTable"]

_MAX_LEAVES_SEARCHED = 256  # the newest leaves searched for the one a tensor is read off
_MAX_DATA_READS = 256  # ``.data`` reads remembered before the dead ones are forgotten


class TensorTable:
    """Ids, names and introductions of the tensors one run has touched.

    # NOTE [No names for torch.func wrappers]
    # Inside `grad`, `vmap` or `jacrev` the snippet's code sees functorch's wrapped tensors,
    # bound to the same names as the real ones (`def f(w)` called as `grad(f)(w)`; a model's
    # parameters under `functional_call`). A wrapper stands for a real tensor only while the
    # transform runs, has no storage and no `.grad` of its own, so it takes no name and has
    # no final state: the name, and the final grad, stay the real tensor's.
    """

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        # NOTE [Ids off the tensor]: a tensor's id was an attribute on the object, which
        # torch.save, pickle and deepcopy carried out of the run (a checkpoint a recorded
        # snippet saved loaded with ``vars(t) == {'_gradwalk_id': 0}``) and which the
        # snippet's ``vars(x)`` showed. The table now keeps it: ``id(t)`` -> the trace's id,
        # valid while ``_refs`` of that id still holds ``t`` itself.
        self._by_object: dict[int, int] = {}
        self._refs: dict[int, weakref.ref[torch.Tensor]] = {}
        self.names: dict[int, str] = {}
        self.lines: dict[int, int] = {}
        # a version an in-place op made -> (the id it replaced, the op's API name, its module)
        self.changes: dict[int, tuple[int, str, str | None]] = {}
        # a version made for a change off the tape (NOTE [Changed off the tape]) -> the id it replaced
        self.off_tape: dict[int, int] = {}
        # a tensor whose view an in-place op changed last -> (the op's API name, its line, the
        # view's id before the change)
        self.view_changes: dict[int, tuple[str, int | None, int | None]] = {}
        self._scanned: set[int] = set()
        # ids with a weak name: a function's local that no outer scope bound when they were
        # named (NOTE [Outer names win] in source.py), or a loop variable (NOTE [Tensors held
        # in a plain container]); the module level's name replaces it at the end
        self._local: set[int] = set()
        # leaves that require grad, newest last: whose `.grad` or `.data` an unnamed tensor may be
        self._leaves: list[int] = []
        # each id -> its tensor's version counter when it got the id (NOTE [Changed off the tape])
        self._versions: dict[int, int | None] = {}
        # a tensor named ``w.data`` (and its versions) -> the id of the leaf ``w`` it was read off,
        # or any ``y.data`` read while recorded -> the id of ``y`` (NOTE [Changed through .data])
        self._data_of: dict[int, int] = {}
        # id() of a ``.data`` read not introduced yet -> (it, the tensor it was read off), weakly
        self._data_reads: dict[int, tuple[weakref.ref[torch.Tensor], weakref.ref[torch.Tensor]]] = {}
        self.count = 0

    def known(self, t: torch.Tensor) -> int | None:
        """Return ``t``'s id if it was introduced in this run, else ``None``."""
        tid = self._by_object.get(id(t))
        if tid is not None:
            ref = self._refs.get(tid)
            if ref is not None and ref() is t:
                return tid
        return None

    def ensure(
        self,
        t: torch.Tensor,
        *,
        op: int | None = None,
        line: int | None = None,
        frame: FrameType | None = None,
        fresh: bool = False,
        changing: bool = False,
    ) -> int:
        """Return ``t``'s id, introducing it (one ``tensor`` event) the first time, or its new
        version when code off the tape changed it since (NOTE [Changed off the tape]).

        ``fresh=True`` forces a new id, for the new version an in-place op made;
        ``changing=True``: ``t`` is an input of the op being recorded that the op changed (its
        version moved by the op's own doing, and :meth:`new_version` follows).
        """
        if not fresh:
            tid = self._by_object.get(id(t))
            if tid is not None:
                ref = self._refs.get(tid)
                if ref is not None and ref() is t:
                    if not changing and self._moved(tid, t):
                        # NOTE [Changed off the tape]; named as its first version was (`w`
                        # after `opt.step()`, not `t4`)
                        new = self.new_version(t, op=None, line=line, by=None, path=None)
                        if frame is not None:
                            self._scan(new, t, frame)
                        return new
                    if frame is not None and tid not in self._scanned:
                        self._scan(tid, t, frame)
                    return tid
        return self.introduce(t, op=op, line=line, frame=frame)

    def moved(self, t: torch.Tensor) -> bool:
        """Whether ``t``, introduced already, was changed where its version counter saw it since
        it got its id (its next :meth:`ensure` gives it a new version)."""
        tid = self.known(t)
        return tid is not None and self._moved(tid, t)

    def _moved(self, tid: int, t: torch.Tensor) -> bool:
        return self._versions.get(tid) != version_of(t)

    def before_change(self, t: torch.Tensor) -> None:
        """Meet ``t`` before an op changes it in place: first seen there (``w.data`` in
        ``w.data -= 0.1 * w.grad``), or changed off the tape since it was last met (NOTE
        [Changed off the tape]). Met after the op, the id it went in with held the values the
        op made, and the op's row showed them going in and coming out."""
        try:
            if self.known(t) is not None:
                self.ensure(t)  # its new version, if code off the tape changed it
                return
            frame, line, _top, in_setup = snippet_frames()
            if not in_setup:
                self.ensure(t, line=line, frame=frame)
        except Exception:
            self._rec.observation_failed()

    def new_version(
        self,
        t: torch.Tensor,
        *,
        op: int | None,
        line: int | None,
        by: str | None,
        path: str | None,
        of: torch.Tensor | None = None,
    ) -> int:
        """Give ``t``, just changed in place by op ``by`` (its API name; in module ``path``;
        ``op`` None: not an op of the tape; ``by`` None: changed
        by code the tape did not see), a new id; remember the one it replaces. ``of``: the
        tensor ``t`` takes the place of, when that is another object (a buffer a module's
        conversion replaced).

        # NOTE [Changed off the tape]
        # A tensor's values are read when it gets its id. Code the tape does not record can
        # change a tensor in place after that: an optimizer's step (its ops are not the
        # snippet's), an in-place op on a view (``x[0:2].add_(1)`` changes ``x``, which
        # shares the view's version counter), backward adding into a ``.grad``, a step
        # recorded metrics-only. The next op that read ``model.weight`` or ``x`` showed the
        # values from before. The version counter tells: a tensor whose version moved since
        # its id was given gets a new version when it is next met (:meth:`ensure`).
        """
        prior = self.known(t if of is None else of)
        tid = self.introduce(t, op=op, line=line, version=True, replaces=prior)
        if prior is not None:
            if by is not None:
                self.changes[tid] = (prior, by, path)
            else:
                self.off_tape[tid] = prior
            if prior in self._data_of:
                self._data_of[tid] = self._data_of[prior]
        base = t._base
        if base is not None and by is not None:  # a view: its base changed too, under the base's own id
            base_id = self.known(base)
            if base_id is not None:
                self.view_changes[base_id] = (by, line, prior)
        return tid

    def _scan(self, tid: int, t: torch.Tensor, frame: FrameType) -> None:
        # A tensor an op made is named the first time the snippet uses it, by then bound
        # to its variable (``w = torch.randn(...)`` runs the op before the assignment).
        self._scanned.add(tid)
        if tid not in self.names:
            name = self._name_in(tid, t, frame)
            if name is None and self._leaves:
                facts = autograd_of(t)
                name = self._read_off_leaf(t, facts[0]) if facts else None
            if name is not None:
                self.names[tid] = name
                self._rec.emit({"type": "tensor_named", "id": tid, "name": name, "param_name": None})
                if tid not in self._local:
                    self._name_earlier_versions(tid, name)

    def _name_earlier_versions(self, tid: int, name: str) -> None:
        """Give ``name`` to the versions before ``tid`` (in-place changes of one tensor) that
        carry only a function's local name: ``b = a.clone(); bump(b)``, whose ``t.add_(1)``
        met the clone first as ``bump``'s ``t``, read ``clone a → t``, ``add_ t → b``."""
        prior = self.changes.get(tid)
        while prior is not None and prior[0] in self._local:
            earlier = prior[0]
            self._local.discard(earlier)
            self.names[earlier] = name
            self._rec.emit({"type": "tensor_named", "id": earlier, "name": name, "param_name": None})
            prior = self.changes.get(earlier)

    def _name_in(self, tid: int, t: torch.Tensor, frame: FrameType) -> str | None:
        """The name ``frame`` knows ``t`` by; for a leaf that is a function's local, the name an
        outer scope binds it to instead (NOTE [Outer names win] in source.py). ``None`` for a
        local an outer scope binds to another tensor (NOTE [A local name that hides another
        tensor]) and for a torch.func wrapper (NOTE [No names for torch.func wrappers])."""
        if not has_storage(t):
            return None
        name, local = bound_name(t, frame)
        if not local:
            if name is not None and name in self._rec.modules.loop_names:
                self._local.add(tid)  # bound to each item in turn: weak
            return name
        facts = autograd_of(t)
        leaf = facts is not None and facts[1]
        outer = caller_name(t, name, frame, leaf)
        if outer is not None:
            return outer
        if not leaf and name is not None and nameless(t, name, frame):
            return None
        self._local.add(tid)
        return name

    def data_read(self, source: torch.Tensor, alias: torch.Tensor, reader: FrameType | None) -> None:
        """The snippet read ``alias = source.data`` (in the code of frame ``reader``): once
        ``alias`` has an id, an op that changes it in place makes a new version of ``source``
        too (NOTE [Changed through .data])."""
        try:
            if not isinstance(alias, torch.Tensor) or not has_storage(alias):
                return
            source_id = self.known(source)
            if source_id is None:
                # the snippet's own read of a tensor the tape has not met (``w.grad.data.zero_()``
                # before any op used ``w.grad``): met here, so the change links to it
                if reader is None or reader.f_code.co_filename != SNIPPET_FILENAME or not has_storage(source):
                    return
                source_id = self.ensure(source, line=reader.f_lineno, frame=reader)
            if source_id not in self._scanned:  # a use: named by then (``y`` in ``h = y.data``)
                frame = snippet_frame()[0]
                if frame is not None:
                    self._scan(source_id, source, frame)
            if len(self._data_reads) >= _MAX_DATA_READS:  # reads never used by an op: forget the dead
                self._data_reads = {k: v for k, v in self._data_reads.items() if v[0]() is not None}
            self._data_reads[id(alias)] = (weakref.ref(alias), weakref.ref(source))
        except Exception:
            self._rec.observation_failed()

    def _data_read_off(self, tid: int, t: torch.Tensor) -> int | None:
        """When ``t`` (just given id ``tid``) is a ``.data`` read of a known tensor, link it to
        that tensor and return the tensor's id."""
        read = self._data_reads.pop(id(t), None)
        if read is None or read[0]() is not t:
            return None
        source = read[1]()
        source_id = self.known(source) if source is not None else None
        if source_id is not None:
            self._data_of[tid] = source_id
        return source_id

    def data_owner(self, tid: int, t: torch.Tensor) -> torch.Tensor | None:
        """The tensor ``w`` whose memory ``t`` (id ``tid``), read off as ``w.data``, still is; else None.

        # NOTE [Changed through .data]
        # ``w.data`` is another tensor on ``w``'s memory, with a version counter of its own,
        # so ``w.data -= 0.1 * w.grad`` (``w.data.sub_(…)``, ``w.data.copy_(…)``) changes
        # ``w`` with no op on ``w`` and no bump of ``w``'s version: the next step's forward
        # read the first step's values of ``w``. The op that changes ``w.data`` in place
        # makes a new version of ``w`` too (one more output), as ``w -= …`` under no_grad
        # does. ``w.data = other`` swaps ``w``'s memory: the tape mode records it as an op,
        # ``set_data`` (engine/attributes.py). ``w.data`` is known as such when no variable
        # holds it (a leaf's, found by its memory: NOTE [Tensors read off a leaf]) and when
        # the tape mode saw the read (``h = y.data``, of any tensor the tape knows, a
        # non-leaf's too): ``h.add_(1)`` changed ``y``, and ``y * 2`` after it read the old ``y``.
        # A tensor the tape has not met is met at the snippet's own read of its ``.data``
        # (``w.grad.data.zero_()`` right after backward), so the change links to it as well.
        """
        leaf_id = self._data_of.get(tid)
        leaf = self.tensor(leaf_id) if leaf_id is not None else None
        return leaf if leaf is not None and same_view(leaf, t) else None

    def _read_off_leaf(
        self, t: torch.Tensor, node: Node | None, data: bool = False, tid: int | None = None
    ) -> str | None:
        """``w.grad``, or with ``data`` ``w.data``, when ``t`` (id ``tid``) is that of a named
        leaf ``w`` (NOTE [Tensors read off a leaf]); else None.

        # NOTE [Tensors read off a leaf]
        # No variable holds ``w.grad`` or ``w.data`` in ``w.data -= 0.1 * w.grad``, so both read
        # as ``t5 − 0.1 * t3``, and after ``w.grad.zero_()`` the next step's gradient read
        # ``zero(t3)``. A tensor no variable holds, with no grad_fn, that requires no grad, is
        # named for the leaf whose ``.grad`` it is (also a version an in-place op made of it:
        # the zeroed ``.grad`` is still ``w.grad``), or, when no op made it or it is such a
        # version (``data``), for the leaf (or the leaf's ``.grad``) whose memory, shape and
        # strides it shares: what ``.data`` hands out, ``w.data`` (``w.grad.data``), as
        # ``w.detach()`` does too, but that is an op of its own, which reads ``detach(w)``.
        # Only the newest leaves are searched, so a loop that makes a leaf per step does not
        # slow every op.
        """
        if node is not None or t.requires_grad or not self._leaves or not has_storage(t):
            return None
        live = []
        for tid_of_leaf in self._leaves[-_MAX_LEAVES_SEARCHED:]:
            leaf = self.tensor(tid_of_leaf)
            if leaf is None:
                continue
            live.append(tid_of_leaf)
            # or its newest version's: a parameter an init changed in place before its module
            # was named (``nn.init.xavier_uniform_(model[0].weight)``) is named under that version
            latest = self.known(leaf)
            name = self.names.get(tid_of_leaf) or (self.names.get(latest) if latest is not None else None)
            if name is None:
                continue
            # a "leaf" that has since got a grad_fn (what a custom Function returns of its
            # input, first met as PyTorch's view_as of it) has no .grad, and reading it warns
            grad = leaf.grad if leaf.is_leaf or leaf.retains_grad else None
            if grad is t:
                return f"{name}.grad"
            if data:
                if same_view(leaf, t):
                    if tid is not None:
                        self._data_of[tid] = tid_of_leaf
                    return f"{name}.data"
                if grad is not None and same_view(grad, t):
                    return f"{name}.grad.data"
        if len(live) < len(self._leaves):
            self._leaves = live  # forget the leaves that are gone
        return None

    def introduce(
        self,
        t: torch.Tensor,
        *,
        op: int | None = None,
        line: int | None = None,
        frame: FrameType | None = None,
        version: bool = False,
        replaces: int | None = None,
    ) -> int:
        """Give ``t`` a new id and send its ``tensor`` event; return the id. ``version``: ``t``
        is a new version an in-place op made of a tensor already introduced (the id it
        ``replaces``, when it is known)."""
        rec = self._rec
        cls = type(t)
        is_param = cls is not torch.Tensor and issubclass(cls, torch.nn.Parameter)
        # before ``t`` has its id: naming the parameters of a module torch.func had swapped
        # out (NOTE [Parameters under torch.func] in modules.py) must not rename ``t`` yet
        name, param_name = rec.modules.param_name(t) if is_param else (rec.modules.buffer_name(t), None)
        tid = self.count
        self.count = tid + 1
        self._by_object[id(t)] = tid
        self._refs[tid] = weakref.ref(t)
        self._versions[tid] = version_of(t)
        if line is not None:
            self.lines[tid] = line
        node, is_leaf = autograd_of(t) or (None, True)
        data_of = self._data_read_off(tid, t) if self._data_reads else None
        if name is None and op is None and frame is not None:
            self._scanned.add(tid)
            name = self._name_in(tid, t, frame) or self._read_off_leaf(t, node, data=True, tid=tid)
        elif name is None and version:
            name = self._read_off_leaf(t, node, data=True, tid=tid)  # `w.grad.zero_()` makes a w.grad
        if name is None and data_of is not None and data_of in self.names:
            name = f"{self.names[data_of]}.data"  # `y.data.add_(1)`: no variable holds it
        if name is not None:
            self.names[tid] = name
        if is_leaf and t.requires_grad and not version:  # a version's object is listed already
            self._leaves.append(tid)
        dtype = t.dtype
        device = t.device
        shape = shape_list(t)
        rec.emit(
            {
                "type": "tensor",
                "id": tid,
                "name": name,
                "param_name": param_name,
                "shape": shape,
                "dtype": DTYPE_NAMES.get(dtype) or dtype_name(dtype),
                "device": DEVICE_NAMES.get(device) or device_name(device),
                "requires_grad": t.requires_grad,
                "is_leaf": is_leaf,
                "is_param": is_param,
                "grad_fn": rec.graph.node_id(node) if node is not None else None,
                "op": op,
                "line": line,
                "value": to_value(t, rec.limits.max_value_elements) if rec.values else None,
                **({"version_of": replaces} if replaces is not None else {}),
            }
        )
        return tid

    def name_from(self, t: torch.Tensor, frame: FrameType | None) -> None:
        """Name ``t`` from a variable in ``frame`` if it has no name yet."""
        tid = self.known(t)
        if tid is None or tid in self.names or frame is None:
            return
        name = self._name_in(tid, t, frame)
        if name is not None:
            self.names[tid] = name
            self._rec.emit({"type": "tensor_named", "id": tid, "name": name, "param_name": None})

    def rename(self, t: torch.Tensor, name: str, param_name: str | None = None) -> None:
        """Give an already introduced tensor a (better) name, e.g. once its module is known."""
        tid = self.known(t)
        if tid is None or self.names.get(tid) == name or not has_storage(t):
            return
        self._local.discard(tid)
        self.names[tid] = name
        self._rec.emit(dict(type="tensor_named", id=tid, name=name, param_name=param_name))

    def name_all(self, scope: dict[str, object]) -> None:
        """Name every tensor bound in ``scope`` (run at the end of a snippet, with its module
        level) that has no name yet, or only a function's local one.

        # NOTE [Tensors held in a plain container]
        # A tensor the module level holds only in a plain list, tuple or dict
        # (``params = [torch.randn(3, requires_grad=True) for _ in range(2)]``) is named by
        # its place, ``params[0]`` or ``cfg['w']``, as a module held so is
        # (``_holder_in`` in modules.py): unnamed, a leaf had no final state, and the trace
        # did not show its ``.grad``. A variable's own name comes first, then the place, then
        # a loop variable: ``for W in Ws`` binds ``W`` to each tensor in turn, and all three
        # of ``Ws`` were shown as ``W`` (``W.grad`` three times), now ``Ws[0]`` to ``Ws[2]``.
        # Containers in containers are searched too, to a depth of three
        # (``params[1][0]``, ``cfg['enc'][0]``): the two leaves of ``[[a], [b]]`` were both
        # ``p``, after the loop that met them, and the trace's final grads kept one.
        """
        items = [(k, v) for k, v in list(scope.items()) if not k.startswith("_")]
        loops = self._rec.modules.loop_names
        held: list[tuple[str, object]] = []
        for key, value in items:
            held.extend(held_places(key, value))
        own = [(k, v) for k, v in items if k not in loops]
        for key, value in [*own, *held, *((k, v) for k, v in items if k in loops)]:
            if is_a(value, torch.Tensor):
                tid = self.known(value)
                if tid is not None and (tid not in self.names or tid in self._local) and has_storage(value):
                    self._local.discard(tid)
                    self.names[tid] = key
                    self._rec.emit(dict(type="tensor_named", id=tid, name=key, param_name=None))
                    self._name_earlier_versions(tid, key)
        self._unname_hidden_locals(scope)

    def _unname_hidden_locals(self, scope: dict[str, object]) -> None:
        """Take back the weak names the module level came to bind to other tensors after
        their functions ran (``def f(t): x = t * 2`` before ``x = y * 3``: NOTE [A local name
        that hides another tensor] in source.py). A leaf keeps its name, with its ``.grad``."""
        leaves, loops = set(self._leaves), self._rec.modules.loop_names  # (a loop variable's name stays)
        for tid in list(self._local):
            name = self.names.get(tid)
            value = scope.get(name) if name is not None and name not in loops else None
            if tid in leaves or not is_a(value, torch.Tensor) or self.known(value) == tid:
                continue
            self._local.discard(tid)
            del self.names[tid]
            self._rec.emit(dict(type="tensor_named", id=tid, name=None, param_name=None))

    def final_tensors(self, most: int = 200) -> list[tuple[int, str]]:
        """Return ``(id, name)`` of the named tensors still alive whose ``.grad`` the run may
        have kept: leaves that require grad, and tensors that called ``retain_grad()`` (an
        intermediate's ``h.grad``, which the trace otherwise never held).

        Of several versions of one tensor object only the newest is listed; a torch.func
        wrapper never is (NOTE [No names for torch.func wrappers]).
        """
        found: list[tuple[int, str]] = []
        seen: set[int] = set()
        for tid in sorted(self.names, reverse=True):
            t = self.tensor(tid)
            if t is None or id(t) in seen or not t.requires_grad or not has_storage(t):
                continue
            facts = autograd_of(t)
            if facts is None or not (facts[1] or t.retains_grad):  # PyTorch will not say, or no .grad
                continue
            seen.add(id(t))
            found.append((tid, self.names[tid]))
            if len(found) >= most:
                break
        return sorted(found)

    def tensor(self, tid: int) -> torch.Tensor | None:
        """Return the live tensor with id ``tid``, or ``None`` once it is gone."""
        ref = self._refs.get(tid)
        return ref() if ref is not None else None

    def forget_objects(self) -> None:
        """Let go of which object had which id (end of recording): a later run's tensors may
        reuse these addresses."""
        self._by_object.clear()
