"""Hints for library calls given the wrong thing, each told with the snippet's own call:

- Adam (AdamW, NAdam, …) given ``momentum=``: it has ``betas=(beta1, beta2)``, or SGD has
  ``momentum``; SGD (or RMSprop) given ``betas=``: ``momentum=`` is its one number.
- a learning-rate scheduler given the model (``X is not an Optimizer``): give it the optimizer.
- ``LBFGS.step()`` without a closure: the closure that zeroes the grads, computes the loss,
  calls backward and returns it, written with the snippet's loss.
- ``opt.step(loss)`` (``'Tensor' object is not callable``): step() takes no loss; backward()
  computes the gradients it steps with.
- ``clip_grad_norm_(model, …)`` (or ``clip_grad_value_``): ``model.parameters()``.
- ``nn.init.xavier_*`` / ``kaiming_*`` on a bias or another 1-D tensor (``Fan in and fan out
  can not be computed``): init the weights, ``zeros_`` the bias.
- ``layer.weight = tensor`` (``cannot assign 'torch.FloatTensor' as parameter 'weight'``):
  ``nn.Parameter(tensor)``, or copy the values in under ``torch.no_grad()``.
"""

from __future__ import annotations

import ast
import inspect
import re
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_reading import call_name, calls
from .source import bound_to, is_a, is_module, line_matching, visible_names

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["call_hint"]

_UNEXPECTED = re.compile(r"^(\w+)\.__init__\(\) got an unexpected keyword argument '(momentum|betas)'$")
_NOT_OPTIMIZER = re.compile(r"^(\w+) is not an Optimizer$")
_NO_CLOSURE = re.compile(r"^(\w+)\.step\(\) missing 1 required positional argument: 'closure'$")
_NOT_PARAMETERS = re.compile(r"^'(\w+)' object (?:is not iterable|has no attribute 'grad')$")
_NO_FAN = "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
_NOT_PARAMETER = re.compile(
    r"^cannot assign '(torch\.(?:cuda\.)?(\w+)Tensor)' as parameter '(\w+)' \(torch\.nn\.Parameter or None expected\)$"
)
_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_FLOATS = ("Float", "Double", "Half", "BFloat16", "ComplexFloat", "ComplexDouble")


