"""Hints for what torch.func's transforms are given, beyond explain_transforms.py and
explain_vmap_args.py:

- ``grad(f)(3.0)``, ``grad(f, argnums=1)(x, 2)``: a Python number where a transform wants the
  tensor it differentiates by (``jacfwd`` and ``hessian`` fail on it as ``'float' object has
  no attribute 'numel'``);
- ``jvp(f, x, v)``: primals and tangents are tuples, one entry per argument of ``f``;
- ``jvp(f, (x,), (v,))`` with ``v`` of another shape than ``x``;
- ``functional_call(m, params, x, y)``: the module's inputs go as one tuple (the fourth place
  is for keyword arguments);
- ``vmap(f, in_dims=[0, None])``: in_dims is an int or a tuple; ``in_dims=None`` maps nothing;
- ``grad(f, has_aux=True)`` of an f that returns the loss alone.

Each names the snippet's own call and rewrites it; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from types import FrameType

from .explain_reading import call_name, calls, literal

__all__ = ["func_input_hint"]

_TRANSFORMS = frozenset({"grad", "grad_and_value", "jacrev", "jacfwd", "hessian", "vjp"})
_NOT_TENSOR = re.compile(r"Thing passed to transform API must be Tensor, got <class '(\w+)'>")
_NO_NUMEL = re.compile(r"'(int|float)' object has no attribute 'numel'")
_JVP_NOT_TUPLE = "jvp(f, primals, tangents): Expected primals to be a tuple"
_JVP_STRUCTURE = "jvp(f, primals, tangents): Expected primals and tangents to have the same python structure"
_TANGENT_SIZE = re.compile(
    r"forward gradient that has a different size than that of the original Tensor.*Tensor is of size "
    r"\[([\d, ]*)\] while the given forward gradient is of size \[([\d, ]*)\]"
)
_IN_DIMS_KIND = re.compile(
    r"vmap\((\w+), in_dims=(.+), \.\.\.\)\(<inputs>\): expected `in_dims` to be int or a \(potentially nested\) "
    r"tuple matching the structure of inputs, got: <class '(list|NoneType)'>"
)
_NO_AUX = "output of function f should be a tuple: (output, aux) if has_aux is True"
_KWARGS_NOT_MAPPING = re.compile(r"argument after \*\* must be a mapping, not (\w+)")


def func_input_hint(exc: BaseException, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for ``exc`` raised at a line reading ``code`` (in ``frame``) that the module's
    docstring lists; ``None`` for any other."""
    text = str(exc)
    number = _NOT_TENSOR.search(text) or _NO_NUMEL.search(text)
    if number:
        return _number_given(number.group(1), code, frame)
    if _JVP_NOT_TUPLE in text or _JVP_STRUCTURE in text:
        return _jvp_tuples(code)
    sizes = _TANGENT_SIZE.search(text)
    if sizes and any(call_name(c) == "jvp" for c in calls(code)):
        return _tangent_shape(sizes.group(1), sizes.group(2), code)
    in_dims = _IN_DIMS_KIND.search(text)
    if in_dims:
        return _in_dims_kind(in_dims.group(1), in_dims.group(2), in_dims.group(3))
    if _NO_AUX in text:
        found = _transform_call(code)
        fn = ast.unparse(found[0].args[0]) if found and found[0].args else "f"
        return (
            f"has_aux=True tells {found[0].func.id if found and isinstance(found[0].func, ast.Name) else 'grad'} that "
            f"{fn} returns a pair, (loss, aux): the loss to differentiate and anything else to hand back untouched, "
            f"and {fn} returns the loss alone. Return both, return loss, aux (aux can be a dict of what to log), or "
            "leave has_aux out."
        )
    mapping = _KWARGS_NOT_MAPPING.search(text)
    if mapping:
        return _functional_call_inputs(mapping.group(1), code)
    return None


def _in_dims_kind(fn: str, given: str, kind: str) -> str:
    """``in_dims`` given as a list, or as None for every argument."""
    if kind == "list":
        return (
            f"vmap takes in_dims as an int (one dimension for every argument) or a tuple, one entry per argument of "
            f"{fn}, and {given} is a list: write it as a tuple, in_dims=({given[1:-1]})."
        )
    return (
        f"in_dims=None tells vmap to split none of {fn}'s arguments, so it has no batch to map over: give the "
        "dimension that holds the samples, in_dims=0, or a tuple with None only for the arguments every sample shares."
    )


def _transform_call(code: str | None) -> tuple[ast.Call, ast.Call] | None:
    """``grad(f, argnums=1)(x, 2)`` on the line: (the transform's call, the call of what it made);
    ``vjp(f, x)`` is both at once."""
    for node in calls(code):
        inner = node.func
        if isinstance(inner, ast.Call) and call_name(inner) in _TRANSFORMS:
            return inner, node
        if call_name(node) == "vjp" and len(node.args) >= 2:
            return node, node
    return None


