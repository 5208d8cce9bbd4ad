"""Discover the ``grad_fn`` graph an op built, and describe each node once.

# NOTE [Node ids]
A node's id lives in its own ``metadata`` dict, which PyTorch keeps on the C++ node for
as long as the node exists. The recorder therefore holds no reference to any node: a
graph is freed exactly when it would be without gradwalk. Discovery walks
``next_functions`` breadth-first from an op's outputs with a ``seen`` set and stops at
nodes that already have an id, so each op costs only the nodes it created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["GraphRecorder"]

_KEY = "gradwalk_id"
_saved_attrs_by_type: dict[type, list[str]] = {}


def _saved_attrs(node: Any) -> list[str]:
    cls = type(node)
    names = _saved_attrs_by_type.get(cls)
    if names is None:
        names = [n for n in dir(node) if n.startswith("_saved_")]
        _saved_attrs_by_type[cls] = names
    return names


class GraphRecorder:
    """Node ids, node events and the hooks that let the backward walk be observed."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self.count = 0
        self.dropped = 0
        self._live_ids: set[int] = set()

    def node_id(self, node: Any) -> int | None:
        """Return the id of a node recorded in this run, or ``None``."""
        try:
            meta = node.metadata
        except (AttributeError, RuntimeError):
            return None
        nid = meta.get(_KEY)
        return nid if nid is not None and nid in self._live_ids else None

    def discover(self, outputs: list[torch.Tensor]) -> list[tuple[Any, int]]:
        """Give an id to every node reachable from ``outputs`` that has none yet.

        Returns ``(node, id)`` pairs children first, so that when :meth:`emit` sends them
        every edge points at a node already sent. Past ``Limits.max_nodes`` nodes are
        counted, marked, and left out.
        """
        roots = [t.grad_fn for t in outputs if t.grad_fn is not None]
        if not roots:
            return []
        new: list[Any] = []
        seen: set[Any] = set()
        queue = list(roots)
        while queue:
            node = queue.pop()
            if node in seen or _KEY in node.metadata:  # type: ignore[operator]
                continue
            seen.add(node)
            new.append(node)
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    queue.append(nxt)
        rec = self._rec
        pending: list[tuple[Any, int]] = []
        for node in reversed(new):
            if self.count >= rec.limits.max_nodes:
                if self.dropped == 0:
                    rec.emit(
                        dict(
                            type="limit",
                            what="nodes",
                            cap=rec.limits.max_nodes,
                            message=f"graph nodes past {rec.limits.max_nodes} are counted, not recorded",
                        )
                    )
                self.dropped += 1
                node.metadata[_KEY] = -1
                continue
            nid = self.count
            self.count += 1
            node.metadata[_KEY] = nid
            self._live_ids.add(nid)
            pending.append((node, nid))
        return pending

    def emit(
        self,
        pending: list[tuple[Any, int]],
        op: int | None,
        line: int | None,
        module_path: str | None,
        op_tensors: list[tuple[torch.Tensor, int]],
        outputs: list[torch.Tensor],
        out_ids: list[int],
    ) -> None:
        """Send a ``node`` event for each discovered node and hook it for the backward walk.

        ``op_tensors`` are the op's ``(tensor, id)`` pairs: autograd hands saved tensors back
        as aliases, so they are matched to ids by storage and shape.
        """
        rec = self._rec
        produced = {
            id(t.grad_fn): tid for t, tid in zip(outputs, out_ids, strict=True) if t.grad_fn is not None
        }
        for node, nid in pending:
            self._emit_node(node, nid, op, line, module_path, op_tensors, produced.get(id(node)))
            if rec.detail:
                rec.backward.watch(node, nid)

    def _emit_node(
        self,
        node: Any,
        nid: int,
        op: int | None,
        line: int | None,
        module_path: str | None,
        op_tensors: list[tuple[torch.Tensor, int]],
        tensor_id: int | None,
    ) -> None:
        rec = self._rec
        name = type(node).__name__
        edges = [
            {"node": self.node_id(n) if n is not None else None, "input_nr": nr}
            for n, nr in node.next_functions
        ]
        saved: list[dict[str, Any]] = []
        total = 0
        if name == "AccumulateGrad":
            tensor_id = rec.tensors.ensure(node.variable)
        else:
            for attr in _saved_attrs(node):
                try:
                    value = getattr(node, attr)
                except RuntimeError:
                    continue
                sv = self._describe_saved(attr[7:], value, op_tensors)
                if sv is not None:
                    total += sv["bytes"]
                    saved.append(sv)
        rec.emit(
            {
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
        )

    def _describe_saved(
        self, name: str, value: Any, op_tensors: list[tuple[torch.Tensor, int]]
    ) -> dict[str, Any] | None:
        if isinstance(value, torch.Tensor):
            tid = self._rec.tensors.known(value)
            if tid is None and value.layout == torch.strided:
                ptr, shape = value.data_ptr(), value.shape
                tid = next(
                    (
                        i
                        for t, i in op_tensors
                        if t.layout == torch.strided and t.data_ptr() == ptr and t.shape == shape
                    ),
                    None,
                )
            nbytes = value.numel() * value.element_size()
            return dict(
                name=name,
                tensor=tid,
                shape=list(value.shape),
                dtype=str(value.dtype).removeprefix("torch."),
                bytes=nbytes,
                scalar=None,
            )
        if value is None:
            return None
        if isinstance(value, tuple | list) and value and isinstance(value[0], torch.Tensor):
            nbytes = sum(v.numel() * v.element_size() for v in value if isinstance(v, torch.Tensor))
            return dict(
                name=name, tensor=None, shape=None, dtype=None, bytes=nbytes, scalar=f"{len(value)} tensors"
            )
        text = repr(value)
        return dict(
            name=name,
            tensor=None,
            shape=None,
            dtype=None,
            bytes=0,
            scalar=text if len(text) <= 80 else text[:77] + "...",
        )

    def forget(self) -> None:
        """Forget this run's ids, so nodes that outlive the run are not taken for recorded ones."""
        self._live_ids.clear()
