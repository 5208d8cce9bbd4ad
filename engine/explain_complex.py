"""Hints for complex tensors met by ops made for real numbers (explain_linalg.py has backward()
of a complex loss and mse_loss of complex tensors):

- an op that orders numbers (``>``, ``max``, ``sort``, ``relu``, ``clamp``): complex numbers
  have no order, so order them by a real number of each, ``z.abs()`` or ``z.real``;
- ``float(z)`` of a complex number (PyTorch's message speaks of an overflow);
- a layer with real weights given a complex input (read as a dtype mismatch):
  ``dtype=torch.cfloat`` or the real and imaginary parts apart;
- ``torch.view_as_complex`` of a tensor whose last dimension is not 2 (real, imaginary).

Each names the line's complex tensor (its dtype and values); ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from types import FrameType

import torch

from .explain_reading import call_name, calls, first_argument, syntax_tree
from .source import bound_to, is_module

__all__ = ["complex_hint"]

# '"gt_cpu" not implemented for 'ComplexFloat'', '"max_all" …', "clamp is not supported for
# complex types", "Sort does not support complex dtypes on CPU"
_ORDERED = re.compile(
    r"\"(gt|lt|ge|le|max|min|argmax|argmin|topk|maximum|minimum|clamp\w*)(?:_all|_cpu|_elementwise_cpu)?\" "
    r"not implemented for 'Complex\w+'|(clamp) is not supported for complex types|(Sort) does not support complex"
)
_TO_REAL = "value cannot be converted to type double without overflow"
_SAME_DTYPE = re.compile(r"(?:same dtype|should be the same).*(?:Complex|complex<)", re.S)
_PAIRS = "Tensor must have a last dimension of size 2"
_COMPARISONS = {ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<="}


def complex_hint(exc: BaseException, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` at a line reading ``code`` (run in ``frame``) that the
    module's docstring lists, else ``None``."""
    text = str(exc)
    ordered = _ORDERED.search(text)
    if ordered:
        found = _complex_on_line(code, frame)
        if found is None:
            return None
        op = next(g for g in ordered.groups() if g).lower()
        return _unordered(op, *found, code)
    if _TO_REAL in text:
        converted = next(
            (c for c in calls(code) if call_name(c) in ("float", "int") and len(c.args) == 1), None
        )
        found = _complex_on_line(ast.unparse(converted.args[0]) if converted else None, frame)
        if converted is None or found is None:
            return None
        name, value = found
        kind = call_name(converted)
        return (
            f"{name} is {_complex_value(value)}, and {kind}() takes a real "
            f"number; PyTorch's message speaks of an overflow, but nothing is too large. Take the real number you "
            f"mean: {kind}({name}.real), or {kind}({name}.abs()) for its size ({name}.item() gives a Python complex)."
        )
    if _SAME_DTYPE.search(text):
        return _real_layer(code, frame)
    if _PAIRS in text:
        viewed = first_argument(code, "view_as_complex", frame)
        if viewed is None:
            return None
        name, sizes = viewed
        return (
            f"torch.view_as_complex reads the last dimension as (real part, imaginary part) pairs, so it must hold "
            f"2{sizes}. To make complex numbers of real ones, torch.complex({name}, torch.zeros_like({name})) (or "
            f"{name}.to(torch.cfloat)); from two tensors of real and imaginary parts, torch.complex(re, im)."
        )
    return None


def _complex_value(value: torch.Tensor) -> str:
    """``the complex number (1+2j)`` for one number, ``complex (complex64)`` for more."""
    return f"the complex number {value.item()}" if value.numel() == 1 else f"complex ({_dtype(value)})"


def _dtype(value: torch.Tensor) -> str:
    return str(value.dtype).removeprefix("torch.")


def _complex_on_line(code: str | None, frame: FrameType | None) -> tuple[str, torch.Tensor] | None:
    """The first name (or ``name.grad`` of a leaf) on the line bound to a complex tensor."""
    tree = syntax_tree(code)
    for node in ast.walk(tree) if tree else ():
        if not isinstance(node, ast.Name | ast.Attribute):
            continue
        written = ast.unparse(node)
        value = bound_to(written, frame) if isinstance(node, ast.Name) else None
        if isinstance(node, ast.Attribute) and node.attr == "grad":
            owner = bound_to(ast.unparse(node.value), frame)
            value = owner.grad if isinstance(owner, torch.Tensor) and owner.is_leaf else None
        if isinstance(value, torch.Tensor) and value.is_complex():
            return written, value
    return None


def _unordered(op: str, name: str, value: torch.Tensor, code: str | None) -> str:
    """An op that orders numbers, given complex ones."""
    start = (
        f"{name} is complex ({_dtype(value)}), and complex numbers have no order: no one of them is larger than "
        f"another, so {_op_named(op, code)} has no meaning for them."
    )
    if op in ("clamp", "relu") or op.startswith("clamp"):
        return (
            f"{start} Apply it to the real and imaginary parts apart, torch.complex(torch.relu({name}.real), "
            f"torch.relu({name}.imag)), or to the size, {name}.abs()."
        )
    if op == "sort":
        return (
            f"{start} Sort by a real number of each, their size: order = {name}.abs().argsort(), then {name}[order] "
            "(or by the real part, .real)."
        )
    if op in ("max", "min", "argmax", "argmin", "topk"):
        arg = "argmax" if op in ("max", "argmax", "topk") else "argmin"
        return (
            f"{start} Compare their sizes: {name}.abs().{op}() for the largest size, {name}[{name}.abs().{arg}()] "
            "for the number that has it (or .real for the real parts)."
        )
    return (
        f"{start} Compare a real number of each: their size, {name}.abs(), or their real part, {name}.real."
    )


def _op_named(op: str, code: str | None) -> str:
    """How the line writes the op: ``>`` for ``gt``, ``max()`` for ``max``."""
    tree = syntax_tree(code)
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _COMPARISONS:
            return f"a comparison ({_COMPARISONS[type(node.ops[0])]})"
    return f"{op}()"


def _real_layer(code: str | None, frame: FrameType | None) -> str | None:
    """A layer with real weights called on a complex tensor."""
    for call in calls(code):
        layer = bound_to(ast.unparse(call.func), frame)
        if not is_module(layer) or not call.args:
            continue
        found = _complex_on_line(ast.unparse(call.args[0]), frame)
        weight = next((p for p in layer.parameters()), None)
        if found is None or weight is None or weight.is_complex():
            continue
        name, value = found
        kind = type(layer).__name__
        layer_name = ast.unparse(call.func)
        return (
            f"{name} is complex ({_dtype(value)}) and {layer_name}'s weights are real ({_dtype(weight)}): a {kind} "
            f"multiplies numbers of one dtype. For complex weights build it with dtype=torch.cfloat (nn.{kind}(…, "
            f"dtype=torch.cfloat)); to keep real weights, give it real numbers: {layer_name}({name}.real) and "
            f"{layer_name}({name}.imag) apart, or {layer_name}(torch.view_as_real({name}).flatten(-2)) with twice the "
            "input features."
        )
    return None