def call_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``) where a
    library call was given the wrong thing (see the module's docstring); ``None`` otherwise."""
    text = str(exc)
    if not code:
        return None
    unexpected = _UNEXPECTED.match(text)
    if unexpected:
        return _optimizer_setting(unexpected.group(1), unexpected.group(2), code)
    not_optimizer = _NOT_OPTIMIZER.match(text)
    if not_optimizer:
        return _scheduler_given(code, frame)
    closure = _NO_CLOSURE.match(text)
    if closure and closure.group(1) == "LBFGS":
        stepped = re.search(rf"(?<![\w.])({_DOTTED})\.step\(\s*\)", code)
        return _closure_hint(stepped.group(1), rec.statement_lines, frame) if stepped else None
    if text == "'Tensor' object is not callable":
        return _step_given_loss(code, rec.statement_lines, frame)
    if _NOT_PARAMETERS.match(text):
        return _clip_given_model(code, frame)
    if text == _NO_FAN:
        return _init_on_bias(code, rec.statement_lines, frame)
    assigned = _NOT_PARAMETER.match(text)
    if assigned:
        return _tensor_as_parameter(assigned.group(1), assigned.group(2), assigned.group(3), code, frame)
    return None


def _calls(code: str) -> list[tuple[str, str, str, ast.Call]]:
    """Each call on the line: ``(the called name's last part, the call as written, its
    first argument as written or "", the node)``."""
    source, found = code.strip(), []
    for node in calls(source):
        first = ast.get_source_segment(source, node.args[0]) if node.args else ""
        found.append((call_name(node), ast.get_source_segment(source, node) or "", first or "", node))
    return found


def _replaced_first(call: str, first: str, by: str) -> str:
    """``call`` (``f(a, b=1)``) with its first argument ``first`` written ``by``."""
    at = call.index(first, call.index("("))
    return call[:at] + by + call[at + len(first) :]


def _optimizer_setting(optimizer: str, setting: str, code: str) -> str | None:
    """Adam given ``momentum=``, SGD given ``betas=``."""
    cls = getattr(torch.optim, optimizer, None)
    if not (inspect.isclass(cls) and issubclass(cls, torch.optim.Optimizer)):
        return None
    takes = inspect.signature(cls.__init__).parameters
    if setting == "momentum" and "betas" in takes:
        given = re.search(r"\bmomentum\s*=\s*([\d.eE+-]+)\s*[,)]", code)
        beta = given.group(1) if given else "0.9"
        return (
            f"{optimizer} has no momentum setting: it keeps running averages of the gradient and of its square, and "
            f"betas=(beta1, beta2) sets how slowly they change, beta1 playing momentum's part. Write "
            f"betas=({beta}, 0.999) in place of momentum={beta}, or use torch.optim.SGD(…, momentum={beta}) for SGD "
            "with momentum."
        )
    if setting == "betas" and "momentum" in takes:
        given = re.search(r"\bbetas\s*=\s*\(\s*([\d.eE+-]+)\s*,", code)
        beta = given.group(1) if given else "0.9"
        return (
            f"{optimizer} has no betas: those are Adam's (the decay rates of its two running averages). "
            f"{optimizer}'s momentum is one number: write momentum={beta} in place of betas=…, or use "
            "torch.optim.Adam(…, betas=…)."
        )
    return None


def _scheduler_given(code: str, frame: FrameType | None) -> str | None:
    """A learning-rate scheduler made with the model (or its parameters) for the optimizer."""
    schedulers = torch.optim.lr_scheduler
    for name, call, first, _ in _calls(code):
        cls = getattr(schedulers, name, None)
        if not (first and inspect.isclass(cls) and _schedules(cls)):
            continue
        if is_a(bound_to(first, frame), torch.optim.Optimizer):
            return None  # (another cause)
        given = bound_to(first, frame)
        what = f" (a {type(given).__name__})" if is_module(given) else ""
        seen = visible_names(frame).items()
        opts = [n for n, v in seen if not n.startswith("_") and is_a(v, torch.optim.Optimizer)]
        made = "" if opts else "make one first, opt = torch.optim.SGD(model.parameters(), lr=0.1), then "
        which = f" (the one whose rate it sets: {' or '.join(opts)})" if len(opts) > 1 else ""
        return (
            f"{name} changes the learning rate of an optimizer, which it is given first, and was given {first}"
            f"{what}. Give it the optimizer{which}: {made}{_replaced_first(call, first, opts[0] if opts else 'opt')}."
        )
    return None


def _schedules(cls: type) -> bool:
    return issubclass(cls, torch.optim.lr_scheduler.LRScheduler) or cls.__name__ == "ReduceLROnPlateau"


def _closure_hint(opt: str, source_lines: list[str], frame: FrameType | None) -> str | None:
    """LBFGS stepped without the closure it needs, written with the snippet's loss."""
    if not is_a(bound_to(opt, frame), torch.optim.LBFGS):
        return None
    backward = re.compile(r"^\s*([A-Za-z_]\w*)\.backward\(\s*\)\s*$")
    here = frame.f_lineno if frame is not None else len(source_lines)
    found = line_matching(source_lines, backward, range(here - 1, 0, -1))
    loss, made = "loss", "…"
    if found:
        loss = found[1].split(".backward", 1)[0].strip()
        assigned = line_matching(
            source_lines, re.compile(rf"^\s*{loss}\s*=\s*(.+)$"), range(found[0] - 1, 0, -1)
        )
        if assigned:
            made = assigned[1].split("=", 1)[1].strip()
    return (
        f"LBFGS evaluates the loss several times within one step, so {opt}.step() needs a closure: a function that "
        f"zeroes the gradients, computes the loss, calls backward() and returns the loss. Pass one, {opt}.step(closure), "
        f"with def closure(): {opt}.zero_grad(); {loss} = {made}; {loss}.backward(); return {loss}."
    )


def _step_given_loss(code: str, source_lines: list[str], frame: FrameType | None) -> str | None:
    """``opt.step(loss)``: the loss taken for the closure step() calls."""
    stepped = re.search(rf"(?<![\w.])({_DOTTED})\.step\(\s*({_DOTTED})\s*\)", code)
    if stepped is None:
        return None
    opt, loss = stepped.groups()
    optimizer = bound_to(opt, frame)
    if not is_a(optimizer, torch.optim.Optimizer) or not is_a(bound_to(loss, frame), torch.Tensor):
        return None
    if is_a(optimizer, torch.optim.LBFGS):
        return _closure_hint(opt, source_lines, frame)
    here = frame.f_lineno if frame is not None else len(source_lines)
    done = line_matching(
        source_lines, re.compile(rf"\b{re.escape(loss)}\.backward\("), range(here - 1, 0, -1)
    )
    then = (
        f"{loss}.backward() (line {done[0]}) has computed them, so call {opt}.step()"
        if done
        else f"call {loss}.backward() first, then {opt}.step()"
    )
    return (
        f"{opt}.step() takes no loss: its only argument is a closure, a function it calls to recompute the loss, so "
        f"it called {loss}, a tensor. It steps with the gradients backward() leaves in each parameter's .grad: "
        f"{then}."
    )


def _clip_given_model(code: str, frame: FrameType | None) -> str | None:
    """``clip_grad_norm_(model, …)``: the model for its parameters."""
    for name, call, first, _ in _calls(code):
        if name not in ("clip_grad_norm_", "clip_grad_value_") or not first:
            continue
        model = bound_to(first, frame)
        if not is_module(model):
            return None
        return (
            f"{name} clips tensors' gradients, and is given {first} itself (an nn.{type(model).__name__}), not its "
            f"parameters. Pass them: {_replaced_first(call, first, f'{first}.parameters()')}."
        )
    return None


def _init_on_bias(code: str, source_lines: list[str], frame: FrameType | None) -> str | None:
    """``nn.init.xavier_uniform_(layer.bias)``: a 1-D tensor has no fan in and fan out."""
    found = re.search(rf"(?<![\w.])((?:{_DOTTED}\.)?)((?:xavier|kaiming)_\w+_)\(\s*({_DOTTED})\s*[,)]", code)
    if found is None:
        return None
    init, function, name = found.groups()
    tensor = bound_to(name, frame)
    if not is_a(tensor, torch.Tensor) or tensor.dim() >= 2:
        return None
    what = f"1-D ({tensor.numel()} values)" if tensor.dim() == 1 else "a single number (0-D)"
    looped = line_matching(source_lines, re.compile(rf"^\s*for\s+{re.escape(name)}\s+in\b"))
    if name.endswith(".bias") or not looped:
        fix = f"use it on the weight, and set {name} another way: {init}zeros_({name})"
    else:
        fix = (
            f"use it only on the tensors of 2 or more dimensions: if {name}.dim() > 1: {init}{function}({name}), "
            f"else {init}zeros_({name})"
        )
    return (
        f"{function} sets its spread from a layer's fan in and fan out, which only a weight of 2 or more "
        f"dimensions has, and {name} is {what}: {fix}."
    )


def _tensor_as_parameter(kind: str, dtype: str, name: str, code: str, frame: FrameType | None) -> str | None:
    """``layer.weight = tensor``: a plain tensor where the module keeps a Parameter."""
    found = re.match(rf"^\s*({_DOTTED})\.{name}\s*=\s*(.+?)\s*$", code)
    if found is None:
        return None
    owner, value = found.groups()
    seen = visible_names(frame)
    nn = "nn" if seen.get("nn") is torch.nn else "torch.nn"
    wrapped = value if dtype in _FLOATS else f"({value}).float()"
    copied = (
        f", or copy the values into the one it has: with torch.no_grad(): {owner}.{name}.copy_({value})"
        if seen.get("torch") is torch
        else ""
    )
    return (
        f"{owner}.{name} is one of the module's parameters, and {value} is a plain tensor ({kind}): a module takes "
        f"only an nn.Parameter (or None) there, which is how the optimizer and state_dict() find it. Wrap it, "
        f"{owner}.{name} = {nn}.Parameter({wrapped}) (before the optimizer is made: it holds the old one){copied}."
    )
