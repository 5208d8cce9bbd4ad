"""Gradients that turn NaN or infinite in backward from finite ones (non-finite-gradient).

The loss is finite and ``x.grad`` holds NaN: an op's derivative was infinite or undefined
where it ran (``sqrt`` at 0, ``log`` at 0, a division by 0), and a ``torch.where`` that
picked the other branch in forward does not help, since backward multiplies the branch not
picked by 0, and ``0 × ∞`` is NaN. In a recorded walk every node's gradients are read, so
the node where they first go non-finite is known: the one that received finite gradients
and sent a NaN or inf. Only walks whose roots are finite are looked at (a NaN loss has
non-finite-loss), and only recorded ones (metrics-only steps read no node's gradients).
"""

from __future__ import annotations

import math
import re
import sys
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from ..source import quoted_code
from ..values import holds_non_finite

__all__ = ["NonFiniteGradients"]

# a backward node -> (where its slope is infinite or NaN, the op kept off that point, the op
# with its input replaced where a mask leaves it out: the "double where")
_SLOPES: dict[str, tuple[str, str, str]] = {
    "SqrtBackward0": (
        "sqrt's slope, 1/(2·√x), is infinite at x = 0 and NaN below 0",
        "torch.sqrt(x.clamp_min(1e-12))",
        "torch.where(x > 0, torch.sqrt(torch.where(x > 0, x, 1.0)), 0.0)",
    ),
    "RsqrtBackward0": (
        "rsqrt's slope, −1/(2·x^1.5), is infinite at x = 0 and NaN below 0",
        "torch.rsqrt(x.clamp_min(1e-12))",
        "torch.where(x > 0, torch.rsqrt(torch.where(x > 0, x, 1.0)), 0.0)",
    ),
    "PowBackward0": (
        "x ** p's slope, p·x^(p−1), is infinite at x = 0 for a power p below 1, and NaN below 0 "
        "for a fractional p",
        "x.clamp_min(1e-12) ** p",
        "torch.where(x > 0, torch.where(x > 0, x, 1.0) ** p, 0.0)",
    ),
    "LogBackward0": (
        "log's slope, 1/x, is infinite at x = 0 (and log itself is NaN below 0)",
        "torch.log(x.clamp_min(1e-12))",
        "torch.where(x > 0, torch.log(torch.where(x > 0, x, 1.0)), 0.0)",
    ),
    "Log2Backward0": (
        "log2's slope, 1/(x·ln 2), is infinite at x = 0",
        "torch.log2(x.clamp_min(1e-12))",
        "torch.where(x > 0, torch.log2(torch.where(x > 0, x, 1.0)), 0.0)",
    ),
    "Log10Backward0": (
        "log10's slope, 1/(x·ln 10), is infinite at x = 0",
        "torch.log10(x.clamp_min(1e-12))",
        "torch.where(x > 0, torch.log10(torch.where(x > 0, x, 1.0)), 0.0)",
    ),
    "Log1pBackward0": (
        "log1p's slope, 1/(1 + x), is infinite at x = −1",
        "torch.log1p(x.clamp_min(-1 + 1e-6))",
        "torch.where(x > -1, torch.log1p(torch.where(x > -1, x, 0.0)), 0.0)",
    ),
    "DivBackward0": (
        "a / b's slopes, 1/b and −a/b², are infinite where b = 0",
        "a / (b + 1e-12) where b is never negative",
        "torch.where(b != 0, a / torch.where(b != 0, b, 1.0), 0.0)",
    ),
    "ReciprocalBackward0": (
        "1/x's slope, −1/x², is infinite at x = 0",
        "1 / (x + 1e-12) where x is never negative",
        "torch.where(x != 0, 1 / torch.where(x != 0, x, 1.0), 0.0)",
    ),
    "MulBackward0": (
        "a * b's slope in a is b, and b was infinite or NaN there: a forward value out of range "
        "(log(0) is −inf, a division by 0 is inf) that a where or a mask may have hidden from the loss",
        "make that factor from an input kept in range, such as torch.log(x.clamp_min(1e-12))",
        "torch.where(x > 0, x * torch.log(torch.where(x > 0, x, 1.0)), 0.0) for x · log(x)",
    ),
    "AcosBackward0": (
        "acos's slope, −1/√(1 − x²), is infinite at x = ±1 and NaN beyond",
        "torch.acos(x.clamp(-1 + 1e-6, 1 - 1e-6))",
        "torch.acos(x.clamp(-1 + 1e-6, 1 - 1e-6))",
    ),
    "AsinBackward0": (
        "asin's slope, 1/√(1 − x²), is infinite at x = ±1 and NaN beyond",
        "torch.asin(x.clamp(-1 + 1e-6, 1 - 1e-6))",
        "torch.asin(x.clamp(-1 + 1e-6, 1 - 1e-6))",
    ),
    "AtanhBackward0": (
        "atanh's slope, 1/(1 − x²), is infinite at x = ±1",
        "torch.atanh(x.clamp(-1 + 1e-6, 1 - 1e-6))",
        "torch.atanh(x.clamp(-1 + 1e-6, 1 - 1e-6))",
    ),
}
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")
# ops whose name is not how a snippet writes them
_WRITTEN = {"ReciprocalBackward0": "1 / x", "PowBackward0": "x ** p", "DivBackward0": "a / b"}


