"""Discover the ``grad_fn`` graph an op built, and describe each node once.

# NOTE [Node ids]
A node's id lives in its own ``metadata`` dict, which PyTorch keeps on the C++ node for
as long as the node exists. The recorder therefore holds no reference to any node: a
graph is freed exactly when it would be without gradwalk. Discovery walks
``next_functions`` breadth-first from an op's outputs with a ``seen`` set and stops at
nodes that already have an id, so each op costs only the nodes it created.

# NOTE [Saved tensors packed by other hooks are not read]
Reading what a node saved (``node._saved_self``, a custom Function's ``saved_tensors``)
calls the unpack hook the tensor was packed with. Where that hook is not gradwalk's, it is
the snippet's code: its own ``saved_tensors_hooks`` (which may print or move data),
``save_on_cpu``, or ``torch.utils.checkpoint`` (``use_reentrant=False``), whose unpack hook
run outside backward recomputes the whole checkpointed function. Describing each node of a
checkpointed region ran the function again once per node: its prints came out several
times, and with ``preserve_rng_state=False`` the recomputations drew from the RNG, so
dropout masks and gradients differed from PyTorch's. Such a tensor is therefore left out
of the node's ``saved`` list, unread: its ``_raw_saved_*`` entry names its unpack hook
without calling it. gradwalk's pack hook never saw it either, so its bytes were never
counted (what those hooks keep is theirs to say).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.autograd.graph import get_gradient_edge

from .memory import SavedBy, SavedMemory, saved_source
from .saved_hooks import hooked_by_snippet
from .tensor_facts import dtype_name
from .values import dispatches_to_python, has_storage, shape_list

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["GraphRecorder"]

_KEY = "gradwalk_id"
_STRIDED = torch.strided
# a node class -> (label, attribute, its raw twin) for each of its ``_saved_*`` attributes: the
# twin (``_raw_saved_*``) where the attribute holds tensors, else None. Made once per class:
# building it per node cost a list, a slice and a string for every attribute of every node
_saved_plan_by_type: dict[type, tuple[tuple[str, str, str | None], ...]] = {}


_CUSTOM_NODE = torch.autograd.function.BackwardCFunction
_OUR_UNPACK = SavedMemory._unpack


def _unpacked_elsewhere(node: Any, raw_attr: str) -> bool:
    """Whether reading the saved tensor(s) whose raw entry is ``node.<raw_attr>``
    (``_raw_saved_self``, ``_raw_saved_tensors``) would call an unpack hook not gradwalk's
    (NOTE [Saved tensors packed by other hooks are not read])."""
    try:
        raw = getattr(node, raw_attr)
    except (AttributeError, RuntimeError):  # freed: the value's read raises, and is skipped there
        return False
    for item in raw if isinstance(raw, tuple | list) else (raw,):
        hook = getattr(item, "unpack_hook", None)
        if hook is not None and (hook is not _OUR_UNPACK or hooked_by_snippet(item)):
            return True
    return False


def _custom_saved(node: Any) -> list[tuple[str, Any, None]]:
    """What a custom Function's ``forward`` saved with ``ctx.save_for_backward``, labelled as
    its ``backward`` reads it (its node has no ``_saved_*`` attributes), as ``(label, value,
    None)``, the shape of :func:`_saved_plan`'s entries."""
    if _unpacked_elsewhere(node, "_raw_saved_tensors"):
        return []
    try:
        saved = node.saved_tensors
    except (RuntimeError, AttributeError):
        return []
    return [(f"ctx.saved_tensors[{i}]", t, None) for i, t in enumerate(saved)]


def _saved_plan(node: Any) -> tuple[tuple[str, str, str | None], ...]:
    """``(label, attribute, raw twin or None)`` for each ``_saved_*`` attribute of ``node``'s class."""
    cls = type(node)
    plan = _saved_plan_by_type.get(cls)
    if plan is None:
        if isinstance(node, _CUSTOM_NODE):
            # none (see _custom_saved); and not kept: each run of a snippet makes its custom
            # Functions' node classes anew, and a key here would keep them alive
            return ()
        names = [n for n in dir(node) if n.startswith("_saved_")]
        plan = tuple((n[7:], n, "_raw" + n if hasattr(cls, "_raw" + n) else None) for n in names)
        _saved_plan_by_type[cls] = plan
    return plan


