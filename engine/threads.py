"""Record the tensor ops of threads a snippet starts, as its own.

# NOTE [Threads]
PyTorch keeps a thread's TorchFunctionMode stack, grad mode and saved-tensor hooks to that
thread: a snippet that runs ``(x ** 3).backward()`` in a ``threading.Thread`` had its op
unrecorded, and its backward walked "0 nodes" (module, node and optimizer hooks are global
and did see it). While a recorder is installed, every ``Thread.start`` wraps the thread's
``run`` (an instance attribute: a subclass's own ``run`` is wrapped too) so that the thread
runs inside a tape mode of its own (which records in full detail when the run does, as the
main thread's) and the recorder's saved-tensor hooks. A thread still running after the recorder is removed records nothing
more (``Recorder.active``; the tape mode checks it), and nothing is emitted after
``run_finished`` (``Recorder.emit_last``). Threads that run at the same time record one op
or backward call at a time (``Recorder.serial``), in the order their ops finish; events are
numbered and handed to the sink one at a time; gradwalk's own work is muted per thread (its
mute on one thread once hid another thread's ops from the tape). A custom
``autograd.Function`` is recorded on these threads as on the recorder's (``recording``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .tape import TapeMode

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["SnippetThreads"]


class SnippetThreads:
    """Wraps ``threading.Thread.start`` between :meth:`install` and :meth:`remove`."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._original: Callable[[threading.Thread], None] | None = None
        # the snippet's threads running in a tape mode now, by threading.get_ident()
        self.recording: set[int] = set()
        self._recorder_thread = 0

    def install(self) -> None:
        original = threading.Thread.start
        self._original = original
        self._recorder_thread = threading.get_ident()
        recorded = self._recorded

        def start(thread: threading.Thread) -> None:
            run = thread.run
            thread.run = lambda: recorded(run)  # type: ignore[method-assign]
            original(thread)

        threading.Thread.start = start  # type: ignore[method-assign,assignment]

    def on_tape(self) -> bool:
        """Whether the calling thread's ops are the tape's: the recorder's own thread (the one
        that installed it) or a snippet's thread, not one of PyTorch's own."""
        thread = threading.get_ident()
        return thread == self._recorder_thread or thread in self.recording

    def remove(self) -> None:
        if self._original is not None:
            threading.Thread.start = self._original  # type: ignore[method-assign,assignment]
            self._original = None

    def _recorded(self, run: Callable[[], Any]) -> None:
        with self._recording():
            run()

    @contextlib.contextmanager
    def _recording(self) -> Iterator[None]:
        """The recorder's tape mode and saved-tensor hooks, on this thread's own stacks;
        nothing when the recorder is gone or fails to enter them (the thread runs as it would)."""
        rec = self._rec
        ident = threading.get_ident()
        with contextlib.ExitStack() as stack:
            try:
                if rec.active:
                    stack.enter_context(rec.memory.hooks())
                    stack.enter_context(TapeMode(rec))
                    self.recording.add(ident)
                    stack.callback(self.recording.discard, ident)
            except Exception:
                rec.observation_failed()
            yield
