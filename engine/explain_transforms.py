"""Hints for torch.func's transforms (``vmap``, ``grad``, ``jacrev``…), torch.autograd.functional
and forward-mode AD, each naming the snippet's function and arguments as the line writes them:
``vmap`` of arguments of different sample counts (``in_dims=(0, None)`` for one every sample
shares), an ``in_dims`` of another length than the arguments, or a number mapped as a tensor;
``out_dims`` past what the function returns; a BatchNorm under ``vmap``; a boolean mask under
``vmap`` (``torch.where``); ``.backward()`` or ``.numpy()`` inside a transform; ``argnums`` that
picks an integer tensor, or a model's parameters (``functional_call``); ``model.parameters()``
given to a transform; an ``autograd.Function`` without ``setup_context`` under a transform;
``make_dual`` outside ``dual_level()``; ``hessian(f, x, y)`` (the inputs go as one tuple); a
``vjp``/``jvp`` vector of another shape."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType, TracebackType

import torch

from .explain_autograd import INTEGER_REQUIRES_GRAD
from .explain_reading import call_name, calls, parsed, shape
from .explain_seed import name_before
from .source import (
    bound_to,
    is_module,
    visible_names,
)

__all__ = ["transform_hint"]

_MAPPED_SIZES = re.compile(r"vmap: Expected all tensors to have the same size in the mapped dimension")
_IN_DIMS_SHAPE = "in_dims is not compatible with the structure of `inputs`"
_NOT_TENSOR = re.compile(r"Got in_dim=-?\d+ for an input but the input is of type <class '\w+'>")
_DIM_RANGE = re.compile(
    r"Dimension out of range \(expected to be in range of \[-?\d+, (-?\d+)\], but got (-?\d+)\)"
)
_BATCH_NORM = "Batch norm got a batched tensor as input while the running_mean or running_var"
_BOOL_MASK = "Attempting to batch over indexing with a boolean mask"
_BACKWARD_INSIDE = "backward() called inside a functorch transform"
_NUMPY = "Can't call numpy() on Tensor that requires grad"
_NO_SETUP_CONTEXT = "it must override the setup_context staticmethod"
_NO_DUAL_LEVEL = "Trying to create a dual Tensor for forward AD but no level exists"
_V_SIZE = re.compile(
    r"^v has invalid size: should be torch\.Size\(\[([\d, ]*)\]\) but got torch\.Size\(\[([\d, ]*)\]\)"
)
_ARGNUM = re.compile(r"Got argnum=(\d+), but only (\d+) positional inputs")
_KEYWORDS = re.compile(r"^Unexpected keyword arguments: ([\w, ]+)$")
_AMBIGUOUS = "Boolean value of Tensor with more than one value is ambiguous"
_NOT_A_TENSOR = re.compile(r"Thing passed to transform API must be Tensor, got <class '(\w+)'>")
# torch.autograd.functional's APIs: the positional place of create_graph, after the inputs
_FUNCTIONAL_FLAG = {"jacobian": 2, "hessian": 2, "vjp": 3, "jvp": 3, "hvp": 3, "vhp": 3}
_DIFFERENTIATING = ("grad", "grad_and_value", "jacrev", "jacfwd", "hessian")


def transform_hint(exc: BaseException, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``) by one of
    the transforms the module's docstring lists; ``None`` for any other error."""
    text = str(exc)
    if _MAPPED_SIZES.search(text) or _IN_DIMS_SHAPE in text or _NOT_TENSOR.search(text):
        return _in_dims_hint(text, code, frame)
    ranged = _DIM_RANGE.search(text)
    if ranged and _raised_in(exc.__traceback__, "_maybe_remove_batch_dim"):
        return _out_dims_hint(int(ranged.group(1)), code)
    if _BATCH_NORM in text:
        found = _vmap_call(code)
        model = ast.unparse(found[1].args[0]) if found else ""
        model = model if is_module(bound_to(model, frame)) else "the model"
        return (
            f"A BatchNorm layer of {model} updates its running statistics in place, one pair for the whole layer, and "
            "under vmap each sample would write its own into them. For per-sample work (per-sample gradients, "
            f"ensembles) call torch.func.replace_all_batch_norm_modules_({model}) first, which stops tracking them, "
            f"or {model}.eval() to use them without updating."
        )
    if _BOOL_MASK in text:
        return _masked_hint(code)
    if _BACKWARD_INSIDE in text:
        y = name_before(".backward(", code) or "the loss"
        fn = frame.f_code.co_name if frame is not None else "the function"
        return (
            f"torch.func's transforms (grad, vjp, jacrev) take the gradient themselves, of what {fn} returns, and "
            f"{y}.backward() inside {fn} asks autograd for another one, which they cannot follow. Delete this line "
            f"and return {y}: grad({fn})(x) then gives its gradient."
        )
    if _NUMPY in text:
        return _numpy_inside(code, frame)
    if INTEGER_REQUIRES_GRAD.search(text):
        return _integer_argnum(code, frame)
    if _NO_SETUP_CONTEXT in text:
        return _no_setup_context(code, frame)
    if _NO_DUAL_LEVEL in text:
        made = next((c for c in calls(code) if call_name(c) == "make_dual"), None)
        owner = ast.unparse(made.func.value) + "." if made and isinstance(made.func, ast.Attribute) else ""
        return (
            f"{owner}make_dual works only inside a with {owner}dual_level(): block, which holds the tangents while "
            f"it is open: indent this line, and the lines that use its result ({owner}unpack_dual included), "
            f"under with {owner}dual_level():."
        )
    if _AMBIGUOUS in text:
        return _inputs_one_by_one(code)
    keywords = _KEYWORDS.search(text)
    if keywords and "use_reentrant=True" in (code or ""):
        call = next((c for c in calls(code) if call_name(c) == "checkpoint" and c.args), None)
        fn = ast.unparse(call.args[0]) if call else "the function"
        return (
            f"checkpoint with use_reentrant=True passes no keyword arguments on to {fn}, and this call gives "
            f"{keywords.group(1)}. Pass use_reentrant=False, which does (and is the one PyTorch recommends)."
        )
    if _ARGNUM.search(text):
        return _argnum_of_model(code, frame)
    generator = _NOT_A_TENSOR.search(text)
    if generator and generator.group(1) == "generator":
        return _parameters_generator(code)
    sized = _V_SIZE.search(text)
    if sized:
        return _vector_size(sized.group(1), sized.group(2), code)
    return None


