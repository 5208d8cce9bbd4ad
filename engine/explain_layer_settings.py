"""Hints for layers built with settings PyTorch refuses, or given an input of the wrong number
of dimensions for their kind:

- ``nn.Conv2d(6, 8, 3, groups=4)``: groups must divide both channel counts;
- ``nn.Conv2d(…, stride=2, padding='same')``: 'same' is for stride 1;
- ``nn.MaxPool2d(2, padding=2)``: a pooling pads at most half its window;
- ``nn.Dropout(50)``: p is a fraction, from 0 to 1;
- ``nn.ModuleDict({'a.b': …})``, ``register_buffer('a.b', …)``: a name with a dot;
- ``self.register_buffer('scale', 2.0)``, ``self.count = self.count.item() + 1``: a buffer holds
  a tensor;
- ``heads[0]`` of an ``nn.ModuleDict``: it is looked up by key;
- ``nn.EmbeddingBag`` given a 1-D input without offsets;
- ``nn.AvgPool1d`` given images, ``nn.MaxPool2d`` given a volume, and the like: the pooling's
  kind is named by the dimensions it pools;
- ``F.interpolate(img, mode='bilinear')`` of one image (C, H, W), or ``mode='linear'`` of images.

Each names the snippet's own layer and sizes; ``None`` for any other error."""

from __future__ import annotations

import ast
import math
import re
from types import FrameType

import torch
from torch import nn

from .explain_reading import calls, find_call, literal, parsed, with_arg

__all__ = ["layer_setting_hint"]

_GROUPS = re.compile(r"(in|out)_channels must be divisible by groups")
_SAME_STRIDED = "padding='same' is not supported for strided convolutions"
_POOL_PAD = re.compile(
    r"pad should be at most half of effective kernel size, but got pad=(\d+), kernel_size=(\d+)"
)
_DROPOUT = re.compile(r"dropout probability has to be between 0 and 1, but got (-?[\d.]+)")
_DOTTED_NAME = re.compile(r"""(module|parameter|buffer) name can\\?'t contain "\.\"""")
_BUFFER = re.compile(r"cannot assign '(\w+)'(?: object to| as) buffer '(\w+)' \(torch")
_BAG_OFFSETS = "offsets has to be a 1D Tensor but got None"
_POOL_1D = re.compile(
    r"Expected 2 to 3 dimensions, but got (\d+)-dimensional tensor for argument #1 'self' \(while checking "
    r"arguments for (\w+)_pool1d\)|(max)_pool1d: Expected 2D or 3D \(batch mode\) tensor .* but got:\[([\d, ]*)\]"
)
_POOL_ND = re.compile(
    r"^Expected (3|4)D or (4|5)D \(batch mode\) tensor with optional 0 dim batch size for input, but got:\[([\d, ]*)\]"
    r"|^non-empty (3|4)D or (4|5)D \(batch mode\) tensor expected for input"
)
_INTERP = re.compile(r"Got (\d)D input, but (\w+) mode needs (\d)D input")
_CONVS = ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
_POOLS = (
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "max_pool2d",
    "avg_pool2d",
)
_KINDS = {1: ("(N, C, L)", "signals"), 2: ("(N, C, H, W)", "images"), 3: ("(N, C, D, H, W)", "volumes")}
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def layer_setting_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``) that the
    module's docstring lists; ``None`` for any other."""
    groups = _GROUPS.search(text)
    if groups:
        return _groups(code, frame)
    if _SAME_STRIDED in text:
        return _same_strided(code)
    pad = _POOL_PAD.search(text)
    if pad:
        return _pool_padding(int(pad.group(1)), int(pad.group(2)), code, frame)
    dropout = _DROPOUT.search(text)
    if dropout:
        return _dropout(float(dropout.group(1)))
    dotted = _DOTTED_NAME.search(text)
    if dotted:
        return _dotted_name(dotted.group(1), text)
    buffer = _BUFFER.search(text)
    if buffer:
        return _buffer(buffer.group(1), buffer.group(2), code)
    if _BAG_OFFSETS in text:
        return _bag_offsets(code, frame)
    if re.fullmatch(r"-?\d+", text):  # a KeyError's number
        return _dict_by_position(int(text), code, frame)
    pool = _POOL_1D.search(text)
    if pool:
        dims = int(pool.group(1)) if pool.group(1) else len(pool.group(4).split(","))
        return _pool_kind(1, dims, code, frame)
    pool = _POOL_ND.search(text)
    if pool:
        pooled = int(pool.group(1) or pool.group(4)) - 1
        return _pool_kind(
            pooled, None if pool.group(3) is None else len(pool.group(3).split(",")), code, frame
        )
    interp = _INTERP.search(text)
    if interp:
        return _interpolated(int(interp.group(1)), interp.group(2), code)
    return None


