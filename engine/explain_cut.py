"""Why a tensor that backward() was called on has no graph, in the snippet's own terms.

PyTorch's message ("element 0 of tensors does not require grad and does not have a grad_fn")
says what is missing, not why. The two causes a beginner hits most are told apart here: no
tensor of the snippet requires grad at all (the leaf was made without requires_grad=True),
or one does, and a line of the snippet cut the chain back to it (.data, .detach(), .item(),
torch.no_grad(), argmax, or a torch.tensor([...]) the recorder saw copy tensors off the graph).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from types import FrameType

import torch

from .explain_grad import GRAD_READ
from .source import (
    StatementLines,
    indentation,
    is_a,
    is_module,
    named_tensors,
    quoted_code,
    visible_names,
    without_comment,
)

__all__ = ["cut_before", "cut_graph_hint"]

_NO_GRAD_BLOCK = re.compile(r"with\s+torch\.(?:no_grad|inference_mode)\(\)")
# What cuts a value off its history, found on a line of code, and what to write instead.
_CUTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"([^\W\d][\w.]*)\.data\b"),
        "{name}.data gives {name}'s values without their history; use {name} itself",
    ),
    (
        re.compile(r"\.detach\(\)"),
        ".detach() gives a value without its history, on purpose; leave it out where the gradient must flow",
    ),
    (
        re.compile(r"\.item\(\)"),
        ".item() gives a Python number, which carries no history; keep the tensor where the gradient must flow",
    ),
    (
        _NO_GRAD_BLOCK,
        "nothing computed inside the block is recorded for backward; compute the loss outside it",
    ),
    *(
        (
            re.compile(rf"\b{op}\("),
            f"{op} gives the positions of the {most} values, and a position has no gradient, nor has "
            "an accuracy counted from them; train on a loss of the scores themselves "
            "(F.cross_entropy(scores, target)) and count the accuracy under torch.no_grad()",
        )
        for op, most in (("argmax", "largest"), ("argmin", "smallest"))
    ),
)
# a line the recorder saw copy tensors off the graph matches as it is
_ANYTHING = re.compile("")
# `w = w - lr * w.grad`: a name bound to a value computed from itself (not `w -= ...`)
_SELF_ASSIGNED = re.compile(r"^([^\W\d]\w*)\s*=(?!=)\s*(.*)$")
_DEF = re.compile(r"(?:async\s+)?def\s+([^\W\d]\w*)")
_NO_GRAD_DECORATOR = re.compile(r"@torch\.(?:no_grad|inference_mode)\b")
# `x.requires_grad_()`, `x.requires_grad = True`
_TURNED_ON = re.compile(
    r"^([^\W\d]\w*)\.requires_grad_\((?:True)?\)|^([^\W\d]\w*)\.requires_grad\s*=\s*True\b"
)
# `x.requires_grad = False`, `x.requires_grad_(False)`
_TURNED_OFF = re.compile(
    r"^([^\W\d]\w*)\.requires_grad_\(\s*(?:requires_grad\s*=\s*)?False\s*\)|^([^\W\d]\w*)\.requires_grad\s*=\s*False\b"
)
_CREATE_GRAPH = re.compile(r"create_graph\s*=\s*True")
# an assignment (not a comparison): `y = ...`, `y += ...`, `a, b = ...`
_ASSIGNS = re.compile(r"^[(\[]?[^=#(]*[^=!<>]=(?!=)")


def cut_graph_hint(
    name: str,
    frame: FrameType | None,
    source_lines: Sequence[str],
    line: int | None,
    copies: Mapping[int, str] | None = None,
) -> str | None:
    """The first sentence of the hint for backward() of ``name``, a tensor outside any
    graph: that no tensor of the snippet requires grad (naming one to create with
    requires_grad=True), or the line before ``line`` that cut the chain; ``None`` where
    neither shows (the snippet's frame is unknown, or the cut is elsewhere). ``copies``: the
    lines the recorder saw copy tensors that require grad off the graph (``torch.tensor([a * b])``),
    with what to write instead."""
    if frame is None:
        return None
    scope = visible_names(frame)
    tensors = {k: v for k, v in scope.items() if is_a(v, torch.Tensor) and not k.startswith("_")}
    modules = [v for v in scope.values() if is_module(v)]
    if not any(t.requires_grad for t in tensors.values()) and not any(
        p.requires_grad for m in modules for _, p in named_tensors(m, "_parameters")
    ):
        rebound = _rebound_leaf(tensors, source_lines)
        if rebound:
            return rebound
        leaves = [k for k, t in tensors.items() if t.is_floating_point() and k != name]
        if not leaves:
            return None
        first = leaves[0]
        listed = ", ".join(leaves[:3])
        return (
            f"No tensor here requires grad ({listed}: requires_grad=False), so autograd recorded "
            f"nothing. Create the tensors you want gradients for with "
            f"requires_grad=True ({first} = torch.tensor(..., requires_grad=True), or "
            f"{first}.requires_grad_() before {name} is computed)."
        )
    return (
        grad_switched_off(name, line, source_lines)
        or cut_before(name, line, source_lines, copies or {})
        or _decorated_no_grad(name, line, source_lines)
        or _first_order_only(name, line, source_lines)
        or _late_requires_grad(name, line, tensors, source_lines)
        or _turned_off(name, line, tensors, source_lines)
    )


# `torch.set_grad_enabled(False)` as a statement, not a `with` block: off from there on
_SWITCHED = re.compile(r"^(?:torch\.(?:autograd\.)?)?set_grad_enabled\((False|True)\)$")


def grad_switched_off(name: str, line: int | None, source_lines: Sequence[str]) -> str | None:
    """The cause where ``torch.set_grad_enabled(False)``, called as a statement above
    ``line`` and not switched back, turned gradient recording off for the rest of the run;
    ``None`` otherwise."""
    if line is None:
        return None
    for at in range(line - 1, 0, -1):
        switched = _SWITCHED.match(quoted_code(source_lines, at, sys.maxsize) or "")
        if switched is None:
            continue
        if switched.group(1) == "True":
            return None
        code = quoted_code(source_lines, at)
        return (
            f"Line {at} ({code}) switched gradient recording off for every line after it, not just the next "
            f"one, so {name} was computed without a graph. Switch it back on before the forward pass, "
            "torch.set_grad_enabled(True), or put only the lines that need no gradients in a block: with "
            "torch.no_grad():."
        )
    return None


def _decorated_no_grad(name: str, line: int | None, source_lines: Sequence[str]) -> str | None:
    """``line`` lies in a function decorated ``@torch.no_grad()`` (or inference_mode): the
    whole function runs unrecorded."""
    if line is None or line > len(source_lines):
        return None
    codes = [without_comment(text).rstrip() for text in source_lines]
    indent = indentation(codes[line - 1])
    for number in range(line - 1, 0, -1):
        code = codes[number - 1]
        if not code.strip() or indentation(code) >= indent:
            continue
        indent = indentation(code)
        found = _DEF.match(code.strip())
        if found is None:
            continue
        above = number - 1
        while above >= 1 and codes[above - 1].strip().startswith("@"):
            decorator = codes[above - 1].strip()
            if _NO_GRAD_DECORATOR.match(decorator):
                return (
                    f"Line {above} ({decorator}) turns recording off for the whole of {found.group(1)}(): "
                    f"nothing computed inside it is recorded for backward, so {name} has no graph. Take the "
                    "decorator off a training step (keep it for evaluation), and put `with torch.no_grad():` "
                    "around just an update made by hand."
                )
            above -= 1
    return None


def _last_assignment(
    name: str, line: int | None, source_lines: Sequence[str]
) -> tuple[list[str], int | None]:
    """The code of the lines before ``line`` (stripped, comments left out) and the last of
    them that assigns ``name`` (``None`` where none does, or ``line`` is unknown)."""
    if line is None:
        return [], None
    codes = [without_comment(text).strip() for text in source_lines[: line - 1]]
    made = next((i for i in range(len(codes), 0, -1) if name in _targets(codes[i - 1])), None)
    if made is not None and isinstance(source_lines, StatementLines):
        made = source_lines.first(made)
    return codes, made


def _first_order_only(name: str, line: int | None, source_lines: Sequence[str]) -> str | None:
    """``name`` computed from gradients that carry no graph of their own: those
    ``torch.autograd.grad`` returns, or a ``.grad`` that ``backward()`` filled, without
    ``create_graph=True`` (a second derivative, a gradient penalty); or ``name`` such a
    ``.grad`` itself (``x.grad.pow(2).sum().backward()``)."""
    codes, made = _last_assignment(name, line, source_lines)
    if made is None:
        return (
            _filled_without_graph(f"{name} is a gradient that", codes, len(codes) + 1)
            if name.endswith(".grad")
            else None
        )
    code = codes[made - 1]
    if _CREATE_GRAPH.search(code):
        return None
    quoted = f" ({code})" if len(code) <= 60 else ""
    if "autograd.grad(" in code:
        return (
            f"{name} comes from torch.autograd.grad at line {made}{quoted}, called without create_graph=True: "
            "the gradients it returns have no graph of their own, so they cannot be differentiated again. "
            "Pass create_graph=True to that call for a second derivative."
        )
    read = GRAD_READ.search(code)
    if read is None:
        return None
    return _filled_without_graph(
        f"{name} is computed from {read.group(1)}.grad at line {made}{quoted}, which", codes, made
    )


def _filled_without_graph(subject: str, codes: Sequence[str], made: int) -> str | None:
    """``subject`` (a .grad, or what line ``made`` computed from one) completed with the last
    backward() above ``made`` that filled it without create_graph=True; ``None`` where none
    did, or one passed it."""
    backward = [i for i, c in enumerate(codes[: made - 1], start=1) if ".backward(" in c]
    if not backward or any(_CREATE_GRAPH.search(codes[i - 1]) for i in backward):
        return None
    return (
        f"{subject} backward() (line {backward[-1]}) filled without create_graph=True: a .grad has no "
        "graph of its own then, so nothing computed from it can be differentiated. Pass "
        "create_graph=True to that backward() (or use torch.autograd.grad(loss, x, create_graph=True)) "
        "for a gradient penalty or a second derivative."
    )


def _asked_for_grad(name: str, codes: Sequence[str]) -> bool:
    """Whether a line makes ``name`` require grad: ``name = torch.…(…, requires_grad=True)``,
    ``name.requires_grad_()`` or ``name.requires_grad = True``."""
    for code in codes:
        code = code.strip()
        turned_on = _TURNED_ON.search(code)
        if turned_on and name in turned_on.groups():
            return True
        if name in _targets(code) and re.search(r"requires_grad\s*=\s*True|\.requires_grad_\(", code):
            return True
    return False


def _late_requires_grad(
    name: str, line: int | None, tensors: Mapping[str, torch.Tensor], source_lines: Sequence[str]
) -> str | None:
    """``x.requires_grad_()`` (or ``x.requires_grad = True``) on a line between the one that
    computed ``name`` and ``line``: autograd did not record ``name``'s ops, which ran first."""
    codes, made = _last_assignment(name, line, source_lines)
    if made is None:
        return None
    for number in range(made + 1, len(codes) + 1):
        found = _TURNED_ON.search(codes[number - 1])
        leaf = found and (found.group(1) or found.group(2))
        if leaf and is_a(tensors.get(leaf), torch.Tensor) and tensors[leaf].requires_grad:
            source = " from it" if re.search(rf"(?<![\w.]){leaf}\b", codes[made - 1]) else ""
            return (
                f"{leaf} was made to require grad at line {number} ({codes[number - 1]}), after {name} "
                f"was computed{source} at line {made}: autograd records only the ops on tensors that "
                f"already require grad. Ask for it first: create {leaf} with requires_grad=True, or "
                f"move line {number} above line {made}."
            )
    return None


def _turned_off(
    name: str, line: int | None, tensors: Mapping[str, torch.Tensor], source_lines: Sequence[str]
) -> str | None:
    """``x.requires_grad = False`` (or ``x.requires_grad_(False)``) on a line before the one
    that computed ``name`` from ``x``: the leaf no longer asks for gradients, so nothing
    computed from it after that line is recorded."""
    codes, made = _last_assignment(name, line, source_lines)
    if made is None:
        return None
    for number in range(made - 1, 0, -1):
        found = _TURNED_OFF.search(codes[number - 1])
        leaf = found and (found.group(1) or found.group(2))
        if not leaf or not re.search(rf"(?<![\w.]){leaf}\b", codes[made - 1]):
            continue
        if not is_a(tensors.get(leaf), torch.Tensor) or tensors[leaf].requires_grad:
            return None
        return (
            f"Line {number} ({codes[number - 1]}) switched gradients off for {leaf}, and {name} was computed from "
            f"{leaf} after it, at line {made}: autograd records only the ops on tensors that require grad. Leave "
            f"line {number} out, or turn it back on, {leaf}.requires_grad_(), before line {made}."
        )
    return None


def cut_before(
    name: str, line: int | None, source_lines: Sequence[str], copies: Mapping[int, str]
) -> str | None:
    """The last line before ``line`` whose code cuts a value off its history (or that is one
    of ``copies``), explained, where what that line (or its ``with`` block) assigns is
    ``name`` or is used on a later line up to ``line``: an evaluation under no_grad()
    earlier in the snippet is no cause."""
    last = min(line or len(source_lines) + 1, len(source_lines) + 1) - 1
    codes = [without_comment(text).rstrip() for text in source_lines]
    for number in range(last, 0, -1):
        code = codes[number - 1].strip()
        cuts = ((_ANYTHING, copies[number]),) if number in copies else _CUTS
        for pattern, why in cuts:
            found = pattern.search(code)
            if found is None:
                continue
            block = _block_of(codes, number) if code.startswith("with ") else [code]
            targets = {t for c in block for t in _targets(c)}
            later = " ".join(codes[number + len(block) - 1 if code.startswith("with ") else number : last])
            if not (name in targets or any(re.search(rf"\b{re.escape(t)}\b", later) for t in targets)):
                continue
            what = why if number in copies else why.format(name=found.group(1) if found.groups() else "")
            quoted = f" ({code})" if len(code) <= 60 else ""
            return f"Line {number}{quoted} cuts the chain back to the leaves: {what}."
    return None


def _rebound_leaf(tensors: Mapping[str, torch.Tensor], source_lines: Sequence[str]) -> str | None:
    """A gradient step by hand that rebinds the leaf to a value outside the graph (``w = w -
    lr * w.grad`` under ``torch.no_grad()``, or ``w = (w - ...).detach()``), explained; the
    name must now hold a tensor that does not require grad, and a line must have asked for
    its gradient. ``None`` where no line does."""
    codes = [without_comment(text).rstrip() for text in source_lines]
    blocks = [
        range(number + 1, number + len(_block_of(codes, number)))
        for number, code in enumerate(codes, start=1)
        if _NO_GRAD_BLOCK.search(code.strip())
    ]
    for number, code in enumerate(codes, start=1):
        found = _SELF_ASSIGNED.match(code.strip())
        if found is None:
            continue
        name, value = found.groups()
        held = tensors.get(name)
        if held is None or held.requires_grad or not re.search(rf"(?<![\w.]){name}\b", value):
            continue
        if not _asked_for_grad(name, codes):
            continue  # it never required grad: the snippet never asked
        if any(number in block for block in blocks):
            how = "inside torch.no_grad(), made a new tensor that requires no grad"
        elif re.search(r"\.detach\(\)|\.data\b", value):
            how = "made a new tensor without history"
        else:
            continue
        step = re.match(rf"^\(?\s*{name}(?:\.data)?\s*-\s*(.+?)\s*\)?(?:\.detach\(\))?$", value)
        update = f"{name} -= {step.group(1)}" if step else f"{name}.copy_(…)"
        quoted = f" ({code.strip()})" if len(code.strip()) <= 60 else ""
        return (
            f"{name} no longer requires grad: line {number}{quoted} {how} and bound {name} to it, in "
            f"place of the leaf, so what is computed from {name} afterwards has no graph. Change the "
            f"leaf in place instead, inside torch.no_grad(): {update} rather than {name} = …, then "
            f"{name}.grad.zero_()."
        )
    return None


def _block_of(codes: Sequence[str], number: int) -> list[str]:
    """The lines of the block that the ``with`` at line ``number`` opens, itself first."""
    indent = indentation(codes[number - 1])
    block = [codes[number - 1].strip()]
    for text in codes[number:]:
        if text.strip() and indentation(text) <= indent:
            break
        block.append(text.strip())
    return block


def _targets(code: str) -> list[str]:
    """The names an assignment on one line binds (``y`` in ``y = ...``, ``a, b = ...``,
    ``(g,) = ...``, ``t += ...``)."""
    found = _ASSIGNS.match(code)
    if not found:
        return []
    left = found.group(0)[:-1].rstrip("+-*/@%&|^ ")
    names = [t.strip(" ()[]") for t in left.split(",")]
    return [t for t in names if re.fullmatch(r"[^\W\d]\w*", t)]
