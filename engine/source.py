"""Find where in the snippet the current operation comes from, and what names it uses.

The snippet is compiled with the file name :data:`SNIPPET_FILENAME`, so its frames can be
told apart from PyTorch's own while walking the Python stack.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

__all__ = ["SNIPPET_FILENAME", "find_name", "in_library_setup", "snippet_frames"]

SNIPPET_FILENAME = "<gradwalk-snippet>"
_SETUP_FUNCTIONS = frozenset({"__init__", "reset_parameters", "_reset_parameters", "reset_running_stats"})


def snippet_frames() -> tuple[FrameType | None, int | None, int | None]:
    """Return ``(innermost snippet frame, its line, the outermost snippet line)``.

    All three are ``None`` when no snippet code is on the stack (e.g. during set-up).
    """
    f: FrameType | None = sys._getframe(1)
    inner: FrameType | None = None
    outer_line: int | None = None
    while f is not None:
        if f.f_code.co_filename == SNIPPET_FILENAME:
            if inner is None:
                inner = f
            outer_line = f.f_lineno
        f = f.f_back
    if inner is None:
        return None, None, None
    return inner, inner.f_lineno, outer_line


def in_library_setup() -> bool:
    """Tell whether PyTorch is constructing a module (``nn.Linear.__init__`` and the like).

    Ops that initialise a library layer's parameters are not the snippet's computation and
    are left off the tape; the parameters appear when the snippet first uses them.
    """
    f: FrameType | None = sys._getframe(2)
    while f is not None:
        code = f.f_code
        if code.co_filename == SNIPPET_FILENAME:
            return False
        if code.co_name in _SETUP_FUNCTIONS and "torch" in code.co_filename:
            return True
        f = f.f_back
    return False


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
