"""Which lines add graph-carrying tensors into a running total (loss-tensor-accumulated).

NOTE [Running totals past full detail]
The tape sees a running total's adds only while a step is recorded in full; in a training
loop the total keeps growing in the metrics-only steps after. So each add the detector
sees marks the node it made (in the node's own metadata, which holds nothing alive), and
at the end of the run the totals the snippet still holds are walked back along their
chain of adds to the last marked node: the links past it are the iterations not seen.

NOTE [A total that backward walks]
Adds chained at one line are also how a loss is built for one backward: a sequence loss
summed over time steps, a loss of several terms, a residual stack (`x = x + block(x)`).
What tells the pitfall apart is whether a backward walks the total's graph (its root is
the total, or computed from it). That is asked of the graph, not of the tensor: the total
is often freed by the end of the run (a function's local, an unnamed expression), so
"was it a backward root?", asked then, cannot be answered. A pre-hook on each node of the
chain seen marks it walked; it holds only the chain's record. Any node counts, not only the
latest: an iterative algorithm inside one forward updates a tensor the next iteration reads
(capsule routing's ``b = b + (u_hat * v).sum(-1)``, three times, its last update read by
nothing), and the backward walks the updates its output was computed from. A running total is
read by nothing but its next add, so no backward walks any of its links.

NOTE [A total reset every epoch]
The commonest running total starts again each epoch (``running_loss = 0.0`` above the batch
loop, ``running_loss += loss`` in it). Once the first steps recorded in full are over, the
epoch's total starts in an iteration the tape does not see, so the total the snippet holds
at the end leads back to no add seen, and the chain seen (the first epoch's, up to the last
step recorded in full) may be two adds long. Two adds made across an optimizer step are
enough: a total that outlives a step keeps the graphs of two iterations linked, which no
loss built for one backward does (a sequence loss, a loss of several terms, a residual
stack are summed within one iteration).

NOTE [Sums that are no running total]
Two chains of adds at one line are not told. One whose line an earlier chain's backward
walked: the line builds losses for backward (truncated BPTT's ``chunk_loss = chunk_loss +
…``, backward every k steps, then reset), and a last partial chunk left unused is no total
of the run. And one made by a statement that cannot carry a total from one run of it to the
next: a call of builtin ``sum`` with no ``+=``, no ``.add_(…)``, no assignment that reads its
own target (``wnorm = sum(p.norm() for p in model.parameters())`` for a log: ``sum`` adds the
terms within one run of the line, and the next run starts again).
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import torch

from ..source import is_a, parsed_source
from ..tensor_facts import autograd_of

__all__ = ["ADD_OPS", "AccumulatedTotal", "RunningTotals"]

ADD_OPS = frozenset({"add", "__add__", "__radd__", "__iadd__", "add_"})

_TOTAL_KEY = "gradwalk_total"
_ADD_NODES = frozenset({"AddBackward0", "AddBackward1"})
_MAX_CHAIN = 100_000


class AccumulatedTotal(NamedTuple):
    """A line that grew a running total of graphs: its adds, and the bytes saved for
    backward when the total began and at its latest add."""

    line: int
    length: int
    bytes_at_start: int
    bytes_now: int
    across_a_step: bool = False  # told by two adds on both sides of a step (NOTE [A total reset every epoch])


class _RunningTotal:
    """One chain of adds at a line: the latest total (weakly), its length in adds, the
    bytes saved for backward when it began and at its latest add, and whether a backward
    walked any of its links (NOTE [A total that backward walks])."""

    __slots__ = (
        "_handles",
        "bytes_at_start",
        "bytes_now",
        "first_step",
        "last",
        "latest_step",
        "length",
        "walked",
    )

    def __init__(self, total: torch.Tensor, node: Any, saved: int, step: int) -> None:
        self._handles: list[Any] = []
        self.began(total, node, saved, step)

    def began(self, total: torch.Tensor, node: Any, saved: int, step: int) -> None:
        """Start the chain again at ``total``, once :meth:`unhook` removed the old chain's
        hooks: a line's next chain reuses the object (most adds begin a chain, as
        ``torch.tanh(h * w + b)``'s in a loop, and a new object for each one costs)."""
        self.length = 0
        self.bytes_at_start = saved
        self.walked = False
        self.first_step = step  # the optimizer steps taken by the chain's first add
        self.grew(total, node, saved, step)

    def grew(self, total: torch.Tensor, node: Any, saved: int, step: int) -> None:
        """Take ``total``, made by ``node`` after ``step`` optimizer steps, as the chain's latest."""
        self.last = weakref.ref(total)
        self.length += 1
        self.bytes_now = saved
        self.latest_step = step
        if not self.walked:  # (once walked, the chain is no running total)
            self._handles.append(node.register_prehook(self._walked))

    def unhook(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _walked(self, grad_outputs: Any) -> None:
        self.walked = True


class RunningTotals:
    """Follow the chains of adds at each snippet line (NOTE [Running totals past full
    detail]); ``saved_bytes()`` reads the bytes autograd holds saved for backward now,
    ``steps()`` the optimizer steps taken so far; ``source_lines``: the snippet's lines."""

    def __init__(
        self, saved_bytes: Callable[[], int], steps: Callable[[], int], source_lines: Sequence[str] = ()
    ) -> None:
        self._saved_bytes = saved_bytes
        self._steps = steps
        self._source = "\n".join(source_lines)
        self._totals: dict[int, _RunningTotal] = {}  # by line
        self._walked_lines: set[int] = set()  # lines an earlier chain of which a backward walked
        self._carries: dict[int, bool] = {}  # by line: whether its statement can carry a total

    def on_add(self, args: tuple[Any, ...], result: torch.Tensor, line: int | None) -> None:
        """Look at one add (a name in :data:`ADD_OPS`) that made ``result`` at ``line``."""
        if line is None or not result.requires_grad:
            return
        facts = autograd_of(result)
        if facts is None or facts[0] is None:  # no graph (or PyTorch will not say)
            return
        carries = self._carries.get(line)
        if carries is None:
            carries = self._can_carry(line)
        if not carries:
            return
        made: Any = facts[0]  # (torch's stubs call a node's metadata a method; it is a dict)
        entry = self._totals.get(line)
        saved = self._saved_bytes()
        if entry is None:
            entry = self._totals[line] = _RunningTotal(result, made, saved, self._steps())
        else:
            prev = entry.last()
            if prev is not None and any(a is prev for a in args):
                entry.grew(result, made, saved, self._steps())
            else:  # a chain begins again at this line
                entry.unhook()
                if entry.walked:
                    self._walked_lines.add(line)
                entry.began(result, made, saved, self._steps())
        made.metadata[_TOTAL_KEY] = (line, entry.length)

    def accumulated(self, scope: dict[str, Any]) -> Iterator[AccumulatedTotal]:
        """At the end of the run, yield each line whose total grew from 3 adds on (2 across an
        optimizer step: NOTE [A total reset every epoch]) and that no backward walked;
        ``scope`` is the snippet's globals (the totals it still holds). Every chain's hook is
        removed on the way."""
        held = [v for v in scope.values() if is_a(v, torch.Tensor)] if self._totals else []
        for line, entry in self._totals.items():
            entry.unhook()
            total = entry.last()
            length, start, end = entry.length, entry.bytes_at_start, entry.bytes_now
            later = _links_past_mark(line, [total, *held] if total is not None else held)
            if later is not None:
                length = later
                end = max(end, self._saved_bytes())
            outlived_a_step = length >= 2 and entry.latest_step != entry.first_step
            if (length < 3 and not outlived_a_step) or entry.walked or line in self._walked_lines:
                continue
            yield AccumulatedTotal(line, length, start, end, length < 3)

    def _can_carry(self, line: int) -> bool:
        """Whether the statement at snippet ``line`` can carry a total from one run of it to the
        next (NOTE [Sums that are no running total]); True where its source cannot be read."""
        if line not in self._carries:
            self._carries[line] = _statement_carries(self._source, line)
        return self._carries[line]


def _statement_carries(source: str, line: int) -> bool:
    """Whether the innermost statement of ``source`` (the snippet's) at ``line`` may carry a
    total from one run of it to the next: False only for one that calls builtin ``sum`` and
    neither adds in place (``+=``, ``.add_(…)``) nor assigns a target its value reads
    (``total = sum([total, loss])``); True where the source cannot be read."""
    tree = parsed_source(source)
    if tree is None:
        return True
    blocks = ast.For | ast.While | ast.If | ast.With | ast.Try | ast.FunctionDef | ast.ClassDef
    covering = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt)
        and not isinstance(node, blocks)
        and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    if not covering:
        return True
    statement = max(covering, key=lambda node: node.lineno)
    inside = list(ast.walk(statement))
    sums = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "sum" for n in inside
    )
    if not sums or not isinstance(statement, ast.Assign | ast.AnnAssign | ast.Expr):
        return True
    if any(isinstance(n, ast.Attribute) and n.attr in ("add_", "__iadd__") for n in inside):
        return True
    targets = statement.targets if isinstance(statement, ast.Assign) else getattr(statement, "target", None)
    written = {
        ast.dump(n).replace("ctx=Store()", "ctx=Load()")
        for t in (targets if isinstance(targets, list) else [targets] if targets is not None else [])
        for n in ast.walk(t)
        if isinstance(n, ast.Name | ast.Attribute | ast.Subscript)
    }
    return statement.value is not None and any(ast.dump(n) in written for n in ast.walk(statement.value))


