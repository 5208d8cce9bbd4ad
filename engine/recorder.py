"""The recorder: one run's state, the event sink, and the parts that observe PyTorch.

``Recorder`` is a context manager. Entering it installs every hook (module hooks,
saved-tensor hooks, optimizer hooks, the tape mode); leaving it removes them all, in a
``finally``, whatever the snippet did. Parts reach each other through the recorder
(``rec.tensors``, ``rec.graph`` ...) and send events only through :meth:`Recorder.emit`,
which numbers them and enforces the event cap.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import torch

from .attributes import attribute_write_op
from .backward import BackwardTracker
from .eager import EagerCompile
from .events import Limits
from .functions import FunctionCalls
from .graph import GraphRecorder
from .hand_loops import HandLoop
from .library_calls import LibraryCalls
from .loop_ends import LoopEnds
from .memory import SavedMemory, cuda_allocated
from .mode_stack import insert_mode, remove_mode
from .modules import ModuleTracker
from .mute import Mute
from .op_recorder import OpRecorder
from .pitfalls import PitfallWatch
from .process_settings import restore_settings, saved_settings
from .reflected import OperandOrder
from .running_stats import RunningStats
from .saved_hooks import SnippetSavedHooks
from .source import StatementLines, snippet_frames, source_lines, statement_lines
from .strict import STRICT
from .tape import TapeMode
from .tensors import TensorTable
from .threads import SnippetThreads
from .training import TrainingTracker
from .values import to_value

__all__ = ["Recorder", "Sink"]

Sink = Callable[[dict[str, Any]], None]

# NOTE [Events as dicts]
# Inside the engine an event is a plain dict with exactly the fields of its model in
# engine/events.py: building a pydantic model per event cost more than the PyTorch op it
# describes. Every dict is validated against the models where it leaves the engine:
# engine.run.record() validates the whole trace, record_stream(validate=True) each event,
# and the runner's parent process each frame. The tests validate every trace they record.
_RESERVED_EVENTS = 256  # room kept under the cap for the closing events (error, finals, run_finished)
_GC_YOUNG_THRESHOLD = 1_000_000  # see NOTE [Garbage collection while recording]


class Recorder:
    """Record one run into ``sink``. Not reentrant; one recorder per run."""

    def __init__(
        self, sink: Sink, limits: Limits | None = None, source: str | None = None, *, pitfalls: bool = True
    ) -> None:
        self.limits = limits or Limits()
        self._sink = sink
        self.seq = 0
        self.dropped_events = 0
        # A snippet's threads record too (NOTE [Threads] in threads.py): one thread at a
        # time records an op or runs a backward call (``serial``), and events are numbered
        # and sunk one at a time (a lock of their own: on CUDA, node hooks emit from
        # PyTorch's device threads while the calling thread waits in backward, holding ``serial``)
        self.serial = threading.RLock()
        self._emitting = threading.RLock()
        self.closed = False
        self.t0 = time.perf_counter()
        self.active = False
        self.detail = True
        self.values = True
        self.failures = 0  # things gradwalk failed to record (see observation_failed)
        self.eager = EagerCompile(self._quietly)
        self.functions = FunctionCalls(self)
        self.threads = SnippetThreads(self)
        self.library_calls = LibraryCalls(self)
        self._mute = Mute()
        self.in_optimizer = False
        self.ops = 0
        self.dropped_ops = 0
        self.tensors = TensorTable(self)
        self.running_stats = RunningStats(self.tensors)
        self.graph = GraphRecorder(self)
        self.backward = BackwardTracker(self)
        self.memory = SavedMemory(self)
        self.snippet_saved_hooks = SnippetSavedHooks()  # NOTE [A snippet's hooks on one saved tensor]
        self.modules = ModuleTracker(self)
        self.training = TrainingTracker(self)
        self.hand_loop = HandLoop(self)
        self.loop_ends = LoopEnds(self)
        self.source_lines = source_lines(source or "")  # for hints and detectors that quote it
        self.operand_order = OperandOrder(self.source_lines)
        self.pitfalls = PitfallWatch(self, enabled=pitfalls)
        self.failed_op: tuple[str, list[torch.Tensor]] | None = None
        self.ended_early = False  # the snippet raised, exited or was stopped before its last line
        self.failed_op_error: tuple[int, str] | None = None  # the id and text of what it raised
        self._mode: TapeMode | None = None
        self._modes_under = 0  # the modes under the tape mode on PyTorch's stack
        self._gc_threshold = gc.get_threshold()
        self._global_settings = saved_settings()
        self._op_recorder = OpRecorder(self)
        self._open_cap = self.limits.max_events - _RESERVED_EVENTS

    # --- events ---------------------------------------------------------------------

    def emit(self, event: dict[str, Any], *, closing: bool = False) -> None:
        """Number ``event`` and hand it to the sink, unless the event cap is reached.

        ``event`` is a JSON-ready dict shaped like one model of ``engine/events.py`` (see
        NOTE [Events as dicts]). ``closing`` events may use the room reserved under the cap.
        """
        with self._emitting:
            if self.closed:
                return  # after run_finished: a snippet's thread that outlived the run
            seq = self.seq
            if seq < self._open_cap or (closing and seq < self.limits.max_events):
                event["seq"] = seq
                event["t"] = time.perf_counter() - self.t0
                # numbered once handed on: a sink that raised (a RecursionError near the stack's
                # limit, writing an op of a runaway recursion) had left a gap in the numbers,
                # and the pool killed the run as an invalid stream, the RecursionError unsaid
                self._sink(event)
                self.seq = seq + 1
                return
            if self.dropped_events == 0 and not closing:
                self._send(
                    {
                        "type": "limit",
                        "what": "events",
                        "cap": self.limits.max_events,
                        "message": f"the trace is capped at {self.limits.max_events} events; later events are counted, not kept",
                    }
                )
            self.dropped_events += 1

    def emit_last(self, event: dict[str, Any]) -> None:
        """Emit ``event`` (the run's ``run_finished``) and close the stream: nothing is
        emitted after it, whatever a snippet's thread that outlived the run still does."""
        with self._emitting:
            self.emit(event, closing=True)
            self.closed = True

    def _send(self, event: dict[str, Any]) -> None:
        # under emit's lock: its one caller
        event["seq"] = self.seq
        event["t"] = time.perf_counter() - self.t0
        self._sink(event)
        self.seq += 1

    def counts(self) -> dict[str, int]:
        """Exact totals so far (the ``counts`` of ``run_finished``, which it includes)."""
        return {
            "ops": self.ops,
            "nodes": self.graph.count + self.graph.dropped,
            "tensors": self.tensors.count,
            "backward_calls": self.backward.calls,
            "optimizer_steps": self.training.total_steps,
            "events": self.seq + self.dropped_events + 1,
            "dropped_ops": self.dropped_ops,
            "dropped_nodes": self.graph.dropped,
            "dropped_events": self.dropped_events,
            "unrecorded": self.failures,
        }

    # --- helpers for the parts --------------------------------------------------------

    def value_or_none(self, t: torch.Tensor | None) -> dict[str, Any] | None:
        if t is None or not self.values:
            return None
        return to_value(t, self.limits.max_value_elements)

    def attribute_write(self, attribute: str, t: Any, value: Any) -> tuple[Any, ...] | None:
        """The arguments of :meth:`on_op` that record ``t.<attribute> = value``, read before
        it runs (NOTE [Attribute writes]); ``None``: not an op."""
        try:
            return attribute_write_op(attribute, t, value)
        except Exception:
            self.observation_failed()
            return None

    def observation_failed(self) -> None:
        """Call from an ``except`` block: gradwalk failed to record something (a tensor it
        cannot read); the snippet carries on as without gradwalk. Re-raises under
        ``GRADWALK_STRICT=1`` (the test suite)."""
        self.failures += 1
        if STRICT:
            raise

    @functools.cached_property
    def statement_lines(self) -> StatementLines:
        """``source_lines`` with every statement whole on each of its lines
        (:func:`source.statement_lines`), for the error hints; made when first asked for."""
        return statement_lines(self.source_lines)

    @property
    def muted(self) -> int:
        """How deep the calling thread is in gradwalk's own work (0: not muted; see mute)."""
        return self._mute.count()

    def mute(self) -> Mute:
        """``with rec.mute():`` runs gradwalk's own tensor work without recording it.

        A plain class, not a generator context manager: it brackets work on hot paths
        (every watched op, module call, backward and optimizer step).
        """
        return self._mute

    @contextlib.contextmanager
    def _quietly(self) -> Iterator[None]:
        """The block runs with none of gradwalk's Python in the way of TorchDynamo: the
        tape mode off and the module hooks aside (NOTE [PyTorch's own compiles] in
        eager.py), and what it runs is part of a library call (no op of the tape, no
        custom Function's call). Dispatch modes stay: torch.export's tracing is one."""
        with self.library_calls.making, torch._C.DisableTorchFunction(), self.modules.aside():
            yield

    def set_detail(self, on: bool) -> None:
        """Switch full recording (tape, graph, backward walk) on or off from the next op.

        # NOTE [Mode only while detailed]
        # Off, the tape mode is taken off PyTorch's stack altogether, so a metrics-only
        # training step pays nothing per op; backward calls are still seen (the backward
        # functions are wrapped), and so are optimizer steps and saved tensors; module calls
        # only where a detector needs them (NOTE [Light module tracking] in modules.py).
        """
        if on == self.detail and (self._mode is not None) == on:
            return  # already so (asked after every optimizer step)
        if self.detail and not on:
            self.loop_ends.remember()  # NOTE [Code after the loop]
        self.detail = on
        self._apply_detail()

    def _apply_detail(self) -> None:
        on = self.detail
        if not self.active:
            return
        self.modules.set_light(not on)
        if on and self._mode is None:
            self._mode = TapeMode(self)
            # NOTE [The tape mode under the snippet's modes] in mode_stack.py
            insert_mode(self._mode, min(self._modes_under, torch._C._len_torch_function_stack()))
        elif not on:
            self.settle_detail()

    def settle_detail(self) -> None:
        """Take the tape mode off PyTorch's stack when recording is metrics-only; from within
        the mode's own handler it is off the stack already (PyTorch puts it back when the
        handler returns), and it goes later (NOTE [Detail switched off after Tensor.backward]
        in backward.py)."""
        if not self.detail and self._mode is not None and self.active and remove_mode(self._mode):
            self._mode = None

    # --- the tape -----------------------------------------------------------------------

    def on_op(
        self,
        func: Any,
        inputs: list[torch.Tensor],
        outputs: list[torch.Tensor],
        args: tuple[Any, ...] = (),
        frames: tuple[FrameType | None, int | None, int | None, bool] | None = None,
        first_version: int | None = None,
        fresh_outputs: bool = False,
        kwargs: dict[str, Any] | None = None,
        handed_back: set[int] | None = None,
        replacing: dict[int, torch.Tensor] | None = None,
    ) -> None:
        """Record one op: its tensors, the nodes it created, and the memory it saved.

        ``args`` and ``kwargs`` are the op's arguments, read for the Python numbers among them;
        ``frames`` is what :func:`snippet_frames` returns, when the caller has it already;
        ``first_version`` is ``args[0]._version`` before the op ran (NOTE [Handed back] in op_recorder.py);
        ``fresh_outputs`` gives every output a new id (a custom Function's, engine/functions.py);
        ``handed_back`` holds the ``id()`` of inputs among the outputs known to be unchanged
        (a module's conversion, engine/library_calls.py), which keep their ids; ``replacing``
        maps the ``id()`` of an output to the input it takes the place of (a buffer the
        conversion replaced), whose new version it is.
        """
        self._op_recorder.record(
            func, inputs, outputs, args, frames, first_version, fresh_outputs, kwargs, handed_back, replacing
        )

    def on_hook(
        self, tensor: torch.Tensor, frames: tuple[FrameType | None, int | None, int | None, bool] | None
    ) -> None:
        """Record that the snippet hooked ``tensor``'s gradient (``Tensor.register_hook``)."""
        self.backward.snippet_hooks = True  # (NOTE [Writes through .data] in backward.py)
        frame, line, _, in_setup = frames or snippet_frames()
        if not in_setup:
            tid = self.tensors.ensure(tensor, line=line, frame=frame)
            self.emit({"type": "hook_registered", "tensor": tid, "line": line})

    def report_memory(self, line: int | None) -> None:
        """Emit a memory event if the bytes held changed since the last one."""
        if self.memory.saved_bytes != self.memory.reported:
            self._emit_memory(self.memory.saved_bytes, line)

    def _emit_memory(self, held: int, line: int | None) -> None:
        memory = self.memory
        delta = held - memory.reported
        memory.reported = held
        self.emit(
            dict(type="memory", saved_bytes=held, delta=delta, cuda_allocated=cuda_allocated(), line=line)
        )

    # --- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> Recorder:
        self.active = True
        self._gc_threshold = gc.get_threshold()
        # NOTE [Garbage collection while recording]
        # Recording keeps many small objects alive (events, node hooks, torch's hook dicts
        # and handles), and a collection of the young generation costs ~0.7 us per live
        # object here: at the default thresholds the collector took a quarter of a detailed
        # run, rescanning the same objects again and again. So, as ``timeit`` does, the
        # recorder keeps the collector out of the run: what exists before it is frozen and
        # the young generation is collected only after 1,000,000 net new objects (a
        # safety valve for snippets that make cyclic garbage in long loops). Both are undone
        # on exit (the run's objects then join the oldest generation without a scan, as
        # long-lived data does), so cyclic garbage is collected later, never leaked.
        gc.freeze()
        gc.set_threshold(max(self._gc_threshold[0], _GC_YOUNG_THRESHOLD), *self._gc_threshold[1:])
        self._global_settings = saved_settings()  # put back on exit (engine/process_settings.py)
        # where the tape mode goes on the stack (NOTE [The tape mode under the snippet's modes])
        self._modes_under = torch._C._len_torch_function_stack()
        try:
            self.modules.install()
            self.memory.install()
            self.snippet_saved_hooks.install()
            self.training.install()
            self.backward.install()
            self.eager.install()
            self.functions.install()
            self.threads.install()
            self.library_calls.install()
            self._apply_detail()
        except BaseException:
            self._uninstall()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._uninstall()

    def _uninstall(self) -> None:
        self.active = False
        # the run's survivors join the oldest generation unscanned (freeze moves every
        # generation aside and zeroes the counts), rather than being rescanned at once
        gc.freeze()
        gc.unfreeze()
        gc.set_threshold(*self._gc_threshold)
        restore_settings(self._global_settings)
        try:
            if self._mode is not None:
                remove_mode(self._mode)
                self._mode = None
        finally:
            try:
                self.memory.remove()
            finally:
                self.snippet_saved_hooks.remove()
                self.modules.remove()
                self.training.remove()
                self.backward.remove()
                self.eager.remove()
                self.functions.remove()
                self.threads.remove()
                self.library_calls.remove()

    def finish(self, scope: dict[str, Any]) -> None:
        """Name what ``scope`` still binds and emit the final state of named leaves."""
        # memory events are thinned as the total grows (see on_op): the run's last word is
        # exact, so a chart of graph memory ends where the run did. Before it, the peak of
        # metrics-only backward calls no optimizer step reported (NOTE [Memory of
        # metrics-only steps])
        memory = self.memory
        if memory.peak_unreported:
            peak = memory.take_peak()
            if peak > max(memory.reported, memory.saved_bytes):
                self._emit_memory(peak, None)
        self.report_memory(None)
        with self.mute():
            self.pitfalls.on_finish(scope)
            # module-level names win over provisional ones (NOTE [Outer names win] in
            # source.py), parameters' qualified names over a variable's
            self.modules.name_in_scope(scope)
            self.tensors.name_all(scope)
            for tid, name in self.tensors.final_tensors():
                t = self.tensors.tensor(tid)
                if t is None:
                    continue
                self.emit(
                    dict(
                        type="tensor_final",
                        id=tid,
                        name=name,
                        value=self.value_or_none(t),
                        grad=self.value_or_none(t.grad),
                    ),
                    closing=True,
                )
        self.tensors.forget_objects()
        self.graph.forget()
