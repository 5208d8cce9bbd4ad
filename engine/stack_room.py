"""Room on the main thread's stack for freeing a deep graph.

NOTE [Room on the stack for freeing deep graphs]
PyTorch frees a graph node by node in a loop (``deleteNode``), but a node whose ``grad_fn``
Python has seen is freed recursively, one C++ frame (about 190 bytes of stack) per node of
the chain behind it. A recording looks at every node, so a snippet whose graph was a
43,000-node chain (a 16,000-step RNN unrolled by hand, ``h = h + 0.0`` 43,000 times) died
of a segfault, with no trace, when the graph was freed at the end of the run or by the
snippet's own ``del h``; plain PyTorch frees a 200,000-node chain. While a snippet runs (and
its namespace is freed) the main thread's stack may grow to :data:`ROOM` (the soft
``RLIMIT_STACK``, raised where the hard limit allows and put back after): room for some
340,000 nodes. Linux grows the main thread's stack on demand up to the current soft limit,
and only pages touched are used. Another thread's stack is fixed when it starts: nothing
to do there.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

try:
    import resource
except ImportError:  # (Windows: no rlimits)
    resource = None  # type: ignore[assignment]

__all__ = ["ROOM", "stack_room"]

ROOM = 64 << 20


@contextlib.contextmanager
def stack_room() -> Iterator[None]:
    """Let the main thread's stack grow to :data:`ROOM` while the block runs
    (NOTE [Room on the stack for freeing deep graphs]); elsewhere, or where the limits
    cannot be read or raised, the block runs as it is."""
    before = _raised()
    try:
        yield
    finally:
        if before is not None:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_STACK, before)


def _raised() -> tuple[int, int] | None:
    """Raise the soft stack limit to :data:`ROOM`; the limits before, or ``None`` if unchanged."""
    if resource is None or threading.current_thread() is not threading.main_thread():
        return None
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        want = ROOM if hard == resource.RLIM_INFINITY else min(ROOM, hard)
        if soft == resource.RLIM_INFINITY or soft >= want:
            return None
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    except (ValueError, OSError):
        return None
    return soft, hard
