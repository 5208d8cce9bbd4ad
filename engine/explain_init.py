"""Hints for setting a tensor's initial values:

- ``w.normal_(0, 0.1)`` (``uniform_``, ``fill_``, ``zero_``) on a leaf that requires grad,
  which autograd refuses: ``torch.nn.init``, which fills without recording, or
  ``torch.no_grad()`` around it;
- ``nn.init.kaiming_normal_(layer)`` given a layer where a tensor goes: its ``.weight``.

Each rewrites the snippet's own line; ``None`` for any other error."""

from __future__ import annotations

import ast
from types import FrameType

from .explain_reading import call_name, calls
from .source import bound_to, is_module

__all__ = ["init_hint"]

_LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation"
# a tensor method that fills it in place -> the nn.init function that does it without recording
_INIT_OF = {
    "normal_": "normal_",
    "uniform_": "uniform_",
    "fill_": "constant_",
    "zero_": "zeros_",
}


def init_hint(exc: BaseException, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` at a line reading ``code`` (run in ``frame``) that the
    module's docstring lists, else ``None``."""
    text = str(exc)
    if _LEAF_IN_PLACE in text:
        filled = next(
            (c for c in calls(code) if call_name(c) in _INIT_OF and isinstance(c.func, ast.Attribute)), None
        )
        if filled is None or not isinstance(filled.func, ast.Attribute):
            return None
        w = ast.unparse(filled.func.value)
        args = ", ".join([w, *(ast.unparse(a) for a in filled.args)])
        written = ast.unparse(filled)
        return (
            f"{written} fills {w} in place, and {w} is a leaf that requires grad: autograd would record the fill as "
            f"a step of the computation and refuses it. Setting starting values is no part of the computation: use "
            f"nn.init.{_INIT_OF[call_name(filled)]}({args}), which fills without recording, or write it under "
            f"with torch.no_grad(): {written}."
        )
    if isinstance(exc, AttributeError):
        for call in calls(code):
            owner = call.func.value if isinstance(call.func, ast.Attribute) else None
            if owner is None or not ast.unparse(owner).endswith("init") or not call.args:
                continue
            layer = ast.unparse(call.args[0])
            held = bound_to(layer, frame)
            if not is_module(held):
                continue
            kind = type(held).__name__
            rest = "".join(f", {ast.unparse(a)}" for a in call.args[1:])
            return (
                f"nn.init.{call_name(call)} sets the values of a tensor, and {layer} is a layer ({kind}), which holds "
                f"its tensors as .weight and .bias: {ast.unparse(call.func)}({layer}.weight{rest}), and the bias "
                f"apart, nn.init.zeros_({layer}.bias). For every layer of a model, model.apply(fn) calls fn on each."
            )
    return None
