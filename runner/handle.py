"""One submitted run as its caller sees it: an id, a status, and a validated event stream.

The pool feeds a handle raw frames from the run's child; the handle treats each one as
untrusted, validates it against the event contract, checks that ``seq`` counts up from 0
with no gap, and queues it for the single consumer of :meth:`RunHandle.events`. Whatever
happens to the child, the stream ends with exactly one ``run_finished``: the child's own,
or one the handle makes up (``timeout``, ``cancelled``, ``crashed``, ``limit``, ``error``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable

from pydantic import ValidationError

from engine.events import (
    BackwardCounted,
    BackwardStarted,
    Counts,
    ErrorRaised,
    Event,
    Limits,
    NodeCreated,
    OpRecorded,
    OptimizerStep,
    RunFinished,
    RunStarted,
    RunStatus,
    TensorIntroduced,
    event_adapter,
)
from engine.source import source_lines

from . import outcome

__all__ = ["RunHandle", "StreamError"]


class StreamError(Exception):
    """A frame broke the event contract; ``status`` is what the run ends with."""

    def __init__(self, message: str, status: RunStatus = "error") -> None:
        super().__init__(message)
        self.status: RunStatus = status


class RunHandle:
    """A run submitted to a :class:`WorkerPool`.

    ``id`` is a uuid4 hex string; ``status`` is ``None`` until the run has finished, then
    the ``RunStatus`` of its ``run_finished``. :meth:`events` may be iterated once.
    """

    def __init__(
        self,
        source: str,
        device: str,
        limits: Limits,
        on_cancel: Callable[[RunHandle, str], None] | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex
        self.status: RunStatus | None = None
        self.source = source
        self.device = device
        self.limits = limits
        self.message = ""
        self._on_cancel = on_cancel
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._next_seq = 0
        self._last_error: ErrorRaised | None = None
        self._iterating = False
        self._seen = _SeenCounts()
        self.on_drain: Callable[[], None] | None = None

    # --- the caller's side --------------------------------------------------------------

    async def events(self) -> AsyncIterator[Event]:
        """Yield the run's events in order, ending with its one ``run_finished``."""
        if self._iterating:
            raise RuntimeError("RunHandle.events() has a single consumer")
        self._iterating = True
        while True:
            event = await self._queue.get()
            if self.on_drain is not None and self._queue.qsize() < _LOW_WATER:
                self.on_drain()
            yield event
            if event.type == "run_finished":
                return

    def cancel(self, reason: str = "") -> None:
        """Stop the run; its stream ends with ``run_finished`` status ``cancelled``, its message
        saying ``reason`` when one is given (``the server is shutting down``). Idempotent."""
        if self.status is None and self._on_cancel is not None:
            self._on_cancel(self, reason)

    @property
    def finished(self) -> bool:
        """Whether ``run_finished`` has been queued."""
        return self.status is not None

    @property
    def backlog(self) -> int:
        """Events queued but not yet taken by the consumer."""
        return self._queue.qsize()

    # --- the pool's side ----------------------------------------------------------------

    def accept(self, frame: bytes) -> bool:
        """Validate one frame from the child and queue its event; tell whether it ended the run.

        Raises :class:`StreamError` for a frame that is not a valid next event.
        """
        if self.status is not None:
            return True
        try:
            event = event_adapter.validate_json(frame)
        except ValidationError as exc:
            errors = exc.errors()
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
            what = errors[0]["msg"] if errors else "invalid"
            raise StreamError(
                f"an event did not match the schema: {what} at {where or 'top level'}"
            ) from None
        if event.seq != self._next_seq:
            raise StreamError(f"event number {event.seq} arrived where {self._next_seq} was due")
        if (event.type == "run_started") != (self._next_seq == 0):
            raise StreamError("the stream did not open with exactly one run_started")
        if self._next_seq >= self.limits.max_events:
            raise StreamError(f"the run sent more than {self.limits.max_events} events", "limit")
        if isinstance(event, ErrorRaised):
            self._last_error = event
        self._seen.add(event)
        if isinstance(event, RunFinished):
            self._push_finished(event)
            return True
        self._push(event)
        return False

    def finish(self, status: RunStatus, message: str) -> None:
        """End the stream with a made-up ``run_finished`` (no-op once the run has finished)."""
        if self.status is not None:
            return
        if self._next_seq == 0:
            self._push(RunStarted(source=self.source, device=self.device, limits=self.limits))
        if status == "timeout":  # where it was: the loop that ran long, and how far it got
            message += self._seen.progress(self.source)
        self._push_finished(
            RunFinished(
                seq=self._next_seq,
                t=self._seen.t_now(),
                status=status,
                message=message,
                duration_s=self._seen.duration_s(),
                counts=self._seen.counts(events=self._next_seq + 1),
            )
        )

    def _push_finished(self, event: RunFinished) -> None:
        if event.status == "error":
            memory = outcome.memory_message(self._last_error, self.limits)
            if memory is not None:
                event = event.model_copy(update={"status": "limit", "message": memory})
        self.status = event.status
        self.message = event.message
        self._push(event)

    def _push(self, event: Event) -> None:
        event.seq = self._next_seq
        self._next_seq += 1
        self._queue.put_nowait(event)