def _raised_in(tb: TracebackType | None, function: str) -> bool:
    while tb is not None:
        if tb.tb_frame.f_code.co_name == function:
            return True
        tb = tb.tb_next
    return False


def _vmap_call(code: str | None) -> tuple[ast.Call, ast.Call, ast.expr | None] | None:
    """``vmap(f, in_dims=…)(args)`` on the line: (the outer call, the vmap call, its in_dims)."""
    for outer in calls(code):
        inner = outer.func
        if isinstance(inner, ast.Call) and call_name(inner) == "vmap" and inner.args:
            given = next((k.value for k in inner.keywords if k.arg == "in_dims"), None)
            return (
                outer,
                inner,
                given if given is not None else (inner.args[1] if len(inner.args) > 1 else None),
            )
    return None


def _in_dims_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """vmap's arguments split along ``in_dims``: of different sample counts, an ``in_dims``
    of another length, or a number mapped like a tensor."""
    found = _vmap_call(code)
    if found is None:
        return None
    outer, inner, given = found
    f, args = ast.unparse(inner.args[0]), [ast.unparse(a) for a in outer.args]
    values = [bound_to(a, frame) for a in args]
    try:
        dims = ast.literal_eval(given) if given is not None else 0
    except ValueError:
        return None
    if _IN_DIMS_SHAPE in text:
        if given is None or not isinstance(dims, tuple) or len(dims) == len(args):
            return None
        fixed = (list(dims) + [None] * len(args))[: len(args)]
        return (
            f"in_dims gives one entry per argument vmap passes to {f}, and {ast.unparse(given)} has {len(dims)} for "
            f"{len(args)} ({', '.join(args)}): the dimension each is split along, or None for one every sample shares "
            f"whole. {_with_in_dims(outer, inner, fixed)}."
        )
    each = list(dims) if isinstance(dims, tuple) else [dims] * len(args)
    if len(each) != len(args):
        return None
    if _NOT_TENSOR.search(text):
        fixed = [d if isinstance(v, torch.Tensor) else None for d, v in zip(each, values, strict=True)]
        plain = [a for a, v in zip(args, values, strict=True) if not isinstance(v, torch.Tensor)]
        return (
            f"vmap splits each argument along its in_dims entry, and {', '.join(plain)} is no tensor to split: give it "
            f"None, so every call of {f} gets it whole: {_with_in_dims(outer, inner, fixed)}."
        )
    mapped = [
        (a, v, d, leaves)
        for a, v, d in zip(args, values, each, strict=True)
        if d is not None and (leaves := _tensors_in(v))
    ]
    if len(mapped) < 2 or any(not -t.dim() <= d < t.dim() for _, _, d, ts in mapped for t in ts):
        return None
    count = {a: ts[0].shape[d] for a, _, d, ts in mapped}
    counts = ", ".join(f"{a} {_described(v)} has {count[a]} along dim {d}" for a, v, d, _ in mapped)
    start = (
        f"vmap splits each argument along its in_dims dimension (0 unless in_dims says otherwise) and calls {f} once "
        f"per slice, so every argument it splits must hold the same number of samples: {counts}."
    )
    shared = _shared(mapped)
    if not shared:
        return (
            f"{start} Give them the same count, or None in in_dims for an argument every sample shares whole."
        )
    fixed = [None if a in shared else d for a, d in zip(args, each, strict=True)]
    return (
        f"{start} {' and '.join(shared)} is one value every sample uses: leave it whole with None in in_dims, "
        f"{_with_in_dims(outer, inner, fixed)}."
    )


