"""Inputs shuffled while their labels keep their order (inputs-shuffled-apart-from-labels).

``perm = torch.randperm(len(X))`` then ``X = X[perm]``, with ``y`` left as it was: row i of
``X`` is now sample ``perm[i]``, but its target is still ``y[i]``, another sample's label.
The same goes for ``X = X[torch.randperm(len(X))]``, for a mini-batch taken as
``X[perm[i:i + bs]]`` beside ``y[i:i + bs]``, and for ``X`` and ``y`` each indexed by a
permutation of its own. Nothing raises: the model cannot tell which input goes with which
label, so it learns only what the labels are like overall (how often each class occurs, the
mean target), and the loss settles where always predicting that would put it.

The rule. A shuffle is an index along the rows: ``X[I]`` (or ``X[I, :]``) whose index (a
tensor or a NumPy array) is a permutation of all of ``X``'s rows, or a slice of one (or a
run of a list of indices shuffled in place: ``X[order[i:i + bs]]`` after
``random.shuffle(order)``). The run follows which row of the original each shuffled row
holds (through shuffles of a shuffle and through slices of them: a batch ``Xs[i:i + bs]``).
A loss (``cross_entropy``, ``mse_loss`` and the like) computed with gradients on, whose
prediction requires grad and whose target is a tensor ``y`` (or a slice of one, or a shuffle
of one) with as many rows as the latest shuffled ``X`` still alive (or made since the last
backward(), then copied: ``X[perm].float() / 255``), which does not require grad, is a
suspect when that permutation indexed no other tensor of as many rows as ``X`` (``y[perm]``,
maybe made a ``.float()`` copy before the loss, goes along) and ``y`` existed at the shuffle
(shuffle_labels.py: a target made after from the shuffled rows, a teacher's outputs or the
next tokens of a shuffled sequence, is in their order already). A one-hot target
``F.one_hot(y[i:i + bs])`` is matched by value to its run of such labels. At the next
backward() (by when a mixup's ``y[perm]`` of the same step has been computed) it is told at
the shuffle's line, if the targets given differ from the labels of the samples now in their
places in at least one row; the message counts the rows that kept their label. The in-place
shuffles of Python's and NumPy's generators are judged in in_place_shuffles.py.

Silent: both indexed by the same permutation (``X, y = X[perm], y[perm]``, on one line or
two, or a batch ``X[idx], y[idx]``); two permutations equal in value (a generator reseeded
in between); a shuffle of unlabeled data (an autoencoder's target is the shuffled input
itself, a GAN's targets are made per batch); a random subset whose rows go nowhere near a
labeled loss; a shuffle of activations that require grad (a contrastive loss's negatives);
a ``DataLoader(…, shuffle=True)`` (its sampler's indexing is not the snippet's); and labels
all equal (nothing can be misplaced).
"""

from __future__ import annotations

import ast
import contextlib
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch

from ..source import find_name, quoted_code
from .in_place_shuffles import InPlaceShuffles, is_permutation, kept_said
from .kinds import Said
from .shuffle_labels import held_beside, held_then, label_name, one_hot_run, path_name

__all__ = ["PREDICTION_LOSS_OPS", "SHUFFLE_OPS", "Shuffles"]

# the losses that read predictions against targets (activation_twice.py reads them too)
PREDICTION_LOSS_OPS = frozenset(
    {
        "cross_entropy",
        "nll_loss",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
    }
)
SHUFFLE_OPS = frozenset({"__getitem__"}) | PREDICTION_LOSS_OPS
_MOST_ORDERS = 64  # shuffled tensors followed at once (a batch each, while recorded in full)
_LONGEST = 1_000_000  # rows checked to be a permutation, at most


@dataclass
class _Order:
    """A tensor whose rows are rows of ``root``: row i is ``root[rows[i]]``."""

    result: weakref.ref[torch.Tensor]
    root: torch.Tensor  # held: `X = X[perm]` leaves nothing else holding the unshuffled X
    rows: torch.Tensor  # int64, on the CPU
    family: int  # the permutation it was indexed by (one number per permutation met)
    line: int | None
    name: str | None  # the snippet's name of what was indexed (X in X[perm])
    backwards: int  # backward() calls made before it


@dataclass
class _Apart:
    """A loss whose target kept an order that its inputs' shuffle did not give it."""

    order: _Order
    label_name: str
    target_name: str | None
    other: _Order | None  # the target's own shuffle, by another permutation
    kept: int
    rows: int
    stayed: int
    loss_line: int | None


