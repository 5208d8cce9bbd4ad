"""inputs-shuffled-apart-from-labels, shuffled in place: ``np.random.shuffle(X)`` or
``random.shuffle(xs)`` with the labels left in their order (the indexing forms and the rule
are in shuffles.py).

library_calls.py hands each call of the snippet's own of ``random.shuffle`` or
``np.random.shuffle`` (the global generators') to :meth:`InPlaceShuffles.before`, which
works out the permutation the call is about to apply (by running the same shuffle over
``range(n)`` from the same generator state, then putting the state back) and notes the
lists, arrays and tensors of as many rows that the calling scope binds: the labels, if
there are any. At the next backward() each such partner is judged once: it goes with the
shuffled data when a source line after the shuffle names both (``X[i:i + bs], y[i:i + bs]``,
``zip(xs, ys)``), and is left apart when it was not shuffled with an equal permutation since
(the saved-state trick ``np.random.set_state(state)`` before the second shuffle makes one)
and the rows' labels differ from those of the samples now in their places.

Silent: a shuffled list of indices (``random.shuffle(order)`` then ``X[order]``, the
permutation itself: kept in :attr:`InPlaceShuffles.orders` for shuffles.py to follow where it
indexes), a list of pairs (``random.shuffle(list(zip(xs, ys)))``), data with no
partner named beside it (an autoencoder's or a GAN's samples), labels all equal, and no
backward() after the shuffle.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch

from ..source import find_name, frame_scopes, indentation, quoted_code, without_comment
from .kinds import Said

__all__ = ["InPlaceShuffles", "is_permutation", "kept_said", "sequence"]

_MOST_CALLS = 200  # shuffle calls looked at in a run; later ones run as they are
_MOST_ROWS = 100_000  # longer sequences are not followed
_MOST_PARTNERS = 16


@dataclass
class _Call:
    """One in-place shuffle: what it shuffled, how, and what the calling scope held beside it."""

    shuffled: Any
    name: str
    perm: torch.Tensor  # row i after the call is row perm[i] before it
    line: int
    generator: str  # "random" or "numpy"
    partners: list[tuple[str, Any]] = field(default_factory=list)
    judged: bool = False


class InPlaceShuffles:
    """The snippet's in-place shuffles of a run, judged at the next backward()."""

    def __init__(self, source_lines: Sequence[str]) -> None:
        self._source = source_lines
        self._calls: list[_Call] = []
        self.calls_left = _MOST_CALLS  # (library_calls.py hands no more calls on at 0)
        self._lines: set[int] = set()  # shuffle lines judged already
        #: the lists of indices shuffled in place (``random.shuffle(order)``), each with the
        #: family number shuffles.py gave its present order (0: none yet), the latest last
        self.orders: list[list[Any]] = []

    def before(self, x: Any, original: Callable[[Any], None], generator: str, frame: FrameType) -> None:
        """Look at ``random.shuffle(x)`` (``generator`` "random") or ``np.random.shuffle(x)``
        ("numpy") about to run from snippet ``frame``; ``original`` is the shuffle itself."""
        self.calls_left -= 1
        line = frame.f_lineno
        if line in self._lines or isinstance(x, torch.Tensor) or not sequence(x):
            return
        n = len(x)
        if not 1 < n <= _MOST_ROWS:
            return
        if _is_order(x):  # (the permutation itself: followed where it indexes, shuffles.py)
            if isinstance(x, list):
                self.orders = [*[o for o in self.orders if o[0] is not x][-3:], [x, 0]]
            return
        perm = _permutation(n, original, generator)
        name = find_name(x, frame) or "the data"
        call = _Call(x, name, perm, line, generator)
        for scope in frame_scopes(frame):
            for key, value in list(scope.items()):
                if len(call.partners) >= _MOST_PARTNERS:
                    break
                if key.startswith("_") or value is x or not sequence(value) or len(value) != n:
                    continue
                if all(v is not value for _, v in call.partners):
                    call.partners.append((key, value))
        self._calls.append(call)
        if len(self._calls) > 2 * _MOST_PARTNERS:
            self._calls = [c for c in self._calls if not c.judged][-_MOST_PARTNERS:]

    def before_backward(self) -> list[Said]:
        """The shuffles since the last backward() that left a partner named beside them apart."""
        said: list[Said] = []
        for call in self._calls:
            if call.judged or call.line in self._lines:
                continue
            call.judged = True
            for name, partner in call.partners:
                report = self._judge(call, name, partner)
                if report is not None:
                    self._lines.update(report[1])  # (a second shuffle by another permutation: told once)
                    said.append(report[0])
                    break
        return said

    def _judge(self, call: _Call, name: str, partner: Any) -> tuple[Said, set[int]] | None:
        together = _named_together(self._source, call.line, call.name, name)
        if together is None:
            return None
        later = [c for c in self._calls if c.shuffled is partner and c is not call]
        if any(torch.equal(c.perm, call.perm) for c in later):
            return None  # the saved-state trick: the same permutation
        other = later[-1] if later else None
        kept = _kept(partner, call.perm, other.perm if other is not None else None)
        if kept is None or kept == len(call.perm):
            return None
        lines = {call.line} if other is None else {call.line, other.line}
        return self._report(call, name, together, kept, other), lines

    def _report(self, call: _Call, y: str, together: int, kept: int, other: _Call | None) -> Said:
        x, n = call.name, len(call.perm)
        code = quoted_code(self._source, call.line) or f"{call.generator}.shuffle({x})"
        read = quoted_code(self._source, together)
        beside = f"line {together}" + (f" ({read})" if read else "")
        in_place = int((call.perm == torch.arange(n)).sum()) if other is None else 0
        if other is not None:
            title = f"{x} and {y} are shuffled by different permutations: each sample is trained toward another's label"
            apart = (
                f"{y} is shuffled at line {other.line} by another draw of the generator: row i of {x} and "
                f"row i of {y} are now different samples, yet {beside} reads them side by side"
            )
        else:
            title = f"{x} is shuffled at line {call.line} but {y} is not: each sample is trained toward another's label"
            apart = (
                f"{y} keeps its order, and {beside} reads them side by side: row i of {x} is now another "
                f"sample, while its label is still {y}[i]"
            )
        message = (
            f"Line {call.line} ({code}) reorders the {n} rows of {x} in place, but {apart}. In this run "
            f"{kept_said(kept, n, in_place)} after the shuffle. The model cannot learn which "
            "input goes with which label, only what the labels are like overall (how often each class occurs, "
            "the mean target): the loss settles where always predicting that puts it, and nothing raises."
        )
        if call.generator == "numpy":
            fix = (
                f"Shuffle both with one permutation: perm = np.random.permutation(len({x})); "
                f"{x}, {y} = {x}[perm], {y}[perm]"
            )
        else:
            fix = (
                f"Shuffle the pairs together: pairs = list(zip({x}, {y})); random.shuffle(pairs); "
                f"{x}, {y} = map(list, zip(*pairs))"
            )
        if other is not None:
            fix += f", in place of both shuffles (lines {call.line} and {other.line})"
        fix += f"; or let DataLoader(TensorDataset(…), shuffle=True) keep {x} and {y} together."
        return Said("inputs-shuffled-apart-from-labels", call.line, title, message, fix, [])