def _tensors_in(value: object) -> list[torch.Tensor]:
    """The tensors vmap splits in an argument: itself, or those a dict, list or tuple holds."""
    if isinstance(value, torch.Tensor):
        return [value]
    held = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else ()
    return [t for t in held if isinstance(t, torch.Tensor)]


def _described(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return shape(value.shape)
    return f"(a {type(value).__name__} of {len(_tensors_in(value))} tensors)"


def _shared(mapped: list[tuple[str, object, int, list[torch.Tensor]]]) -> list[str]:
    """The arguments that look shared by every sample: a tensor shaped like one sample of the
    widest (``w`` (3,) beside ``xs`` (5, 3)), else those whose count fewer tensors hold."""
    tensors = [(a, v) for a, v, _, _ in mapped if isinstance(v, torch.Tensor)]
    widest = max((v for _, v in tensors), key=lambda v: v.dim(), default=None)
    if widest is not None:
        like = [a for a, v in tensors if v.dim() < widest.dim() and tuple(v.shape) == tuple(widest.shape[1:])]
        if like:
            return like
    votes: dict[int, int] = {}
    for _, _, d, ts in mapped:
        votes[ts[0].shape[d]] = votes.get(ts[0].shape[d], 0) + len(ts)
    ranked = sorted(votes.values(), reverse=True)
    if len(ranked) < 2 or ranked[0] == ranked[1]:
        return []
    most = max(votes, key=lambda n: votes[n])
    return [a for a, _, d, ts in mapped if ts[0].shape[d] != most]


def _with_in_dims(outer: ast.Call, inner: ast.Call, dims: Sequence[int | None]) -> str:
    """The line's ``vmap(f, …)(args)`` written with ``in_dims=dims``."""
    value = ast.parse(repr(tuple(dims)), mode="eval").body
    keywords = [k for k in inner.keywords if k.arg != "in_dims"]
    vmap = ast.Call(inner.func, inner.args[:1], [ast.keyword("in_dims", value), *keywords])
    return ast.unparse(ast.Call(vmap, outer.args, outer.keywords))


def _out_dims_hint(high: int, code: str | None) -> str | None:
    """``vmap(f, out_dims=1)`` where ``f`` returns fewer dimensions per sample."""
    found = _vmap_call(code)
    out = next((k.value for k in found[1].keywords if k.arg == "out_dims"), None) if found else None
    if found is None or out is None:
        return None
    f = ast.unparse(found[1].args[0])
    f = "the function" if isinstance(found[1].args[0], ast.Lambda) else f
    where = "only at 0" if high == 0 else f"at 0 to {high}"
    return (
        f"out_dims={ast.unparse(out)} asks vmap to put the batch dimension at that place in what {f} returns, and "
        f"{f} returns {high} dimension{'s' if high != 1 else ''} per sample, so it can go {where}. Leave "
        "out_dims out (0, the batch first)" + ("." if high == 0 else ", or give one in that range.")
    )


def _masked_hint(code: str | None) -> str:
    """``x[x > 0]`` under vmap: a different count of elements in each sample."""
    tree = parsed(code)
    masked = next((n for n in ast.walk(tree) if _is_masking(n)), None) if tree else None
    x, mask = (
        (ast.unparse(masked.value), ast.unparse(masked.slice))
        if isinstance(masked, ast.Subscript)
        else ("x", "x > 0")
    )
    return (
        f"vmap runs the function on the whole batch at once, so each sample's result must have one shape, and "
        f"{x}[{mask}] keeps as many elements as pass the mask, a different count in each sample. Keep the shape and "
        f"zero out the rest: torch.where({mask}, {x}, 0) in place of {x}[{mask}] (a .sum() after it is the same; "
        f"for a mean divide by ({mask}).sum())."
    )


def _is_masking(node: ast.AST) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Compare)