class Shuffles:
    """The shuffled tensors of a run, and the losses whose targets their shuffle left behind."""

    def __init__(self, source_lines: Sequence[str]) -> None:
        self._source = source_lines
        # id(index base) -> (a weak reference to it, its family number; 0: not a permutation)
        self._bases: dict[int, tuple[weakref.ref[Any], int]] = {}
        self._orders: dict[int, _Order] = {}  # by id() of the shuffled tensor
        # family -> id() of each root it indexed (held by the orders) -> that root's rows
        self._went: dict[int, dict[int, int]] = {}
        # family -> what the shuffling scope held of as many rows when it was first met (the
        # labels a loss could leave behind); a target made later came from the shuffled rows
        self._alive: dict[int, list[Any]] = {}
        self._pending: list[_Apart] = []
        self._told: set[tuple[int | None, int | None]] = set()  # (shuffle line, loss line)
        self._families = 0
        self._backwards = 0
        self.in_place = InPlaceShuffles(source_lines)  # np.random.shuffle(X), random.shuffle(xs)

    def saw(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: Any,
        line: int | None,
        frame: FrameType | None,
    ) -> None:
        """Look at a watched op: an index (a shuffle?) or a loss (its target left behind?)."""
        if name == "__getitem__":
            if len(args) > 1 and isinstance(result, torch.Tensor):
                self._index(args[0], args[1], result, line, frame)
        elif self._orders and torch.is_grad_enabled():
            target = args[1] if len(args) > 1 else kwargs.get("target")
            if isinstance(args[0] if args else None, torch.Tensor) and isinstance(target, torch.Tensor):
                with torch.no_grad():
                    self._loss(args[0], target, line, frame)

    def _index(
        self, source: Any, index: Any, result: torch.Tensor, line: int | None, frame: FrameType | None
    ) -> None:
        if isinstance(index, tuple):  # X[perm, :]
            if not index or not all(isinstance(part, slice) and part == slice(None) for part in index[1:]):
                return
            index = index[0]
        if not isinstance(source, torch.Tensor) or source.dim() == 0:
            return
        if isinstance(index, torch.Tensor):
            if index.dim() != 1 or index.dtype not in (torch.int64, torch.int32):
                return
            base = index._base if index._base is not None else index
        elif isinstance(index, list):
            self._listed(source, index, result, line, frame)
            return
        else:
            numpy = sys.modules.get("numpy")
            if (
                numpy is None
                or not isinstance(index, numpy.ndarray)
                or index.ndim != 1
                or index.dtype.kind not in "iu"
            ):
                return
            base = index.base if isinstance(index.base, numpy.ndarray) else index
        family = self._family(base, len(source))
        if not family:
            return
        with torch.no_grad():
            self._follow(source, torch.as_tensor(index).to("cpu", torch.int64), family, result, line, frame)

    def _listed(
        self,
        source: torch.Tensor,
        index: list[Any],
        result: torch.Tensor,
        line: int | None,
        frame: FrameType | None,
    ) -> None:
        """Follow ``source[index]`` where ``index`` is a run of a list of indices the snippet
        shuffled in place (``X[order[i:i + bs]]`` after ``random.shuffle(order)``)."""
        for held in self.in_place.orders:
            order = held[0]
            if len(order) != len(source) or not index or not isinstance(index[0], int):
                continue
            try:
                start = order.index(index[0])
            except ValueError:
                continue
            if order[start : start + len(index)] != index:
                continue
            if not held[1]:
                self._families += 1
                held[1] = self._families
            with torch.no_grad():
                self._follow(source, torch.tensor(index, dtype=torch.int64), held[1], result, line, frame)
            return

    def _follow(
        self,
        source: torch.Tensor,
        rows: torch.Tensor,
        family: int,
        result: torch.Tensor,
        line: int | None,
        frame: FrameType | None,
    ) -> None:
        """Note ``result``, rows ``rows`` of ``source``, indexed by permutation ``family``
        (under no_grad)."""
        root, before, _ = self._resolve(source)
        if before is not None:
            rows = before[rows]
        self._went.setdefault(family, {})[id(root)] = len(root)
        if family not in self._alive and frame is not None:
            self._alive[family] = held_beside(root, source, frame)
        if len(self._orders) >= _MOST_ORDERS:
            self._prune()
        name = find_name(source, frame) or path_name(source, frame)
        self._orders[id(result)] = _Order(
            weakref.ref(result), root, rows, family, line, name, self._backwards
        )

    def _family(self, base: Any, rows: int) -> int:
        """The family number of index ``base`` if it is a permutation of ``rows`` rows, else 0.
        Only an index as long as the rows is remembered (a batch's ``X[idx]`` each step is
        not: its length says it is no permutation of them)."""
        if not (1 < len(base) == rows <= _LONGEST and getattr(base, "ndim", 0) == 1):
            return 0
        known = self._bases.get(id(base))
        if known is not None and known[0]() is base:
            return known[1]
        family = 0
        with torch.no_grad():
            values = torch.as_tensor(base).to("cpu", torch.int64)
        if is_permutation(values):
            self._families += 1
            family = self._families
        with contextlib.suppress(TypeError):  # (no weak reference to it: looked at again next time)
            self._bases[id(base)] = (weakref.ref(base), family)
        return family

    def _prune(self) -> None:
        self._orders = {k: o for k, o in self._orders.items() if o.result() is not None}
        while len(self._orders) >= _MOST_ORDERS:
            del self._orders[next(iter(self._orders))]
        self._bases = {k: b for k, b in self._bases.items() if b[0]() is not None}
        families = {o.family for o in self._orders.values()}
        self._went = {f: roots for f, roots in self._went.items() if f in families}
        self._alive = {f: held for f, held in self._alive.items() if f in families}

    def _resolve(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None, _Order | None]:
        """``(root, rows, order)``: the tensor ``t``'s rows are rows of, which rows (None: all
        of them, in order) and the shuffle that made them, if one did."""
        order = self._orders.get(id(t))
        if order is not None and order.result() is t:
            return order.root, order.rows, order
        base = t._base
        if base is None or t.dim() == 0:
            return t, None, None
        start = _slice_start(t, base)
        if start is None:
            return t, None, None
        base_root, base_rows, order = self._resolve(base)
        rows = torch.arange(start, start + len(t))
        return base_root, rows if base_rows is None else base_rows[rows], order

    def _loss(
        self, pred: torch.Tensor, target: torch.Tensor, line: int | None, frame: FrameType | None
    ) -> None:
        if not pred.requires_grad or target.requires_grad or target.dim() == 0 or len(pred) != len(target):
            return
        root, given, own = self._resolve(target)
        n = len(root)
        for order in reversed(list(self._orders.values())):
            shuffled = order.root
            # (one gone since this step's loss began: copied, X[perm].float() / 255)
            gone = order.result() is None and order.backwards != self._backwards
            if gone or shuffled is root or len(shuffled) != n:
                continue
            if shuffled.requires_grad or (order.line, line) in self._told:
                return
            if self._went_along(order) or not held_then(self._alive.get(order.family), root):
                return
            break
        else:
            found = self._one_hot(target, line) if own is None and given is None else None
            if found is None:
                return
            order, root, given = found
            n = len(root)
        m = len(target)
        given = torch.arange(m) if given is None else given
        if len(order.rows) == m:
            true = order.rows
        elif len(order.rows) == n:
            true = order.rows[given]
        else:
            return
        labels = root.detach()
        device = labels.device
        same = (labels[true.to(device)] == labels[given.to(device)]).reshape(m, -1).all(1)
        kept = int(same.sum())
        if kept == m:
            return
        y = (
            find_name(root, frame)
            or label_name(root, frame)
            or find_name(target, frame)
            or path_name(root, frame)
            or "the loss's target"
        )
        target_name = find_name(target, frame) if root.dim() == target.dim() else None
        other = own if own is not None and own.family != order.family else None
        in_place = int((true == given).sum())
        self._pending.append(_Apart(order, y, target_name, other, kept, m, in_place, line))

    def _one_hot(
        self, target: torch.Tensor, line: int | None
    ) -> tuple[_Order, torch.Tensor, torch.Tensor] | None:
        """``(order, labels, rows)`` where ``target`` is one-hot rows made of a run of labels
        held at a shuffle (``F.one_hot(y[i:i + bs])`` beside ``X[perm[i:i + bs]]``): the
        batch's shuffle, the labels, and which of their rows the target's are."""
        m = len(target)
        if target.dim() != 2 or target.shape[1] < 2:
            return None
        order = next(
            (
                o
                for o in reversed(list(self._orders.values()))
                if len(o.rows) == m and (o.result() is not None or o.backwards == self._backwards)
            ),
            None,
        )
        if order is None or order.root.requires_grad or (order.line, line) in self._told:
            return None
        if self._went_along(order) or order.family not in self._alive:
            return None
        found = one_hot_run(self._alive[order.family], target, len(order.root))
        return None if found is None else (order, *found)

    def before_backward(self) -> list[Said]:
        """The suspects of the losses since the last backward() whose labels never went with
        their inputs' permutation; called as a backward() starts."""
        pending, self._pending = self._pending, []
        self._backwards += 1
        said = self.in_place.before_backward()
        for apart in pending:
            key = (apart.order.line, apart.loss_line)
            if self._went_along(apart.order) or key in self._told:
                continue
            self._told.add(key)
            said.append(self._report(apart))
        return said

    def _went_along(self, order: _Order) -> bool:
        """Whether ``order``'s permutation indexed another tensor of as many rows as its
        root: the labels went with it (``y[perm]``, maybe made a float copy before the loss)."""
        rows = len(order.root)
        return any(
            root != id(order.root) and length == rows
            for root, length in self._went.get(order.family, {}).items()
        )

    def _report(self, apart: _Apart) -> Said:
        order, y = apart.order, apart.label_name
        x = order.name or "the inputs"
        code = quoted_code(self._source, order.line)
        at = f"Line {order.line} ({code})" if code else f"Line {order.line}"
        loss_code = quoted_code(self._source, apart.loss_line)
        loss_at = f"the loss at line {apart.loss_line}" + (f" ({loss_code})" if loss_code else "")
        n, rows = len(order.root), len(order.rows)
        if rows == n:
            shuffled = f"{at} reorders the {n} rows of {x} by a random permutation"
        else:
            shuffled = (
                f"{at} takes {rows} of the {n} rows of {x} in a random order (a slice of a permutation)"
            )
        if apart.other is not None:
            title = f"{x} and {y} are shuffled by different permutations: each sample is trained toward another's label"
            kept_order = (
                f"{y} is shuffled at line {apart.other.line} by another permutation: row i of the shuffled {x} "
                f"and row i of the shuffled {y} are different samples, and {loss_at} scores each against the "
                "other's label"
            )
        else:
            title = f"{x} is shuffled at line {order.line} but {y} is not: each sample is trained toward another's label"
            kept_order = (
                f"{y}, the targets of {loss_at}, keeps its order: row i of the shuffled {x} holds another "
                f"sample, while its target is still row i of {y}"
            )
        message = (
            f"{shuffled}, but {kept_order}. In this run "
            f"{kept_said(apart.kept, apart.rows, apart.stayed, 'rows the loss scored')}. The model cannot learn which input goes with which "
            "label, only what the labels are like overall (how often each class occurs, the mean target): the "
            "loss settles where always predicting that puts it, and nothing raises."
        )
        return Said(
            "inputs-shuffled-apart-from-labels", order.line, title, message, self._fix(apart, x, y), []
        )

    def _fix(self, apart: _Apart, x: str, y: str) -> str:
        """The shuffle's line rewritten to index the labels with the same permutation."""
        order = apart.order
        code = quoted_code(self._source, order.line, sys.maxsize) or ""
        rewritten = _rewritten(code, x, y, apart.target_name)
        together = f"or keep them together: DataLoader(TensorDataset({x}, {y}), batch_size=…, shuffle=True)."
        if rewritten is None:
            return f"Index {y} with the same permutation wherever {x} is indexed with it; {together}"
        line, label = rewritten
        then = ""
        if apart.other is not None:
            other = quoted_code(self._source, apart.other.line) or f"line {apart.other.line}"
            then = f", and drop {y}'s own permutation ({other})"
        elif label == apart.target_name and label != y:
            then = f", in place of the line that takes {label} from {y} unshuffled"
        elif label != y:
            then = f", and give the loss {label} (or its rows) in place of {y}"
        return f"Index {y} with the same permutation as {x}: {line}{then}; {together}"


