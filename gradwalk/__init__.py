"""gradwalk: watch PyTorch's autograd work.

The public, importable face of the project, for snippets and notebooks:

* ``gradwalk.log(name, value)`` logs a metric from a recorded snippet (a no-op elsewhere);
* ``gradwalk.detail_next_step()`` asks for the next optimizer step in full detail;
* ``gradwalk.record(source)`` records a snippet and returns its :class:`engine.events.Trace`.
"""

from __future__ import annotations

from engine.api import detail_next_step, log

__all__ = ["detail_next_step", "log", "record"]


def __getattr__(name: str) -> object:
    if name == "record":
        from engine.run import record

        return record
    raise AttributeError(name)
