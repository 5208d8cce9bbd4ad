"""How :class:`~.detectors.PitfallWatch` takes the recorder's calls: each guarded, so that a
detector's own failure never breaks the user's run, and told the snippet's line lazily.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..source import snippet_frame

__all__ = ["UNKNOWN", "Unknown", "guarded", "known", "nothing"]


def guarded(method: Callable[..., None]) -> Callable[..., None]:
    """``method`` of an object with a ``_rec`` (the Recorder), its exceptions counted as
    things gradwalk failed to observe (``Recorder.observation_failed``) and swallowed."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            method(self, *args, **kwargs)
        except Exception:
            self._rec.observation_failed()

    return call


def nothing(*args: Any, **kwargs: Any) -> None:
    """What every hook becomes when the detectors are off."""
    return None


class Unknown:
    """A snippet line not looked up yet (walking the stack costs; most calls report nothing)."""


UNKNOWN = Unknown()


def known(line: int | Unknown | None) -> int | None:
    """``line``, looked up now if it is :data:`UNKNOWN`: call it from within the hook that
    received ``line``, while the snippet is still on the stack."""
    return snippet_frame()[1] if isinstance(line, Unknown) else line
