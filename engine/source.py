"""Find where in the snippet the current operation comes from, and what names it uses.

The snippet is compiled with the file name :data:`SNIPPET_FILENAME`, so its frames can be
told apart from PyTorch's own while walking the Python stack.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

__all__ = ["SNIPPET_FILENAME", "find_name", "snippet_frame", "snippet_frames"]

SNIPPET_FILENAME = "<gradwalk-snippet>"
_SETUP_FUNCTIONS = frozenset({"__init__", "reset_parameters", "_reset_parameters", "reset_running_stats"})


def snippet_frames() -> tuple[FrameType | None, int | None, int | None, bool]:
    """Return ``(innermost snippet frame, its line, the outermost snippet line, in_setup)``.

    ``in_setup`` tells that PyTorch is constructing a library module (``nn.Linear.__init__``
    and the like) on the way from the caller to the snippet: such ops initialise parameters,
    are not the snippet's computation, and are left off the tape. The frames are ``None``
    when no snippet code is on the stack.
    """
    f: FrameType | None = sys._getframe(1)
    inner: FrameType | None = None
    outer_line: int | None = None
    in_setup = False
    while f is not None:
        code = f.f_code
        if code.co_filename == SNIPPET_FILENAME:
            if inner is None:
                inner = f
            outer_line = f.f_lineno
        elif inner is None and code.co_name in _SETUP_FUNCTIONS and "torch" in code.co_filename:
            in_setup = True
        f = f.f_back
    if inner is None:
        return None, None, None, in_setup
    return inner, inner.f_lineno, outer_line, in_setup


def snippet_frame() -> tuple[FrameType | None, int | None]:
    """Return ``(innermost snippet frame, its line)``, or ``(None, None)`` outside the snippet.

    The cheap form of :func:`snippet_frames` for callers that need only the innermost
    frame: it stops walking the stack there (optimizer steps and backward calls use it on
    every training step).
    """
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == SNIPPET_FILENAME:
            return f, f.f_lineno
        f = f.f_back
    return None, None


def find_name(obj: Any, frame: FrameType | None) -> str | None:
    """Return a variable name bound to ``obj`` in ``frame`` (locals, then globals), if any."""
    if frame is None:
        return None
    for scope in (frame.f_locals, frame.f_globals):
        for key, value in scope.items():
            if value is obj and not key.startswith("_"):
                return key
        if frame.f_locals is frame.f_globals:
            break
    return None