def _argnums(transform: ast.Call, frame: FrameType | None) -> tuple[int, ...]:
    """The argnums a transform call is given (``0`` unless it says otherwise)."""
    given = next((k.value for k in transform.keywords if k.arg == "argnums"), None)
    if given is None and call_name(transform) != "vjp" and len(transform.args) >= 2:
        given = transform.args[1]
    value = literal(ast.unparse(given), frame) if given is not None else 0
    if isinstance(value, int):
        return (value,)
    return tuple(v for v in value if isinstance(v, int)) if isinstance(value, tuple | list) else ()


def _number_given(kind: str, code: str | None, frame: FrameType | None) -> str | None:
    """A Python number (or a list of them) where the transform differentiates by a tensor."""
    found = _transform_call(code)
    if found is None:
        return None
    transform, applied = found
    name = call_name(transform)
    first = 1 if name == "vjp" else 0  # vjp(f, x): the inputs follow the function
    args = [ast.unparse(a) for a in applied.args[first:]]
    argnums = (0,) if name == "vjp" else _argnums(transform, frame)
    at = next((i for i in argnums if i < len(args) and _plain_value(literal(args[i], frame))), None)
    if at is None:
        return None
    arg = args[at]
    held = literal(arg, frame)
    made = f"torch.tensor({arg}.0)" if re.fullmatch(r"-?\d+", arg) else f"torch.tensor({arg})"
    if isinstance(held, int) and made.endswith(f"({arg})"):
        made = f"torch.tensor(float({arg}))"
    what = f"a Python {type(held).__name__}" if held is not None else f"a Python {kind}"
    applied.args[first + at] = ast.parse(made, mode="eval").body
    fixed = ast.unparse(applied)
    by = (
        "its first argument"
        if name == "vjp"
        else f"argument {at} (argnums={at if len(argnums) == 1 else argnums})"
    )
    others = [i for i in argnums if i != at]
    keep = (
        f" If {arg} is a setting rather than something to differentiate by, leave it out of argnums: "
        f"argnums={others[0] if len(others) == 1 else tuple(others)}."
        if others
        else (
            f" If {arg} is a setting rather than something to differentiate by, differentiate by another "
            "argument (argnums=0 is the first)."
            if at != 0
            else ""
        )
    )
    return (
        f"torch.func.{name} differentiates by {by}, and that is {arg}, {what}: a transform follows tensors only, "
        f"so it has nothing to take a derivative by. Pass a floating-point tensor: {fixed}.{keep}"
    )


def _plain_value(value: object) -> bool:
    """Whether ``value`` is a Python number or a list of them, not a tensor."""
    return isinstance(value, int | float | list | tuple) and not isinstance(value, bool)


def _jvp_tuples(code: str | None) -> str | None:
    """``jvp(f, x, v)``: primals and tangents are each a tuple, an entry per argument of f."""
    call = next((c for c in calls(code) if call_name(c) == "jvp" and len(c.args) >= 3), None)
    if call is None:
        return None
    fn, primals, tangents = (ast.unparse(a) for a in call.args[:3])

    def as_tuple(node: ast.expr) -> str:
        return ast.unparse(node) if isinstance(node, ast.Tuple) else f"({ast.unparse(node)},)"

    fixed = f"jvp({fn}, {as_tuple(call.args[1])}, {as_tuple(call.args[2])})"
    return (
        f"jvp takes the point and the direction as tuples, one entry for each argument of {fn} and in the same "
        f"order: primals ({primals}) and tangents ({tangents}) must be tuples of the same length, and a single "
        f"argument is a tuple of one, with its comma: {fixed}."
    )


def _tangent_shape(primal: str, tangent: str, code: str | None) -> str:
    """``jvp(f, (x,), (v,))`` with ``v`` of another shape than ``x``."""
    call = next((c for c in calls(code) if call_name(c) == "jvp" and len(c.args) >= 3), None)
    named = ""
    if call is not None and all(isinstance(a, ast.Tuple) and a.elts for a in call.args[1:3]):
        p = ast.unparse(call.args[1].elts[0])  # type: ignore[attr-defined]
        named = f" Make it with the primal's shape: torch.randn_like({p}) (or torch.ones_like({p}))."
    return (
        f"jvp pushes each tangent through {'' if call is None else ast.unparse(call.args[0]) + ' '}along with its "
        f"primal, so a tangent must have its primal's shape: the primal is [{primal}] and the tangent "
        f"[{tangent}].{named}"
    )


def _functional_call_inputs(given: str, code: str | None) -> str | None:
    """``functional_call(m, params, x, y)``: the inputs go as one tuple, the fourth place is kwargs."""
    call = next((c for c in calls(code) if call_name(c) == "functional_call" and len(c.args) >= 4), None)
    if call is None:
        return None
    module, params, *inputs = (ast.unparse(a) for a in call.args)
    fixed = f"functional_call({module}, {params}, ({', '.join(inputs)}))"
    return (
        f"functional_call({module}, {params}, args, kwargs) takes the inputs of {module}'s forward as one tuple, "
        f"its third argument, and reads the fourth as a dict of keyword arguments, which {inputs[1]} (a {given}) "
        f"is not. Put every input in the tuple: {fixed}."
    )
