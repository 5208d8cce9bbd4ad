"""Explain the errors of a model written wrong: a ``forward`` that returns nothing, a
``forward`` misspelt (or defined outside its class), a layer class given to ``nn.Sequential``
without parentheses, and a layer built inside ``forward`` (``x = nn.ReLU(x)``) where its
function was meant, and a ``forward`` that returns a layer (``return self.fc2``) where its
output was meant; a parametrized weight assigned to when its parametrization has no
``right_inverse``. Each error surfaces far from its cause (``'NoneType' object has no
attribute 'size'`` in the loss; ``must be Tensor, not ReLU`` a line later), so each hint
finds the cause in the snippet's source and frame and names its line.
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
import sys
from types import FrameType
from typing import Any

import torch

from .source import SNIPPET_FILENAME, is_module, quoted_code, visible_names

__all__ = ["model_definition_hint"]

_MISSING_FORWARD = re.compile(r'Module \[(\w+)\] is missing the required "forward" function')
_NOT_A_MODULE = re.compile(r"^([\w.]+) is not a Module subclass$")
_NO_RIGHT_INVERSE = re.compile(r"^parametrization (\w+) does not implement right_inverse\.")
_ASSIGNED_TO = re.compile(r"^([^\W\d][\w.]*)\.([^\W\d]\w*)\s*=(?!=)")
_NOT_TENSOR_BUT = re.compile(r"must be Tensor, not (\w+)")
# "'Linear' object has no attribute 'sum'", "… for -: 'Linear' and 'Tensor'", "must be Tensor, not Linear"
_NAMES_A_TYPE = re.compile(r"'\w+' object|'\w+' and '\w+'|not \w+")
_NONE_USED = re.compile(r"'NoneType' object|NoneType|not NoneType")
# what a layer built in forward stands for, applied to its input
_FUNCTION_OF = {
    "ReLU": "torch.relu({x})",
    "Sigmoid": "torch.sigmoid({x})",
    "Tanh": "torch.tanh({x})",
    "Softmax": "torch.softmax({x}, dim=1)",
    "LogSoftmax": "torch.log_softmax({x}, dim=1)",
    "GELU": "F.gelu({x})",
    "LeakyReLU": "F.leaky_relu({x})",
    "ELU": "F.elu({x})",
    "SiLU": "F.silu({x})",
    "Dropout": "F.dropout({x}, p=0.5, training=self.training)",
    "Flatten": "torch.flatten({x}, 1)",
}


def model_definition_hint(
    text: str, source_lines: list[str], line: int | None, frame: FrameType | None
) -> str | None:
    """The hint for error ``text`` raised at snippet ``line`` when its cause is how a model
    is written (see the module's docstring); ``None`` for any other error."""
    missing = _MISSING_FORWARD.search(text)
    if missing:
        return _forward_missing(missing.group(1), source_lines)
    given = _NOT_A_MODULE.search(text)
    if given:
        return _class_in_sequential(given.group(1))
    code = quoted_code(source_lines, line, sys.maxsize) if line else None  # read, not quoted
    inverse = _NO_RIGHT_INVERSE.search(text)
    if inverse:
        return _no_right_inverse(inverse.group(1), code)
    if frame is None or not code:
        return None
    layer = _NOT_TENSOR_BUT.search(text)
    if layer and layer.group(1) != "NoneType":
        built = _layer_built_in_place(layer.group(1), code, source_lines, line, frame)
        if built:
            return built
    if _NAMES_A_TYPE.search(text):
        returned = _returned_layer(text, code, source_lines, line, frame)
        if returned:
            return returned
    if _NONE_USED.search(text):
        return _returned_none(code, source_lines, line, frame)
    return None


def _no_right_inverse(cls: str, code: str | None) -> str:
    """``layer.weight = W`` where ``layer.weight`` is computed by a parametrization ``cls``
    that has no ``right_inverse`` to find the stored original from ``W``."""
    found = _ASSIGNED_TO.match(code or "")
    layer, name = found.groups() if found else ("layer", "weight")
    return (
        f"{layer}.{name} is computed by the parametrization {cls} from a stored original, so assigning to it "
        f"asks {cls}.right_inverse(value) for the original that gives this value, and {cls} defines none. Add "
        f"one to {cls}, the inverse of its forward (for X.exp(): def right_inverse(self, W): return W.log()), or "
        f"write the original itself: with torch.no_grad(): {layer}.parametrizations.{name}.original.copy_(…)."
    )


def _forward_missing(cls: str, source_lines: list[str]) -> str:
    """``cls`` has no ``forward``: a container called as a layer, a method whose name is close
    to it, or one defined outside the class, where the source shows either."""
    if cls in ("ModuleList", "ModuleDict", "ParameterList", "ParameterDict"):
        return (
            f"An nn.{cls} only holds layers (so that the model registers them); it is not a layer and has "
            "no forward, so it cannot be called. Run its layers in turn in your forward, for layer in "
            "self.layers: x = layer(x), or hold them in an nn.Sequential, which can be called."
        )
    tree = _parsed("\n".join(source_lines))
    found = (
        next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if tree
        else None
    )
    methods = {n.name: n.lineno for n in found.body if isinstance(n, ast.FunctionDef)} if found else {}
    close = difflib.get_close_matches("forward", [m for m in methods if m != "__init__"], n=1, cutoff=0.6)
    if close:
        return (
            f"{cls} defines {close[0]} (line {methods[close[0]]}), not forward: calling a module runs its "
            f"method named exactly forward, so {cls} has none. Rename {close[0]} to forward."
        )
    outside = next(
        (
            n.lineno
            for n in (tree.body if tree else [])
            if isinstance(n, ast.FunctionDef) and n.name == "forward"
        ),
        None,
    )
    if outside is not None:
        return (
            f"forward (line {outside}) is defined outside class {cls}: it starts at the left margin, so it is a "
            f"plain function, and {cls} has no forward method. Indent it under the class, as __init__ is."
        )
    return (
        f"{cls} has no forward method: calling a module runs its forward. Add one that takes the input and "
        "returns the output: def forward(self, x): return self.layer(x)."
    )


def _class_in_sequential(written: str) -> str:
    """nn.Sequential (or ModuleList) given something that is not a layer instance."""
    name = written.rsplit(".", 1)[-1]
    cls = getattr(torch.nn, name, None)
    if isinstance(cls, type) and issubclass(cls, torch.nn.Module):
        return (
            f"nn.Sequential takes layers, and was given the class nn.{name} itself, not a layer made from it: "
            f"add the parentheses, nn.{name}()."
        )
    if name in ("list", "tuple"):
        return (
            f"nn.Sequential takes the layers themselves, one argument each, and was given one {name} of them. "
            "Unpack it with a star: nn.Sequential(*layers)."
        )
    layer = next((c for c in _FUNCTION_OF if c.lower() == name.lower()), None)
    instead = f": for {name}, its layer is nn.{layer}()" if layer else ""
    return (
        f"nn.Sequential takes layers (nn.Module instances) and was given {written}, which is not one{instead}. "
        "A plain function goes in a module's forward() instead."
    )


def _layer_built_in_place(
    kind: str, code: str, source_lines: list[str], line: int | None, frame: FrameType
) -> str | None:
    """A layer instance (an ``nn.ReLU``) reached an op as its input: the line above that
    made it built the layer with the input as its setting (``x = nn.ReLU(x)``)."""
    cls = getattr(torch.nn, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)) or line is None:
        return None
    scope = visible_names(frame)
    held = [n for n in re.findall(r"(?<![\w.])[^\W\d]\w*", code) if isinstance(scope.get(n), cls)]
    if not held:
        return None
    name = held[0]
    made = re.compile(rf"^{re.escape(name)}\s*=\s*(?:torch\.)?(?:nn\.)?{kind}\((.+)\)\s*$")
    for at in range(line - 1, 0, -1):
        above = quoted_code(source_lines, at, 10_000)
        built = made.match(above or "")
        if built is None:
            continue
        arg = built.group(1)
        applied = _FUNCTION_OF.get(kind, f"F.{kind.lower()}({{x}})").format(x=arg)
        return (
            f"{name} is an nn.{kind} layer, not a tensor: line {at} ({above}) builds a new nn.{kind}, taking "
            f"{arg} as one of its settings, instead of applying one to it. In forward, apply the function: "
            f"{name} = {applied}; or build the layer once in __init__ (self.act = nn.{kind}()) and call it, "
            f"{name} = self.act({arg})."
        )
    return None


