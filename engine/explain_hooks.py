"""Explain the errors of gradient and module hooks, the tool a course uses to look inside
backward(): a hook on a tensor that gets no gradient, a tensor hook that returns something
of another shape (a norm, to log it), a module hook (a def or a lambda) with the wrong number of
arguments, a full backward hook on a module whose output the next layer changes in place, or
that returns a tensor where a tuple of gradients goes, and one that reads grad_input[0] where it
is None (the module's input is data, which does not require grad). The last reads the hook's
own frame, so :func:`hook_hint` takes the frame the error came from.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Sequence
from types import FrameType

from .explain_seed import name_before
from .source import line_matching, quoted_code

__all__ = ["hook_hint"]

_HOOK_SIZE = re.compile(r"hook '([^']+)' has changed the size of value")
_TOO_MANY = re.compile(r"(<lambda>|\w+)\(\) takes (\d+) positional arguments? but (\d+) were given")
_RETURNED_COUNT = re.compile(
    r"Backward hook returned an invalid number of grad_input, got (\d+), but expected (\d+)"
)
# what each kind of hook is called with
_CALLED_WITH = {
    "register_forward_hook": ("hook(module, input, output)", 3),
    "register_forward_pre_hook": ("hook(module, input)", 2),
    "register_full_backward_hook": ("hook(module, grad_input, grad_output)", 3),
    "register_backward_hook": ("hook(module, grad_input, grad_output)", 3),
    "register_full_backward_pre_hook": ("hook(module, grad_output)", 2),
    "register_hook": ("hook(grad)", 1),
}


def hook_hint(
    text: str, code: str | None, source_lines: Sequence[str], frame: FrameType | None = None
) -> str | None:
    """The hint for error ``text`` (raised at a line reading ``code``, in ``frame``) caused by a
    hook the snippet registered; ``None`` for any other error."""
    if "'NoneType' object" in text and frame is not None:
        missing = _none_grad_input(code, frame)
        if missing:
            return missing
    if "cannot register a hook on a tensor that doesn't require gradient" in text:
        name = name_before(".register_hook(", code) or "This tensor"
        return (
            f"{name} does not require grad, so no gradient flows to it and a hook would never be called. To "
            f"watch the gradient of an input, make it require grad before it is used "
            f"({name}.requires_grad_(), or requires_grad=True where it is made); to watch a layer's, hook a "
            "tensor computed from the parameters."
        )
    size = _HOOK_SIZE.search(text)
    if size:
        at = line_matching(source_lines, re.compile(r"\.register_hook\("))
        where = f" (line {at[0]}: {at[1]})" if at else ""
        return (
            f"A tensor hook's return value replaces the gradient, so it must have the gradient's shape, or be "
            f"None to leave the gradient as it is. This hook{where} returns something of another shape (a norm, "
            "a sum): to log it, print or store it and return nothing, lambda g: print(g.norm()), or a def that "
            "appends g.norm().item() to a list."
        )
    returned = _RETURNED_COUNT.search(text)
    if returned:
        return _returned_count(int(returned.group(1)), int(returned.group(2)), source_lines)
    arguments = _TOO_MANY.search(text) or _too_few(text)
    if arguments:
        return _hook_arguments(arguments.group(1), source_lines)
    if "of BackwardHookFunction is a view and is being modified inplace" in text:
        at = line_matching(source_lines, re.compile(r"\.register_full_backward_hook\("))
        where = f" (line {at[0]})" if at else ""
        return (
            f"A full backward hook{where} wraps the outputs of its module, and the layer after it changes them in "
            "place (an nn.ReLU(inplace=True), an x += …), which autograd refuses for those wrapped outputs. Build "
            "that layer without inplace=True (nn.ReLU()), or hook a module whose output is not changed in place."
        )
    return None


def _none_grad_input(code: str | None, frame: FrameType) -> str | None:
    """A backward hook that reads ``grad_input[0]`` where it is None: the module's input does not
    require grad (the data, usually), so no gradient flows to it."""
    params = frame.f_code.co_varnames[: frame.f_code.co_argcount]
    if len(params) != 3:
        return None
    module, grad_input, grad_output = (frame.f_locals.get(p) for p in params)
    if not isinstance(grad_input, tuple) or not isinstance(grad_output, tuple) or None not in grad_input:
        return None
    read = re.search(rf"\b{re.escape(params[1])}\[(\d+)\]", code or "")
    if read is None or grad_input[int(read.group(1))] is not None:
        return None
    kind = type(module).__name__
    return (
        f"{params[1]}[{read.group(1)}] is None: a backward hook's {params[1]} (grad_input) holds the gradient of each "
        f"input of the module ({kind}), and None for an input that does not require grad, as data does. For the "
        f"gradient that reaches the module from the layers after it, read {params[2]}[0] (grad_output); for its "
        f"weights' gradients, read {params[0]}.weight.grad after backward(); or test for None first."
    )


def _returned_count(got: int, expected: int, source_lines: Sequence[str]) -> str | None:
    """A module's full backward hook that returns a tensor (or a tuple of another length)."""
    at = line_matching(source_lines, re.compile(r"\.register_full_backward_hook\(\s*\w+"))
    hook = re.search(r"\.register_full_backward_hook\(\s*(\w+)", at[1]) if at else None
    if at is None or hook is None:
        return None
    name = hook.group(1)
    defined = line_matching(source_lines, re.compile(rf"^def {re.escape(name)}\("))
    body = range(defined[0] + 1, len(source_lines) + 1) if defined else range(0)
    returns = line_matching(source_lines, re.compile(r"^return\s+\S"), body)
    value = returns[1][len("return") :].strip() if returns else ""
    fix = (
        f": return ({value},)"
        if expected == 1 and value and not value.startswith(("(", "None", "tuple("))
        else ", one entry per input, None for one to leave as it is"
    )
    return (
        f"{name} (registered at line {at[0]}) returns what replaces the module's grad_input, and that is a tuple with "
        f"one gradient per input of the module, {expected} here; what it returned reads as {got} entries (a tensor "
        f"counts its rows). Return None to leave the gradients as they are, or a tuple{fix}."
    )


