"""Explain the errors of a custom ``torch.autograd.Function``, the way a course teaches
autograd from the inside: ``backward`` returning too few gradients or one of the wrong shape,
``save_for_backward`` given a number, ``ctx.saved_tensors()`` called, the Function
instantiated (``Square()(x)``) instead of applied, ``forward``/``backward`` written
without ``@staticmethod``, and ``gradcheck`` of it run in float32. PyTorch's messages name a ``MulConstBackward`` and an index; each
hint names the snippet's class, its inputs and the return statement to write.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import textwrap
from types import FrameType

import torch

from .source import visible_names

__all__ = ["custom_function_hint"]

_GRAD_COUNT = re.compile(
    r"function (\w+)Backward returned an incorrect number of gradients \(expected (\d+), got (\d+)\)"
)
_GRAD_SHAPE = re.compile(
    r"Function (\w+)Backward returned an invalid gradient at index (\d+) - got \[([\d, ]*)\] but expected shape "
    r"compatible with \[([\d, ]*)\]"
)
_SAVED_NON_TENSOR = re.compile(
    r"save_for_backward can only save variables, but argument (\d+) is of type (\w+)"
)
_NOT_STATIC = re.compile(r"(\w+)\.(forward|backward)\(\) missing \d+ required positional arguments?")
_ONE_TOO_MANY = re.compile(
    r"(\w+)\.(forward|backward)\(\) takes (\d+) positional arguments? but (\d+) were given"
)


def custom_function_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``text`` raised by a custom autograd.Function of the snippet (at a
    line reading ``code``, in ``frame``); ``None`` for any other error."""
    count = _GRAD_COUNT.search(text)
    if count:
        return _gradient_count(count.group(1), int(count.group(2)), int(count.group(3)), frame)
    shape = _GRAD_SHAPE.search(text)
    if shape:
        return _gradient_shape(
            shape.group(1), int(shape.group(2)), _dims(shape.group(3)), _dims(shape.group(4))
        )
    saved = _SAVED_NON_TENSOR.search(text)
    if saved:
        return _saved_non_tensor(int(saved.group(1)), saved.group(2), frame)
    if "Legacy autograd function with non-static forward method" in text:
        made = re.search(r"([^\W\d]\w*)\(\)\(", code or "")
        cls = made.group(1) if made else "MyFunction"
        return (
            f"A custom autograd.Function is applied through its class, never made into an object: write "
            f"{cls}.apply(x), not {cls}()(x). Its forward and backward are static methods, with ctx for what "
            "backward needs."
        )
    if "'tuple' object is not callable" in text and "saved_tensors()" in (code or ""):
        return (
            "ctx.saved_tensors is an attribute holding the tuple save_for_backward stored, not a method: read "
            "it without parentheses, x, = ctx.saved_tensors (the comma unpacks a tuple of one)."
        )
    if "Jacobian mismatch" in text and _single_precision_on(code, frame):
        return (
            "gradcheck compares backward()'s gradients with finite differences, (f(x + eps) - f(x - eps)) / 2eps "
            "with eps = 1e-6, which float32's 7 digits cannot resolve (PyTorch warns so above). Give it float64 "
            "inputs: x = torch.randn(5, dtype=torch.float64, requires_grad=True); a mismatch left then is real."
        )
    static = _NOT_STATIC.search(text)
    plain = _not_static(static.group(1), frame) if static else None
    if plain:
        return plain
    extra = _ONE_TOO_MANY.search(text)
    if extra and int(extra.group(4)) == int(extra.group(3)) + 1:
        return _without_ctx(extra.group(1), extra.group(2), frame)
    return _made_not_applied(text, code, frame) or _forward_called(code, frame) or _saved_twice(text, frame)