def _returned_layer(
    text: str, code: str, source_lines: list[str], line: int | None, frame: FrameType
) -> str | None:
    """A name on the line holds a layer, not a tensor, because the snippet's model that gave
    it ends its ``forward`` with ``return self.fc2``, the layer itself, not ``self.fc2(x)``."""
    scope = visible_names(frame)
    names = [
        n
        for n in dict.fromkeys(re.findall(r"(?<![\w.])[^\W\d]\w*", code))
        if is_module(scope.get(n)) and re.search(rf"\b{type(scope[n]).__name__}\b", text)
    ]
    for name in names:
        assigned = _assigned_from_call(name, source_lines, line)
        if assigned is None:
            continue
        at, callee = assigned
        model = _resolved(callee, scope)
        fn, what = _function_of(model, callee)
        returned = _layer_returned(fn, source_lines) if is_module(model) else None
        if returned is None or getattr(model, returned, None) is not scope[name]:
            return None
        kind = type(scope[name]).__name__
        return (
            f"{name} is the layer self.{returned} itself (an nn.{kind}), not a tensor: line {at} set it to what "
            f"{callee}(…) returned, and {what} (line {fn.co_firstlineno}) returns self.{returned} without "
            f"calling it. Return the layer's output: return self.{returned}({_input_of(fn)})."
        )
    for called in re.finditer(r"(?<![\w.])([^\W\d][\w.]*)\(", code):  # model(x) on the line itself
        model = _resolved(called.group(1), scope)
        fn, what = _function_of(model, called.group(1))
        returned = _layer_returned(fn, source_lines) if is_module(model) else None
        layer = getattr(model, returned, None) if returned else None
        if fn is not None and is_module(layer) and re.search(rf"\b{type(layer).__name__}\b", text):
            return (
                f"{called.group(1)}(…) gives the layer self.{returned} itself (an nn.{type(layer).__name__}), not a "
                f"tensor: {what} (line {fn.co_firstlineno}) returns self.{returned} without calling it. Return the "
                f"layer's output: return self.{returned}({_input_of(fn)})."
            )
    return None


