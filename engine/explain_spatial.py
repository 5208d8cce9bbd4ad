"""Hints for the feature maps of a conv net that stop lining up, read from the failed op's
operands (``rec.failed_op``): a skip connection joined (``torch.cat`` or ``+``) after pooling
rounded an odd side down or after a transposed convolution came out one short, a residual
block whose shortcut does not stride or widen like the block, and ``F.pad`` given its sizes
front to back (its tuple starts at the last dimension).

Each hint says what the sizes are, where the difference comes from, and the line that fixes
it; anything it cannot tie to one of these causes is left to the generic shape hints.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

import torch

from .source import is_module, outer_scopes

__all__ = ["spatial_hint"]

_JOINS = frozenset({"cat", "concat", "concatenate"})
_ADDS = frozenset({"add", "add_", "sub", "sub_", "iadd"})
# F.pad(x, (1, 1, 0, 0)) / torch.nn.functional.pad(x, pad=[0, 1])
_PAD_CALL = re.compile(r"\bpad\(\s*[^,()]+(?:\([^()]*\))?\s*,\s*(?:pad\s*=\s*)?([\(\[][-\d\s,]+[\)\]])")
_JOIN_DIM = re.compile(r"Sizes of tensors must match except in dimension (\d+)")
_MODULES_LOOKED_AT = 2000  # a huge model's layers are not all walked for a hint


def spatial_hint(
    text: str,
    failed: tuple[str, list[torch.Tensor]] | None,
    frame: FrameType | None,
    made_code: Callable[[torch.Tensor], str | None],
) -> str | None:
    """The hint for error ``text`` from a failed ``torch.cat`` along the channels or ``+`` of
    feature maps (or of a tensor ``F.pad`` made), or ``None``. ``failed`` is the recorder's
    ``failed_op``; ``made_code(t)`` the code of the line that made ``t``, where the run saw it made."""
    if failed is None:
        return None
    name, operands = failed
    if name in _JOINS:
        join = _JOIN_DIM.search(text)
        if join is None or join.group(1) != "1":
            return None
    elif name not in _ADDS:
        return None
    pair = _disagreeing_pair(operands, joined=name in _JOINS)
    if pair is None:
        return None
    a, b = pair
    padded = _pad_order_hint(a, b, made_code) or _pad_order_hint(b, a, made_code)
    if padded:
        return padded
    if (
        a.dim() not in (4, 5)
        or a.dim() != b.dim()
        or a.shape[0] != b.shape[0]
        or not _from_a_conv_net((a, b), frame)
    ):
        return None
    small, large = sorted((a, b), key=lambda t: tuple(t.shape[2:]))
    if all(s == g for s, g in zip(small.shape[2:], large.shape[2:], strict=True)):
        return _widened(small, large) if name in _ADDS else None
    if all(0 <= g - s <= 2 for s, g in zip(small.shape[2:], large.shape[2:], strict=True)):
        return _transposed_short(small, large, frame) or _rounded_down(small, large, name in _JOINS)
    if name in _ADDS:
        return _strided(small, large, (a, b))
    return None


def _disagreeing_pair(
    operands: Sequence[torch.Tensor], *, joined: bool
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The first two operands whose shapes disagree (outside dim 1 for a join along the
    channels); ``None`` when a join is not along dim 1 of feature maps or nothing disagrees."""
    tensors = [t for t in operands if isinstance(t, torch.Tensor)]
    for a, b in itertools.combinations(tensors, 2):
        if a.dim() != b.dim():
            continue
        if joined:
            if a.shape[:1] + a.shape[2:] != b.shape[:1] + b.shape[2:]:
                return a, b
        elif a.shape != b.shape:
            return a, b
    return None


def _sides(t: torch.Tensor) -> str:
    return "×".join(str(n) for n in t.shape[2:])


def _shape(t: torch.Tensor) -> str:
    return f"[{', '.join(str(n) for n in t.shape)}]"


