"""What data-edit-hidden-from-autograd says (data_edit.py finds it): the line that changed a saved
tensor where autograd could not see it, the node that saved it, the backward() that used what
that line left and the gradient it made, and how to write the change so PyTorch checks it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..source import quoted_code

__all__ = ["changed_in_place", "swapped_memory"]

_DATA = re.compile(r"\.data\b(?!_)")
_CHANGED_THROUGH_DATA = re.compile(r"(?P<owner>[^\W\d]\w*(?:\.\w+|\[[^\]]*\])*?)\.data\b(?!_)")
_DATA_METHOD = re.compile(r"\.data\.\w+_\(")
_DATA_WRITE = re.compile(r"^(?P<target>[\w.\[\]]+)\.data\s*=\s*(?P<value>.+)$")


def changed_in_place(
    name: str | None,
    line: int,
    source_lines: Sequence[str],
    saver: tuple[str, int | None] | None,
    backward_line: int | None,
    grads: tuple[str, list[float] | None] | None,
    copyable: bool,
    parameter: str | None = None,
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for ``name`` (the saved tensor, when the snippet named it),
    changed in place at ``line`` through a tensor with a version counter of its own, after
    ``saver`` (its node class and line) saved it, then used by the backward() at
    ``backward_line``; ``grads``: the leaf whose gradient came from it, with its values;
    ``copyable``: the change may go to a copy (not a leaf that requires grad, a parameter);
    ``parameter``: the module name of the parameter on that memory, if any."""
    code = quoted_code(source_lines, line)
    owner = _CHANGED_THROUGH_DATA.search(code) if code is not None else None
    changed = owner["owner"] if owner is not None else name
    n = changed or "a saved tensor"
    if parameter is not None and parameter != changed:
        n = f"{n} ({parameter})" if changed else parameter
    via = (
        "through .data"
        if owner is not None
        else "through another tensor on its memory with a version counter of its own (as .data is)"
    )
    it = changed or "it"
    what = "it" if changed is None or name in (None, changed) else f"{name}, which shares its memory,"
    message = (
        f"Line {line}{f' ({code})' if code else ''} changes {n} in place {via} after {_saved(saver, what)}. "
        "A change made that way moves no version counter autograd checks, so it cannot see it: "
        f"{_backward(backward_line)} ran without an error and used {it} as line {line} left it, where "
        f"the gradient needs the values the forward saw{_gradient(grads)}"
    )
    if owner is not None and code is not None:
        checked = f"with torch.no_grad(): {_DATA.sub('', code)}"
        if _DATA_METHOD.search(code) and len(_DATA.findall(code)) == 1:  # x.detach() can take a method call
            checked += f" (or {_DATA.sub('.detach()', code)})"
    else:
        checked = f"with torch.no_grad(), changing {it} itself (or {it}.detach())"
    copy = (
        f"; or change a copy ({changed} = {changed}.clone() before line {line})"
        if changed and copyable
        else ""
    )
    fix = (
        f"Make the change after backward(); or make it where PyTorch checks it, {checked}, and "
        f"backward() then raises if the graph still needs the old values{copy}."
    )
    return f"{n} changed through .data after a node saved it: autograd cannot see the change", message, fix


def swapped_memory(
    name: str | None,
    line: int,
    source_lines: Sequence[str],
    saver: tuple[str, int | None] | None,
    backward_line: int | None,
    grads: tuple[str, list[float] | None] | None,
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for ``name``, the saved tensor itself, given new memory by
    ``name.data = …`` at ``line`` after ``saver`` saved it, then used by the backward() at
    ``backward_line`` (the arguments are :func:`changed_in_place`'s)."""
    code = quoted_code(source_lines, line)
    n = name or "a saved tensor"
    it = name or "it"
    message = (
        f"Line {line}{f' ({code})' if code else ''} gives {n} new memory through .data after "
        f"{_saved(saver, f'{it} itself')}. Its version counter does not move, so autograd cannot see "
        f"the change: {_backward(backward_line)} ran without an error and used the new values of {it}, "
        f"not those the forward used{_gradient(grads)}"
    )
    written = _DATA_WRITE.match(code) if code is not None else None
    if written is not None:
        value = _DATA.sub("", written["value"])
        checked = f"with torch.no_grad(): {written['target']}.copy_({value})"
    else:
        checked = f"with torch.no_grad(): {it}.copy_(new)"
    fix = (
        f"Make the change after backward(); or make it where PyTorch checks it, {checked}, and "
        "backward() then raises if the graph still needs the old values."
    )
    return f"{n} replaced through .data after a node saved it: backward used the new values", message, fix


def _saved(saver: tuple[str, int | None] | None, what: str) -> str:
    """``MulBackward0 (line 4) saved it for backward``."""
    if saver is None:
        return f"the graph saved {what} for backward"
    at = f" (line {saver[1]})" if saver[1] is not None else ""
    return f"{saver[0]}{at} saved {what} for backward"


def _backward(line: int | None) -> str:
    return f"the backward() at line {line}" if line is not None else "backward()"


def _gradient(grads: tuple[str, list[float] | None] | None) -> str:
    """``: w.grad is [6, 8].``, or the end of the sentence where no one leaf is known."""
    if grads is None:
        return "."
    leaf, values = grads
    if values is None:
        return f" ({leaf}.grad among what it computed)."
    return f": {leaf}.grad is [{', '.join(f'{v:.4g}' for v in values)}]."