def _input_of(code: Any) -> str:
    """The name of a forward's input (its first argument after self), ``x`` where it has none."""
    return code.co_varnames[1] if code.co_argcount >= 2 else "x"


def _layer_returned(code: Any, source_lines: list[str]) -> str | None:
    """``fc2`` where the snippet's function starting at ``code.co_firstlineno`` has
    ``return self.fc2`` in its own body; ``None`` otherwise."""
    tree = _parsed("\n".join(source_lines))
    if tree is None or code is None:
        return None
    fn = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.lineno == code.co_firstlineno),
        None,
    )
    for node in _own_nodes(fn) if fn is not None else []:
        value = node.value if isinstance(node, ast.Return) else None
        if (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id == "self"
        ):
            return value.attr
    return None


def _assigned_from_call(name: str, source_lines: list[str], line: int | None) -> tuple[int, str] | None:
    """``(line, callee)`` of the nearest statement above ``line`` (the end of the snippet
    where unknown) that sets ``name`` to what a call returned (``out = model(x)``)."""
    assigned = re.compile(rf"^{re.escape(name)}\s*=\s*([^\W\d][\w.]*)\(")
    for at in range(line - 1 if line else len(source_lines), 0, -1):
        found = assigned.match(quoted_code(source_lines, at, 10_000) or "")
        if found is not None:
            return at, found.group(1)
    return None


