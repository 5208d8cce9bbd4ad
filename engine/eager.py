"""While recording, ``torch.compile`` hands back what it was given: the snippet runs eagerly.

gradwalk shows autograd op by op; a compiled function would run as one opaque graph, and
TorchDynamo traces into the tape mode's Python handler and fails there. So ``torch.compile``
is replaced for the run by one that returns its argument unchanged (a decorator when called
with options only), and says so once on the snippet's stderr. The numbers are eager
PyTorch's, which compiled code is meant to reproduce.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["NOTICE", "EagerCompile"]

NOTICE = "gradwalk: torch.compile is skipped while recording; the code runs eagerly, op by op\n"


class EagerCompile:
    """Install / remove the eager stand-in for ``torch.compile``."""

    def __init__(self) -> None:
        self._original: Callable[..., Any] | None = None
        self._told = False

    def install(self) -> None:
        self._original = torch.compile
        torch.compile = self._compile

    def remove(self) -> None:
        if self._original is not None:
            torch.compile = self._original
            self._original = None

    def _compile(self, model: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not self._told:
            self._told = True
            sys.stderr.write(NOTICE)
        if model is None:  # @torch.compile(backend=...) -> a decorator
            return lambda fn: fn
        return model
