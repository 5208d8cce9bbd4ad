"""Why a ``.grad`` a line used was ``None``, in the snippet's own terms.

``x - lr * x.grad`` failing with "unsupported operand type(s) for *: 'float' and 'NoneType'"
says nothing about autograd. The three causes are told apart by looking at the line's tensor
in the snippet's frame: it is not a leaf (most often gradient descent by hand that rebinds
``x = x - lr * x.grad``, so the second pass reads the ``.grad`` of a computed tensor), it does
not require grad, or no backward() has reached it yet.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from types import FrameType

import torch

from .explain_reading import call_name, calls
from .source import is_a, is_module, visible_names

__all__ = ["GRAD_READ", "assigned_grad_hint", "none_grad_hint"]

# `x.grad`, `model.fc.weight.grad` (not `.grad_fn`)
GRAD_READ = re.compile(r"(?<![\w.])([^\W\d]\w*(?:\.[^\W\d]\w*)*)\.grad\b(?!_)")
# `w.grad = 0`: what is assigned to a .grad, and to which
_GRAD_WRITE = re.compile(r"(?<![\w.])([^\W\d]\w*(?:\.[^\W\d]\w*)*)\.grad\s*=(?!=)\s*(.+)$")
_ASSIGNED_KIND = re.compile(r"assigned grad expected to be a Tensor or None but got grad of type (\w+)")
_ASSIGNED_SIZE = re.compile(
    r"attempting to assign a gradient of size '\[([\d, ]*)\]' to a tensor of size '\[([\d, ]*)\]'"
)
# a line's code is quoted in a hint up to this long
_QUOTED = 60


def none_grad_hint(
    code: str | None,
    frame: FrameType | None,
    made_at: Callable[[torch.Tensor], int | None],
    code_at: Callable[[int | None], str | None],
    backward_calls: int,
    grad_call_line: int | None = None,
) -> str | None:
    """The hint for a line whose ``.grad`` was ``None``, naming the first tensor of the line
    whose ``.grad`` is ``None`` and why; ``None`` where the frame does not show one.

    ``made_at`` gives the snippet line that made a tensor (None where the run did not see
    it made); ``code_at`` a snippet line's code, its comment left out (None where there is
    none); ``backward_calls`` how many backward
    calls the run made so far; ``grad_call_line`` the line of the first, where every one was
    ``torch.autograd.grad`` (which returns gradients and fills no ``.grad``). Reads no ``.grad`` of a tensor
    that is not a leaf (PyTorch would warn on the snippet's stderr) and runs no code of the
    snippet's (a name's attributes are followed through modules' parameters only)."""
    if frame is None or not code:
        return None
    scope = visible_names(frame)
    for name in dict.fromkeys(m.group(1) for m in GRAD_READ.finditer(code)):
        t = _resolve(name, scope)
        if t is None:
            continue
        if not t.is_leaf and not t.retains_grad:
            return _not_a_leaf(name, t, _made_where(made_at(t), code_at), code)
        if t.is_leaf and t.grad is None:
            if grad_call_line is not None and t.requires_grad:
                return _returned_not_stored(name, grad_call_line)
            return _leaf_without_grad(name, t, _made_where(made_at(t), code_at), code, backward_calls)
    return None


def _resolve(name: str, scope: dict[str, object]) -> torch.Tensor | None:
    """The tensor ``name`` (``x``, ``model.fc.weight``) holds in ``scope``: its first part
    a variable, the rest submodules and parameters of modules; ``None`` otherwise."""
    first, *rest = name.split(".")
    value = scope.get(first)
    for part in rest:
        if not is_module(value):
            return None
        found = None
        for table in ("_parameters", "_modules", "_buffers"):
            held = vars(value).get(table)
            if isinstance(held, dict) and part in held:
                found = held[part]
                break
        value = found
    return value if is_a(value, torch.Tensor) else None


def _made_where(line: int | None, code_at: Callable[[int | None], str | None]) -> tuple[str, str]:
    """Where a tensor was made, for a hint (``, made at line 6 (x = x - 0.1 * x.grad)``, or
    ``""`` where unknown), and that line's code (``""`` where unknown)."""
    if line is None:
        return "", ""
    code = code_at(line) or ""
    return (
        f", made at line {line} ({code})" if code and len(code) <= _QUOTED else f", made at line {line}"
    ), code


def _returned_not_stored(name: str, line: int) -> str:
    """``name``'s ``.grad`` read where the run computed gradients with torch.autograd.grad only."""
    return (
        f"{name}.grad is None: torch.autograd.grad (line {line}) returns the gradients instead of storing "
        f"them in .grad, and no backward() ran. Use what it returns, one gradient per input: "
        f"grads = torch.autograd.grad(loss, {name}), then grads[0] in place of {name}.grad; or call "
        f"loss.backward() to fill {name}.grad."
    )


def _leaf_without_grad(
    name: str, t: torch.Tensor, made: tuple[str, str], code: str, backward_calls: int
) -> str:
    """``name`` is a leaf whose ``.grad`` is None: it does not require grad, no backward()
    ran yet, or none reached it since its ``.grad`` was reset."""
    where, _ = made
    if not t.requires_grad:
        return (
            f"{name}.grad is None because {name} does not require grad{where}, so backward() "
            f"gives it no gradient: create it with requires_grad=True (or call "
            f"{name}.requires_grad_() before computing the loss from it)."
        )
    if re.search(rf"(?<![\w.]){re.escape(name)}\.grad\.(?:data\.)?zero_\(", code):
        guard = f"or guard it (if {name}.grad is not None: {name}.grad.zero_())"
        if not backward_calls:
            return (
                f"{name}.grad is None until the first backward() reaches {name}, so there is nothing "
                f"to zero yet: zero it after each update rather than before backward(), {guard}."
            )
        return (
            f"{name}.grad is None: no backward() has reached {name} since its .grad was reset "
            f"(zero_grad() sets .grad to None), so there is nothing to zero: the reset already "
            f"cleared it. Drop this line, {guard}."
        )
    if not backward_calls:
        return (
            f"{name}.grad is None because no backward() has run yet: .grad is filled by "
            f"loss.backward(), on a loss computed from {name}. Call it before this line."
        )
    return (
        f"{name}.grad is None: no backward() has reached {name} since it was made or its "
        f".grad was last reset (zero_grad() sets .grad to None). Read it after "
        f"loss.backward(), on a loss computed from {name}."
    )


def _not_a_leaf(name: str, t: torch.Tensor, made: tuple[str, str], code: str) -> str:
    """``name`` holds a computed tensor: which op made it, where, and how to keep a leaf."""
    node = type(t.grad_fn).__name__ if t.grad_fn is not None else "an op"
    where, made_code = made
    text = (
        f"{name}.grad is None because {name} is not a leaf but the result of an op ({node}){where}: "
        "backward() fills .grad only on leaves, the tensors you create with requires_grad=True."
    )
    converted = re.search(r"requires_grad=True\)\s*\.(double|float|half|to|cuda)\(", made_code)
    if converted:
        # w = torch.randn(3, requires_grad=True).double(): the leaf is the float32 tensor, dropped
        return (
            f"{text} The leaf is the tensor made with requires_grad=True; .{converted.group(1)}() then made a "
            f"converted copy of it, which is what {name} holds, and the leaf itself is gone. Create it with the "
            f"dtype (or device) it needs: torch.randn(3, dtype=torch.float64, requires_grad=True), or convert "
            f"first and ask for gradients after: {name} = torch.randn(3).{converted.group(1)}().requires_grad_()."
        )
    if f"{name}.grad" not in made_code:
        return f"{text} Read the leaf's .grad instead, or call {name}.retain_grad() before backward() to keep this one's."
    # a gradient step by hand computed out of place: `x = x - lr * x.grad`, `return w - lr * w.grad`
    step = re.search(rf"(?<![\w.]){re.escape(name)}\s*-\s*(.+)$", made_code)
    update = f"{name} -= {step.group(1)}" if step else f"{name} -= lr * {name}.grad"
    return (
        f"{text} A step computed out of place makes a new tensor rather than changing the leaf, "
        f"and the next pass reads that one's .grad. Change the leaf in place, outside the graph: "
        f"with torch.no_grad(): {update}, then {name}.grad.zero_() (or let an optimizer do it: "
        f"torch.optim.SGD([{name}], lr=…))."
    )


def assigned_grad_hint(text: str, code: str | None) -> str | None:
    """The hint for ``w.grad = 0`` (a number, a list: anything but a tensor or None) or a
    tensor of another shape, naming the line's tensor; ``None`` for any other error."""
    kind = _ASSIGNED_KIND.search(text)
    size = _ASSIGNED_SIZE.search(text)
    write = _GRAD_WRITE.search(code or "")
    if size is not None:
        name = write.group(1) if write else "w"
        given, wanted = (math.prod(int(d) for d in g.split(",") if d.strip()) for g in size.groups())
        value = write.group(2).strip() if write and len(write.group(2)) <= _QUOTED else "g"
        if not re.fullmatch(r"[\w.]+(\(.*\))?", value):
            value = f"({value})"
        fix = (
            f"Reshape it: {name}.grad = {value}.reshape_as({name})"
            if given == wanted
            else f"Give it {name}'s shape: {name}.grad = torch.full_like({name}, value) for one number "
            f"everywhere, or {value}.expand_as({name}).clone() for a tensor that broadcasts to it"
        )
        return (
            f"{name}.grad must have the shape of {name}, [{size.group(2)}], and this line gives it a tensor of "
            f"shape [{size.group(1)}]: a gradient assigned by hand is not broadcast into place. {fix}."
        )
    if kind is None:
        return None
    name = write.group(1) if write else "w"
    what = f"{write.group(2).strip()}, a Python {kind.group(1)}" if write else f"a Python {kind.group(1)}"
    return (
        f"{name}.grad holds a tensor the shape of {name}, or None; this line gives it {what}. To "
        f"clear the gradient before the next backward(), set {name}.grad = None (what "
        f"optimizer.zero_grad() does) or zero it in place: {name}.grad.zero_()."
    )


_FUNCTIONAL_OUTPUT = re.compile(
    r"The outputs of the user-provided function given to (\w+) must be either a Tensor or a tuple of "
    r"Tensors but the given outputs of the user-provided function has type <class '([\w.]+)'>"
)


def functional_output_hint(text: str, code: str | None) -> str | None:
    """The hint for ``jacobian(f, x)`` (``hessian``, ``vjp``…) whose ``f`` returned a Python
    number or another non-tensor, and for ``torch.func.grad(f)(x)`` whose ``f`` returned other
    than one number (:func:`_func_grad_output`); ``None`` for any other error."""
    found = _FUNCTIONAL_OUTPUT.search(text)
    if found is None:
        return _func_grad_output(text, code)
    api, kind = found.groups()
    called = re.search(rf"\b{api}\(\s*([^\W\d]\w*)", code or "")
    f = called.group(1) if called else "the function"
    number = kind in ("float", "int", "bool", "complex") or kind.startswith("numpy.")
    why = (
        " .item(), float() or a NumPy value leaves the graph, and a number has no gradient to take"
        if number
        else ""
    )
    if kind == "list":
        return (
            f"torch.autograd.functional.{api} differentiates the tensors {f} returns, a tensor or a tuple of "
            f"tensors, and {f} returned a list. Return a tuple: return (a, b), not [a, b] (or tuple(outs))."
        )
    return (
        f"torch.autograd.functional.{api} differentiates the tensors {f} returns, and {f} returned a "
        f"{kind}:{why}. Return the tensor itself (t.sum(), not t.sum().item()), or a tuple of tensors."
    )


# "Got argnum=2, but only 2 positional inputs" (torch.func.grad's argnums past the arguments)
_FUNC_TRANSFORMS = ("grad", "grad_and_value", "jacrev", "jacfwd", "hessian")
_ARGNUM = re.compile(r"Got argnum=(\d+), but only (\d+) positional inputs")
# torch.func.grad (and grad_and_value) of a function whose output is not one number
_FUNC_GRAD_OUTPUT = re.compile(
    r"grad_and_value\(f\)\(\*args\): Expected f\(\*args\) to return a (scalar )?Tensor, "
    r"got (?:tensor with (\d+) dims|<class '([\w.]+)'>)"
)
# jacrev (and vjp) of a function that returns a Python number or another non-tensor
_VJP_OUTPUT = re.compile(
    r"vjp\(f, \*primals\): expected f\(\*primals\) to return only tensors, got unsupported type <class '([\w.]+)'>"
)


def _func_grad_output(text: str, code: str | None) -> str | None:
    """The hint for ``torch.func.grad(f)(x)`` (or ``grad_and_value``) whose ``f`` returned a
    tensor of more than one number, a Python number or a tuple (``jacrev(f)(x)``: a Python
    number), or that was given ``argnums`` past its arguments, named as the line's call
    writes them (``f`` and ``x``; "the function" where the line only calls a function
    ``grad`` made earlier); ``None`` for any other error."""
    argnum = _ARGNUM.search(text)
    if argnum:
        return _argnum_out_of_range(int(argnum.group(1)), int(argnum.group(2)), code)
    found = _FUNC_GRAD_OUTPUT.search(text)
    vjp = _VJP_OUTPUT.search(text) if found is None else None
    if found is None and vjp is None:
        return None
    dims, kind = (found.group(2), found.group(3)) if found else (None, vjp.group(1) if vjp else None)
    f, args, inner = _func_grad_call(code)
    x = args or "x"
    number = kind in ("float", "int", "bool", "complex") or (kind or "").startswith("numpy.")
    why = (
        " .item(), float() or a NumPy value leaves the graph, and a number has no gradient to take."
        if number
        else ""
    )
    if vjp is not None:  # jacrev(f)(x), vjp(f, x): named as the line calls it
        used = next(
            (call_name(c) for c in calls(code) if call_name(c) in ("jacrev", "vjp", "hessian")), "jacrev"
        )
        return (
            f"torch.func.{used} differentiates the tensors {f} returns, and {f} returned a {kind}.{why} Return the "
            "tensor itself (t.sum(), not t.sum().item()), or a tuple of tensors."
        )
    if inner is not None and dims is not None:
        return (
            f"{f} is itself a gradient, one number per element of its input, not one number, and torch.func.grad "
            f"differentiates a function that returns one. For second derivatives take the Hessian, "
            f"torch.func.hessian({inner})({x}) (or torch.func.jacrev({f})({x})); for the derivative of each "
            f"element of an elementwise function, grad(grad(…)) of a function of one number, under torch.func.vmap."
        )
    if dims is not None:
        return (
            f"torch.func.grad differentiates one number, so {f} must return a 0-dim tensor, and it returned a tensor "
            f"of {dims} dimension{'s' if dims != '1' else ''}. Reduce it to the loss, return ….sum() or ….mean(), or "
            f"take the derivative of every output with torch.func.jacrev({f})({x}) (for an elementwise {f}, "
            f"grad(lambda t: {f}(t).sum())({x}) gives each element's)."
        )
    if kind == "tuple":
        return (
            f"torch.func.grad differentiates one output, and {f} returned a tuple. Return the loss alone, or keep the "
            f"rest as auxiliary values: return (loss, extra) and call grad({f}, has_aux=True)({x}), which gives "
            "(gradient, extra)."
        )
    return (
        f"torch.func.grad differentiates the tensor {f} returns, and {f} returned a {kind}.{why} Return the "
        "tensor itself (t.sum(), not t.sum().item())."
    )


def _argnum_out_of_range(argnum: int, count: int, code: str | None) -> str:
    """``grad(f, argnums=2)(w, x)``: argnums counts the call's positional arguments from 0."""
    f, args, _ = _func_grad_call(code)
    given = _top_level(args) if args else []
    named = _passed_by_name(code)
    if named:
        keywords, positional = named
        return (
            f"argnums counts only the arguments {f} is given by position, {count} here, and "
            f"{', '.join(keywords)} {'goes' if len(keywords) == 1 else 'go'} by keyword, which argnums cannot pick. "
            f"Pass {'it' if len(keywords) == 1 else 'them'} by position, in the order {f} takes them: {positional}."
        )
    which = (
        ": " + ", ".join(f"{a} is argnums={i}" for i, a in enumerate(given))
        if len(given) == count
        else f", 0 to {count - 1}"
    )
    return (
        f"argnums picks which of the arguments {f} is called with to differentiate by, counted from 0, and "
        f"argnums={argnum} is past the {count} it is given{which}. For the last one pass argnums={count - 1}; "
        "for several, a tuple, argnums=(0, 1)."
    )


def _passed_by_name(code: str | None) -> tuple[list[str], str] | None:
    """The keyword arguments of a ``grad(f, argnums=…)(w, x=x)`` on the line, and the call
    written with them passed by position; ``None`` where it passes none by keyword."""
    for call in calls(code):
        made = call.func
        if isinstance(made, ast.Call) and call_name(made) in _FUNC_TRANSFORMS and call.keywords:
            if any(k.arg is None for k in call.keywords):
                return None
            moved = ast.Call(made, [*call.args, *(k.value for k in call.keywords)], [])
            return [str(k.arg) for k in call.keywords], ast.unparse(moved)
    return None


def _top_level(args: str) -> list[str]:
    """The arguments written in ``args`` (``w, xs[0]``), split at its top-level commas."""
    call = ast.parse(f"f({args})", mode="eval").body
    return [ast.unparse(a) for a in call.args] if isinstance(call, ast.Call) else []


def _func_grad_call(code: str | None) -> tuple[str, str | None, str | None]:
    """``(the function, the arguments, the function inside)`` of a ``grad(f)(x)`` on the line,
    as written: ``("f", "x", None)``; ``("grad(loss)", "w", "loss")`` for ``grad(grad(loss))(w)``;
    ``("the function", None, None)`` where the line calls no ``grad(…)(…)``."""
    for call in calls(code):
        made = call.func
        if isinstance(made, ast.Call) and call_name(made) in _FUNC_TRANSFORMS and made.args:
            f = made.args[0]
            inner = f.args[0] if isinstance(f, ast.Call) and call_name(f) == "grad" and f.args else None
            args = ", ".join(ast.unparse(a) for a in call.args) or None
            return ast.unparse(f), args, ast.unparse(inner) if inner is not None else None
    return "the function", None, None