def _made_not_applied(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """``Square(x)``: a Function object made of the inputs, then used as the output."""
    for call in re.finditer(r"(?<![\w.])([^\W\d]\w*)\(([^()]*)\)", code or ""):
        name, args = call.groups()
        if f"'{name}'" in text and _function_class(name, frame) is not None:
            return (
                f"{name}({args}) makes a {name} object, not its output: a custom autograd.Function runs "
                f"through apply, which calls forward with a ctx and records the node backward() will run. "
                f"Write {name}.apply({args})."
            )
    return None


def _forward_called(code: str | None, frame: FrameType | None) -> str | None:
    """``Square.forward(None, x)`` or ``Square.forward(x)``: forward run directly, failing
    inside (ctx is not a context) or at the call (an input short)."""
    caller, ctx = frame, "a context"
    if frame is not None and frame.f_code.co_name == "forward" and frame.f_code.co_argcount >= 1:
        given = frame.f_locals.get(frame.f_code.co_varnames[0])
        if isinstance(given, torch.autograd.function.FunctionCtx) or frame.f_back is None:
            return None
        caller, ctx = frame.f_back, "None" if given is None else f"a {type(given).__name__}"
        code = linecache.getline(caller.f_code.co_filename, caller.f_lineno)
    called = re.search(r"(?<![\w.])([^\W\d]\w*)\.forward\(", code or "")
    if caller is None or called is None or _function_class(called.group(1), caller) is None:
        return None
    name = called.group(1)
    inside = (
        f", so its ctx is {ctx}, not the context apply makes"
        if ctx != "a context"
        else ", without the ctx apply makes"
    )
    return (
        f"{name}.forward was called directly (line {caller.f_lineno}){inside}, and no node is recorded for "
        f"backward(). Call {name}.apply with the inputs alone: apply passes forward a ctx first."
    )


def _saved_twice(text: str, frame: FrameType | None) -> str | None:
    """A backward unpacking ``ctx.saved_tensors`` into fewer or more names than are there,
    because forward called ``save_for_backward`` more than once (each call replaces the last)."""
    counts = re.search(r"(?:not enough|too many) values to unpack \(expected (\d+)(?:, got (\d+))?\)", text)
    if counts is None or frame is None or frame.f_code.co_name != "backward" or frame.f_code.co_argcount < 1:
        return None
    cls = getattr(type(frame.f_locals.get(frame.f_code.co_varnames[0])), "_forward_cls", None)
    if cls is None:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls.forward)))
    except (AttributeError, OSError, TypeError, SyntaxError):
        return None
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "save_for_backward"
    ]
    if len(calls) < 2:
        return None
    saved = [ast.unparse(a) for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset)) for a in c.args]
    last = ", ".join(ast.unparse(a) for a in max(calls, key=lambda c: (c.lineno, c.col_offset)).args)
    return (
        f"{cls.__name__}.forward calls ctx.save_for_backward {len(calls)} times, and each call replaces what the "
        f"one before saved: ctx.saved_tensors holds only the last call's ({last}). Save them all in one call: "
        f"ctx.save_for_backward({', '.join(saved)})."
    )


def _single_precision_on(code: str | None, frame: FrameType | None) -> bool:
    """Whether a name on ``code`` holds a float32 (or half) tensor that requires grad."""
    scope = visible_names(frame)
    return any(
        isinstance(t, torch.Tensor)
        and t.requires_grad
        and t.dtype in (torch.float32, torch.float16, torch.bfloat16)
        for t in (scope.get(n) for n in re.findall(r"(?<![\w.])[^\W\d]\w*", code or ""))
    )


def _function_class(name: str, frame: FrameType | None) -> type[torch.autograd.Function] | None:
    found = visible_names(frame).get(name)
    return found if isinstance(found, type) and issubclass(found, torch.autograd.Function) else None


def _inputs(cls: type[torch.autograd.Function] | None) -> list[str]:
    """The names of ``cls.forward``'s inputs, after ctx."""
    try:
        names = list(inspect.signature(cls.forward).parameters) if cls is not None else []
    except (TypeError, ValueError):
        return []
    return [n for n in names[1:] if n not in ("args", "kwargs")]