def _numpy_inside(code: str | None, frame: FrameType | None) -> str | None:
    """``w.numpy()`` of a tensor a torch.func transform follows."""
    w = name_before(".numpy(", code)
    value = visible_names(frame).get(w) if w else None
    if not isinstance(value, torch.Tensor) or not torch._C._functorch.is_functorch_wrapped_tensor(value):
        return None
    return (
        f"Inside a torch.func transform (grad, vmap, jacrev…) {w} is a tensor the transform follows, and NumPy "
        f"cannot follow it: {w}.detach().numpy() fails too, as such a tensor has no data of its own to hand over. "
        f"Compute with torch's functions on {w} itself (torch.sum for np.sum, torch.exp for np.exp) and return "
        "that tensor."
    )


def _integer_argnum(code: str | None, frame: FrameType | None) -> str | None:
    """``grad(f, argnums=1)(x, idx)`` where argument 1 holds integers."""
    for outer in calls(code):
        inner = outer.func
        if not (isinstance(inner, ast.Call) and call_name(inner) in _DIFFERENTIATING and inner.args):
            continue
        given = next((k.value for k in inner.keywords if k.arg == "argnums"), None)
        try:
            argnum = ast.literal_eval(given) if given is not None else 0
        except ValueError:
            return None
        args = [ast.unparse(a) for a in outer.args]
        if not isinstance(argnum, int) or not 0 <= argnum < len(args):
            return None
        values = [bound_to(a, frame) for a in args]
        floats = [
            i
            for i, v in enumerate(values)
            if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex())
        ]
        which = f"argnums={argnum}" if given is not None else "By default (argnums=0) it"
        pick = f" Pick the floating-point one: argnums={floats[0]} for {args[floats[0]]}." if floats else ""
        return (
            f"{which} differentiates {ast.unparse(inner.args[0])} by its argument {argnum}, {args[argnum]}, which "
            f"holds integers, and only floating-point tensors have gradients (indices and counts have none).{pick}"
        )
    return None


