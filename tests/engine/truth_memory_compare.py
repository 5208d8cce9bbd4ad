"""A trace's memory and training metrics against a plain run's (tests/engine/truth_memory.py).

:func:`memory_differences` lists every disagreement between a trace and what the plain run
measured: each ``optimizer_step``'s optimizer label, step, loss, learning rates,
``graph_bytes`` (what the graphs hold right after the step) and ``detail``; each
``backward_counted``'s loss and ``graph_bytes``; the ``memory`` value in force when each
backward call recorded in full starts, and at the end of the run; each ``memory`` event's
``delta``; the ``metric`` events against the plain run's ``gradwalk.log`` calls; and what
the snippet printed. A peak (``graph_peak_bytes``) must equal the most the plain run held at
any sample since the previous step or counted call: samples are taken between the snippet's
lines, so a graph made and dropped within one line is seen by the engine alone; a snippet of
the corpus has none (its peaks are then exact), and :func:`memory_differences` with
``peaks="at_least"`` asks the engine's peak only to be no lower.
"""

from __future__ import annotations

import itertools
from typing import Any

from engine import queries as q
from engine.events import Limits, Trace
from tests.engine.truth_memory import Mark, PlainMemory

__all__ = ["expected_detail", "memory_differences"]


def _peaks(marks: list[Mark], resets: list[int]) -> dict[int, int]:
    """The most held between consecutive reset positions in ``marks``, by the later's position."""
    out: dict[int, int] = {}
    start = 0
    for pos in sorted(resets):
        out[pos] = max(m.held for m in marks[start : pos + 1])
        start = pos
    return out


def expected_detail(plain: PlainMemory, limits: Limits) -> list[bool]:
    """Whether each step of the plain run is one a recording takes in full: the first
    ``detail_steps`` of an optimizer still stepping and every ``detail_every``-th (NOTE
    [Detail with several optimizers] in engine/training.py)."""
    counts: dict[int, int] = {}
    last: dict[int, int] = {}
    interval: dict[int, int] = {}
    detail = True
    out = []
    for total, s in enumerate(plain.steps, start=1):
        out.append(detail)
        interval[s.opt] = total - last.get(s.opt, 0)
        last[s.opt] = total
        counts[s.opt] = s.step
        detail = any(
            counts[o] + 1 <= limits.detail_steps
            or (limits.detail_every and (counts[o] + 1) % limits.detail_every == 0)
            for o in counts
            if total - last[o] < 2 * interval[o]
        )
    return out


def memory_differences(
    trace: Trace, plain: PlainMemory, limits: Limits | None = None, peaks: str = "exact"
) -> list[str]:
    limits = limits or Limits()
    out: list[str] = []
    if q.stdout(trace) != plain.stdout:
        out.append(f"stdout {q.stdout(trace)[-200:]!r} vs {plain.stdout[-200:]!r}")
    marks = plain.marks
    pos = {(m.what, m.index): i for i, m in enumerate(marks)}
    steps = q.events_of(trace, "optimizer_step")
    counted = q.events_of(trace, "backward_counted")
    resets = [pos[("step_after", k)] for k in range(min(len(steps), len(plain.steps)))]
    resets += [pos[("backward_after", e.index)] for e in counted if ("backward_after", e.index) in pos]
    peak = _peaks(marks, resets)
    if len(steps) != len(plain.steps):
        out.append(f"{len(steps)} optimizer steps vs {len(plain.steps)}")
    details = expected_detail(plain, limits)
    shared = _shared_labels(plain)
    out += _labels_apart([e.optimizer for e in steps], plain)
    for k, (e, s) in enumerate(zip(steps, plain.steps, strict=False)):
        at = pos[("step_after", k)]
        got = (e.optimizer, e.step, e.loss, e.lr, e.graph_bytes)
        want = (s.label, s.step, s.loss, s.lr, marks[at].held)
        for label, g, w in zip(("optimizer", "step", "loss", "lr", "graph_bytes"), got, want, strict=True):
            if g != w and not (label == "optimizer" and s.label in shared):
                out.append(f"step {k}: {label} {g} vs {w}")
        if details[k] and not e.detail:  # (more are, after a loop ends: NOTE in engine/loop_ends.py)
            out.append(f"step {k}: recorded metrics-only, one of the first {limits.detail_steps}")
        out += _peak_differs(f"step {k}", e.graph_peak_bytes, peak[at], peaks)
    for e in counted:
        if e.index >= len(plain.losses):
            out.append(f"counted call {e.index}: PyTorch made {len(plain.losses)} calls")
            continue
        at = pos[("backward_after", e.index)]
        if e.loss != plain.losses[e.index]:
            out.append(f"counted call {e.index}: loss {e.loss} vs {plain.losses[e.index]}")
        if e.graph_bytes != marks[at].held:
            out.append(f"counted call {e.index}: graph_bytes {e.graph_bytes} vs {marks[at].held}")
        out += _peak_differs(f"counted call {e.index}", e.graph_peak_bytes, peak[at], peaks)
    out += _memory_event_differences(trace, plain)
    metrics = [(e.name, e.value, e.step) for e in q.events_of(trace, "metric")]
    if metrics != plain.metrics:
        out.append(f"metrics {metrics} vs {plain.metrics}")
    return out


