"""Hints for the settings and arguments of a training step's tools, beyond explain_tools.py
and explain_optim_args.py:

- ``scaler.scale(loss.item())``: GradScaler scales a tensor;
- ``scaler.step(opt)`` twice before ``scaler.update()``;
- ``clip_grad_norm_(…, norm_type='l2')``: the norm's order is a number;
- ``Adam(…, betas=(0.9, 1.0))``: each beta is a decay rate from 0 up to, not including, 1;
- ``torch.save(model)`` of a model holding a lambda, which pickle cannot save.

Each names the snippet's objects and the fix; ``None`` for any other error."""

from __future__ import annotations

import re
from types import FrameType

import torch

from .explain_reading import find_call, with_arg
from .source import visible_names

__all__ = ["step_argument_hint"]

_SCALE_NUMBER = "outputs must be a Tensor or an iterable of Tensors"
_STEPPED_TWICE = "step() has already been called since the last update()"
_NORM_TYPE = re.compile(r"could not convert string to float: '(\w+)'")
_BETA = re.compile(r"Invalid beta parameter at index (\d): (-?[\d.e-]+)")
_PICKLED_LAMBDA = re.compile(
    r"Can't pickle <function <lambda> at 0x[0-9a-f]+>|Can't pickle local object '([\w.<>]+)'"
)
_NORM_NAMES = {"l2": "2.0", "l1": "1.0", "inf": "'inf'", "max": "'inf'", "fro": "2.0"}


def step_argument_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``) that the
    module's docstring lists; ``None`` for any other."""
    scaler = _scaler(frame)
    if _SCALE_NUMBER in text and scaler and re.search(rf"\b{scaler}\.scale\(", code or ""):
        given = re.search(rf"\b{scaler}\.scale\((.+?)\)\s*(?:\.|$)", code or "")
        what = given.group(1) if given else "its argument"
        fixed = what.removesuffix(".item()") if what.endswith(".item()") else "loss"
        return (
            f"{scaler}.scale multiplies a tensor, the loss, so that backward() runs on the scaled value, and "
            f"{what} is a Python number, out of the graph. Scale the loss tensor itself: "
            f"{scaler}.scale({fixed}).backward(), and read {fixed}.item() only to print it."
        )
    if _STEPPED_TWICE in text and scaler:
        return (
            f"{scaler}.step(opt) may run once per optimizer between {scaler}.update() calls, and it ran again: call "
            f"{scaler}.update() after each iteration's {scaler}.step(opt) (it picks the next scale from what the "
            "step found), and step each optimizer once per iteration."
        )
    norm = _NORM_TYPE.search(text)
    if norm and re.search(r"\bclip_grad_norm_?\(", code or "") and "norm_type" in (code or ""):
        call = find_call(code, ("clip_grad_norm_", "clip_grad_norm"), ("parameters", "max_norm", "norm_type"))
        value = _NORM_NAMES.get(norm.group(1).lower(), "2.0")
        fixed = f": {with_arg(call, 'norm_type', value)}" if call and "norm_type" in call else ""
        return (
            f"norm_type is the order p of the norm as a number, 2.0 for the usual (Euclidean) length, 1.0 for the sum "
            f"of absolute values, float('inf') for the largest, and '{norm.group(1)}' is a name. Pass the number"
            f"{fixed}."
        )
    beta = _BETA.search(text)
    if beta:
        return _beta(int(beta.group(1)), beta.group(2), code)
    saved = re.search(r"\btorch\.save\(\s*([\w.]+)\s*,\s*(.+)\)\s*$", code or "")
    if _PICKLED_LAMBDA.search(text) and saved:
        model, where = saved.groups()
        return (
            f"torch.save of a whole model pickles every object it holds, and {model} holds a lambda (or a function "
            f"defined inside another), which pickle cannot save. Save the weights instead, "
            f"torch.save({model}.state_dict(), {where}), and rebuild the model in code to load them; or make the "
            "lambda a module (nn.Identity(), nn.ReLU()) or a function defined at the top level."
        )
    return None


def _scaler(frame: FrameType | None) -> str | None:
    """The name of the GradScaler the snippet holds, if any."""
    return next((n for n, v in visible_names(frame).items() if isinstance(v, torch.amp.GradScaler)), None)


def _beta(index: int, value: str, code: str | None) -> str:
    """An Adam-style beta outside [0, 1)."""
    usual = ("0.9", "0.999")[index] if index < 2 else "0.9"
    call = find_call(code, ("Adam", "AdamW", "NAdam", "RAdam", "Adamax"), ("params", "lr", "betas"))
    fixed = ""
    if call is not None and "betas" in call:
        betas = ["0.9", "0.999"]
        written = re.fullmatch(r"\(\s*([^,]+),\s*([^,)]+)\s*\)", call["betas"])
        if written:
            betas = [written.group(1).strip(), written.group(2).strip()]
        betas[index] = usual
        fixed = f": {with_arg(call, 'betas', f'({betas[0]}, {betas[1]})')}"
    return (
        f"betas are how much of the running averages each step keeps (beta1 for the gradient, beta2 for its square), "
        f"each from 0 up to, not including, 1, and beta{index + 1} is {value}. The usual are 0.9 and 0.999; "
        f"beta{index + 1}={usual}{fixed}."
    )
