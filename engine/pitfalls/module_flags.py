"""``model.requires_grad = False`` (requires-grad-set-on-module): a new attribute on the
module, which nothing reads. ``requires_grad_(False)``, with the underscore, is the method that
freezes; the attribute leaves every parameter requiring grad, so backward() still computes
their gradients, and an optimizer that holds them trains them.

Told at the assignment, at the end of a run that stepped an optimizer, in one of two ways:

- the module kept training: an optimizer stepped its parameters (built from the whole model);
- the module got gradients and no optimizer holds it (``opt = SGD(head.parameters())`` beside
  ``backbone.requires_grad = False``): it kept its values, but only because the optimizer was
  not given it. parameter-not-optimized (parameters.py) is not said of these parameters: its
  fix, to give them to an optimizer, is the opposite of what the snippet meant.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torch import nn

from ..source import line_matching
from .cleared_grads import clears_gradients
from .kinds import Said

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["module_flag_reports"]


def module_flag_reports(
    rec: Recorder, modules: list[nn.Module], scope: dict[str, Any]
) -> tuple[list[Said], set[int]]:
    """What is said of each of ``modules`` (the snippet's, and their submodules) given a
    ``requires_grad = False`` attribute, with the ids of the parameters it says got gradients
    and no optimizer (parameter-not-optimized leaves them out); ``scope``: the snippet's
    globals."""
    stepped = rec.training.stepped_params
    if rec.training.total_steps == 0:
        return [], set()
    said: list[Said] = []
    untrained: set[int] = set()
    for module in modules:
        if vars(module).get("requires_grad") is not False:
            continue
        params = [p for p in module.parameters() if p.requires_grad]
        trained = [p for p in params if id(p) in stepped]
        graded = [p for p in params if p.grad is not None and id(p) not in stepped]
        if not trained and not graded:
            continue
        path = rec.modules.path_of(module) or type(module).__name__
        line, code = _flag_line(module, scope, rec.statement_lines) or (None, f"{path}.requires_grad = False")
        path = code.split(".requires_grad")[0]  # the module as the snippet names it
        unused = f"{code} sets a new attribute on the module, which nothing reads: an nn.Module has no requires_grad of its own, so {path}'s parameters still require grad"
        fix = (
            f"Freeze its parameters with the method, with the underscore: {path}"
            ".requires_grad_(False) (or set p.requires_grad = False for each p in its parameters())."
        )
        if trained:
            title = f"{code} freezes nothing: {path} kept training"
            message = f"{unused}, got gradients, and the optimizer updated them at every step."
            tensors = trained
        else:
            cleared = clears_gradients(graded, scope, "\n".join(rec.source_lines))
            title = f"{code} freezes nothing: {path} still gets gradients"
            message = (
                f"{unused}, and backward() computes their gradients at every step"
                + (
                    ", which nothing uses"
                    if cleared
                    else ", which pile up in their .grad (no optimizer holds them, so no zero_grad() clears them)"
                )
                + f". {path} keeps its values only because no optimizer was given its parameters: an optimizer "
                "built from all of the model's would train them."
            )
            fix += " backward() then skips them."
            tensors = graded
            untrained.update(map(id, graded))
        ids = [tid for p in tensors if (tid := rec.tensors.known(p)) is not None]
        said.append(Said("requires-grad-set-on-module", line, title, message, fix, ids))
    return said, untrained


_FLAG_SET = re.compile(r"^([^\W\d][\w.]*)\.requires_grad\s*=\s*False\b")


def _flag_line(
    module: nn.Module, scope: dict[str, Any], source_lines: Sequence[str]
) -> tuple[int, str] | None:
    """The line that sets ``.requires_grad = False`` on ``module`` (its receiver followed
    through the snippet's names and attributes), with its code."""
    for at in range(1, len(source_lines) + 1):
        found = line_matching(source_lines, _FLAG_SET, [at])
        if found is None:
            continue
        first, *rest = _FLAG_SET.match(found[1]).group(1).split(".")  # type: ignore[union-attr]
        value: Any = scope.get(first)
        for part in rest:
            value = getattr(value, part, None)
        if value is module:
            return found
    return None
