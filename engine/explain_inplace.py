"""Hints for what was changed in place: a tensor a node saved for backward (which op changed
it, through which view, or which optimizer step), and an element of a leaf set in place, or
written into by ``index_add_``, ``scatter_`` or ``masked_fill_``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import torch

from .memory import saved_by, saved_source
from .source import quoted_code
from .values import has_storage

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["changed_saved_tensor", "element_set_on_leaf", "indexed_write_on_leaf", "view_changed_in_place"]

# the in-place methods an operator writes (y += 1 records as Tensor.add_)
_OPERATORS = {"add_": "+", "sub_": "-", "mul_": "*", "div_": "/"}


def _code_at(rec: Recorder, line: int | None) -> str | None:
    """The snippet's code at ``line``, when it is short enough to quote."""
    return quoted_code(rec.statement_lines, line)


def _where(rec: Recorder, op: str, line: int | None) -> tuple[str, str | None]:
    """Where an op ran, for a hint: ``line 5 (y += 1)``, or its name where the line is not
    quotable; and the quoted code."""
    code = _code_at(rec, line)
    return (f"line {line} ({code})" if code else f"{op} at line {line}" if line else op), code


def _out_of_place(name: str, api: str, code: str | None) -> str:
    """``y = y * …`` rather than ``y.mul_(2)``: the out-of-place form of in-place op ``api``."""
    method = api.rsplit(".", 1)[-1]
    operator = _OPERATORS.get(method)
    if operator:
        new = f"{name} = {name} {operator} …"
    elif method.endswith("_") and not method.startswith("_"):
        new = f"{name} = {name}.{method[:-1]}(…)"
    else:
        new = f"{name} = {name} + 1"
    return f"use the op's out-of-place form ({new} rather than {code or f'{name}.{method}(…)'})"


def changed_saved_tensor(rec: Recorder, *, step_only: bool = False) -> str | None:
    """Say which node saved the tensor backward found changed, and which op changed it:
    ``ExpBackward0 saved y for backward (line 4); then line 5 (y += 1) changed it in place``.
    ``None`` when the recorder did not see it saved (a metrics-only step). With ``step_only``,
    just that sentence, and only where an optimizer's step changed it (``…; then opt.step()
    (line 14) changed it in place``); ``None`` for any other change."""
    alias = rec.memory.changed
    by = saved_by(alias) if alias is not None else None
    source = saved_source(alias) if alias is not None else None
    if by is None or source is None:
        return None
    name = rec.tensors.names.get(by.tensor) if by.tensor is not None else None
    # the in-place ops since it was saved, newest first: each version points at the one before
    original = source()
    tid = rec.tensors.known(original) if original is not None else None
    changes: list[tuple[str, str | None, int | None]] = []
    while tid is not None and tid != by.tensor:
        if tid in rec.tensors.off_tape:  # a version for a change the tape did not see
            tid = rec.tensors.off_tape[tid]
            continue
        if tid not in rec.tensors.changes:
            break
        prior, op, path = rec.tensors.changes[tid]
        changes.append((op, path, rec.tensors.lines.get(tid)))
        tid = prior
    saver = by.node + (f" (in {by.path})" if by.path else "")
    what = name or (f"{by.path}'s output" if by.path and by.label == "result" else f"its {by.label}")
    text = f"{saver} saved {what} for backward" + (f" (line {by.line})" if by.line else "") + "; then "
    n = name or "y"
    copy = f", or change a copy ({n}.clone())" if name else ""
    out_of_place = f"use the op's out-of-place form ({n} = {n} + 1 rather than {n} += 1){copy}"
    through_view = rec.tensors.view_changes.get(by.tensor) if by.tensor is not None else None
    if step_only:  # the branch below that asks _stepped_since, and only it
        asks = tid != by.tensor or (not changes and through_view is None)
        stepped = _stepped_since(rec, alias, what, cause_only=True) if asks and alias is not None else None
        return text + stepped if stepped is not None else None
    if tid == by.tensor and not changes and through_view is not None:
        op, line, view = through_view
        where, code = _where(rec, op, line)
        view_name = (rec.tensors.names.get(view) if view is not None else None) or "v"
        text += f"{where} changed it in place, through a view of it"
        fix = _out_of_place(view_name, op, code) + f", or take the view of a copy ({n}.clone())"
        return f"{text}. backward() needs the value it saved: {fix}."
    if tid != by.tensor or not changes:
        stepped = _stepped_since(rec, alias, what) if alias is not None else None
        if stepped is not None:
            return text + stepped
        text += "it was changed in place (through a view of it, or by code not recorded)"
        return f"{text}. backward() needs the value it saved: {out_of_place}."
    op, path, line = changes[-1]
    where, code = _where(rec, op, line)
    text += where + (f", in {path}," if path else "") + " changed it in place"
    if len(changes) > 1:
        more = len(changes) - 1
        text += f" ({more} more in-place change{'s' if more > 1 else ''} followed)"
    if original is not None and original.is_leaf and original.requires_grad:
        fix = f"change {n} after backward() has run (as an optimizer's step() comes after loss.backward())"
    elif op.endswith("__setitem__"):
        fix = f"change a copy instead ({n} = {n}.clone() before line {line})"
    elif path or (code and "inplace=True" in code):
        fix = "drop inplace=True" + (f" from {path}" if path else "") + copy
    else:
        fix = _out_of_place(n, op, code) + copy
    return f"{text}. backward() needs the value it saved: {fix}."


