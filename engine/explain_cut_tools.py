"""Why a tensor that backward() (or autograd.grad) was called on has no graph, when a tool cut
it rather than a line of the snippet: ``checkpoint(…, use_reentrant=True)`` of inputs that do
not require grad (the parameters inside are cut off too), a second derivative taken through a
``@once_differentiable`` backward, or backward() asked of a value of forward-mode AD's dual
tensors, whose derivative is already in the tangent."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType

import torch

from .explain_reading import call_name, calls
from .source import bound_to, indentation, line_matching, quoted_code, visible_names, without_comment

__all__ = ["transform_cut"]


def transform_cut(
    name: str, line: int | None, source_lines: Sequence[str], frame: FrameType | None
) -> str | None:
    """Why ``name`` (which backward() or autograd.grad was called on) has no graph when a
    tool cut it: ``checkpoint(…, use_reentrant=True)`` of inputs that do not require grad,
    a gradient taken with ``create_graph=True`` through a ``@once_differentiable``
    backward, or a value of forward-mode AD's dual tensors; ``None`` otherwise."""
    if line is None:
        return None
    assigned = re.compile(
        rf"^{re.escape(name)}\s*(?:,[^=]*)?=(?!=)|^[\w\s,]*\b{re.escape(name)}\b[\w\s,]*=(?!=)"
    )
    made = line_matching(source_lines, assigned, range(line - 1, 0, -1))
    if made is None:
        return _dual_backward(name, line, source_lines, frame)
    at, code = made
    for call in calls(code):
        if call_name(call) in ("checkpoint", "checkpoint_sequential") and "use_reentrant=True" in ast.unparse(
            call
        ):
            return _reentrant_cut(name, at, call, frame)
    if "autograd.grad(" in code and "create_graph=True" in code:
        marked = line_matching(source_lines, re.compile(r"^@(?:[\w.]+\.)?once_differentiable\b"))
        if marked is None:
            return None
        owner = line_matching(source_lines, re.compile(r"^class\s+\w+"), range(marked[0], 0, -1))
        cls = re.sub(r"^class\s+(\w+).*", r"\1", owner[1]) if owner else "the Function"
        return (
            f"{name} comes from torch.autograd.grad(…, create_graph=True) at line {at}, through {cls}.backward, "
            f"marked @once_differentiable at line {marked[0]}: it runs without recording, so the gradient it gives "
            f"has no graph to differentiate again. Remove @once_differentiable and write {cls}.backward with torch "
            "ops, which create_graph=True records."
        )
    return _dual_backward(name, line, source_lines, frame)


def _dual_backward(name: str, line: int, source_lines: Sequence[str], frame: FrameType | None) -> str | None:
    """``y.backward()`` of a value computed from forward-mode AD's dual tensors, with no leaf that
    requires grad: the derivative is already in the tangent."""
    made = line_matching(source_lines, re.compile(r"\bmake_dual\("), range(line - 1, 0, -1))
    scope = visible_names(frame)
    if made is None or any(isinstance(v, torch.Tensor) and v.requires_grad for v in scope.values()):
        return None
    if not _inside_dual_level(line, source_lines):
        return None
    owner = re.search(r"([\w.]+\.)?make_dual\(", made[1])
    fw = owner.group(1) if owner and owner.group(1) else ""
    return (
        f"{name} is computed from a dual tensor ({fw}make_dual at line {made[0]}): forward-mode AD carries the "
        f"derivative along with the value, so no backward() is needed: {fw}unpack_dual({name}).tangent is its "
        "derivative in the tangent's direction. backward() is reverse mode, which needs a leaf made with "
        "requires_grad=True."
    )


def _inside_dual_level(line: int, source_lines: Sequence[str]) -> bool:
    """Whether snippet ``line`` is in the body of a ``with …dual_level():`` block."""
    text = source_lines[line - 1] if 0 < line <= len(source_lines) else ""
    depth = indentation(text)
    for at in range(line - 1, 0, -1):
        above = source_lines[at - 1]
        if without_comment(above).strip() and indentation(above) < depth:
            if re.match(r"\s*with\b.*\bdual_level\(", above):
                return True
            depth = indentation(above)
    return False


def _reentrant_cut(name: str, at: int, call: ast.Call, frame: FrameType | None) -> str | None:
    """``checkpoint(fn, x, use_reentrant=True)`` where no tensor given requires grad."""
    inputs = [ast.unparse(a) for a in call.args[1:]]
    tensors = [(a, bound_to(a, frame)) for a in inputs]
    off = [a for a, t in tensors if isinstance(t, torch.Tensor) and not t.requires_grad]
    if not off or any(isinstance(t, torch.Tensor) and t.requires_grad for _, t in tensors):
        return None
    written = without_comment(ast.unparse(call))
    fixed = written.replace("use_reentrant=True", "use_reentrant=False")
    quoted = quoted_code([written], 1, 80)
    return (
        f"{name} comes from {quoted or 'checkpoint'} at line {at}: with use_reentrant=True the checkpoint's output "
        f"requires grad only when a tensor passed to it does, and {', '.join(off)} does not, so the parameters "
        f"used inside get no gradient either. Pass use_reentrant=False, which follows them: {fixed}."
    )
