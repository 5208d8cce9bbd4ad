"""gradwalk's engine: record real PyTorch autograd as one typed event stream.

The engine knows PyTorch and nothing about HTTP. ``engine.events`` (the contract) imports
pydantic only; the recording functions import torch on first use, so the server can use
the event schema without paying for ``import torch``.

>>> from engine import record
>>> trace = record("import torch\\na = torch.tensor(2.0, requires_grad=True)\\n(a * a).backward()\\n")
>>> trace.events[-1].status
'ok'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["log", "record", "record_stream"]

if TYPE_CHECKING:
    from .api import log
    from .run import record, record_stream


def __getattr__(name: str) -> Any:
    if name in ("record", "record_stream"):
        from . import run

        return getattr(run, name)
    if name == "log":
        from .api import log

        return log
    raise AttributeError(name)