class NonFiniteGradients:
    """Follows one backward walk at a time; reports its first node that made a gradient
    non-finite, once per run."""

    def __init__(self) -> None:
        self._roots: list[weakref.ref[torch.Tensor]] = []
        self._roots_finite: bool | None = None
        self._scalar_root = False
        self.walk_read = False  # whether the last walk's nodes were read (recorded in full)
        self.reported = False

    def before_backward(self, roots: list[torch.Tensor], read: bool) -> None:
        """A backward walk starts from ``roots`` (held weakly; read only if a node reports);
        ``read``: whether its nodes' gradients will be read (a walk recorded in full)."""
        self.walk_read = read
        self._roots = [weakref.ref(r) for r in roots if isinstance(r, torch.Tensor)]
        self._roots_finite = None
        self._scalar_root = len(self._roots) == 1 and roots[0].numel() == 1

    def may_report(self, node: str, sent: list[dict[str, Any] | None]) -> bool:
        """Whether :meth:`report` could report node ``node``, which sent ``sent``: the cheap
        look every node of a recorded walk gets (one sum of each gradient's few elements)."""
        return not self.reported and node != "AccumulateGrad" and any(map(holds_non_finite, sent))

    def report(
        self,
        node: str,
        received: Sequence[torch.Tensor | None],
        sent: Sequence[torch.Tensor | None],
        loss: float | None,
        line: int | None,
        source_lines: list[str],
    ) -> tuple[str, str, str] | None:
        """``(title, message, fix)`` when backward node ``node`` (its class name), made at
        snippet ``line``, is where this walk's gradients first went non-finite, given the
        gradients it ``received`` and ``sent``; ``None`` otherwise. ``loss``: the last loss
        read (used when the walk's root is one number)."""
        if self.reported or node == "AccumulateGrad":
            return None
        edge = next((i for i, g in enumerate(sent) if g is not None and not _finite(g)), None)
        if edge is None or not all(g is None or _finite(g) for g in received):
            return None
        if not self._started_finite():
            return None
        self.reported = True
        gradient = _dense(sent[edge])  # type: ignore[arg-type]
        arrived = _dense(received[0]) if len(received) == 1 and received[0] is not None else None
        facts = _Facts.of(
            gradient, arrived if arrived is not None and arrived.shape == gradient.shape else None
        )
        code = quoted_code(source_lines, line)
        where = f"line {line} ({code})" if code else f"line {line}" if line else "an unknown line"
        name = _input_name(node, quoted_code(source_lines, line, sys.maxsize))
        loss = loss if self._scalar_root else None
        return _explained(node, edge, len(sent), facts, loss, where, name)

    def unread_walk(self, step: int, grad_norm: float, loss: float | None) -> tuple[str, str, str] | None:
        """``(title, message, fix)`` for optimizer step ``step``, whose gradient norm is not
        finite, when the loss they came from is and the walk was recorded metrics-only (no
        node read, none to name); ``None`` otherwise, or once reported."""
        if loss is None or not math.isfinite(loss) or self.reported or self.walk_read:
            return None
        self.reported = True
        return non_finite_in_unread_walk(step, grad_norm, loss)

    def _started_finite(self) -> bool:
        if self._roots_finite is None:
            roots = [ref() for ref in self._roots]
            self._roots_finite = all(r is not None and bool(torch.isfinite(r).all()) for r in roots)
        return self._roots_finite