def kept_said(kept: int, rows: int, stayed: int, what: str = "rows") -> str:
    """How many of ``rows`` rows (``what``) keep their own label, ``stayed`` of them left in place."""
    if not kept:
        return f"none of the {rows} {what} keeps its own label"
    parts = [f"{stayed} that the shuffle left in place"] if stayed else []
    if kept > stayed:
        parts.append(f"{kept - stayed} whose new sample happens to have the same label")
    verb = "keeps its" if kept == 1 else "keep their"
    return f"only {kept} of the {rows} {what} {verb} own label ({' and '.join(parts)})"


def sequence(value: Any) -> bool:
    """Whether ``value`` is what a shuffle reorders by rows: a list, an array or a tensor."""
    if isinstance(value, list):
        return True
    if isinstance(value, torch.Tensor):
        return value.dim() > 0
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray) and value.ndim > 0


def _is_order(x: Any) -> bool:
    """Whether ``x`` holds the numbers 0 … len(x) - 1: an order of indices, not data."""
    try:
        values = torch.as_tensor(x) if not isinstance(x, list) else torch.tensor(x)
    except Exception:
        return False
    if values.dim() != 1 or values.is_floating_point() or values.is_complex():
        return False
    return is_permutation(values)


def is_permutation(values: torch.Tensor) -> bool:
    """Whether ``values`` (one dimension of integers) hold each of 0 … len(values) - 1 once."""
    with torch.no_grad():
        return bool((values.sort().values == torch.arange(len(values))).all())