def _lambda_arguments(registered: tuple[int, str]) -> str | None:
    """A lambda registered as a hook that takes another number of arguments than its kind of
    hook is called with: the lambda written again with them, its own names kept last."""
    at, code = registered
    kind = re.search(r"\.(register_\w*hook)\(", code)
    called = _CALLED_WITH.get(kind.group(1)) if kind else None
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None
    hook = next((n for n in ast.walk(tree) if isinstance(n, ast.Lambda)), None)
    if called is None or kind is None or hook is None:
        return None
    signature, count = called
    own = [a.arg for a in hook.args.args]
    wanted = signature[len("hook(") : -1].split(", ")
    # its own names kept last (lambda out: … is meant for the output); none dropped
    names = [*wanted[: count - len(own)], *own] if len(own) < count else None
    fixed = f": lambda {', '.join(names)}: {ast.unparse(hook.body)}" if names else ""
    return (
        f"The lambda registered with {kind.group(1)} at line {at} takes {len(own)} argument{'s' if len(own) != 1 else ''}, "
        f"and that hook is called as {signature}: {count} of them. Give it those {count}, in that order{fixed} "
        "(input and grad_input are tuples of the module's inputs)."
    )


def _too_few(text: str) -> re.Match[str] | None:
    return re.search(r"(<lambda>|\w+)\(\) missing \d+ required positional arguments?", text)


def _hook_arguments(function: str, source_lines: Sequence[str]) -> str | None:
    """``function``, registered as a hook, takes a number of arguments its kind of hook is
    not called with."""
    written = "lambda" if function == "<lambda>" else re.escape(function)
    registered = line_matching(source_lines, re.compile(rf"\.(register_\w*hook)\(\s*{written}\b"))
    if registered is None:
        return None
    if function == "<lambda>":
        return _lambda_arguments(registered)
    kind = re.search(r"\.(register_\w*hook)\(", registered[1])
    called = _CALLED_WITH.get(kind.group(1)) if kind else None
    if called is None:
        return None
    signature, count = called
    defined = line_matching(source_lines, re.compile(rf"^def {re.escape(function)}\("))
    where = f" (line {defined[0]}: {quoted_code(source_lines, defined[0], sys.maxsize)})" if defined else ""
    return (
        f"{function} is registered with {kind.group(1) if kind else 'a hook'} at line {registered[0]}, which calls "
        f"it as {signature}: {count} argument{'s' if count != 1 else ''}. Its definition{where} takes another "
        f"number: give it those {count}, in that order (input and grad_input are tuples of the module's inputs)."
    )
