"""A custom ``autograd.Function`` whose backward ignores the gradient it receives
(custom-backward-ignores-gradient).

``backward(ctx, grad_output)`` gets the gradient of the loss with respect to the Function's
output and must return it times the local derivative: that product is the chain rule. One
that returns the local derivative alone (``return 2 * x`` for x²) sends the right numbers
only while grad_output is all ones (the output is the loss, or only summed into it): put any
op between it and the loss and every gradient before it is wrong, silently.

Told when a node of such a Function runs in a walk recorded in full and sends a gradient
that is not all zeros, once per Function. The Function must be the snippet's own and its
``backward`` must never read the values of any of its gradient parameters (its source is
parsed; a ``@once_differentiable`` wrapper is looked through): reading only a gradient's
shape, dtype or device (``-torch.ones_like(grad_output)``, a gradient reversal gone wrong;
``grad_output.size()``) counts as not reading it. A backward that sends only ``None`` or zeros
(a gradient stop, on purpose) is not told.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Sequence
from typing import NamedTuple

import torch

from ..source import SNIPPET_FILENAME

__all__ = ["IgnoredGradients"]


class _Ignoring(NamedTuple):
    """What the report needs of one Function whose backward never reads its gradients."""

    function: str  # the class's name
    gradient: str  # the gradient parameter, as code: ``grad_output``, ``grads[0]``
    signature: str  # ``backward(ctx, grad_output)``
    line: int  # the return statement's line (the def's where there are several)
    returned: ast.expr | None  # what that one return statement returns
    returned_code: str | None
    shape_read: bool  # whether backward reads its gradient's shape (torch.ones_like(grad_output))


class IgnoredGradients:
    """Finds the custom Functions whose backward ignores its gradients (see the module's
    docstring). Feed it every Function applied (:meth:`applied`) and every node run
    (:meth:`ran`)."""

    def __init__(self) -> None:
        self._checked: set[str] = set()  # node class names looked at
        self._ignoring: dict[str, _Ignoring] = {}  # by node class name, until told

    def applied(self, cls: type) -> None:
        """Look at Function ``cls``, applied by the snippet (once per class name)."""
        node_name = f"{cls.__name__}Backward"
        if node_name in self._checked:
            return
        self._checked.add(node_name)
        found = _ignoring(cls)
        if found is not None:
            self._ignoring[node_name] = found

    def ran(
        self, name: str, received: Sequence[torch.Tensor | None], sent: Sequence[torch.Tensor | None]
    ) -> tuple[int, str, str, str] | None:
        """``(line, title, message, fix)`` when node class ``name`` is an ignoring Function's and
        sent (``sent``) a gradient other than zeros while it received ``received``; else None."""
        found = self._ignoring.get(name)
        if found is None:
            return None
        with torch.no_grad():
            if not any(g is not None and bool(g.count_nonzero()) for g in sent):
                return None
            del self._ignoring[name]
            incoming = next((g for g in received if g is not None), None)
            ones = incoming is not None and bool((incoming == 1).all())
            shown_in = _shown(incoming) if incoming is not None else "nothing"
            shown_out = " and ".join(_shown(g) for g in sent if g is not None)
        if ones:
            outcome = (
                f"Here {found.gradient} is all ones ({found.function}'s output is the loss, or is only "
                "summed into it), so the result happens to be right; put any op between it and the loss "
                "(a * 3, a mean, another layer) and every gradient before it is wrong."
            )
        else:
            outcome = (
                f"So the gradients it sends on, and every .grad before {found.function}, are wrong, "
                "with no error."
            )
        shape_only = " (it reads only its shape)" if found.shape_read else ""
        message = (
            f"{found.function}.{found.signature} never reads {found.gradient}, the gradient of the loss "
            f"with respect to {found.function}'s output{shape_only}. The chain rule needs it: backward must return "
            f"{found.gradient} times the local derivative. In this backward() {name} received "
            f"{found.gradient} = {shown_in} and sent {shown_out} regardless. {outcome}"
        )
        return (
            found.line,
            f"{found.function}.backward ignores the gradient it receives",
            message,
            _fix(found),
        )


def _ignoring(cls: type) -> _Ignoring | None:
    """What :class:`_Ignoring` holds for ``cls`` when its backward is the snippet's own and reads
    none of its gradient parameters; else None."""
    method = inspect.getattr_static(cls, "backward", None)
    function = inspect.unwrap(getattr(method, "__func__", method))
    code = getattr(function, "__code__", None)
    if code is None or code.co_filename != SNIPPET_FILENAME:
        return None
    try:
        text = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(text)
    except (OSError, TypeError, SyntaxError):
        return None
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef):
        return None
    args = definition.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][1:]  # after ctx
    named = [*positional, *(a.arg for a in args.kwonlyargs)]
    shown = list(positional)
    if args.vararg is not None:
        named.append(args.vararg.arg)
        shown.append(f"*{args.vararg.arg}")
    if not named:
        return None
    if _values_read(definition) & set(named):
        return None
    shape_read = bool(_names_loaded(definition) & set(named))
    returns = [n for n in _own_nodes(definition) if isinstance(n, ast.Return) and n.value is not None]
    first = code.co_firstlineno  # the first decorator's line: where ``text`` starts
    only = returns[0] if len(returns) == 1 else None
    gradient = positional[0] if positional else f"{args.vararg.arg}[0]" if args.vararg else named[0]
    ctx = (args.posonlyargs + args.args)[0].arg if args.posonlyargs or args.args else "ctx"
    return _Ignoring(
        function=cls.__name__,
        gradient=gradient,
        signature=f"backward({', '.join([ctx, *shown])})",
        line=first + ((only or definition).lineno - 1),
        returned=only.value if only is not None else None,
        returned_code=ast.get_source_segment(text, only.value) if only is not None and only.value else None,
        shape_read=shape_read,
    )


# what reads only a tensor's shape, dtype or device: g.shape, g.size(), torch.ones_like(g)
_LAYOUT_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "layout", "is_cuda"})
_LAYOUT_METHODS = frozenset({"size", "dim", "numel", "new_ones", "new_zeros", "new_empty", "new_full"})
_LIKE = frozenset({"ones_like", "zeros_like", "empty_like", "full_like", "rand_like", "randn_like"})


def _values_read(definition: ast.FunctionDef) -> set[str]:
    """The names ``definition`` loads for their values: not those it reads only the layout of
    (``g.shape``, ``g.size()``, ``g.new_zeros(…)``, the first argument of ``torch.ones_like``)."""
    layout_only: set[int] = set()  # ids of Name nodes read for their layout
    for node in ast.walk(definition):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in _LAYOUT_ATTRIBUTES or node.attr in _LAYOUT_METHODS:
                layout_only.add(id(node.value))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else None
            )
            if name in _LIKE:
                layout_only.add(id(node.args[0]))
    return _names_loaded(definition, layout_only)


def _names_loaded(definition: ast.FunctionDef, skipped: frozenset[int] | set[int] = frozenset()) -> set[str]:
    """The names ``definition`` loads, but for the Name nodes whose ids are in ``skipped``."""
    return {
        n.id
        for n in ast.walk(definition)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skipped
    }


def _own_nodes(definition: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of ``definition``'s body, not those of functions defined inside it."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(definition.body)
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


_PLAIN = (ast.Name, ast.Call, ast.Attribute, ast.Subscript, ast.Constant)


def _fix(found: _Ignoring) -> str:
    """Multiply what backward returns by its gradient, written out where it has one return."""
    g = found.gradient
    value, code = found.returned, found.returned_code
    if value is None or code is None or "\n" in code:
        return f"Multiply each gradient backward returns by {g}, the chain rule's factor."
    if isinstance(value, ast.Tuple):
        return (
            f"Multiply each gradient backward returns by {g}, the chain rule's factor "
            f"(each of {code}, leaving any None as it is)."
        )
    times = code if isinstance(value, _PLAIN) else f"({code})"
    return f"Multiply what backward returns by {g}, the chain rule's factor: return {g} * {times}"


def _shown(t: torch.Tensor) -> str:
    """A gradient as a message shows it: its numbers when it has few, else its shape and norm."""
    if t.numel() == 1:
        return f"{t.item():.4g}"
    if t.numel() <= 6:
        return "[" + ", ".join(f"{v:.4g}" for v in t.detach().flatten().tolist()) + "]"
    shape = "×".join(str(s) for s in t.shape)
    return f"a [{shape}] gradient of norm {float(t.detach().double().norm()):.4g}"
