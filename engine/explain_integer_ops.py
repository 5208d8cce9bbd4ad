"""Hints for tensors of whole numbers, or of many numbers, where an op wants others:

- ``F.softmax(x, dim=0)``, ``torch.randn_like(x)`` and other ops of real numbers given an
  integer tensor (``"softmax_lastdim_kernel_impl" not implemented for 'Long'``);
- ``float(acc)`` or ``int(t)`` of a tensor of several numbers (``.item()``'s own error has
  its hint in explain_ops.py; ``math.exp(x)`` in explain_factories.py).

Each names the snippet's tensor, its dtype or size, and the fix; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType

import torch

from .explain_reading import calls, literal, wrapped
from .source import find_name

__all__ = ["integer_op_hint"]

_INTEGER_KERNEL = re.compile(
    r"\"(\w+)\" not implemented for '(Long|Int|Short|Char|Byte|Bool)'|(std and var) only support floating point"
)
_ONE_NUMBER = "only one element tensors can be converted to Python scalars"


def integer_op_hint(
    text: str, code: str | None, frame: FrameType | None, failed: tuple[str, Sequence[torch.Tensor]] | None
) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``), by the op
    the tape saw fail (``failed``: its name and tensors), that the module's docstring lists;
    ``None`` for any other."""
    kernel = _INTEGER_KERNEL.search(text)
    if kernel and failed is not None:
        return _integer_input(failed, code, frame)
    if _ONE_NUMBER in text:
        return _one_number_of_many(code, frame)
    return None


def _integer_input(
    failed: tuple[str, Sequence[torch.Tensor]], code: str | None, frame: FrameType | None
) -> str | None:
    """An op of real numbers given a tensor of integers (or booleans)."""
    op, tensors = failed
    given = next((t for t in tensors if not t.is_floating_point() and not t.is_complex()), None)
    if given is None:
        return None
    name = find_name(given, frame) or _written_operand(given, code, frame)
    if name is None:
        return None
    what = "True/False values" if given.dtype == torch.bool else "whole numbers"
    dtype = str(given.dtype).removeprefix("torch.")
    made = (
        " (torch.tensor of whole numbers, torch.arange and torch.randint make int64)"
        if given.dtype == torch.int64
        else ""
    )
    return (
        f"{op.strip('_')} computes with real numbers, and {name} holds {what} ({dtype}){made}, which it has no "
        f"version for. Convert it first, {wrapped(name)}.float(), or make it of floats (torch.tensor([1.0, 2.0]), "
        "dtype=torch.float32)."
    )


def _written_operand(t: torch.Tensor, code: str | None, frame: FrameType | None) -> str | None:
    """The source of an argument on the line that evaluates, by name, to tensor ``t``."""
    for node in calls(code):
        for arg in node.args:
            if literal(ast.unparse(arg), frame) is t:
                return ast.unparse(arg)
    return None


def _one_number_of_many(code: str | None, frame: FrameType | None) -> str | None:
    """``float(acc)`` (or ``int``, ``bool``) of a tensor of several numbers."""
    for node in calls(code):
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in ("float", "int") and len(node.args) == 1):
            continue
        x = ast.unparse(node.args[0])
        held = literal(x, frame)
        if not isinstance(held, torch.Tensor) or held.numel() < 2:
            continue
        w = wrapped(x)
        if held.dtype == torch.bool:
            reduce = f"{w}.float().mean().item() (the fraction of True values, an accuracy) or {w}.sum().item() (a count)"
        elif held.is_floating_point():
            reduce = f"{w}.mean().item() or {w}.sum().item()"
        else:
            reduce = f"{w}[i].item() for the one at i"
        return (
            f"{func.id}() reads one number out of a tensor, and {x} holds {held.numel()}, shape "
            f"{tuple(held.shape)}. Take one number: {reduce}; {w}.tolist() gives all of them."
        )
    return None
