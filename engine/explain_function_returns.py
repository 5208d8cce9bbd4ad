"""Hints for a custom ``torch.autograd.Function`` whose backward reads or returns the wrong kind
of thing, beyond explain_functions.py:

- ``x = ctx.saved_tensors`` (no unpacking): ``saved_tensors`` is a tuple even of one tensor, so
  ``2 * x * g`` repeats a tuple (``only integer tensors of a single element can be converted to
  an index``) and ``x.mul(g)`` finds no such attribute;
- ``return 2`` from backward: a number where a gradient goes (``expected Variable or None (got
  int)``).

Each names the snippet's Function and variables; ``None`` for any other error."""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from types import FrameType

import torch

from .source import visible_names

__all__ = ["function_return_hint"]

_NOT_A_GRADIENT = re.compile(r"expected Variable or None \(got (\w+)\)")


def function_return_hint(
    text: str, code: str | None, frame: FrameType | None, source_lines: Sequence[str]
) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``) of a snippet
    of ``source_lines`` that the module's docstring lists; ``None`` for any other."""
    returned = _NOT_A_GRADIENT.search(text)
    if returned:
        return _number_returned(returned.group(1), frame)
    if "tuple" in text or "converted to an index" in text:  # (what arithmetic on a tuple raises)
        return _saved_tuple(code, frame, source_lines)
    return None


def _saved_tuple(code: str | None, frame: FrameType | None, source_lines: Sequence[str]) -> str | None:
    """A name on the line holds ``ctx.saved_tensors`` whole, a tuple, where a tensor was meant."""
    if frame is None or not code:
        return None
    scope = frame.f_locals
    for name in dict.fromkeys(re.findall(r"(?<![\w.])[^\W\d]\w*", code)):
        held = scope.get(name)
        if not (isinstance(held, tuple) and held and all(isinstance(t, torch.Tensor) for t in held)):
            continue
        assigned = re.compile(rf"^\s*{name}\s*=\s*(\w+)\.saved_tensors\s*$")
        ctx = next((m.group(1) for m in map(assigned.match, source_lines) if m), None)
        if ctx is None:
            continue
        n = len(held)
        names = _saved_names(n, source_lines) or (
            ", ".join(f"t{i}" for i in range(n)) if n > 1 else name + ","
        )
        return (
            f"{name} is {ctx}.saved_tensors whole: a tuple of the {n} tensor{'s' if n != 1 else ''} save_for_backward "
            f"kept ({'even one is a tuple of one' if n == 1 else 'in the order saved'}), not a tensor, so this line "
            f"works on a tuple. Unpack it: {names} = {ctx}.saved_tensors{' (the comma unpacks it)' if n == 1 else ''}."
        )
    return None


def _saved_names(n: int, source_lines: Sequence[str]) -> str | None:
    """The names the snippet's ``save_for_backward(a, b)`` saves, where it saves ``n`` plain names."""
    for line in source_lines:
        saved = re.search(r"\.save_for_backward\(([\w\s,]*)\)", line)
        names = [p.strip() for p in saved.group(1).split(",") if p.strip()] if saved else []
        if len(names) == n:
            return ", ".join(names) + ("," if n == 1 else "")
    return None


def _number_returned(kind: str, frame: FrameType | None) -> str:
    """A custom Function's backward returned a Python number where a gradient goes."""
    functions = [
        (name, value)
        for name, value in visible_names(frame).items()
        if isinstance(value, type)
        and issubclass(value, torch.autograd.Function)
        and value.__module__ == "__main__"
    ]
    name, grad = "the Function's", "grad_output"
    if len(functions) == 1:
        name = f"{functions[0][0]}'s"
        try:
            params = list(inspect.signature(functions[0][1].backward).parameters)
        except (TypeError, ValueError):  # a backward inspect cannot read
            params = []
        grad = params[1] if len(params) > 1 else grad
    return (
        f"{name} backward returned a Python {kind} where a gradient goes: backward returns, for each input of "
        f"forward, a tensor of that input's shape (or None). Apply the chain rule to the gradient it is given: "
        f"return {grad} * (the derivative), such as {grad} * 2 for forward's x * 2, not the derivative alone."
    )
