"""Hints for a dtype that a write or a conversion cannot take (explain_ops.dtype_hint has two
operands of one op in different dtypes):

- ``x[idx] = v`` (``index_put_``) or ``x.scatter_(dim, idx, src)`` with ``v`` of another dtype
  than ``x``: a write keeps the destination's dtype, so convert what is written;
- ``.numpy()`` of a bfloat16 tensor: NumPy has no bfloat16, so convert to float32 first.

Each rewrites the snippet's line; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from types import FrameType

import torch

from .explain_reading import call_name, calls, parsed, wrapped
from .source import bound_to

__all__ = ["dtype_write_hint"]

_INDEX_PUT = re.compile(
    r"Index put requires the source and destination dtypes match, got (\w+) for the destination and (\w+) for the source"
)
_SCATTER = re.compile(r"(scatter\w*)\(\): Expected self\.dtype to be equal to src\.dtype")
_NUMPY_DTYPE = re.compile(r"Got unsupported ScalarType (\w+)")


def dtype_write_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``text`` at a line reading ``code`` (run in ``frame``) that the
    module's docstring lists, else ``None``."""
    put = _INDEX_PUT.search(text)
    if put:
        return _indexed_write(_named(put.group(1)), _named(put.group(2)), code)
    if _SCATTER.search(text):
        return _scatter_write(code, frame)
    unsupported = _NUMPY_DTYPE.search(text)
    if unsupported and ".numpy()" in (code or ""):
        converted = next((c for c in calls(code) if call_name(c) == "numpy"), None)
        name = (
            ast.unparse(converted.func.value)
            if converted and isinstance(converted.func, ast.Attribute)
            else "x"
        )
        return (
            f"NumPy has no {_named(unsupported.group(1))} dtype, so {name} cannot become a NumPy "
            f"array as it is. Convert it to float32 first: {name}.float().numpy() (every bfloat16 number is exactly a "
            "float32 one)."
        )
    return None


def _named(scalar_type: str) -> str:
    """A dtype as PyTorch's messages spell it (``Float``, ``BFloat16``) as torch names it."""
    names = {"Float": "float32", "Double": "float64", "Half": "float16", "Long": "int64", "Int": "int32"}
    return names.get(scalar_type, scalar_type.lower())


def _indexed_write(destination: str, source: str, code: str | None) -> str | None:
    """``x[idx] = v`` with ``v`` of another dtype than ``x`` (or ``x.index_put_((idx,), v)``)."""
    tree = parsed(code)
    assigned = next(
        (
            n
            for n in ast.walk(tree or ast.Module([], []))
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Subscript)
        ),
        None,
    )
    if assigned is not None:
        target = ast.unparse(assigned.targets[0])
        into = ast.unparse(assigned.targets[0].value)  # type: ignore[attr-defined]
        value = ast.unparse(assigned.value)
        fix = f"{target} = {_converted(value, into)}"
    else:
        put = next(
            (c for c in calls(code) if call_name(c) in ("index_put_", "index_put") and len(c.args) >= 2), None
        )
        if put is None or not isinstance(put.func, ast.Attribute):
            return None
        into, value = ast.unparse(put.func.value), ast.unparse(put.args[1])
        fix = ast.unparse(
            ast.Call(
                put.func,
                [put.args[0], ast.parse(_converted(value, into), mode="eval").body, *put.args[2:]],
                [],
            )
        )
    return (
        f"A write keeps the dtype of the tensor written into, and {value} holds {source} numbers where {into} holds "
        f"{destination}; PyTorch does not convert them on the way in. Convert what is written: {fix}."
    )


def _converted(value: str, into: str) -> str:
    """``value.to(into.dtype)``, bracketed where ``value`` is an expression."""
    return f"{wrapped(value)}.to({into}.dtype)"


def _scatter_write(code: str | None, frame: FrameType | None) -> str | None:
    """``x.scatter_(dim, idx, src)`` with ``src`` of another dtype than ``x``."""
    call = next(
        (c for c in calls(code) if call_name(c).startswith("scatter") and isinstance(c.func, ast.Attribute)),
        None,
    )
    if call is None or len(call.args) < 3 or not isinstance(call.func, ast.Attribute):
        return None
    into, src = ast.unparse(call.func.value), ast.unparse(call.args[2])
    kinds = [bound_to(n, frame) for n in (into, src)]
    dtypes = (
        f" ({into} is {str(kinds[0].dtype).removeprefix('torch.')}, {src} {str(kinds[1].dtype).removeprefix('torch.')})"
        if all(isinstance(k, torch.Tensor) for k in kinds)
        else ""
    )
    args = [*call.args[:2], ast.parse(_converted(src, into), mode="eval").body, *call.args[3:]]
    fix = ast.unparse(ast.Call(call.func, args, call.keywords))
    return (
        f"{call_name(call)} writes {src} into {into}, and a write keeps the dtype of the tensor written into: the two "
        f"must share a dtype{dtypes}. Convert what is written: {fix}."
    )