def _permutation(n: int, original: Callable[[Any], None], generator: str) -> torch.Tensor:
    """The permutation ``original`` is about to apply to ``n`` rows: the same draws run over
    ``range(n)``, the generator's state put back after."""
    if generator == "numpy":
        numpy = sys.modules["numpy"]
        state = numpy.random.get_state()
        order = numpy.arange(n)
        original(order)
        numpy.random.set_state(state)
        return torch.as_tensor(order, dtype=torch.int64)
    import random

    saved = random.getstate()
    indices = list(range(n))
    original(indices)
    random.setstate(saved)
    return torch.tensor(indices, dtype=torch.int64)


def _named_together(source: Sequence[str], line: int, x: str, y: str) -> int | None:
    """The first line after ``line`` that names both ``x`` and ``y`` and shuffles neither
    (``xb, yb = X[i:i + bs], y[i:i + bs]``), in the block the shuffle runs in or, for a
    shuffle at the module level, up to the end of the first loop after it (code after
    training, a plot coloured by labels, is no pairing). ``None`` too where that line binds
    ``y`` anew from something else than ``y`` (``X, y = table[:, :3], table[:, 3]`` after
    ``np.random.shuffle(table)``): the ``y`` seen beside the shuffle was an earlier
    iteration's, and what is read from now on is made on that line (its own source, if
    shuffled apart, is a partner of its own)."""
    if not (x.isidentifier() and y.isidentifier()):
        return None
    both = [re.compile(rf"(?<![\w.]){re.escape(name)}\b") for name in (x, y)]
    depth = indentation(source[line - 1]) if 0 < line <= len(source) else 0
    looped = False
    for at in range(line + 1, len(source) + 1):
        text = without_comment(source[at - 1])
        if not text.strip():
            continue
        if indentation(text) < depth:
            return None
        if depth == 0 and indentation(text) == 0:
            if looped:
                return None
            looped = text.startswith(("for ", "while "))
        if "shuffle" not in text and all(p.search(text) for p in both):
            return None if _bound_anew(text, y) else at
    return None


def _bound_anew(text: str, y: str) -> bool:
    """Whether a one-line statement (or several, joined by ``;``) assigns ``y`` with ``=`` from
    a value that does not read ``y`` (``X, y = table[:, :3], table[:, 3]``; a tuple target takes
    its own element of a tuple value): ``y = y.float()`` is the same labels, in their order."""
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return False
    pairs: list[tuple[ast.expr, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                value = node.value
                if (
                    isinstance(target, ast.Tuple)
                    and isinstance(value, ast.Tuple)
                    and len(target.elts) == len(value.elts)
                ):
                    pairs += zip(target.elts, value.elts, strict=True)
                else:
                    pairs.append((target, value))
    return any(
        isinstance(target, ast.Name)
        and target.id == y
        and not any(isinstance(n, ast.Name) and n.id == y for n in ast.walk(value))
        for target, value in pairs
    )


def _kept(labels: Any, perm: torch.Tensor, other: torch.Tensor | None) -> int | None:
    """Rows whose label after the shuffle by ``perm`` is still their own: ``labels`` as they
    are now (after their own shuffle by ``other``, if one ran)."""
    n = len(perm)
    true = perm if other is None else torch.argsort(other)[perm]  # where each row's own label is now
    try:
        values = labels if isinstance(labels, torch.Tensor) else torch.as_tensor(labels)
    except Exception:
        values = None
    if values is not None and values.dim() > 0 and len(values) == n:
        with torch.no_grad():
            same = (values[true] == values).reshape(n, -1).all(1)
        return int(same.sum())
    if not isinstance(labels, list):
        return None
    return sum(1 for i in range(n) if _same(labels[int(true[i])], labels[i]))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a, b))
    try:
        return bool(a == b)
    except Exception:
        return False
