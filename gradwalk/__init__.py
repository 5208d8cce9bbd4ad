"""gradwalk: watch PyTorch's autograd work.

The public, importable face of the project, for snippets and notebooks:

* ``gradwalk.log(name, value)`` logs a metric from a recorded snippet (a no-op elsewhere);
* ``gradwalk.detail_next_step()`` asks for the next optimizer step in full detail;
* ``gradwalk.record(source)`` records a snippet and returns its :class:`engine.events.Trace`;
* ``gradwalk.watch(source)`` and ``gradwalk.watch_call(fn, *args)`` record a snippet or a
  function call for a notebook: the :class:`gradwalk.notebook.Recording` they return shows
  the graph and the backward stepper inline, and saves, exports and opens in the app;
  ``gradwalk.load(path)`` reads a trace file back as one.
"""

from __future__ import annotations

from engine.api import detail_next_step, log

from .notebook import Recording, load, watch, watch_call

__all__ = ["Recording", "detail_next_step", "load", "log", "record", "watch", "watch_call"]


def __getattr__(name: str) -> object:
    if name == "record":
        from engine.run import record

        return record
    raise AttributeError(name)
