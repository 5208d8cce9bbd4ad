"""Calls of custom ``torch.autograd.Function`` classes, recorded as ops of the tape.

``Square.apply(x)`` is not a function the tape mode sees: only the ops inside ``forward``
are (run under no_grad, they build no graph), and the node the call creates
(``BackwardCFunction`` named ``SquareBackward``) was found only when a later op used its
output. A custom Function whose output was the loss had no node, and its backward walk ran
no recorded node at all. While recording, ``Function.apply`` is wrapped: once the original
returns, the call is recorded as one op named after the class (api ``Square.apply``), its
node and edges like any op's. Its outputs get new ids: the tensor ``forward`` returned was
recorded (by the op that made it) without grad, and ``apply`` gave it its autograd identity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .op_arguments import tensors_in

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["FunctionCalls"]

# stand-ins by (module, qualified name): the tape's op_names caches by function, so a class
# defined anew by each run of a snippet reuses one stand-in rather than adding another
_NAMED: dict[tuple[str, str], Any] = {}


class FunctionCalls:
    """Install / remove the wrapper of ``torch.autograd.Function.apply``."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._original: Any = None

    def install(self) -> None:
        original = torch.autograd.Function.__dict__["apply"]  # the classmethod itself
        self._original = original
        record = self._record

        def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
            result = original.__func__(cls, *args, **kwargs)
            record(cls, args, kwargs, result)
            return result

        torch.autograd.Function.apply = classmethod(apply)  # type: ignore[assignment,method-assign]

    def remove(self) -> None:
        if self._original is not None:
            torch.autograd.Function.apply = self._original  # type: ignore[method-assign]
            self._original = None

    def _record(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        rec = self._rec
        # the tape is the recording thread's and the snippet's threads' (threads.py): another
        # thread's calls (PyTorch's own) are not the tape's; nor are those a library call
        # recorded as one op made (NOTE [Library calls as one op] in library_calls.py)
        if (
            not rec.active
            or rec.muted
            or rec.library_calls.making.depth
            or not rec.detail
            or rec.in_optimizer
            or not rec.threads.on_tape()
        ):
            return
        outputs: list[torch.Tensor] = []
        tensors_in(result, outputs)
        if not outputs:
            return
        inputs: list[torch.Tensor] = []
        tensors_in(args, inputs)
        if kwargs:
            tensors_in(tuple(kwargs.values()), inputs)
        try:
            # muted: outside the tape mode's handler, the record's own reads of the outputs
            # (a value's reshape) were ops of the snippet, a dangling ViewBackward0 on the graph
            with rec.mute():
                rec.on_op(_stand_in(cls), inputs, outputs, args, fresh_outputs=True)
            rec.pitfalls.on_function_applied(cls)
        except Exception:
            rec.observation_failed()  # the call ran; only its record is lost


def _stand_in(cls: type) -> Any:
    """A function the tape's :func:`~engine.tape.op_names` reads as ``(Square, Square.apply)``."""
    key = (cls.__module__, cls.__qualname__)
    named = _NAMED.get(key)
    if named is None:

        def named(*args: Any) -> None:  # never called: only its names are read
            return None

        named.__name__ = cls.__name__
        named.__qualname__ = f"{cls.__qualname__}.apply"
        named.__module__ = cls.__module__
        _NAMED[key] = named
    return named
