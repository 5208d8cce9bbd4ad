"""Hints for library calls given the wrong thing, each told with the snippet's own call:

- Adam (AdamW, NAdam, …) given ``momentum=``: it has ``betas=(beta1, beta2)``, or SGD has
  ``momentum``; SGD (or RMSprop) given ``betas=``: ``momentum=`` is its one number.
- a learning-rate scheduler given the model (``X is not an Optimizer``): give it the optimizer.
- ``LBFGS.step()`` without a closure: the closure that zeroes the grads, computes the loss,
  calls backward and returns it, written with the snippet's loss.
- ``opt.step(loss)``, ``opt.step(loss.item())``, ``opt.step(criterion(out, y))`` (``'Tensor'
  object is not callable``, ``'float' object …``): step() takes no loss; backward() computes the
  gradients it steps with.
- ``clip_grad_norm_(model, …)`` (or ``clip_grad_value_``): ``model.parameters()``.
- ``torch.autograd.grad(loss, model)`` (or ``backward(inputs=model)``): a model for the tensors
  to differentiate by: ``list(model.parameters())``.
- ``with torch.no_grad:`` (the class, not an object of it): ``with torch.no_grad():``.
- SGD given ``nesterov=True`` without ``momentum``: Nesterov's is a kind of momentum.
- a closure for ``LBFGS.step`` that returns nothing: it must return the loss.
- ``functional_call(model, model.parameters(), …)``: the parameters go in by name, a dict.
- a scheduler or a gradient clip called without the number it needs (``StepLR(opt)``,
  ``clip_grad_norm_(model.parameters())``): what that number means, written into the call.
- ``nn.init.xavier_*`` / ``kaiming_*`` on a bias or another 1-D tensor (``Fan in and fan out
  can not be computed``): init the weights, ``zeros_`` the bias.
- ``layer.weight = tensor`` (``cannot assign 'torch.FloatTensor' as parameter 'weight'``):
  ``nn.Parameter(tensor)``, or copy the values in under ``torch.no_grad()``.
"""

from __future__ import annotations

import ast
import inspect
import os
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
# "StepLR.__init__() missing 1 required positional argument: 'step_size'", "clip_grad_norm_() missing …"
_MISSING = re.compile(r"^(\w+)(?:\.__init__)?\(\) missing 1 required positional argument: '(\w+)'$")
# (callee, its argument): (what the number means, a value to show)
_NEEDED = {
    ("StepLR", "step_size"): (
        "how many step() calls (epochs, stepped once per epoch) pass between two cuts of the rate, each by gamma "
        "(0.1 by default)",
        "10",
    ),
    ("MultiStepLR", "milestones"): (
        "the epochs at which the rate is cut, each time by gamma (0.1 by default)",
        "[30, 60]",
    ),
    ("ExponentialLR", "gamma"): ("the factor the rate is multiplied by at each step()", "0.95"),
    ("CosineAnnealingLR", "T_max"): (
        "how many step() calls the rate takes to fall to its lowest (the run's epochs, most often)",
        "100",
    ),
    ("LambdaLR", "lr_lambda"): (
        "a function of the epoch giving the factor for the rate",
        "lambda epoch: 0.95**epoch",
    ),
    ("OneCycleLR", "max_lr"): ("the highest rate the cycle reaches", "0.1"),
    ("clip_grad_norm_", "max_norm"): (
        "the largest total norm the gradients may have, above which all are scaled down together",
        "1.0",
    ),
    ("clip_grad_value_", "clip_value"): (
        "the largest size any one gradient may have, above which it is cut",
        "1.0",
    ),
}
_NOT_CONTEXT = re.compile(r"^'type' object does not support the context manager protocol$|^__enter__$")
_NESTEROV = "Nesterov momentum requires a momentum and zero dampening"
_NONE_LOSS = re.compile(r"^float\(\) argument must be a string or a (?:real )?number, not 'NoneType'$")
_NOT_BY_NAME = re.compile(
    r"^Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got <class '(\w+)'>$"
)
_NOT_TENSORS = re.compile(r"^all inputs have to be Tensors or GradientEdges, but got (\w+)$")
_NOT_PARAMETERS = re.compile(r"^'(\w+)' object (?:is not iterable|has no attribute 'grad')$")
_NO_FAN = "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
_NOT_PARAMETER = re.compile(
    r"^cannot assign '(torch\.(?:cuda\.)?(\w+)Tensor)' as parameter '(\w+)' \(torch\.nn\.Parameter or None expected\)$"
)
_DOTTED = r"[^\W\d]\w*(?:\.[^\W\d]\w*)*"
_NOT_CALLABLE = re.compile(r"^'(\w+)' object is not callable$")
_OPTIM_DIR = os.path.dirname(torch.optim.__file__)
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
    if _NOT_CALLABLE.match(text):
        return _step_given_loss(exc, code, rec.statement_lines, frame)
    if _NOT_PARAMETERS.match(text):
        return _clip_given_model(code, frame)
    if _NOT_CONTEXT.match(text):
        return _context_class(code, frame)
    if text == _NESTEROV:
        return _nesterov(code)
    if _NONE_LOSS.match(text) and _raised_in_step(exc):
        return _closure_returns_nothing(code, rec.statement_lines, frame)
    by_name = _NOT_BY_NAME.match(text)
    if by_name:
        return _functional_call_given(by_name.group(1), code)
    if _NOT_TENSORS.match(text):
        return _grad_by_model(code, frame)
    missing = _MISSING.match(text)
    if missing and (missing.group(1), missing.group(2)) in _NEEDED:
        return _needed_argument(missing.group(1), missing.group(2), code)
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
    backward = re.compile(r"^\s*([^\W\d]\w*)\.backward\(\s*\)\s*$")
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


