"""Tensors that need gradients copied into a new tensor, off the graph (tensor-copied-off-graph).

``torch.tensor([a * b, a + b])`` reads the values of its elements and builds a new leaf: it
has no ``grad_fn``, so nothing computed from it leads back to ``a`` and ``b``. When nothing
else does either, ``backward()`` fails far from the cause ("element 0 of tensors does not
require grad"); when something else does, it runs and the gradients silently miss every
path through the copy. PyTorch warns ("Converting a tensor with requires_grad=True to a
scalar may lead to unexpected behavior. Consider using tensor.detach() first"), which tells a
learner to cut the graph on purpose. ``torch.stack`` builds the same tensor and keeps each
element's history.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any, NamedTuple

import torch

from ..source import quoted_code, visible_names

__all__ = ["COPYING_OPS", "Copied", "copied_off_graph"]

COPYING_OPS = frozenset({"tensor", "as_tensor"})
# the elements of a nested list looked at, at most (torch.tensor of a long list of numbers is common)
_LOOKED_AT = 1_000
_CALL = re.compile(r"torch\.(tensor|as_tensor)\(")
# torch.tensor(<what>.item() ...): the code before .item(), inside the call
_ITEM_INSIDE = re.compile(r"torch\.(?:tensor|as_tensor)\((.*?)\.item\(\)")
_NAME = re.compile(r"(?<![\w.])[^\W\d]\w*")


class Copied(NamedTuple):
    """A copy off the graph: the pitfall's ``(title, message, fix)``, and the clause that
    explains the cut in the hint of a backward() it makes fail."""

    report: tuple[str, str, str]
    cut: str


def copied_off_graph(
    op: str,
    args: tuple[Any, ...],
    result: Any,
    line: int | None,
    source_lines: Sequence[str],
    frame: FrameType | None = None,
) -> Copied | None:
    """What to say when ``torch.<op>`` (one of :data:`COPYING_OPS`), called at ``line`` (in
    snippet frame ``frame``) with positional ``args`` while gradients are recorded, copied a
    tensor that requires grad into ``result``, which has no history, or made it of a number
    that ``.item()`` read off one on the same line; ``None`` otherwise."""
    data = args[0] if args else None
    if not isinstance(result, torch.Tensor) or result.grad_fn is not None or not torch.is_grad_enabled():
        return None
    if isinstance(data, (int, float)):  # a number made a leaf that requires grad (a logged one is fine)
        return _item_copied(op, line, source_lines, frame) if result.requires_grad else None
    if isinstance(data, torch.Tensor):
        if op == "as_tensor" or not data.requires_grad:
            return None  # as_tensor hands a tensor of the right dtype back as it is
        how = "copies the values of a tensor that requires grad"
    elif isinstance(data, (list, tuple)) and _holds_graph(data):
        how = "copies the values of tensors that require grad"
    else:
        return None
    code = quoted_code(source_lines, line)
    at = f"Line {line} ({code})" if code and line else f"torch.{op}(…)"
    stacked = _stacked(source_lines, line, op)
    instead = (
        f"build it with torch.stack, which keeps each element's history: {stacked}"
        if stacked
        else "build it with torch.stack([...]) (torch.cat for tensors with a dimension), which keeps "
        "each element's history, or use the tensor itself instead of a copy"
    )
    return Copied(
        (
            f"torch.{op}(…) copies values off the graph",
            f"{at} {how} into a new tensor with no history (no grad_fn): nothing computed from it leads "
            "back to the tensors it was built from, so backward() reaches none of them through it — it "
            "fails if no other path does, and silently leaves out this one if another does. PyTorch's "
            'warning "Converting a tensor with requires_grad=True to a scalar" (given once per process) is '
            "about this line; its advice, .detach(), cuts the graph on purpose.",
            instead[0].upper() + instead[1:] + ".",
        ),
        f"torch.{op} {how} into a new tensor with no history; {instead}",
    )


def _holds_graph(data: list[Any] | tuple[Any, ...]) -> bool:
    """Whether nested list ``data`` holds a tensor that requires grad (among the first
    :data:`_LOOKED_AT` items)."""
    todo: list[Any] = [data]
    seen = 0
    while todo and seen < _LOOKED_AT:
        item = todo.pop()
        seen += 1
        if isinstance(item, torch.Tensor):
            if item.requires_grad:
                return True
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
    return False


def _stacked(source_lines: Sequence[str], line: int | None, op: str) -> str | None:
    """Line ``line``'s code with its ``torch.<op>([...])`` written as ``torch.stack([...])``,
    where the call's only argument is a list or tuple written out (a ``requires_grad=True``
    beside it is dropped: the stack has a history of its own); ``None`` otherwise."""
    code = quoted_code(source_lines, line)
    if code is None:
        return None
    found = next((m for m in _CALL.finditer(code) if m.group(1) == op), None)
    if found is None:
        return None
    start, depth = found.end(), 1
    for end in range(start, len(code)):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(code[end], 0)
        if depth == 0:
            break
    else:
        return None
    inner = re.sub(r",\s*requires_grad\s*=\s*True\s*$", "", code[start:end].strip())
    if not (inner[:1] in "[(" and inner[-1:] in "])" and inner) or "=" in inner.replace("==", ""):
        return None
    return f"{code[: found.start()]}torch.stack({inner}){code[end + 1 :]}"


def _item_copied(
    op: str, line: int | None, source_lines: Sequence[str], frame: FrameType | None
) -> Copied | None:
    """``torch.tensor(loss.item() ..., requires_grad=True)``: a number read off tensors that
    require grad, made into a new leaf, whose gradient reaches none of them; ``None`` where
    the line shows no such ``.item()``."""
    code = quoted_code(source_lines, line, sys.maxsize)
    found = _ITEM_INSIDE.search(code or "")
    if found is None or frame is None or code is None:
        return None
    scope = visible_names(frame)
    graded = list(
        dict.fromkeys(
            name
            for name in _NAME.findall(found.group(1))
            if isinstance(scope.get(name), torch.Tensor) and scope[name].requires_grad
        )
    )
    if not graded:
        return None
    names = " and ".join(graded)
    one = len(graded) == 1
    at = f"Line {line} ({code})" if len(code) <= 60 else f"Line {line}"
    after = (
        f"backward() stops at that new leaf: it gets a .grad, and {names}, which it was computed from, "
        f"{'gets' if one else 'get'} none through it ({'its' if one else 'their'} .grad stays None, or "
        "misses this path)"
    )
    read = found.group(1).strip()
    instead = f"with {read} itself, not {read}.item()" if 0 < len(read) <= 40 else "with the tensor itself"
    return Copied(
        (
            f"torch.{op}(….item()) copies a value off the graph",
            f"{at} reads a number off {names} with .item() and makes a new tensor of it, with no history "
            f"(no grad_fn): {after}.",
            f"Keep the tensor: compute {instead} inside torch.{op}(…), and use .item() only to print or "
            "log a value.",
        ),
        f"torch.{op} of a number .item() read off {names} makes a new tensor with no history; compute with "
        "the tensor itself",
    )
