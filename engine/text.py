"""Text an event can carry: what every JSON encoder can write.

No torch here: the server's process (which never loads torch) uses it through the runner.
"""

from __future__ import annotations

__all__ = ["writable"]


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