class _Facts(NamedTuple):
    """Where a gradient is not finite: its first such element, and what arrived there."""

    what: str  # "NaN", "inf" or "-inf": the first non-finite element
    flat_index: int  # its index in the flattened gradient
    shape: list[int]
    non_finite: int  # how many elements are not finite
    numel: int
    arrived_zero: bool  # the gradient the node received was 0 at that element

    @staticmethod
    def of(gradient: torch.Tensor, arrived: torch.Tensor | None) -> _Facts:
        """The facts of non-finite ``gradient``, which a node sent where it received ``arrived``
        (``None`` when not element by element)."""
        bad = ~torch.isfinite(gradient.reshape(-1))
        index = int(bad.nonzero()[0, 0])
        first = gradient.reshape(-1)[index]
        what = "NaN" if bool(torch.isnan(first)) else "inf" if bool(first.real > 0) else "-inf"
        zero = arrived is not None and bool(arrived.reshape(-1)[index] == 0)
        return _Facts(what, index, list(gradient.shape), int(bad.sum()), gradient.numel(), zero)


def _finite(t: torch.Tensor) -> bool:
    return bool(torch.isfinite(_dense(t)).all())


def _dense(t: torch.Tensor) -> torch.Tensor:
    return t if t.layout is torch.strided else t.to_dense()


def non_finite_in_unread_walk(step: int, grad_norm: float, loss: float) -> tuple[str, str, str]:
    """``(title, message, fix)`` for optimizer step ``step``, whose gradients' norm is not
    finite though the loss they came from is: a walk recorded metrics-only, so no node's
    gradients were read and the node that made them non-finite is not known."""
    what = "NaN" if math.isnan(grad_norm) else "inf"
    return (
        f"A gradient became {what} in backward, though the loss is finite",
        f"At optimizer step {step} the gradient norm is {grad_norm}, though the loss was finite "
        f"({loss:.4g}): backward itself made a gradient non-finite, at an op whose slope is infinite "
        "where it ran (sqrt or log at 0, a division by 0), often on elements a torch.where or a mask "
        "leaves out: backward multiplies those by 0, and 0 × ∞ is NaN. Every gradient computed from "
        f"it is NaN or inf too. Step {step} was recorded metrics-only, so the node that did it is not "
        f"in the trace: record step {step} in full to have it named.",
        "Keep each op's input in range on every element, also those a where leaves out: clamp it "
        "(x.clamp_min(1e-12)), add a small epsilon, or replace it before the op (the 'double where': "
        "torch.where(x > 0, torch.sqrt(torch.where(x > 0, x, 1.0)), 0.0)).",
    )