class GraphRecorder:
    """Node ids, node events and the hooks that let the backward walk be observed."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self.count = 0
        self.dropped = 0
        self._cap_said = False  # the limit event for max_nodes went out
        self._live_ids: set[int] = set()

    def node_id(self, node: Any) -> int | None:
        """Return the id of a node recorded in this run, or ``None``."""
        try:
            meta = node.metadata
        except (AttributeError, RuntimeError):
            return None
        nid = meta.get(_KEY)
        return nid if nid is not None and nid in self._live_ids else None

    def discover(self, outputs: list[torch.Tensor], record: bool = True) -> list[tuple[Any, int, Any]]:
        """Give an id to every node reachable from ``outputs`` that has none yet.

        Returns ``(node, id, node.next_functions)`` for each, children first, so that when
        :meth:`emit` sends them every edge points at a node already sent. Past
        ``Limits.max_nodes`` nodes are counted, marked, and left out; with ``record=False``
        (an op past ``Limits.max_ops``) every new node is, so the count of nodes stays exact.
        """
        queue = []
        for t in outputs:
            fn = t.grad_fn
            if fn is not None:
                queue.append(fn)
        return self.discover_nodes(queue, record)

    def discover_nodes(self, queue: list[Any], record: bool = True) -> list[tuple[Any, int, Any]]:
        """:meth:`discover` from the nodes ``queue`` (emptied)."""
        if not queue:
            return []
        new: list[tuple[Any, Any]] = []
        seen: set[Any] = set()
        while queue:
            node = queue.pop()
            if node in seen or _KEY in node.metadata:
                continue
            seen.add(node)
            nexts = node.next_functions
            new.append((node, nexts))
            for nxt, _ in nexts:
                if nxt is not None:
                    queue.append(nxt)
        rec = self._rec
        pending: list[tuple[Any, int, Any]] = []
        for node, nexts in reversed(new):
            if not record or self.count >= rec.limits.max_nodes:
                if record and not self._cap_said:
                    self._cap_said = True
                    rec.emit(
                        dict(
                            type="limit",
                            what="nodes",
                            cap=rec.limits.max_nodes,
                            message=f"the first {rec.limits.max_nodes:,} graph nodes were recorded; "
                            "those after them are counted, not recorded",
                        )
                    )
                self.dropped += 1
                node.metadata[_KEY] = -1
                continue
            nid = self.count
            self.count += 1
            node.metadata[_KEY] = nid
            self._live_ids.add(nid)
            pending.append((node, nid, nexts))
        return pending

    def discover_leaf(self, leaf: torch.Tensor, line: int | None) -> Any:
        """Record the AccumulateGrad node of ``leaf``, a backward root itself
        (``x.backward(g)`` on a leaf runs that node alone), if no op has met it yet; return
        the node, which the caller must hold until the backward call ends (a leaf holds its
        AccumulateGrad weakly: one no graph holds is made anew for each call)."""
        node: Any = get_gradient_edge(leaf).node
        if _KEY not in node.metadata:
            self.emit(self.discover_nodes([node]), None, line, None, ([], [], [], []))
        return node

    def emit(
        self,
        pending: list[tuple[Any, int, Any]],
        op: int | None,
        line: int | None,
        module_path: str | None,
        op_tensors: tuple[list[torch.Tensor], list[int], list[torch.Tensor], list[int]],
    ) -> None:
        """Send a ``node`` event for each discovered node and hook it for the backward walk.

        ``op_tensors`` is ``(inputs, input ids, outputs, output ids)`` of the op that made
        the nodes: autograd hands saved tensors back as aliases, so they are matched to ids
        by storage and shape.
        """
        rec = self._rec
        outputs, out_ids = op_tensors[2], op_tensors[3]
        produced: dict[int, int] = {}
        for t, tid in zip(outputs, out_ids, strict=True):
            fn = t.grad_fn
            if fn is not None:
                produced[id(fn)] = tid
        several_outputs = len(outputs) > 1
        # what a node saved is not read where an op's tensors dispatch to the snippet's
        # Python: reading it runs a `detach` there (NOTE [Tensors that dispatch to Python])
        opaque = any(dispatches_to_python(t) for t in (*op_tensors[0], *outputs))
        live = self._live_ids
        by_ptr: dict[int, list[tuple[Any, int, bool]]] | None = None
        watch = rec.backward.watch if rec.detail else None
        memory = rec.memory
        for node, nid, nexts in pending:
            cls = type(node)
            name = cls.__name__
            edges = []
            for n, nr in nexts:
                if n is None:
                    edges.append({"node": None, "input_nr": nr})
                else:
                    nxt = n.metadata.get(_KEY)
                    edges.append({"node": nxt if nxt is not None and nxt in live else None, "input_nr": nr})
            saved: list[dict[str, Any]] = []
            total = 0
            if name == "AccumulateGrad":
                tensor_id: int | None = rec.tensors.ensure(node.variable)
            elif opaque:
                tensor_id = produced.get(id(node))
            else:
                tensor_id = produced.get(id(node))
                plan = _saved_plan_by_type.get(cls)
                if plan is None:
                    plan = _saved_plan(node)
                # (label, the attribute to read or, for a custom Function, the value itself,
                # the raw twin that tells whose unpack hook reading the attribute calls)
                named = plan if plan or not isinstance(node, _CUSTOM_NODE) else _custom_saved(node)
                for label, attr, raw in named:
                    if raw is not None and _unpacked_elsewhere(node, raw):
                        continue
                    try:
                        value = getattr(node, attr) if isinstance(attr, str) else attr
                    except RuntimeError:
                        continue
                    if value is None:
                        continue
                    if isinstance(value, torch.Tensor):
                        source = saved_source(value)
                        if source is None:
                            saved_id = _saved_input_itself(value, op_tensors)
                            if saved_id is not None:  # NOTE [Inputs the op changed, saved]
                                latest = rec.tensors.known(value)
                                saved_id = saved_id if latest is None else latest
                            if saved_id is None:
                                if by_ptr is None:
                                    by_ptr = _by_storage(op_tensors)
                                saved_id = _match_by_storage(value, by_ptr, label.startswith("result"))
                        else:
                            original = source()
                            saved_id = rec.tensors.known(original) if original is not None else None
                        if memory.recent:
                            memory.note_saver(value, SavedBy(name, nid, label, saved_id, line, module_path))
                        sv = _describe_saved_tensor(label, value, saved_id)
                    else:
                        sv = _describe_saved_other(label, value)
                    total += sv["bytes"]
                    saved.append(sv)
            event = {
                "type": "node",
                "id": nid,
                "name": name,
                "op": op,
                "line": line,
                "module_path": module_path,
                "edges": edges,
                "tensor": tensor_id,
                "saved": saved,
                "saved_bytes": total,
            }
            if (tensor_id is None or several_outputs) and name != "AccumulateGrad":
                event["grad_shapes"] = _grad_shapes(node)
            rec.emit(event)
            if watch is not None:
                watch(node, nid, line)

    def forget(self) -> None:
        """Forget this run's ids, so nodes that outlive the run are not taken for recorded ones."""
        self._live_ids.clear()


