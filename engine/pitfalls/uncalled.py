"""Methods of the training loop named without their parentheses (method-not-called).

``optimizer.zero_grad`` on a line of its own reads the method and drops it: the line does
nothing, raises nothing, and the loop looks right to the eye. The snippet's source is read
once, at the end of the run, for statements that are nothing but such a name.
"""

from __future__ import annotations

import ast

from ..source import parsed_source

__all__ = ["WHAT_IT_SKIPS", "uncalled_methods"]

# what the line would have done, said as what goes wrong without it
WHAT_IT_SKIPS = {
    "backward": "no gradient is computed: .grad stays as it was, and a step after it has nothing new to follow",
    "step": "the optimizer never moves the parameters, and the loss stays where it was",
    "zero_grad": "the gradients are never cleared, and each backward() adds to the ones before",
    "eval": "the model stays in training mode: dropout still drops, batch norm still uses each batch's statistics",
    "train": "the model stays in the mode it was in",
}


def uncalled_methods(source_lines: list[str]) -> list[tuple[int, str, str]]:
    """Each statement that is only ``X.m`` for a method ``m`` of WHAT_IT_SKIPS, in line order:
    its line, the name as written (``opt.zero_grad``) and ``m``. Empty when the source does
    not parse."""
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return []
    return sorted(
        (node.lineno, ast.unparse(node.value), node.value.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr in WHAT_IT_SKIPS
    )
