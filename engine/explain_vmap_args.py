"""Hints for torch.func.vmap beyond those of explain_transforms.py:

- ``in_dims=2`` for an input of 2 dimensions: in_dims names the dimension holding the samples;
- a function that returns None (it only prints) or a Python number where vmap stacks tensors;
- a random op inside the function (``torch.randn``): vmap refuses until told
  ``randomness='different'`` (a draw per sample) or ``'same'``;
- an in-place op inside the function that writes the batch into a tensor made there
  (``y = torch.zeros(3); y.add_(x)``): out of place, or a tensor per sample.

Each names the snippet's function and rewrites its call; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType

from .explain_reading import call_name, calls, syntax_tree
from .source import line_matching

__all__ = ["vmap_argument_hint"]

_IN_DIM = re.compile(
    r"vmap\((\w+), in_dims=.*Got in_dim=(-?\d+) for some input, but that input is a Tensor of dimensionality (\d+)"
)
_RETURNED = re.compile(r"vmap\((\w+), \.\.\.\): `\w+` must only return Tensors, got type <class '(\w+)'>")
_RANDOM = "vmap: called random operation while in randomness error mode"
_BROADCAST = re.compile(r"output with shape \[([\d, ]*)\] doesn't match the broadcast shape \[([\d, ]*)\]")
_RANDOM_OPS = {
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "randint_like",
    "randperm",
    "normal",
    "bernoulli",
    "multinomial",
    "dropout",
    "normal_",
    "uniform_",
    "bernoulli_",
}
_VMAP_OF = r"\bvmap\(\s*{}\b"


def vmap_argument_hint(
    text: str, code: str | None, frame: FrameType | None, source_lines: Sequence[str]
) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``) that the
    module's docstring lists; ``None`` for any other."""
    in_dim = _IN_DIM.search(text)
    if in_dim:
        fn, asked, dims = in_dim.group(1), int(in_dim.group(2)), int(in_dim.group(3))
        return (
            f"in_dims={asked} asks vmap to split an input of {fn} along dim {asked}, and it has {dims} dimensions "
            f"(0 to {dims - 1}). in_dims names the dimension that holds the samples, counted from 0: in_dims=0 for "
            f"a batch kept first (the usual), or a tuple with one entry per argument, None for one every sample "
            "shares."
        )
    returned = _RETURNED.search(text)
    if returned:
        fn, kind = returned.groups()
        why = (
            f"{fn} returns None (it has no return statement, or one without a value: printing is not returning)"
            if kind == "NoneType"
            else f"{fn} returns a Python {kind} (a .item(), or a number computed outside torch)"
        )
        fix = (
            "return the tensor it computes" if kind == "NoneType" else "keep the result a tensor (no .item())"
        )
        return f"vmap stacks what {fn} returns for each sample into a batch, so it must return tensors, and {why}: {fix}."
    if _RANDOM in text:
        fn = frame.f_code.co_name if frame is not None else "the function"
        found = line_matching(source_lines, re.compile(_VMAP_OF.format(re.escape(fn))))
        call = re.search(_VMAP_OF.format(re.escape(fn)) + r"[^)]*", found[1]) if found else None
        fixed = f"{call.group(0)}, randomness='different')" if call else f"vmap({fn}, randomness='different')"
        drawn = next((ast.unparse(c) for c in calls(code) if call_name(c) in _RANDOM_OPS), "This line")
        return (
            f"{drawn} draws random numbers inside {fn}, which vmap runs once for the whole batch, and it will not "
            f"guess whether each sample gets a draw of its own. Say which: {fixed} for one per sample (noise, "
            "dropout), randomness='same' for one draw every sample shares."
        )
    broadcast = _BROADCAST.search(text)
    if broadcast and frame is not None:
        return _written_into_unbatched(broadcast.group(1), code, frame, source_lines)
    return None


def _written_into_unbatched(
    size: str, code: str | None, frame: FrameType, source_lines: Sequence[str]
) -> str | None:
    """``y.add_(x)`` (or ``y += x``) inside a vmapped function, with ``y`` made there for one sample."""
    fn = frame.f_code.co_name
    if line_matching(source_lines, re.compile(_VMAP_OF.format(re.escape(fn)))) is None:
        return None
    target = value = None
    in_place = next((c for c in calls(code) if call_name(c).endswith("_") and c.args), None)
    if in_place is not None and isinstance(in_place.func, ast.Attribute):
        target, value = ast.unparse(in_place.func.value), ast.unparse(in_place.args[0])
        op = call_name(in_place)
    else:
        tree = syntax_tree(code)
        if tree is None:
            return None
        augmented = next((n for n in ast.walk(tree) if isinstance(n, ast.AugAssign)), None)
        if augmented is None:
            return None
        target, value = ast.unparse(augmented.target), ast.unparse(augmented.value)
        op = ast.unparse(augmented).split(" ")[1]
    out_of_place = {
        "add_": "+",
        "sub_": "-",
        "mul_": "*",
        "div_": "/",
        "+=": "+",
        "-=": "-",
        "*=": "*",
        "/=": "/",
    }
    sign = out_of_place.get(op)
    fix = f"{target} = {target} {sign} {value}" if sign else f"the out-of-place {op.rstrip('_')}"
    return (
        f"Inside vmap, {value} stands for every sample of the batch at once, and {target}, made inside {fn} with "
        f"shape [{size}], for one value all samples share: {op} would have to write every sample into it. Compute "
        f"out of place, {fix}, or make {target} per sample from the input, torch.zeros_like({value})."
    )
