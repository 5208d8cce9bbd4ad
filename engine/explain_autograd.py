"""Errors of autograd's own rules, which :func:`autograd_rule_hint` explains naming the line's
tensor where its code shows it: backward() of a tensor outside any graph (the line that cut
its chain, where the snippet shows one), a seed of the wrong shape, autograd.grad of an input
made after the output, requires_grad on integers, an optimizer given a computed tensor, a
.grad assigned or read wrongly, and .numpy() of a tensor that requires grad."""

from __future__ import annotations

import re
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_cut import cut_graph_hint
from .explain_cut_tools import transform_cut
from .explain_grad import assigned_grad_hint, functional_output_hint
from .explain_seed import chain_root, grad_output_of, name_before, seed_hint
from .explain_unused_input import input_made_after_output
from .source import bound_to, visible_names

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["INTEGER_REQUIRES_GRAD", "autograd_rule_hint"]


def autograd_rule_hint(
    text: str, code: str | None, frame: FrameType | None, rec: Recorder, line: int | None
) -> str | None:
    """Errors of autograd's own rules (what backward() can start from, which tensors can
    require grad or be optimized, what leaves NumPy), naming the line's tensor where its
    code shows it; ``None`` for any other error."""
    if "does not require grad and does not have a grad_fn" in text:
        return _no_grad_fn_hint(code, frame, rec, line)
    seed = seed_hint(text, code)
    if seed:
        return seed
    if "appears to not have been used in the graph" in text:
        made = input_made_after_output(code)
        if made:
            return made
    if INTEGER_REQUIRES_GRAD.search(text):
        return _INTEGER_LEAF_HINT
    if "can't optimize a non-leaf Tensor" in text:
        return _non_leaf_parameter_hint(code, frame)
    assigned = assigned_grad_hint(text, code) or functional_output_hint(text, code)
    if assigned:
        return assigned
    if "Can't call numpy() on Tensor that requires grad" in text:
        called = name_before(".numpy(", code) or _bracketed_receiver(".numpy(", code)
        # np.array(pred): NumPy's conversion calls pred.numpy() itself
        converted = None if called else _NUMPY_CONVERSION.search(code or "")
        name = called or (converted.group(1) if converted else None)
        numpy_op = None if name else _numpy_function_of_graph(code, frame)
        if numpy_op:
            return numpy_op
        what = name or "The tensor"
        via = f" (NumPy's conversion of {name} calls {name}.numpy())" if converted else ""
        read = name or "t"
        return (
            f"{what} is part of the autograd graph (it requires grad), and NumPy cannot carry "
            f"gradients{via}. To read its values take {read}.detach().numpy() (or {read}.tolist(); "
            f"{read}.item() for one number): what you compute from them is outside the graph."
        )
    return None


def _numpy_function_of_graph(code: str | None, frame: FrameType | None) -> str | None:
    """``np.exp(x)`` (or ``np.concatenate([x, y])``) of a tensor that requires grad: NumPy
    converts it with ``.numpy()``, which refuses; the torch function keeps the graph."""
    op = re.search(r"\bnp\.(\w+)\(", code or "")
    if op is None:
        return None
    for name in dict.fromkeys(re.findall(r"(?<![\w.])[^\W\d]\w*", code[op.end() :] if code else "")):
        held = bound_to(name, frame)
        if isinstance(held, torch.Tensor) and held.requires_grad:
            fn = {"concatenate": "cat"}.get(op.group(1), op.group(1))
            outside = f"for values outside the graph pass {name}.detach()."
            fix = (
                f"Use torch.{fn}, which works on tensors and keeps the graph; {outside}"
                if hasattr(torch, fn)
                else outside[0].upper() + outside[1:]
            )
            return (
                f"np.{op.group(1)} turns {name} into a NumPy array by calling {name}.numpy(), and {name} is part of the "
                f"autograd graph (it requires grad), which NumPy cannot carry. {fix}"
            )
    return None


_NUMPY_CONVERSION = re.compile(r"\bnp\.(?:array|asarray)\(\s*([^\W\d][\w.]*)\s*[,)]")


def _bracketed_receiver(call: str, code: str | None) -> str | None:
    """The bracketed expression ``call`` is made on in ``code``: ``(x * 3)`` in
    ``y = (x * 3).numpy()``."""
    found = re.search(r"(\([^()]*\))" + re.escape(call), code or "")
    return found.group(1) if found else None


def _no_grad_fn_hint(code: str | None, frame: FrameType | None, rec: Recorder, line: int | None) -> str:
    """backward() (or autograd.grad) of a tensor outside any graph: the cause where the
    snippet shows it (no tensor requires grad; the line that cut the chain), else the ways
    its chain back to the leaves can be cut, as none of them shows in the tensor itself."""
    shown = name_before(".backward(", code) or grad_output_of(code)
    what = f"{shown} is" if shown else "This tensor is"
    name = chain_root(shown) if shown else None  # g for g.sum(): the tensor the line computes it from
    cause = (name and transform_cut(name, line, rec.statement_lines, frame)) or cut_graph_hint(
        name or "it", frame, rec.statement_lines, line, rec.pitfalls.copied_at
    )
    if cause:
        return f"{what} not part of any graph (requires_grad False, grad_fn None), so there is nothing to go back through. {cause}"
    return (
        f"{what} not part of any graph (requires_grad False, grad_fn None), so there is nothing "
        "to go back through. Either no tensor it was computed from requires grad (create the "
        "leaf with requires_grad=True), or the chain back to them was cut: by torch.no_grad() "
        "around the computation, by .detach(), .data, .item() or .numpy() of a value on the way, "
        "or by an op with no gradient (argmax, argmin, comparisons such as x > 0, .long()). "
        "print(t.requires_grad, t.grad_fn) for the tensors on the way shows where it stops."
    )


def _non_leaf_parameter_hint(code: str | None, frame: FrameType | None) -> str:
    """An optimizer given a computed tensor: which of the line's names it is (from the
    snippet's frame) and how to make it a leaf."""
    names = re.findall(r"[^\W\d]\w*", code or "")
    scope = visible_names(frame)
    computed = next(
        (n for n in names if isinstance(scope.get(n), torch.Tensor) and not scope[n].is_leaf), None
    )
    which = (
        f"{computed} is computed (its grad_fn is {type(scope[computed].grad_fn).__name__}), not a leaf"
        if computed
        else "one of them is computed from another tensor, not a leaf"
    )
    w = computed or "w"
    return (
        f"An optimizer updates leaves, tensors made directly, and {which}: an op after "
        f"requires_grad=True (torch.randn(3, requires_grad=True) * 0.1, or .to(device)) makes a "
        f"new tensor. Do the op first and ask for gradients last: {w} = (torch.randn(3) * 0.1)"
        f".requires_grad_(), or {w} = torch.randn(3, device=device, requires_grad=True)."
    )


_INTEGER_LEAF_HINT = (
    "Gradients exist for floating-point (and complex) tensors only, and this one holds integers: "
    "torch.tensor of whole numbers (torch.tensor(2), torch.tensor([1, 2, 3])) and torch.arange(5) "
    "make int64. Write the numbers as floats (torch.tensor(2.0, requires_grad=True)), pass "
    "dtype=torch.float32, or convert first: x = x.float().requires_grad_()."
)
# "only Tensors of floating point dtype can require gradients" (.requires_grad_()), "Only
# Tensors of floating point and complex dtype can require gradients" (the factory's argument)
INTEGER_REQUIRES_GRAD = re.compile(r"only Tensors of floating point .*can require gradients", re.I)