def _grad_shapes(node: Any) -> list[list[int]] | None:
    """The shape of each gradient ``node`` receives, from what autograd keeps to check them;
    ``None`` where one has no shape of ints (a nested tensor's)."""
    try:
        shapes = [list(meta.shape) for meta in node._input_metadata]
    except (AttributeError, RuntimeError, TypeError):  # a nested tensor's shape, an older PyTorch
        return None
    # a jagged nested tensor's ragged dimension is a symbol (j1), which no trace can hold
    return shapes if all(type(d) is int for shape in shapes for d in shape) else None


# NOTE [Inputs the op changed, saved]
# A node keeps a saved input as the object itself, and an op may change that input in place
# without handing it back: ``F.batch_norm`` in training updates the ``running_mean`` and
# ``running_var`` it saves (their new versions are extra outputs of the op, running_stats.py).
# The node holds the updated buffer, so its saved entry names the input's latest id, the
# version the op made, not the id it had as the op's input (which showed the statistics
# from before the update).


def _saved_input_itself(
    value: torch.Tensor,
    op_tensors: tuple[list[torch.Tensor], list[int], list[torch.Tensor], list[int]],
) -> int | None:
    """The id of the op input that ``value`` is (a saved input is kept as itself: NOTE [Saved
    inputs are kept as they are] in memory.py), or ``None``. Found by identity before storage:
    ``h * h.detach()`` saves the detached ``d``, which shares ``h``'s storage and shape, and
    storage alone named it ``h``. An in-place op's input is also its output (old and new
    version share one object): left to the storage match, which tells them apart."""
    inputs, in_ids, outputs, _ = op_tensors
    for t, tid in zip(inputs, in_ids, strict=False):
        if t is value:
            return None if any(o is value for o in outputs) else tid
    return None