def _step_given_loss(
    exc: BaseException, code: str, source_lines: list[str], frame: FrameType | None
) -> str | None:
    """``opt.step(loss)``, ``opt.step(loss.item())``, ``opt.step(criterion(out, y))`` or
    ``opt.step(epoch)``: a value taken for the closure step() calls, told where step() itself
    called it (the innermost frame of the traceback is an optimizer's step), so a tensor called
    on the line's other calls is left to the other hints."""
    if not _raised_in_step(exc):
        return None
    for node in calls(code):
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        given = node.args[0] if len(node.args) == 1 and not node.keywords else None
        if given is None and not node.args and [k.arg for k in node.keywords] == ["closure"]:
            given = node.keywords[0].value
        if call_name(node) != "step" or receiver is None or given is None or isinstance(given, ast.Lambda):
            continue
        opt = ast.unparse(receiver)
        optimizer = bound_to(opt, frame)
        if not is_a(optimizer, torch.optim.Optimizer):
            continue
        if is_a(optimizer, torch.optim.LBFGS):
            return _closure_hint(opt, source_lines, frame)
        return _step_given(opt, ast.unparse(given), str(exc), source_lines, frame)
    return None


def _step_given(opt: str, loss: str, text: str, source_lines: list[str], frame: FrameType | None) -> str:
    called = _NOT_CALLABLE.match(text)  # (what step() called: "'float' object is not callable")
    kind = called.group(1) if called else "Tensor"
    if kind not in ("Tensor", "float"):  # opt.step(epoch): a number that is no loss
        article = "an" if kind[0] in "aeiou" else "a"
        return (
            f"{opt}.step()'s only argument is a closure, a function it calls to recompute the loss, so it called "
            f"{loss}, {article} {kind}. It takes no epoch or count: each call makes one update with the gradients "
            f"backward() left, so call {opt}.step() with nothing (a learning-rate scheduler steps on its own, "
            "scheduler.step())."
        )
    # the loss's backward() above the line (any backward() where the step was given an expression)
    root = re.fullmatch(rf"({_DOTTED})(?:\.(?:item|detach)\(\))?", loss)
    named = root.group(1) if root and is_a(bound_to(root.group(1), frame), torch.Tensor) else None
    backward = re.compile(rf"(?<![\w.])({re.escape(named) if named else _DOTTED})\.backward\(")
    here = frame.f_lineno if frame is not None else len(source_lines)
    done = line_matching(source_lines, backward, range(here - 1, 0, -1))
    found = backward.search(done[1]) if done else None
    if done and found:
        then = f"{found.group(1)}.backward() (line {done[0]}) has computed them, so call {opt}.step()"
    else:
        then = f"call {named or 'loss'}.backward() first, then {opt}.step()"
    return (
        f"{opt}.step() takes no loss: its only argument is a closure, a function it calls to recompute the loss, so "
        f"it called {loss}, {'a tensor' if kind == 'Tensor' else 'a float'}. It steps with the gradients backward() "
        f"leaves in each parameter's .grad: {then}."
    )


