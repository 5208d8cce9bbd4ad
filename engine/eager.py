"""While recording, ``torch.compile`` hands back what it was given: the snippet runs eagerly.

gradwalk shows autograd op by op; a compiled function would run as one opaque graph, and
TorchDynamo traces into the tape mode's Python handler and fails there. So ``torch.compile``
is replaced for the run by one that returns its argument unchanged (a decorator when called
with options only), and says so once on the snippet's stderr. The numbers are eager
PyTorch's, which compiled code is meant to reproduce.

# NOTE [PyTorch's own compiles]
PyTorch calls ``torch.compile`` itself where its correctness needs it: ``torch.cond`` runs its
branches through TorchDynamo (``_hop_compile_and_call``), which turns them into graphs whose
outputs are tuples, and its backward relies on that. Handed back the snippet's branches
unchanged, a branch that returns one tensor made the backward fail inside PyTorch
("object of type 'bool' has no len()"), where the same script runs without gradwalk. So
``torch.cond``'s compile of its own function gets the real ``torch.compile``, and the
compiled function runs with gradwalk's Python out of TorchDynamo's way (the ``quiet`` context
the recorder gives: the tape mode off, gradwalk's module hooks aside), which would otherwise
trace into it and stop there. What that call runs is therefore not on the tape; the
``torch.cond`` call is one op (NOTE [Library calls as one op]). PyTorch's other compiles of
its own (``scan``, ``while_loop``, ``map``, flex attention's) run eagerly, as the snippet's
do: they run as without gradwalk so, and their op (``ops.higher_order.scan``) is on the tape.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["NOTICE", "EagerCompile"]

NOTICE = "gradwalk: torch.compile is skipped while recording; the code runs eagerly, op by op\n"
# the modules of PyTorch whose functions get the real torch.compile (NOTE [PyTorch's own compiles])
_COMPILED_AS_ASKED = frozenset({"torch._higher_order_ops.cond"})


class EagerCompile:
    """Install / remove the eager stand-in for ``torch.compile``; ``quiet()``: the context a
    compile PyTorch asks for itself runs in (NOTE [PyTorch's own compiles])."""

    def __init__(self, quiet: Callable[[], contextlib.AbstractContextManager[Any]]) -> None:
        self._quiet = quiet
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
        original = self._original
        if original is not None and getattr(model, "__module__", None) in _COMPILED_AS_ASKED:
            return self._pytorchs_own(original(model, *args, **kwargs))
        # a compile PyTorch asks for itself (flex attention's, scan's) is not the snippet's to be told of
        pytorchs_own = sys._getframe(1).f_globals.get("__name__", "").startswith("torch.")
        if not self._told and not pytorchs_own:
            self._told = True
            sys.stderr.write(NOTICE)
        if model is None:  # @torch.compile(backend=...) -> a decorator
            return lambda fn: fn
        return model

    def _pytorchs_own(self, compiled: Callable[..., Any]) -> Callable[..., Any]:
        """``compiled``, PyTorch's own compile of a function, run in the quiet context."""
        quiet = self._quiet

        def run(*args: Any, **kwargs: Any) -> Any:
            with quiet():
                return compiled(*args, **kwargs)

        return run
