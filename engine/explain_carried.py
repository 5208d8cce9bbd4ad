"""Why a training loop's second backward() finds the graph freed: a tensor carried from one
iteration into the next.

"Trying to backward through the graph a second time" in a loop that does recompute its
forward pass comes from a value the loop carries over: an RNN's hidden state
(``h = rnn(x, h)``) or a running total (``total = total + loss``) is computed from its own
previous value, so this iteration's graph reaches back into the last one, which the last
backward() freed. PyTorch suggests ``retain_graph=True``, which hides the error and keeps
every iteration's graph alive. Followed, the next backward() fails instead ("modified by an
inplace operation"): the optimizer's step changed in place the weights the kept graph saved;
that is said with the same carrier and fix. Found in the source (a name assigned inside a
loop from an expression that uses it, not detached on the way) and confirmed in the snippet's
frame (the name holds a tensor that still has a ``grad_fn``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import FrameType
from typing import NamedTuple

import torch

from .source import indentation, is_a, quoted_code, visible_names

__all__ = ["carried_graph_hint", "carried_through_step_hint"]

_LOOP = re.compile(r"^(\s*)(?:for|while)\b.*:\s*$")
_ASSIGN = re.compile(r"^\s*([^\W\d][\w\s,()]*?)\s*(\+=|=(?!=))\s*(.+)$")
_CUTS = re.compile(r"\.(?:detach|item|tolist)\(|\bno_grad\(")


class _Carrier(NamedTuple):
    """A tensor a loop carries from one iteration into the next, with its graph."""

    at: int  # the line that assigns it
    name: str
    code: str  # that line's code
    fix: str  # what to write instead, in a sentence or two


def carried_graph_hint(source_lines: Sequence[str], line: int | None, frame: FrameType | None) -> str | None:
    """The hint for a backward() at ``line`` that found its graph freed, where a loop around
    it carries a tensor with a graph from one iteration into the next; ``None`` otherwise.
    ``frame``: the snippet's frame the error came from (whose names are checked)."""
    carrier = _carrier(source_lines, line, frame)
    if carrier is None:
        return None
    return (
        f"This backward() walks back into the previous iteration's graph, which the last backward() "
        f"freed: {carrier.name} carries it from one iteration to the next (line {carrier.at}: "
        f"{carrier.code}), as each new {carrier.name} is computed from the last one. {carrier.fix} "
        "retain_graph=True would only hide the error: every iteration's graph would stay alive, and "
        "each backward() would walk all of them."
    )


def carried_through_step_hint(
    source_lines: Sequence[str], line: int | None, frame: FrameType | None, changed: str | None
) -> str | None:
    """The hint for a backward() at ``line`` that found a saved tensor changed in place, where a
    loop around it carries a tensor with a graph into the next iteration (kept alive by
    ``retain_graph=True``, PyTorch's suggestion for the error before): the optimizer's step
    changed the weights the previous iteration's graph saved. ``changed``: the sizes of the
    tensor PyTorch names (``[8, 8]``), if it names one; ``None`` where nothing is carried."""
    carrier = _carrier(source_lines, line, frame)
    if carrier is None:
        return None
    what = f" (the {changed} tensor the error names is one of them)" if changed else ""
    retained = any("retain_graph" in code for code in source_lines)
    return (
        f"This backward() walks back into the previous iteration's graph: {carrier.name} carries it from "
        f"one iteration to the next (line {carrier.at}: {carrier.code}), as each new {carrier.name} is "
        "computed from the last one"
        + (", and retain_graph=True kept that graph alive" if retained else "")
        + ". Between the two backward() calls the optimizer's step() changed in place the weights that "
        f"graph saved{what}, so its gradient can no longer be computed. {carrier.fix}"
        + (
            " Then drop retain_graph=True: each backward() walks its own iteration's graph only."
            if retained
            else ""
        )
    )