def _groups(code: str | None, frame: FrameType | None) -> str | None:
    """``nn.Conv2d(6, 8, 3, groups=4)``: groups splits both channel counts evenly."""
    call = find_call(code, _CONVS, ("in_channels", "out_channels", "kernel_size"))
    if call is None or "groups" not in call:
        return None
    c_in, c_out, g = (literal(call.get(k), frame) for k in ("in_channels", "out_channels", "groups"))
    if not all(type(v) is int for v in (c_in, c_out, g)):
        return None
    fits = [d for d in range(1, math.gcd(c_in, c_out) + 1) if c_in % d == 0 and c_out % d == 0]
    return (
        f"groups={g} splits the channels into {g} separate convolutions, each taking in_channels / groups and "
        f"making out_channels / groups, so both must be multiples of groups, and "
        f"{' and '.join(f'{k}={v}' for k, v in (('in_channels', c_in), ('out_channels', c_out)) if v % g)} "
        f"{'are' if c_in % g and c_out % g else 'is'} not. Use groups one of {', '.join(map(str, fits))} here "
        f"(groups={c_in} with out_channels a multiple of {c_in} is a depthwise convolution), or channel counts "
        f"that {g} divides."
    )


def _same_strided(code: str | None) -> str:
    """``padding='same'`` with a stride above 1."""
    call = find_call(code, _CONVS, ("in_channels", "out_channels", "kernel_size", "stride", "padding"))
    kernel = literal(call.get("kernel_size"), None) if call else None
    fix = ""
    if call is not None and type(kernel) is int and kernel % 2:
        fix = f": {with_arg(call, 'padding', str(kernel // 2))}"
    return (
        "padding='same' keeps the output the size of the input, which a stride above 1 cannot do: it shrinks it "
        "by the stride. Pad by hand, padding=kernel_size // 2 for an odd kernel, which gives ceil(size / stride)"
        f"{fix}."
    )


def _pool_padding(pad: int, kernel: int, code: str | None, frame: FrameType | None) -> str:
    """A pooling window padded by more than half its width."""
    layer = _layer_on_line(code, frame, "Pool")
    kind = type(layer[1]).__name__ if layer else "MaxPool2d"
    who = f"{layer[0]} ({kind})" if layer else "This pooling"
    return (
        f"{who} pads its input by at most half its window, so that every window holds part of the input: with "
        f"kernel_size={kernel} padding can be 0 to {kernel // 2}, and it is {pad}. Pass padding={kernel // 2} or "
        f"less; to keep the size, use an odd window with stride=1, nn.{kind}(3, stride=1, padding=1)."
    )


def _layer_on_line(code: str | None, frame: FrameType | None, kind: str) -> tuple[str, nn.Module] | None:
    """The first layer the line calls (``pool(x)``) whose class name holds ``kind``, or that
    the line builds (``nn.MaxPool2d(2)(x)``): its source and the layer."""
    for node in calls(code):
        held = literal(ast.unparse(node.func), frame)
        if isinstance(held, nn.Module) and kind in type(held).__name__:
            return ast.unparse(node.func), held
    return None


def _dropout(p: float) -> str:
    """``nn.Dropout(50)``: a percentage where a fraction goes."""
    shown = int(p) if p == int(p) else p
    percent = f" For {shown}% write p={p / 100:g}." if 1 < p <= 100 and p == int(p) else ""
    return (
        f"Dropout's p is the probability of zeroing each value, a fraction from 0 to 1, and it was given {shown}."
        f"{percent} p=0.5 drops half; p=0 keeps everything."
    )


def _dotted_name(kind: str, text: str) -> str:
    """A module, parameter or buffer registered under a name with a dot in it."""
    named = re.search(r"got: ([\w.]+)", text)
    name = named.group(1) if named else None
    safe = f" ('{name}' as '{name.replace('.', '_')}')" if name else ""
    return (
        f"A {kind} name becomes an attribute of the model, and its dots are read as a path in state_dict() keys "
        f"('encoder.0.weight'), so a name of your own cannot hold one. Write it with _ in its place{safe}."
    )


def _buffer(given: str, name: str, code: str | None) -> str:
    """``self.register_buffer('scale', 2.0)`` or ``self.count = 3.0``: a buffer holds a tensor."""
    call = find_call(code, ("register_buffer",), ("name", "tensor"))
    if call is not None and "tensor" in call:
        made = f"torch.tensor({call['tensor']})"
        fix = f"Make it a tensor: {with_arg(call, 'tensor', made)}"
    else:
        fix = (
            f"Keep it a tensor: compute the new value from the tensor (self.{name} = self.{name} + 1, without .item()), "
            f"or write into it, self.{name}.fill_(…)"
        )
    return (
        f"A buffer is a tensor the model keeps (and moves with .to(device), and saves in state_dict()), and "
        f"'{name}' was given a Python {given}. {fix}; a plain number the model does not save can be an attribute "
        "of its own, never registered."
    )


def _bag_offsets(code: str | None, frame: FrameType | None) -> str:
    """``nn.EmbeddingBag`` given a 1-D input and no offsets."""
    found = _first_input(code, frame)
    bag, x = (_layer_on_line(code, frame, "EmbeddingBag") or ("bag",))[0], found[0] if found else "x"
    return (
        f"{bag} (nn.EmbeddingBag) reads a 1-D input as many bags laid end to end, and needs offsets, where each bag "
        f"starts: {bag}({x}, offsets) with offsets = torch.tensor([0, …]). For bags of one length pass a 2-D input, "
        f"(bags, ids per bag): {bag}({x}.unsqueeze(0)) makes {x} one bag."
    )