_LOW_WATER = 256


class _SeenCounts:
    """What the events of a run that did not finish on its own add up to.

    # NOTE [Counts of a run stopped from outside]
    # A run stopped by its time limit, a cancel or a crash never sends its own
    # ``run_finished``, whose counts the recorder keeps exactly. The one made up for it
    # says what the events that did arrive hold (ops, nodes, tensors, backward calls,
    # optimizer steps) and how long the run went on, rather than zeros beside a
    # recorded graph.
    """

    __slots__ = (
        "_last_t",
        "_line",
        "_line_t",
        "_started",
        "backward_calls",
        "nodes",
        "ops",
        "optimizer_steps",
        "tensors",
    )

    def __init__(self) -> None:
        self.ops = self.nodes = self.tensors = self.backward_calls = self.optimizer_steps = 0
        self._started: float | None = None
        self._last_t = 0.0
        self._line: int | None = None  # the snippet line of the latest event that named one
        self._line_t = 0.0

    def add(self, event: Event) -> None:
        self._last_t = max(self._last_t, event.t)
        line = getattr(event, "line", None)
        if isinstance(line, int):
            self._line, self._line_t = line, event.t
        if isinstance(event, OpRecorded):
            self.ops = event.index + 1
        elif isinstance(event, NodeCreated):
            self.nodes += 1
        elif isinstance(event, TensorIntroduced):
            self.tensors += 1
        elif isinstance(event, BackwardStarted):
            self.backward_calls += 1
        elif isinstance(event, BackwardCounted):  # a call of a loop that steps by hand, metrics-only
            self.backward_calls = max(self.backward_calls, event.index + 1)
        elif isinstance(event, OptimizerStep):
            self.optimizer_steps += 1
        elif isinstance(event, RunStarted):
            self._started = time.monotonic()

    def progress(self, source: str) -> str:
        """How far a run stopped at its time limit got, and the line it was at where an event
        named one in the run's last second (an op past the op limit sends none: a line from
        long before is not where it was)."""
        recent = self._line if self._line is not None and self.t_now() - self._line_t <= 1.0 else None
        lines = source_lines(source) if recent is not None else []
        code = lines[recent - 1] if recent is not None and recent <= len(lines) else None
        return outcome.progress_when_stopped(self.optimizer_steps, self.backward_calls, recent, code)

    def duration_s(self) -> float:
        """Seconds since ``run_started`` arrived (0 when it never did)."""
        return 0.0 if self._started is None else time.monotonic() - self._started

    def t_now(self) -> float:
        """The ``t`` of an event made up now: the run's time so far, never before an event that
        arrived (the worker's clock and this one start a moment apart)."""
        return max(self._last_t, self.duration_s())

    def counts(self, events: int) -> Counts:
        return Counts(
            ops=self.ops,
            nodes=self.nodes,
            tensors=self.tensors,
            backward_calls=self.backward_calls,
            optimizer_steps=self.optimizer_steps,
            events=events,
        )