def _explained(
    node: str, edge: int, edges: int, facts: _Facts, loss: float | None, where: str, name: str | None
) -> tuple[str, str, str]:
    op = _BACKWARD_SUFFIX.sub("", node).lower() or node
    written = f"{op} ({_WRITTEN[node]})" if node in _WRITTEN else op
    slope, kept_off, double_where = _SLOPES.get(
        node,
        (
            f"{op}'s derivative is infinite or undefined at the input it saw there",
            f"keep {op}'s input away from that point (clamp it, or add a small epsilon)",
            f"replace {op}'s input with a safe value where the mask leaves it out, before the op",
        ),
    )
    if name is not None and name != "x":  # the examples in the snippet's own name
        kept_off, double_where = (re.sub(r"\bx\b", name, text) for text in (kept_off, double_where))
    what = facts.what
    place = (
        f"element {_index_text(facts.flat_index, facts.shape)} ({facts.non_finite} of {facts.numel} elements)"
        if facts.numel > 1
        else "its only element"
    )
    # 0 × ∞ (or × NaN) is NaN: the zero a where() or a mask sent to an element it leaves out
    masked = facts.arrived_zero and what == "NaN"
    to_input = f" to its input {edge + 1} of {edges}" if edges > 1 else ""
    started = (
        f"The loss is finite ({loss:.4g})" if loss is not None else "Backward started from finite values"
    )
    start = "the loss is finite" if loss is not None else "backward started from finite values"
    message = (
        f"{started}, yet a gradient came out {what} in backward. It first did in {node}, the backward "
        f"of {written} at {where}: the node received finite gradients and sent {what}{to_input} at {place}. "
        f"The cause: {slope}."
    )
    if masked:
        message += (
            " The gradient arriving at that element was 0, and 0 × ∞ (or 0 × NaN) is NaN, not 0: a 0 "
            "there usually comes from torch.where or a mask leaving the element out. where() picks "
            "values in forward, but backward runs through both branches and multiplies the one not "
            "picked by 0."
        )
    message += " Every gradient computed from it, down to the leaves' .grad, is NaN or inf too."
    if masked:
        fix = (
            f"Keep {op}'s input in range on every element, also those the where leaves out: replace "
            f"the input before the op, {double_where} (the 'double where'), or {kept_off}."
        )
    else:
        fix = (
            f"Keep {op}'s input away from the point where its slope is infinite: {kept_off}. A "
            "distance √(Σd²) between two equal points is the usual case: add the epsilon inside the "
            "square root."
            if node == "SqrtBackward0"
            else f"Keep {op}'s input away from the point where its slope is infinite: {kept_off}."
        )
    title = f"A gradient became {what} in backward, though {start}"
    return title, message, fix


def _input_name(node: str, code: str | None) -> str | None:
    """The name the snippet's line gives a one-input op's input: ``d`` in ``torch.sqrt(d)``,
    ``d.sqrt()``, ``d ** 0.5`` or ``1 / d`` (for a product, the input of its log); ``None``
    where it writes no one plain name."""
    if code is None or node not in _SLOPES or node == "DivBackward0":
        return None
    op = _BACKWARD_SUFFIX.sub("", node).lower()
    name = r"([^\W\d]\w*)"
    if node == "PowBackward0":
        patterns = [rf"\b{name}\s*\*\*"]
    elif node == "ReciprocalBackward0":
        patterns = [rf"\b1(?:\.0*)?\s*/\s*{name}\b(?!\s*[.(\[])", rf"\b{name}\.reciprocal\(\)"]
    elif node == "MulBackward0":  # its fix's example is x · log(x)
        patterns = [rf"\blog\(\s*{name}\s*\)", rf"\b{name}\.log\(\)"]
    else:
        patterns = [rf"\b{op}\(\s*{name}\s*\)", rf"\b{name}\.{op}\(\)"]
    found = {m.group(1) for pattern in patterns for m in re.finditer(pattern, code)}
    return found.pop() if len(found) == 1 else None


def _index_text(index: int, shape: list[int]) -> str:
    """A flat index as the tensor's own: ``[1, 0]`` in a 2 × 2."""
    parts = []
    for size in reversed(shape):
        parts.append(index % size if size else 0)
        index = index // size if size else 0
    return "[" + ", ".join(str(p) for p in reversed(parts)) + "]"