def _no_setup_context(code: str | None, frame: FrameType | None) -> str | None:
    """An ``autograd.Function`` whose ``forward`` takes ``ctx``, under a torch.func transform."""
    applied = re.search(r"([^\W\d][\w.]*)\.apply\b", code or "")
    name = applied.group(1) if applied else None
    cls = bound_to(name, frame)
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        return None
    return (
        f"{name}'s forward takes ctx, the older way to write an autograd.Function, and torch.func's transforms "
        "(vmap, grad, jacrev…) need the newer one: a staticmethod forward(x) that computes the output without "
        "ctx, and a staticmethod setup_context(ctx, inputs, output) that saves what backward needs "
        f"(ctx.save_for_backward(…)). Under vmap also set generate_vmap_rule = True in {name}'s class body."
    )


def _vector_size(should: str, got: str, code: str | None) -> str | None:
    """``vjp(f, x, v)`` (``jvp``, ``hvp``, ``vhp``) given ``v`` of the other shape."""
    api = next((call_name(c) for c in calls(code) if call_name(c) in ("vjp", "jvp", "hvp", "vhp")), None)
    if api is None:
        return None
    like = (
        "what the function returns (v weights each output)"
        if api == "vjp"
        else "its input (v is a direction)"
    )
    sizes = [int(s) for s in should.split(",") if s.strip()]
    return (
        f"{api}(f, inputs, v) takes v shaped like {like}, here {shape(sizes)}, and this v is {shape([int(s) for s in got.split(',') if s.strip()])}. "
        f"Give it that shape: torch.ones({', '.join(map(str, sizes))}) weights every entry by 1."
    )


def _inputs_one_by_one(code: str | None) -> str | None:
    """``hessian(f, x, y)``: the inputs one by one, the second read as ``create_graph``."""
    for call in calls(code):
        api = call_name(call)
        at = _FUNCTIONAL_FLAG.get(api)
        if at is None or len(call.args) <= at or isinstance(call.args[at], ast.Constant):
            continue
        f, inputs = ast.unparse(call.args[0]), call.args[1:]
        if api != "jacobian" and api != "hessian":
            inputs = inputs[:-1]  # (vjp, jvp…: the last positional is v)
        together = ast.Call(
            call.func,
            [call.args[0], ast.Tuple(inputs, ast.Load()), *call.args[len(inputs) + 1 :]],
            call.keywords,
        )
        return (
            f"{api}({f}, inputs) takes all of {f}'s inputs as one tuple, and the next positional argument is "
            f"create_graph, a True or False: {ast.unparse(call.args[at])} went there. Pass them together: "
            f"{ast.unparse(together)}."
        )
    return None


def _argnum_of_model(code: str | None, frame: FrameType | None) -> str | None:
    """``jacrev(model, argnums=1)(x)``: a model's parameters are not arguments of its call."""
    for call in calls(code):
        made = call.func
        if not (isinstance(made, ast.Call) and call_name(made) in _DIFFERENTIATING and made.args):
            continue
        model = ast.unparse(made.args[0])
        if not is_module(bound_to(model, frame)):
            return None
        x = ", ".join(ast.unparse(a) for a in call.args) or "x"
        return (
            f"argnums counts the arguments {model} is called with, and its parameters are none of them: {model}({x}) "
            f"takes only {x}. To differentiate by the parameters, make them the argument with functional_call: "
            f"{call_name(made)}(lambda p: torch.func.functional_call({model}, p, ({x},)))(dict({model}.named_parameters()))."
        )
    return None


def _parameters_generator(code: str | None) -> str | None:
    """``grad(loss)(model.parameters())``: a generator where a transform takes tensors."""
    for call in calls(code):
        given = next((a for a in call.args if re.fullmatch(r"[\w.]+\.parameters\(\)", ast.unparse(a))), None)
        if given is None:
            continue
        model = ast.unparse(given)[: -len(".parameters()")]
        fixed = ast.unparse(given).replace(f"{model}.parameters()", f"dict({model}.named_parameters())")
        return (
            f"{ast.unparse(given)} is a generator, read once, and torch.func's transforms take tensors, or dicts, "
            f"lists and tuples of them. Pass the parameters by name, {fixed}, which functional_call({model}, params, "
            "…) reads as they are: the gradient comes back as a dict of the same names."
        )
    return None
