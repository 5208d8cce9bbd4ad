"""Text an event can carry: what every JSON encoder can write.

No torch here: the server's process (which never loads torch) uses it through the runner.
"""

from __future__ import annotations

import re

__all__ = ["exception_text", "without_terminal_codes", "writable"]


def writable(text: str) -> str:
    """``text`` as UTF-8 can carry it: a lone surrogate (``chr(0xd800)`` in an exception's
    message, say) becomes its escape ``\\ud800``, as Python's own stderr writes it. Such a
    string is a valid ``str`` but no JSON encoder writes it, so an event holding it could
    not leave the engine."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


_TERMINAL_CODES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def without_terminal_codes(text: str) -> str:
    """``text`` without the escape codes a terminal reads as colour or bold (PyTorch's
    ``torch.load`` message has some): on a web page they are noise."""
    return _TERMINAL_CODES.sub("", text)


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, or what Python's own traceback prints where that raises (an exception
    class whose ``__str__`` fails took the recorder down with it)."""
    try:
        return str(exc)
    except Exception:
        return "<exception str() failed>"