def _by_storage(
    op_tensors: tuple[list[torch.Tensor], list[int], list[torch.Tensor], list[int]],
) -> dict[int, list[tuple[Any, int, bool]]]:
    """Map each data pointer of an op's strided tensors to ``(look, id, is_output)`` entries,
    ``look`` being the shape and the conjugate bit (``z`` and its lazy ``z.conj()`` share one
    storage and shape)."""
    found: dict[int, list[tuple[Any, int, bool]]] = {}
    inputs, in_ids, outputs, out_ids = op_tensors
    for tensors, ids, is_output in ((inputs, in_ids, False), (outputs, out_ids, True)):
        for t, tid in zip(tensors, ids, strict=False):
            if t.layout is _STRIDED and not t.is_nested and has_storage(t):
                found.setdefault(t.data_ptr(), []).append(((t.shape, t.is_conj()), tid, is_output))
    return found


def _match_by_storage(
    value: torch.Tensor, by_ptr: dict[int, list[tuple[Any, int, bool]]], output: bool
) -> int | None:
    """The id of the op tensor ``value`` aliases (same storage start, shape and conjugate bit), if any.

    An in-place op's input and output share their storage: a saved ``result`` names the
    output (the new version), any other saved tensor the input.
    """
    if value.layout is not _STRIDED or value.is_nested or not has_storage(value):
        return None
    look = (value.shape, value.is_conj())
    found = None
    for candidate_look, candidate, is_output in by_ptr.get(value.data_ptr(), ()):
        if candidate_look == look:
            if is_output == output:
                return candidate
            if found is None:
                found = candidate
    return found


def _describe_saved_tensor(name: str, value: torch.Tensor, tid: int | None) -> dict[str, Any]:
    return {
        "name": name,
        "tensor": tid,
        "shape": shape_list(value),
        "dtype": dtype_name(value.dtype),
        "bytes": value.numel() * value.element_size(),
        "scalar": None,
    }


def _describe_saved_other(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, tuple | list) and value and isinstance(value[0], torch.Tensor):
        nbytes = sum(v.numel() * v.element_size() for v in value if isinstance(v, torch.Tensor))
        return {
            "name": name,
            "tensor": None,
            "shape": None,
            "dtype": None,
            "bytes": nbytes,
            "scalar": f"{len(value)} tensors",
        }
    text = repr(value if "seed" in name else _signed(value))
    return {
        "name": name,
        "tensor": None,
        "shape": None,
        "dtype": None,
        "bytes": 0,
        "scalar": text if len(text) <= 80 else text[:77] + "...",
    }


_TWO_63 = 1 << 63


def _signed(value: Any) -> Any:
    """``value`` with its integers read as the signed 64-bit numbers PyTorch saved.

    A saved negative integer comes back from the node as unsigned: ``x.sum(-1)``'s
    ``_saved_dim`` reads ``(18446744073709551615,)`` and NllLoss's ``ignore_index`` of -100
    reads 18446744073709551516. No int64 reaches 2**63, so such a number is the negative one
    it stands for (a generator's seed, a real unsigned number, is left as it is).
    """
    if type(value) is int and value >= _TWO_63:
        return value - (1 << 64)
    if isinstance(value, tuple | list):
        return type(value)(_signed(v) for v in value)
    return value