def _stepped_since(rec: Recorder, alias: torch.Tensor, what: str, *, cause_only: bool = False) -> str | None:
    """The rest of the hint where the saved tensor (``alias``, sharing its memory) is a
    parameter an optimizer steps, or a view of one (F.linear saves ``weight.t()``), changed by a
    step between the forward and this backward(): ``step()`` between two backward() calls over
    one graph (a GAN's, an actor-critic's). ``None`` otherwise. With ``cause_only``, only
    ``opt.step() (line 14) changed it in place``."""
    if rec.training.last_step is None or not has_storage(alias):
        return None
    memory = alias.untyped_storage().data_ptr()
    stepped = [
        (p, name)
        for p, name in rec.modules.all_params()
        if id(p) in rec.training.stepped_params
        and has_storage(p)
        and p.untyped_storage().data_ptr() == memory
    ]
    if not stepped:
        return None
    param, name = stepped[0]
    label, line = rec.training.last_step
    opt = (label or "opt").split(" ", 1)[0]  # `opt (SGD)`: the variable
    where = f"{opt}.step()" + (f" (line {line})" if line else "")
    if cause_only:
        return f"{where} changed it in place"
    held = (
        what
        if alias.shape == param.shape and alias.stride() == param.stride()
        else f"{what}, made from {name}"
    )
    return (
        f"{where} changed it in place: an optimizer updates {name} in place, and this backward() "
        f"still needs the value the forward used ({held}). Run every backward() over this graph "
        f"before the step (sum the losses and call backward() once, or call each backward() first, "
        f"then {opt}.step()), or compute the forward again after the step."
    )


_ELEMENT_SET = re.compile(r"^([^\W\d]\w*)\[([^\]]*)\]\s*=(?!=)\s*(.+)$")


def element_set_on_leaf(code: str | None) -> str | None:
    """``x[0] = 0.0`` on a leaf that requires grad: to mask part of it in the computation, do it
    on a copy; to change the leaf itself (an initial value), under no_grad."""
    found = _ELEMENT_SET.match(code or "")
    if found is None:
        return None
    name, index, value = found.groups()
    return (
        f"{code} writes into {name} in place, and {name} is a leaf that requires grad: autograd cannot let "
        f"it change under the computations that use it. To leave {name}[{index}] out of a computation, set it "
        f"on a copy, y = {name}.clone(); y[{index}] = {value} (the gradient still reaches the rest of {name}), "
        f"or multiply by a mask; to change {name}'s own starting values, do it under torch.no_grad(), or "
        "before requires_grad_()."
    )