def _carrier(source_lines: Sequence[str], line: int | None, frame: FrameType | None) -> _Carrier | None:
    """The tensor with a graph that a loop around ``line`` carries into its next iteration, as
    the snippet's ``frame`` holds it now; ``None`` where there is none (or it is detached)."""
    if line is None or frame is None:
        return None
    scope = visible_names(frame)
    carried = _carried(source_lines, line)
    for at, name, code, total, detached in carried:
        held = scope.get(name)
        # an LSTM's state is a pair: (h, c) = lstm(x, (h, c)), or h = (h, c) carried whole
        pair = isinstance(held, tuple | list) and any(is_a(t, torch.Tensor) for t in held)
        parts = list(held) if pair else [held]  # type: ignore[arg-type]
        if detached or not any(is_a(t, torch.Tensor) and t.grad_fn is not None for t in parts):
            continue
        # (h, c) = lstm(x, (h, c)) with only h detached: the state that is not is the carrier
        beside = [n for a, n, _, _, cut in carried if a == at and cut and n != name]
        fix = (
            f"Accumulate a number instead: {name} += loss.item() (or {name} = {name} + loss.detach())."
            if total
            else f"Detach it once per iteration, before it is used: {_detached_form(name, pair)} (truncated "
            "backpropagation through time)"
            + (
                f"; {' and '.join(beside)} {'is' if len(beside) == 1 else 'are'} detached already, {name} is not."
                if beside
                else "."
            )
            + _thrown_away(name, source_lines, line)
        )
        return _Carrier(at, name, code, fix)
    return None


def _detached_form(name: str, pair: bool) -> str:
    """``h = h.detach()``, or for a state held as a pair, ``h = tuple(t.detach() for t in h)``."""
    return f"{name} = tuple(t.detach() for t in {name})" if pair else f"{name} = {name}.detach()"


def _thrown_away(name: str, source_lines: Sequence[str], line: int) -> str:
    """`` Line 10 (h.detach()) … throws it away`` where the loop detaches ``name`` on a line of
    its own and keeps nothing (detach() returns a new tensor); else empty."""
    bare = re.compile(rf"^{re.escape(name)}\.detach\(\)$")
    for at in range(line - 1, 0, -1):
        if bare.match((quoted_code(source_lines, at, 10_000) or "").strip()):
            return (
                f" Line {at} ({name}.detach()) makes a detached copy and throws it away: detach() returns a "
                f"new tensor and leaves {name} as it was."
            )
    return ""


def _carried(source_lines: Sequence[str], line: int) -> list[tuple[int, str, str, bool, bool]]:
    """``(line, name, code, is_a_sum, detached)`` for each assignment, inside a loop that
    encloses ``line``, of a name from an expression that uses that name undetached;
    ``detached``: the loop's body detaches the name elsewhere (``h = h.detach()``)."""
    codes = [quoted_code(source_lines, i, 10_000) or "" for i in range(1, len(source_lines) + 1)]
    raw = list(source_lines)
    found = []
    for header in range(line - 1, 0, -1):
        loop = _LOOP.match(raw[header - 1])
        if loop is None:
            continue
        indent = len(loop.group(1))
        body = range(header + 1, len(raw) + 1)
        end = next(
            (i for i in body if raw[i - 1].strip() and indentation(raw[i - 1]) <= indent), len(raw) + 1
        )
        if not header < line < end:
            continue
        for at in range(header + 1, end):
            assigned = _ASSIGN.match(codes[at - 1])
            if assigned is None or _CUTS.search(assigned.group(3)):
                continue
            targets = [t.strip("() ") for t in assigned.group(1).split(",")]
            value = assigned.group(3)
            for name in targets:
                if name.isidentifier() and (assigned.group(2) == "+=" or re.search(rf"\b{name}\b", value)):
                    total = assigned.group(2) == "+=" or bool(re.match(rf"^{name}\s*\+", value))
                    cut = re.compile(rf"(?<![\w.]){re.escape(name)}\.(?:detach_?\(|data\b)")
                    # `h.detach()` on a line of its own keeps nothing: h is not detached by it
                    bare = re.compile(rf"^{re.escape(name)}\.detach\(\)$")
                    detached = any(
                        cut.search(codes[i - 1]) and not bare.match(codes[i - 1].strip())
                        for i in range(header + 1, end)
                    )
                    found.append((at, name, codes[at - 1], total, detached))
    return found