def _slice_start(t: torch.Tensor, base: torch.Tensor) -> int | None:
    """The first row of ``base`` that view ``t`` starts at, when ``t`` is rows ``start:start +
    len(t)`` of it (``y[i:i + bs]``, or ``y[:80]`` of ``y = labels.unsqueeze(1)``, whose
    rows are those of ``labels``); else None."""
    if t.dim() != base.dim() or t.shape[1:] != base.shape[1:] or t.stride() != base.stride():
        if t.dim() == 0 or base.dim() == 0 or t.stride(0) != base.stride(0) or len(t) > len(base):
            return None
        if t.numel() // max(len(t), 1) != base.numel() // max(len(base), 1) or not t.is_contiguous():
            return None
    step = base.stride(0)
    offset = t.storage_offset() - base.storage_offset()
    if step <= 0 or offset % step:
        return None
    start = offset // step
    return start if start >= 0 and start + len(t) <= len(base) else None


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _rewritten(code: str, x: str, y: str, target: str | None) -> tuple[str, str] | None:
    """``code`` (``X = X[perm]``, ``xb = X[torch.randperm(n)]``) made to index ``y`` too, and
    the name it binds the labels to; None when it is not one assignment of one index of ``x``."""
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign):
        return None
    statement = tree.body[0]
    value = statement.value
    if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        return None
    if not (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id == x):
        return None
    bound = statement.targets[0].id
    index = ast.unparse(value.slice)
    first = ""
    if not isinstance(value.slice, ast.Name):  # an index made on the line: name it once
        if isinstance(value.slice, ast.Tuple):
            return None
        named = next(n for n in ("perm", "idx", "rows", "batch_rows") if n not in _names_in(value.slice))
        first, index = f"{named} = {index}; ", named  # (perm = perm[i:i + bs] would break the loop)
    if bound == x:
        label = y
    elif target and target not in (y, bound):
        label = target
    else:
        label = bound.replace(x, y, 1) if x in bound else f"{y}_{bound}"
    return f"{first}{bound}, {label} = {x}[{index}], {y}[{index}]", label