# `emb.index_add_(0, idx, msg)`: an in-place write whose out-of-place twin builds a new tensor
_INDEXED_WRITE = re.compile(
    r"^([^\W\d]\w*)\.((?:index_add|index_copy|index_fill|index_put|scatter|scatter_add|scatter_reduce"
    r"|masked_fill|masked_scatter)_)\((.*)\)$"
)


def indexed_write_on_leaf(code: str | None) -> str | None:
    """``emb.index_add_(0, idx, msg)`` (``scatter_``, ``masked_fill_``…) as a statement, on a leaf
    that requires grad: the out-of-place twin builds the new tensor with the gradient flowing."""
    found = _INDEXED_WRITE.match(code or "")
    if found is None:
        return None
    name, op, args = found.groups()
    return (
        f"{name}.{op}(…) writes into {name} in place, and {name} is a leaf that requires grad: autograd cannot let "
        f"it change under the computations that use it. To build a new tensor from {name}, its gradient flowing "
        f"through, use the out-of-place {op[:-1]}: out = {name}.{op[:-1]}({args}), and use out from there on; to "
        f"change {name}'s own values (an update, an initial value), do it under torch.no_grad()."
    )


_MULTI_VIEW = re.compile(
    r"Output (\d+) of (\w+) is a view and is being modified inplace\. This view is the output of a function that returns multiple views"
)
_NO_GRAD_VIEW = "A view was created in no_grad mode and is being modified inplace with grad mode enabled"
# what changes a tensor in place on a line: ``a += 1``, ``a.add_(1)``, ``xs[0].mul_(2)``
_CHANGED = re.compile(r"^\s*([^\W\d]\w*(?:\[[^\]]*\])?)\s*(?:([-+*/])=|\.([a-z]\w*_)\()")
_IN_PLACE_OF = {"+": "add_", "-": "sub_", "*": "mul_", "/": "div_"}


def view_changed_in_place(text: str, code: str | None) -> str | None:
    """The hint for a view changed in place where autograd forbids it: one of several views
    (``a, b = x.unbind(1)``, ``split``, ``chunk``), or a view made under ``no_grad`` changed
    with grad on; ``None`` for any other error."""
    changed = _CHANGED.search(code or "")
    name = changed.group(1) if changed else "the view"
    multi = _MULTI_VIEW.search(text)
    if multi:
        fn = multi.group(2).lower()
        if changed:
            method = changed.group(3) or _IN_PLACE_OF[changed.group(2)]
            plain = name.isidentifier()
            fix = _out_of_place(name if plain else "p", f"Tensor.{method}", code.strip() if code else None)
            if not plain:
                fix = fix.replace("(p = p ", f"(p = {name} ", 1)
        else:
            fix = "compute a new tensor instead (a = a + 1 rather than a += 1)"
        return (
            f"{name} is one of the views {fn}() returned, which all share one tensor's memory, and autograd "
            f"cannot follow an in-place change to one of several views: {fix}, or change a copy "
            f"({'p' if changed and not name.isidentifier() else name} = {name}.clone() first)."
        )
    if _NO_GRAD_VIEW in text:
        inside = code.strip() if changed and code and len(code.strip()) <= 40 else f"{name}.zero_()"
        return (
            f"{name} was made under torch.no_grad() as a view of a tensor that requires grad, and is changed in "
            f"place here with grad on: that would change the base tensor behind autograd's back. Change it "
            f"inside the no_grad block too (with torch.no_grad(): {inside}) to set values without "
            f"recording, or take the view outside no_grad so the change is recorded."
        )
    return None