def _shared_labels(plain: PlainMemory) -> set[str]:
    """The plain run's labels (a variable's name) that several optimizers share."""
    owners: dict[str, set[int]] = {}
    for s in plain.steps:
        owners.setdefault(s.label, set()).add(s.opt)
    return {label for label, ids in owners.items() if len(ids) > 1}


def _labels_apart(labels: list[str], plain: PlainMemory) -> list[str]:
    """Each optimizer keeps one label, and two optimizers that step in turn have two: the
    charts keep a series per label (NOTE [Optimizers of one name] in engine/chart_labels.py)."""
    out = []
    mine: dict[int, str] = {}
    spans: dict[str, list[tuple[int, int, int]]] = {}  # label -> (optimizer, first, last step)
    for k, (label, s) in enumerate(zip(labels, plain.steps, strict=False)):
        if mine.setdefault(s.opt, label) != label:
            out.append(f"step {k}: optimizer {label} vs {mine[s.opt]} at its earlier steps")
    for opt, label in mine.items():
        ks = [k for k, s in enumerate(plain.steps[: len(labels)]) if s.opt == opt]
        spans.setdefault(label, []).append((opt, ks[0], ks[-1]))
    for label, owned in spans.items():
        owned.sort(key=lambda o: o[1])
        for (_, _, last), (_, first, _) in itertools.pairwise(owned):
            if first < last:
                out.append(f"two optimizers stepping in turn are both {label}")
    return out


def _peak_differs(where: str, got: int, want: int, peaks: str) -> list[str]:
    if got == want or (peaks == "at_least" and got >= want):
        return []
    return [f"{where}: graph_peak_bytes {got} vs {want}"]


def _memory_event_differences(trace: Trace, plain: PlainMemory) -> list[str]:
    """``delta`` of each memory event; each value one the plain run held between the same
    backward calls; the value in force when each backward call recorded in full starts and
    at the end, against the plain run's."""
    out: list[str] = []
    held = 0
    before = {m.index: m.held for m in plain.marks if m.what == "backward_before"}
    spans = _values_between_calls(plain)
    known = 0  # the span of the latest call the trace shows (metrics-only calls of a step show none)
    pending: list[tuple[int | None, int]] = []  # memory events since, placed by the next call shown

    def place(upto: int) -> None:
        values = set().union(*spans[known : upto + 1])
        out.extend(
            f"memory at line {line}: {value}, which the plain run never held then"
            for line, value in pending
            if value not in values
        )
        pending.clear()

    for e in trace.events:
        if e.type == "memory":
            if e.delta != e.saved_bytes - held:
                out.append(f"memory at line {e.line}: delta {e.delta} from {held} to {e.saved_bytes}")
            held = e.saved_bytes
            if e.line is not None:
                pending.append((e.line, held))
        elif e.type in ("backward_started", "backward_counted"):
            place(e.index + 1)  # (the event at a call's start shows what its span opens with)
            known = e.index + 1
        if e.type == "backward_started" and before.get(e.index) != held:
            out.append(f"backward {e.index} (line {e.line}): held {held} vs {before.get(e.index)}")
    place(len(spans) - 1)
    end = plain.marks[-1].held
    if held != end:
        out.append(f"end of run: held {held} vs {end}")
    return out


def _values_between_calls(plain: PlainMemory) -> list[set[int]]:
    """Every value the plain run held before its first backward call, then from the start
    of each call to the start of the next: a memory event (after an op) shows one of those
    of its span."""
    spans: list[set[int]] = [set()]
    for m in plain.marks:
        if m.what == "backward_before":
            spans.append(set())
        spans[-1].add(m.held)
    return spans


def describe(plain: PlainMemory) -> list[Any]:
    """The plain run's samples, compactly (for a failing test's message)."""
    return [(m.what, m.index, m.held) for m in plain.marks if m.what != "line"]