def _raised_in_step(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in an optimizer's ``step`` (torch/optim), calling its closure."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb.tb_frame, tb.tb_next
    return last is not None and last.f_code.co_name == "step" and _OPTIM_DIR in last.f_code.co_filename


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


def _context_class(code: str, frame: FrameType | None) -> str | None:
    """``with torch.no_grad:``: a context manager's class where an object of it goes."""
    found = re.match(rf"^\s*with\s+({_DOTTED})\s*(?::|as\b)", code)
    cls = bound_to(found.group(1), frame) if found else None
    if found is None or not inspect.isclass(cls) or not hasattr(cls, "__enter__"):
        return None
    name = found.group(1)
    return (
        f"{name} is a class, and with takes an object of it, which switches the setting on entering the block and "
        f"back on leaving: call it, with {name}():."
    )


def _nesterov(code: str) -> str | None:
    """SGD(…, nesterov=True) without momentum (or with dampening)."""
    for node in calls(code):
        if call_name(node) != "SGD":
            continue
        momentum = next((ast.unparse(k.value) for k in node.keywords if k.arg == "momentum"), None)
        if momentum not in (None, "0", "0.0"):
            return None  # (dampening is the cause)
        keywords = [k for k in node.keywords if k.arg != "momentum"]
        keywords.append(ast.keyword("momentum", ast.Constant(0.9)))
        fixed = ast.unparse(ast.Call(func=node.func, args=node.args, keywords=keywords))
        return (
            "nesterov=True chooses how SGD applies momentum (it looks one step ahead), so it needs momentum too, and "
            f"this SGD has none (momentum is 0 by default). Give it a momentum: {fixed}."
        )
    return None


def _closure_returns_nothing(code: str, source_lines: list[str], frame: FrameType | None) -> str | None:
    """``lbfgs.step(closure)`` whose closure returns nothing: LBFGS reads the loss it returns."""
    for node in calls(code):
        if call_name(node) != "step" or len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
            continue
        closure = visible_names(frame).get(node.args[0].id)
        made = getattr(closure, "__code__", None)
        if made is None:
            return None
        name, at = node.args[0].id, made.co_firstlineno
        opt = ast.unparse(node.func.value) if isinstance(node.func, ast.Attribute) else "the optimizer"
        return (
            f"{opt}.step() calls {name} (line {at}) for the loss at each evaluation and reads the number it "
            f"returns, and {name} returns nothing (None). End it with return loss, the loss it computed and called "
            "backward() on."
        )
    return None


def _functional_call_given(kind: str, code: str) -> str | None:
    """``functional_call(model, model.parameters(), x)``: the tensors without their names."""
    for node in calls(code):
        if call_name(node) != "functional_call" or len(node.args) < 2:
            continue
        model, given = ast.unparse(node.args[0]), node.args[1]
        by_name = ast.parse(f"dict({model}.named_parameters())", mode="eval").body
        fixed = ast.unparse(
            ast.Call(func=node.func, args=[node.args[0], by_name, *node.args[2:]], keywords=node.keywords)
        )
        return (
            f"functional_call runs {model} with the tensors it is given in place of its own, matched by name "
            f"('weight', 'fc.bias'), so it takes a dict of them, and {ast.unparse(given)} is a {kind} of bare tensors. "
            f"Pass them by name: {fixed}."
        )
    return None


def _grad_by_model(code: str, frame: FrameType | None) -> str | None:
    """``torch.autograd.grad(loss, model)``, ``loss.backward(inputs=model)``: a model (or a list
    of models) where the tensors to differentiate by go."""
    for node in calls(code):
        name = call_name(node)
        given = next((k.value for k in node.keywords if k.arg == "inputs"), None)
        if given is None and name == "grad" and len(node.args) >= 2:
            given = node.args[1]
        if given is None or name not in ("grad", "backward"):
            continue
        items = given.elts if isinstance(given, ast.List | ast.Tuple) else [given]
        model = next((ast.unparse(i) for i in items if is_module(bound_to(ast.unparse(i), frame))), None)
        if model is None:
            return None
        kind = type(bound_to(model, frame)).__name__
        params = ast.parse(f"list({model}.parameters())", mode="eval").body
        args = [params if a is given else a for a in node.args]
        keywords = [ast.keyword(k.arg, params) if k.value is given else k for k in node.keywords]
        fixed = ast.unparse(ast.Call(func=node.func, args=args, keywords=keywords))
        after = (
            ": the gradients come back as a tuple, one per parameter in that order, and no .grad is filled"
            if name == "grad"
            else ""
        )
        return (
            f"{name}() takes the tensors to differentiate by, and was given {model}, a model (an nn.{kind}), not "
            f"tensors. Pass its parameters, {fixed}{after}."
        )
    return None


def _needed_argument(name: str, argument: str, code: str) -> str | None:
    """``StepLR(opt)``, ``clip_grad_norm_(model.parameters())``: the number it needs, told and
    written into the snippet's call."""
    meaning, value = _NEEDED[(name, argument)]
    for node in calls(code):
        if call_name(node) == name:
            keyword = ast.keyword(argument, ast.parse(value, mode="eval").body)
            fixed = ast.unparse(ast.Call(func=node.func, args=node.args, keywords=[*node.keywords, keyword]))
            return f"{name} needs {argument}, {meaning}, and has no default for it: pass one, {fixed}."
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