def _gradient_count(name: str, expected: int, got: int, frame: FrameType | None) -> str:
    inputs = _inputs(_function_class(name, frame))
    listed = f" ({', '.join(inputs)})" if len(inputs) == expected else ""
    # the gradients it returned stand for the first inputs; None for the rest, when it returned too few
    shown = f": return {', '.join(['…'] * got + ['None'] * (expected - got))}" if got < expected else ""
    return (
        f"{name}.backward must return one gradient per input of forward, in forward's order: forward takes "
        f"{expected} inputs after ctx{listed}, and backward returned {got}. Return None in the place of an "
        f"input that needs no gradient (a number, a flag){shown}."
    )


def _gradient_shape(name: str, index: int, got: list[int], wanted: list[int]) -> str:
    undo = ""
    for d in range(len(wanted)):
        if wanted[:d] + wanted[d + 1 :] == got:
            undo = (
                f" forward reduced dim {d} away, so put it back and broadcast: g.unsqueeze({d}).expand({', '.join(map(str, wanted))}) "
                "(or .expand_as(x), with x saved in forward)."
            )
            break
    return (
        f"{name}.backward must return, for each input of forward, a gradient of that input's shape: input "
        f"{index} has shape {wanted}, and the gradient returned for it has {got}.{undo or ' Reshape it to the input.'}"
    )


def _saved_non_tensor(index: int, kind: str, frame: FrameType | None) -> str:
    args = _saved_arguments(frame)
    name = args[index] if index < len(args) else None
    keep = (
        f"ctx.{name} = {name}, and read ctx.{name} in backward"
        if name and name.isidentifier()
        else ("ctx.alpha = alpha, and read ctx.alpha in backward")
    )
    which = f"{name}, a {kind}" if name else f"argument {index}, a {kind}"
    return (
        f"ctx.save_for_backward takes tensors only (it checks they are not changed before backward), and was "
        f"given {which}. Keep any other value as an attribute of ctx: {keep}."
    )


def _saved_arguments(frame: FrameType | None) -> list[str]:
    """The arguments of the ``ctx.save_for_backward(...)`` call in ``frame``'s function."""
    if frame is None:
        return []
    try:
        source = inspect.getsource(frame.f_code)
    except (OSError, TypeError):
        return []
    call = re.search(r"save_for_backward\(([^)]*)\)", source)
    return [a.strip() for a in call.group(1).split(",")] if call else []


def _not_static(name: str, frame: FrameType | None) -> str | None:
    cls = _function_class(name, frame)
    if cls is None:
        return None
    plain = [
        m
        for m in ("forward", "backward")
        if not isinstance(inspect.getattr_static(cls, m, None), staticmethod)
    ]
    if not plain:
        return None
    return (
        f"{name} is an autograd.Function, whose {' and '.join(plain)} must be static methods: "
        f"put @staticmethod above {'each' if len(plain) > 1 else 'it'} and drop self, so they take "
        f"(ctx, inputs...): @staticmethod def forward(ctx, x): and @staticmethod def backward(ctx, grad_out):."
    )


def _without_ctx(name: str, method: str, frame: FrameType | None) -> str | None:
    """A static forward (or backward) of autograd.Function ``name`` written without its
    ``ctx`` parameter: PyTorch passes ctx first, one argument more than it takes."""
    cls = _function_class(name, frame)
    if cls is None or not isinstance(inspect.getattr_static(cls, method, None), staticmethod):
        return None
    fn = inspect.getattr_static(cls, method).__func__
    params = list(inspect.signature(fn).parameters)
    if params and params[0] == "ctx":
        return None
    given = ", ".join(params)
    written = f"{method}({given})"
    wanted = f"{method}(ctx{', ' + given if given else ''})"
    return (
        f"{name}.{written} takes no ctx: PyTorch passes an autograd.Function's {method} a context first "
        f"(ctx, where save_for_backward keeps what backward needs), then "
        + ("the inputs of apply()" if method == "forward" else "the gradient of each output")
        + f". Make ctx its first parameter: def {wanted}:."
    )


def _dims(text: str) -> list[int]:
    return [int(d) for d in text.split(",") if d.strip()]