def _returned_none(code: str, source_lines: list[str], line: int | None, frame: FrameType) -> str | None:
    """A name on the line holds None because the model (or function) that gave it returns
    nothing: its ``forward`` (or body) has no ``return``."""
    scope = visible_names(frame)
    names = [
        n
        for n in dict.fromkeys(re.findall(r"(?<![\w.])[^\W\d]\w*", code))
        if n in scope and scope[n] is None
    ]
    for name in names:
        assigned = _assigned_from_call(name, source_lines, line)
        missing = _without_return(assigned[1], scope, source_lines) if assigned is not None else None
        if assigned is not None and missing is not None:
            return (
                f"{name} is None: line {assigned[0]} set it to what {assigned[1]}(…) returned, and {missing} "
                "has no return statement, so it returns None. End it with the value it computes: return x."
            )
    return _called_returns_none(code, source_lines, scope)


def _called_returns_none(code: str, source_lines: list[str], scope: dict[str, Any]) -> str | None:
    """A call on the line itself (``F.cross_entropy(model(x), y)``) of a model or function of
    the snippet's that has no ``return``: what it gave the line is None."""
    for found in re.finditer(r"(?<![\w.])([^\W\d][\w.]*)\(", code):
        missing = _without_return(found.group(1), scope, source_lines)
        if missing is not None:
            return (
                f"{found.group(1)}(…) is None here: {missing} has no return statement, so it returns None. "
                "End it with the value it computes: return x."
            )
    return None


def _without_return(written: str, scope: dict[str, Any], source_lines: list[str]) -> str | None:
    """``Net.forward (line 8)``: what a call of ``written`` runs, where it is the snippet's
    and has no ``return`` with a value; ``None`` otherwise."""
    fn, what = _function_of(_resolved(written, scope), written)
    if fn is None or _returns_a_value(fn, source_lines):
        return None
    return f"{what} (line {fn.co_firstlineno})"


def _resolved(dotted: str, scope: dict[str, Any]) -> Any:
    first, *rest = dotted.split(".")
    value = scope.get(first)
    for part in rest:
        value = getattr(value, part, None) if is_module(value) else None
    return value


def _function_of(callee: Any, written: str) -> tuple[Any, str]:
    """The code object a call of ``callee`` runs, where the snippet defined it, and what to
    call it in a hint (``Net.forward``, ``predict``); ``(None, "")`` otherwise."""
    if is_module(callee):
        forward = getattr(type(callee), "forward", None)
        code = getattr(forward, "__code__", None)
        return (code, f"{type(callee).__name__}.forward") if _in_snippet(code) else (None, "")
    code = getattr(callee, "__code__", None)
    return (code, written) if _in_snippet(code) else (None, "")


def _in_snippet(code: Any) -> bool:
    return code is not None and getattr(code, "co_filename", None) == SNIPPET_FILENAME


def _returns_a_value(code: Any, source_lines: list[str]) -> bool:
    """Whether the snippet function starting at ``code.co_firstlineno`` has a ``return``
    with a value (or a ``yield``) in its own body; True where the source cannot tell."""
    tree = _parsed("\n".join(source_lines))
    if tree is None:
        return True
    fn = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and (
                n.lineno == code.co_firstlineno
                or any(d.lineno == code.co_firstlineno for d in n.decorator_list)
            )
        ),
        None,
    )
    if fn is None:
        return True
    return any(_gives_value(n) for n in _own_nodes(fn))


def _gives_value(node: ast.AST) -> bool:
    return (isinstance(node, ast.Return) and node.value is not None) or isinstance(
        node, ast.Yield | ast.YieldFrom
    )


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of ``fn``'s body, not those of functions or classes defined inside it."""
    found: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        found.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return found


@functools.lru_cache(maxsize=4)
def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None