def _dict_by_position(key: int, code: str | None, frame: FrameType | None) -> str | None:
    """``heads[0]`` of an nn.ModuleDict, which is looked up by its keys."""
    for node in ast.walk(parsed(code) or ast.Module([], [])):
        if not (isinstance(node, ast.Subscript) and ast.unparse(node.slice) == str(key)):
            continue
        owner = ast.unparse(node.value)
        held = literal(owner, frame)
        if isinstance(held, nn.ModuleDict | nn.ParameterDict):
            keys = list(held.keys())
            shown = ", ".join(repr(k) for k in keys[:4]) + (", …" if len(keys) > 4 else "")
            first = f"{owner}[{keys[0]!r}]" if keys else f"{owner}['name']"
            order = f", or by order: list({owner}.values())[{key}]" if keys else ""
            return (
                f"{owner} is an nn.{type(held).__name__}, looked up by its keys ({shown}), not by position: "
                f"{first}{order}. For layers kept by position use nn.ModuleList."
            )
    return None


def _pool_kind(pooled: int, dims: int | None, code: str | None, frame: FrameType | None) -> str:
    """A pooling of ``pooled`` spatial dimensions given a tensor of ``dims`` dimensions."""
    layer = _layer_on_line(code, frame, "Pool")
    kind = type(layer[1]).__name__ if layer else None
    who = f"{layer[0]} ({kind})" if layer else f"This {pooled}-D pooling"
    takes = _KINDS[pooled]
    said = (
        f"{who} pools the last {pooled} dimension{'s' if pooled > 1 else ''} of {takes[0]}, {takes[1]} (or of "
        "one sample, without N)"
    )
    found = _first_input(code, frame)
    x, given = found if found else ("x", None)
    dims = given.dim() if given is not None else dims
    if dims is None:
        return f"{said}, and this input has another number of dimensions: print its .shape."
    if dims == pooled:
        return (
            f"{said}, and {x} is {dims}-D, without its channel dimension: add it, {x}.unsqueeze(0) for one "
            f"sample ({x}.unsqueeze(1) for a batch of them)."
        )
    ones = [d for d in range(1, dims) if given is not None and given.shape[d] == 1]
    extra = (
        f" If {x}, {tuple(given.shape)}, is {takes[1]} with a dimension too many, drop it: {x}.squeeze({ones[0]})."
        if ones and given is not None and dims == pooled + 3
        else ""
    )
    if dims - 2 in _KINDS and dims - 2 != pooled:
        other = kind.replace(f"{pooled}d", f"{dims - 2}d") if kind else f"MaxPool{dims - 2}d"
        return (
            f"{said}, and {x} is {dims}-D, {' '.join(_KINDS[dims - 2])}: use the pooling of its kind, "
            f"nn.{other}.{extra}"
        )
    return f"{said}, and {x} is {dims}-D: reshape it to {takes[0]}.{extra}"


def _first_input(code: str | None, frame: FrameType | None) -> tuple[str, torch.Tensor] | None:
    """The tensor the line's layer is called on (``x`` of ``pool(x)``), where a name holds it,
    with that name."""
    for node in calls(code):
        x = ast.unparse(node.args[0]) if len(node.args) == 1 else ""
        held = literal(x, frame)
        if isinstance(held, torch.Tensor) and isinstance(literal(ast.unparse(node.func), frame), nn.Module):
            return x, held
    return None


def _interpolated(dims: int, mode: str, code: str | None) -> str:
    """``F.interpolate`` in a mode for another number of dimensions than the input has."""
    needs = _MODE_DIMS.get(mode)
    if needs is None:
        return (
            f"mode='{mode}' resizes another number of dimensions than this {dims}-D input has: F.interpolate "
            "takes (N, C, …) with the batch and channels first."
        )
    if dims == needs + 1:  # one sample, without its batch dimension
        call = find_call(code, ("interpolate",), ("input",))
        x = call["self"] if call and "self" in call else "x"
        fixed = (
            f": {with_arg(call, 'self', f'{x}.unsqueeze(0)')}.squeeze(0)"
            if call is not None and call.get("self") == x
            else f": add it with {x}.unsqueeze(0), and take it off after, .squeeze(0)"
        )
        return (
            f"F.interpolate takes a batch, (N, C, …), and mode='{mode}' resizes {needs} dimension"
            f"{'s' if needs > 1 else ''}, so it needs {needs + 2}-D input; this one is {dims}-D, one sample "
            f"without its batch dimension{fixed}."
        )
    named = {v: k for k, v in _MODE_DIMS.items() if k != "bicubic"}
    right = named.get(dims - 2)
    better = f" For this input pass mode='{right}'." if right else ""
    return (
        f"mode='{mode}' resizes {needs} dimension{'s' if needs > 1 else ''}, of (N, C, …) input "
        f"{needs + 2}-D, and this input is {dims}-D.{better}"
    )