def _links_past_mark(line: int, tensors: list[torch.Tensor]) -> int | None:
    """The length in adds of the first chain among ``tensors`` that leads back past an add
    seen at ``line`` (NOTE [Running totals past full detail]); ``None`` when no tensor grew
    the total after the last add seen."""
    for t in tensors:
        facts = autograd_of(t) if t.requires_grad else None
        node: Any = facts[0] if facts is not None else None
        links = 0
        while node is not None and links < _MAX_CHAIN:
            seen = _seen_length(node, line)
            if seen is not None:
                if links:
                    return seen + links
                break  # the last add seen made this tensor: nothing past it here
            if type(node).__name__ not in _ADD_NODES:
                break
            node = _earlier_total(node, line)
            links += 1
    return None


def _seen_length(node: Any, line: int) -> int | None:
    """The total's length when the detector saw the add that made ``node`` at ``line``."""
    mark = node.metadata.get(_TOTAL_KEY)
    return mark[1] if mark is not None and mark[0] == line else None


def _earlier_total(add: Any, line: int) -> Any:
    """The input of ``add`` that carries the running total: the one marked for ``line``, else
    the first that is itself an add (``total + loss`` or ``loss + total``)."""
    inputs = [n for n, _ in add.next_functions if n is not None]
    marked = next((n for n in inputs if _seen_length(n, line) is not None), None)
    if marked is not None:
        return marked
    return next((n for n in inputs if type(n).__name__ in _ADD_NODES), None)