def _widened(small: torch.Tensor, large: torch.Tensor) -> str | None:
    c_in, c_out = sorted((small.shape[1], large.shape[1]))
    if c_in == c_out:
        return None
    conv = f"nn.Conv{small.dim() - 2}d"
    return (
        f"These feature maps have {c_in} and {c_out} channels ({_shape(small)} and {_shape(large)}), so "
        "they cannot be added. A residual block that widens from "
        f"{c_in} to {c_out} channels needs a shortcut that widens x too, as ResNet's does: "
        f"self.shortcut = {conv}({c_in}, {c_out}, kernel_size=1), and add self.shortcut(x) instead of x."
    )


def _strided(
    small: torch.Tensor, large: torch.Tensor, added: tuple[torch.Tensor, torch.Tensor]
) -> str | None:
    """A residual block that strides: every side of ``large`` is ``stride`` times ``small``'s (rounded up)."""
    strides = {-(-g // s) if s else 0 for s, g in zip(small.shape[2:], large.shape[2:], strict=True)}
    if len(strides) != 1:
        return None
    stride = strides.pop()
    if stride < 2 or any(-(-g // stride) != s for s, g in zip(small.shape[2:], large.shape[2:], strict=True)):
        return None
    c_in, c_out = large.shape[1], small.shape[1]
    conv = f"nn.Conv{small.dim() - 2}d"
    norm = f"nn.BatchNorm{small.dim() - 2}d"
    widens = f"widens {c_in} → {c_out} channels and " if c_in != c_out else ""
    return (
        f"A residual block adds its input to its output, and here they differ: {_shape(added[0])} and "
        f"{_shape(added[1])}. The block {widens}strides by {stride} ({_sides(large)} → {_sides(small)}), and "
        "the input goes round it unchanged. Give the shortcut the same change, as ResNet does: "
        f"self.shortcut = nn.Sequential({conv}({c_in}, {c_out}, kernel_size=1, stride={stride}, bias=False), "
        f"{norm}({c_out})), and add self.shortcut(x); keep x itself where a block neither strides nor widens."
    )


def _rounded_down(small: torch.Tensor, large: torch.Tensor, joined: bool) -> str:
    odd = next((g for s, g in zip(small.shape[2:], large.shape[2:], strict=True) if g != s), 0)
    how = "torch.cat" if joined else "adding them"
    return (
        f"The two feature maps are {_sides(large)} and {_sides(small)}: one pooled and upsampled again "
        f"(a skip connection, as in a U-Net) lost a row or column on the way, because pooling and "
        f"stride-2 convolutions round an odd side down ({odd} → {odd // 2} → {odd // 2 * 2}), so "
        f"{how} fails. Resize the upsampled map to the other's sides, "
        "F.interpolate(up, size=skip.shape[2:]), or crop the larger one "
        f"(skip[..., :{small.shape[2]}, :{small.shape[-1]}]), or feed inputs whose sides halve evenly at "
        "every level (32, 64, 128, 224)."
    )


def _transposed_short(small: torch.Tensor, large: torch.Tensor, frame: FrameType | None) -> str | None:
    """A transposed convolution in sight that makes ``small``'s sides from an integer input
    size and would make ``large``'s with ``output_padding``."""
    for conv in _modules_in_sight(frame):
        if (
            isinstance(conv, torch.nn.modules.conv._ConvTransposeNd)
            and len(conv.stride) == small.dim() - 2
            and max(conv.stride) > 1
        ):
            found = [_side_in(conv, i, s) for i, s in enumerate(small.shape[2:])]
            sides = [n for n in found if n is not None]
            if len(sides) != len(found) or all(
                n * conv.stride[i] == s for i, (n, s) in enumerate(zip(sides, small.shape[2:], strict=True))
            ):  # (one that doubles exactly is not what fell short: the side was odd before pooling)
                continue
            extra = [g - s for s, g in zip(small.shape[2:], large.shape[2:], strict=True)]
            if any(not 0 <= e < conv.stride[i] for i, e in enumerate(extra)) or not any(extra):
                continue
            padding = extra[0] if len(set(extra)) == 1 else tuple(extra)
            before = "×".join(str(n) for n in sides)
            return (
                f"{_described(conv)} turns {before} into {_sides(small)}, which falls short of the "
                f"{_sides(large)} it meets here: a transposed convolution with a stride does not simply "
                f"multiply the size by it (out = (in − 1)·stride − 2·padding + kernel_size). Give it "
                f"output_padding={padding}, or call it with output_size=skip.shape[2:] (with "
                "kernel_size=4, stride=2, padding=1 it doubles exactly)."
            )
    return None


def _side_in(conv: Any, i: int, out: int) -> int | None:
    """The input side that ``conv`` (no output_padding) turns into ``out`` along spatial dim ``i``, if any."""
    padding = conv.padding[i] if isinstance(conv.padding, tuple) else 0
    span = out - 1 - conv.dilation[i] * (conv.kernel_size[i] - 1) + 2 * padding - conv.output_padding[i]
    if span < 0 or span % conv.stride[i]:
        return None
    return span // conv.stride[i] + 1


def _described(conv: Any) -> str:
    def one(v: tuple[int, ...]) -> str:
        return str(v[0]) if len(set(v)) == 1 else str(v)

    padding = one(conv.padding) if isinstance(conv.padding, tuple) else repr(conv.padding)
    return (
        f"{type(conv).__name__}({conv.in_channels}, {conv.out_channels}, kernel_size={one(conv.kernel_size)}, "
        f"stride={one(conv.stride)}, padding={padding})"
    )


def _modules_in_sight(frame: FrameType | None) -> Iterator[torch.nn.Module]:
    """The layers of the snippet's models in sight of ``frame`` (innermost scope first)."""
    seen: set[int] = set()
    looked = 0
    for scope in reversed(outer_scopes(frame)):
        for value in list(scope.values()):
            if not is_module(value) or id(value) in seen:
                continue
            for module in value.modules():
                looked += 1
                if looked > _MODULES_LOOKED_AT:
                    return
                if id(module) not in seen:
                    seen.add(id(module))
                    yield module


_CONV_NET_LAYERS = (
    torch.nn.modules.conv._ConvNd,
    torch.nn.modules.pooling._MaxPoolNd,
    torch.nn.modules.pooling._AvgPoolNd,
    torch.nn.Upsample,
)


_CONV_NET_NODES = re.compile(r"Convolution|Pool|Upsample")


def _from_a_conv_net(tensors: Sequence[torch.Tensor], frame: FrameType | None) -> bool:
    """Whether a convolution, pooling or upsampling layer is in sight of ``frame``, or made
    one of ``tensors`` (its graph, a few dozen nodes up)."""
    if any(isinstance(m, _CONV_NET_LAYERS) for m in _modules_in_sight(frame)):
        return True
    nodes: list[Any] = [t.grad_fn for t in tensors if t.grad_fn is not None]
    seen: set[int] = set()
    while nodes and len(seen) < 64:
        node = nodes.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if _CONV_NET_NODES.search(type(node).__name__):
            return True
        nodes.extend(next_node for next_node, _ in node.next_functions)
    return False


def _pad_order_hint(
    padded: torch.Tensor, other: torch.Tensor, made_code: Callable[[torch.Tensor], str | None]
) -> str | None:
    """``F.pad`` made ``padded`` with a tuple read front to back: read the other way round it
    would have given ``other``'s shape."""
    code = made_code(padded)
    found = _PAD_CALL.search(code or "")
    if not found:
        return None
    try:
        pads = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return None
    if not isinstance(pads, tuple | list) or len(pads) % 2 or len(pads) < 4 or len(pads) // 2 > padded.dim():
        return None
    pairs = [(pads[i], pads[i + 1]) for i in range(0, len(pads), 2)]
    if pairs == pairs[::-1]:
        return None
    shape = list(padded.shape)
    for k, (left, right) in enumerate(pairs):  # undo: pairs[0] padded the last dimension
        shape[-1 - k] -= left + right
    meant = list(shape)
    for k, (left, right) in enumerate(reversed(pairs)):
        meant[-1 - k] += left + right
    if meant != list(other.shape):
        return None
    fixed = tuple(n for pair in reversed(pairs) for n in pair)
    dims = len(pairs)
    return (
        f"F.pad's tuple starts at the last dimension: {tuple(pads)} pads the last dimension by "
        f"{pairs[0]}, and the one before it by {pairs[1]}"
        + (", and so on" if dims > 2 else "")
        + f", so the padded tensor is {_shape(padded)}, not the {_shape(other)} it meets here. "
        f"Written the other way round, F.pad(…, {fixed}) pads the dimensions you meant."
    )
