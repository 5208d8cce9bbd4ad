"""Hints for the errors of a practitioner building a model from scratch, found by a hunt over
80 such snippets (tests/engine/test_error_hints_practice.py): attention masks of the wrong
dtype or shape (``masked_fill`` given a float mask, a key padding mask laid against the
scores without its head and query dimensions, a causal mask made for another length,
``scaled_dot_product_attention`` and ``nn.MultiheadAttention`` given integer masks, a 3-D
``attn_mask`` of one row per sequence where it takes one per sequence and head),
``nn.LayerNorm`` given channels-first maps, ``nn.GroupNorm`` whose groups do not divide the
channels, a distribution given a log-scale or raw scores as its scale or probabilities,
``.item()`` and ``if`` on a tensor inside ``torch.func.vmap``, an RNN's packed output
indexed as a tensor, ``pad_sequence`` of steps of different sizes, a tensor of pairs
unpacked along the wrong dimension, and a VAE's encoder output split along the batch. The
indexing, scatter and broadcasting ones are in explain_practice_index.py.

Each hint names the snippet's own tensors and call, and any fix it writes runs.
"""

from __future__ import annotations

import ast
import re
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_practice_index import index_hint
from .explain_reading import calls, find_call, parsed, shape, with_arg, wrapped
from .source import bound_to, is_module, line_matching, outer_scopes
from .tensor_facts import dtype_name

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["practice_hint"]

_BOOL_MASK = re.compile(r"masked_fill_? only supports boolean masks, but got mask with dtype (\w+)")
_SDPA_MASK_DTYPE = re.compile(r"Expected attn_mask dtype to be bool or float or to match query dtype")
_PADDING_DTYPE = re.compile(
    r"only bool and floating types of ((?:src_|tgt_|memory_)?key_padding_mask|attn_mask|src_mask|tgt_mask) are supported"
)
_MASK_3D = re.compile(
    r"The shape of the 3D attn_mask is torch\.Size\(\[(\d+), (\d+), (\d+)\]\), but should be \((\d+), "
)
_LAYER_NORM = re.compile(
    r"Given normalized_shape=\[([\d, ]+)\], expected input with shape \[\*, [\d, ]+\], but got input of size\s*\[([\d, ]+)\]"
)
_GROUPS = re.compile(r"num_channels \((\d+)\) must be divisible by num_groups \((\d+)\)")
_CONSTRAINT = re.compile(
    r"Expected parameter (\w+) \(Tensor of shape \([\d, ]*\)\) of distribution (\w+)\(.*?to satisfy the "
    r"constraint (\w+)\(",
    re.S,
)
_VMAP_ITEM = "vmap: It looks like you're calling .item() on a Tensor"
_VMAP_BRANCH = "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow"
_UNPACK = re.compile(
    r"too many values to unpack \(expected (\d+)\)|not enough values to unpack \(expected (\d+), got"
)
# .chunk(2) or .chunk(2, dim=0): split along dim 0, the batch
_CHUNKED_BATCH = re.compile(r"\bchunk\(\s*(?:[^,()]+,\s*)?2\s*(?:,\s*(?:dim\s*=\s*)?0\s*)?\)")


def practice_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``; see the
    module docstring), or ``None``. ``rec.failed_op`` names the op it came from, where recorded."""
    text = str(exc)
    op, ts = rec.failed_op if rec.failed_op is not None else ("", [])
    for hint in (
        index_hint(exc, rec, code, frame),
        _masked_fill_dtype(text, op, ts, code),
        _mask_dtype(text, code, frame),
        _mask_3d(text, code, frame),
        _layer_norm(text, code, frame),
        _group_norm(text),
        _distribution(exc, text, code),
        _vmap(text, code, frame),
        _packed_indexed(exc, code, frame),
        _pad_sequence(op, ts, code),
        _unpacked(exc, text, code, frame),
        _split_batch(op, ts, rec),
        _tied_weight(op, ts, frame),
    ):
        if hint:
            return hint
    return None


def _masked_fill_dtype(text: str, op: str, ts: list[torch.Tensor], code: str | None) -> str | None:
    """``scores.masked_fill(mask, -inf)`` with a mask of 0s and 1s as floats or integers."""
    found = _BOOL_MASK.search(text)
    call = find_call(code, ("masked_fill", "masked_fill_"), ("mask", "value"))
    if (
        not found
        or call is None
        or "mask" not in call
        or len(ts) != 2
        or op not in ("masked_fill", "masked_fill_")
    ):
        return None
    mask = ts[1]
    if mask.numel() and not bool(((mask == 0) | (mask == 1)).all()):
        return None
    name = call["mask"]
    causal = (
        mask.dim() == 2
        and mask.shape[0] == mask.shape[1]
        and bool((mask == torch.tril(torch.ones_like(mask))).all())
    )
    start = f"masked_fill takes a bool mask, True where the value goes in, and {name} holds {dtype_name(mask.dtype)} 0s and 1s."
    if causal:
        return (
            f"{start} It is 1 on and below the diagonal, the positions each query may see (torch.tril(torch.ones(T, T))), "
            f"so the value goes where it is 0: {with_arg(call, 'mask', f'{wrapped(name)} == 0')}."
        )
    return (
        f"{start} Compare it to make one: {with_arg(call, 'mask', f'{wrapped(name)} == 0')} fills where it is 0 (a mask "
        f"of the positions to keep), {with_arg(call, 'mask', f'{wrapped(name)}.bool()')} where it is 1 (a mask of the "
        "positions to hide)."
    )


def _mask_dtype(text: str, code: str | None, frame: FrameType | None = None) -> str | None:
    """An integer mask given to scaled_dot_product_attention or nn.MultiheadAttention, whose
    bool masks mean opposite things."""
    sdpa = _SDPA_MASK_DTYPE.search(text)
    mha = _PADDING_DTYPE.search(text)
    if not sdpa and not mha:
        return None
    keyword = "attn_mask" if sdpa else mha.group(1) if mha else ""
    given = next((ast.unparse(k.value) for c in calls(code) for k in c.keywords if k.arg == keyword), None)
    if given is None:
        return None
    cast = re.fullmatch(r"(.+)\.(?:long|int|short|byte|to\(torch\.(?:long|int\d*|uint8)\))\(\)", given)
    uncast = bound_to(cast.group(1), frame) if cast else None
    # (the mask before its cast, where it is bool or float already; an integer one needs .bool())
    kept = cast and (
        not isinstance(uncast, torch.Tensor) or uncast.is_floating_point() or uncast.dtype == torch.bool
    )
    fix = cast.group(1) if cast and kept else f"{wrapped(cast.group(1) if cast else given)}.bool()"
    if sdpa:
        return (
            f"scaled_dot_product_attention takes attn_mask as bool, True where a query may attend, or as float, "
            f"added to the scores (-inf to hide), and {given} holds integers. For a mask of 1s where attention is "
            f"allowed (torch.tril(torch.ones(T, T))) pass {fix}. (nn.MultiheadAttention's bool masks mean the "
            "opposite: True hides.)"
        )
    hidden = (
        "the keys to leave out (the padding)"
        if keyword.endswith("key_padding_mask")
        else "the pairs to leave out"
    )
    layer = "nn.MultiheadAttention" if keyword in ("key_padding_mask", "attn_mask") else "A Transformer layer"
    return (
        f"{layer} takes {keyword} as bool, True at {hidden}, or as float, added to the scores (-inf to "
        f"leave out), and {given} holds integers. For a mask of 1s where attention is not allowed pass "
        f"{keyword}={fix}. (scaled_dot_product_attention's bool masks mean the opposite: True attends.)"
    )


def _mask_3d(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """A 3-D attn_mask of one (L, S) mask per sequence, where nn.MultiheadAttention takes one
    per sequence and head, (batch * num_heads, L, S)."""
    found = _MASK_3D.search(text)
    given = next(
        (ast.unparse(k.value) for c in calls(code) for k in c.keywords if k.arg == "attn_mask"), None
    )
    if not found or given is None:
        return None
    rows, wanted = int(found.group(1)), int(found.group(4))
    if not rows or wanted % rows or wanted == rows:
        return None
    heads = wanted // rows
    return (
        f"A 3-D attn_mask holds one (L, S) mask per sequence and head, batch × num_heads = {wanted} of them, and "
        f"{given} has {rows}, one per sequence. Repeat each for the {heads} heads: attn_mask="
        f"{wrapped(given)}.repeat_interleave({heads}, dim=0); or, where every sequence has the same mask (a causal "
        "one), pass a single 2-D (L, S) mask."
    )


def _layer_norm(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """nn.LayerNorm(C) given channels-first maps, (N, C, L) or (N, C, H, W): it normalises the
    last dimensions."""
    found = _LAYER_NORM.search(text)
    if not found:
        return None
    normalized = [int(n) for n in found.group(1).split(",")]
    sizes = [int(n) for n in found.group(2).split(",")]
    if len(normalized) == 1 and normalized[0] not in sizes[:-1] and sizes:
        return _layer_norm_width(normalized[0], sizes, code, frame)
    if len(normalized) != 1 or len(sizes) not in (3, 4) or sizes[1] != normalized[0]:
        return None
    layer = next(
        (
            c
            for c in calls(code)
            if isinstance(bound_to(ast.unparse(c.func), frame), torch.nn.LayerNorm) and c.args
        ),
        None,
    )
    ln, x = (ast.unparse(layer.func), ast.unparse(layer.args[0])) if layer else ("ln", "x")
    if len(sizes) == 4:
        fix = f"{ln}({wrapped(x)}.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)"
    else:
        fix = f"{ln}({wrapped(x)}.transpose(1, 2)).transpose(1, 2)"
    return (
        f"nn.LayerNorm({normalized[0]}) normalises the last dimension, which must hold its {normalized[0]} features, "
        f"and this input, {shape(sizes)}, has them in dim 1, channels first as a convolution keeps them. Move them "
        f"last and back: {fix}."
    )


def _layer_norm_width(width: int, sizes: list[int], code: str | None, frame: FrameType | None) -> str:
    """nn.LayerNorm(C) given an input whose last dimension is another width, which no other
    dimension of it matches (the features are not elsewhere): the layer was built for another."""
    layer = next(
        (c for c in calls(code) if isinstance(bound_to(ast.unparse(c.func), frame), torch.nn.LayerNorm)), None
    )
    name, x = (
        (ast.unparse(layer.func), ast.unparse(layer.args[0]) if layer.args else "x") if layer else ("", "x")
    )
    which = f"{name} (nn.LayerNorm({width}))" if name else f"nn.LayerNorm({width})"
    return (
        f"{which} normalises the last dimension, which must hold its {width} features, and {x}, {shape(sizes)}, "
        f"has {sizes[-1]} there. Build it for the width it is given, nn.LayerNorm({sizes[-1]}) "
        f"(nn.LayerNorm({x}.shape[-1])), or check the layer before it, whose output has {sizes[-1]} features."
    )


def _group_norm(text: str) -> str | None:
    found = _GROUPS.search(text)
    if not found:
        return None
    channels, groups = int(found.group(1)), int(found.group(2))
    fits = [g for g in range(1, channels + 1) if channels % g == 0]
    near = sorted(fits, key=lambda g: (abs(g - groups), g))[:4]
    wider = -(-channels // groups) * groups
    return (
        f"nn.GroupNorm splits the channels into equal groups, so num_groups must divide num_channels: {channels} "
        f"channels do not split into {groups}. Use nn.GroupNorm(g, {channels}) with g one of {', '.join(map(str, sorted(near)))}, "
        f"or keep {groups} groups with {wider} channels."
    )


def _distribution(exc: BaseException, text: str, code: str | None) -> str | None:
    """A distribution refused its scale (not positive) or its probs (not a distribution):
    a log-scale, a log-variance or raw scores given where the thing itself goes."""
    found = _CONSTRAINT.search(text) if isinstance(exc, ValueError) else None
    if not found:
        return None
    param, dist, constraint = found.groups()
    call = find_call(code, (dist,), ("loc", "scale") if param == "scale" else ("probs", "logits"))
    if call is None or param not in call:
        return None
    given = call[param]
    if param == "scale" and constraint == "GreaterThan":
        if "var" in given.lower() and "log" in given.lower():
            fix, why = (
                f"torch.exp(0.5 * {given})",
                "a log-variance: the standard deviation is exp(logvar / 2)",
            )
        elif "log" in given.lower():
            fix, why = f"{wrapped(given)}.exp()", "a log of the scale, as a network outputs it"
        else:
            fix, why = f"torch.nn.functional.softplus({given})", "a raw output of the network"
        return (
            f"{dist}'s scale is a standard deviation and must be positive, and {given} holds numbers below 0 or at "
            f"it, {why}. Make it positive: {dist}({call.get('loc', '…')}, {fix})."
        )
    if param == "probs" and constraint in ("Simplex", "Interval", "HalfOpenInterval"):
        simplex = constraint == "Simplex"
        each = "non-negative and summing to 1 along the last dimension" if simplex else "between 0 and 1"
        return (
            f"{dist}(probs=…) takes probabilities, {each}, and {given} holds others: raw scores (logits). Pass them "
            f"as logits, {dist}(logits={given}), which applies the {'softmax' if simplex else 'sigmoid'} itself."
        )
    return None


def _vmap(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """``.item()`` or a branch on a tensor's value inside a function torch.func.vmap runs."""
    inside = (
        f"{frame.f_code.co_name}, which vmap runs,"
        if frame is not None and frame.f_code.co_name != "<module>"
        else "the function vmap runs"
    )
    if _VMAP_ITEM in text and code and ".item()" in code:
        return (
            f"vmap runs {inside.split(',')[0]} once for the whole batch, with each tensor standing for all its samples "
            f"at once, so .item() has no one number to give. Keep it a tensor: {code.replace('.item()', '')}."
        )
    branch = re.match(r"(?:if|elif|while)\s+(.+?)\s*:", code or "")
    if _VMAP_BRANCH in text and branch:
        condition = branch.group(1)
        return (
            f"vmap runs {inside.split(',')[0]} once for the whole batch, so {condition} holds one answer per sample, "
            "and Python's if can take only one way. Compute both results and pick per sample: "
            f"torch.where({condition}, a, b), with a and b the two branches' values."
        )
    return None


def _packed_indexed(exc: BaseException, code: str | None, frame: FrameType | None) -> str | None:
    """An RNN's output indexed as a tensor where it is a PackedSequence (it was given one)."""
    if not isinstance(exc, TypeError | AttributeError):
        return None
    for node in ast.walk(parsed(code) or ast.Module([], [])):
        target = node.value if isinstance(node, ast.Subscript | ast.Attribute) else None
        name = ast.unparse(target) if target is not None else None
        if isinstance(bound_to(name, frame), torch.nn.utils.rnn.PackedSequence):
            return (
                f"{name} is a PackedSequence, not a tensor: an RNN given a packed input returns its output packed "
                f"too. Unpack it first, {name}, lengths = pad_packed_sequence({name}, batch_first=True) (from "
                f"torch.nn.utils.rnn; leave batch_first out for a (length, batch, …) model); each sequence's last "
                f"real step is then {name}[torch.arange(len(lengths)), lengths - 1]. Or take the final hidden state, "
                "h_n[-1], which stops at each sequence's own length."
            )
    return None


def _pad_sequence(op: str, ts: list[torch.Tensor], code: str | None) -> str | None:
    """pad_sequence of sequences whose steps differ in size (only the length may differ)."""
    if op != "pad_sequence" or len(ts) < 2:
        return None
    first = ts[0]
    other = next((i for i, t in enumerate(ts) if t.shape[1:] != first.shape[1:]), None)
    if other is None:
        return None
    call = find_call(code, ("pad_sequence",), ("batch_first", "padding_value"))
    seqs = call["self"] if call and "self" in call else "the list"
    return (
        f"pad_sequence pads only the first dimension of each sequence, its length, and then stacks them, so the "
        f"rest of their shapes must agree: {seqs}[0] is {shape(first.shape)} and {seqs}[{other}] "
        f"{shape(ts[other].shape)}, with steps of {shape(first.shape[1:])} and {shape(ts[other].shape[1:])}. Give every "
        "step the same size (one feature extractor, one vocabulary of features) before padding."
    )


def _unpacked(exc: BaseException, text: str, code: str | None, frame: FrameType | None) -> str | None:
    """``src, dst = edge_index`` of an (E, 2) tensor: unpacking takes a tensor apart along dim 0."""
    found = _UNPACK.search(text) if isinstance(exc, ValueError) else None
    tree = parsed(code)
    if not found or not isinstance(tree, ast.Module) or not tree.body:
        return None
    statement = tree.body[0]
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        value = statement.value
    elif isinstance(statement, ast.For):
        value = statement.iter
    else:
        return None
    wanted = int(found.group(1) or found.group(2))
    tensor = bound_to(ast.unparse(value), frame)
    if isinstance(tensor, torch.Tensor) and isinstance(statement, ast.Assign):
        if tensor.dim() < 2 or tensor.shape[-1] != wanted or tensor.shape[0] == wanted:
            return None
        name, parts = ast.unparse(value), (code or "").split("=", 1)[0].strip()
        graph = " (an edge list written as pairs; edge_index is kept as (2, E))" if "edge" in name else ""
        return (
            f"Unpacking a tensor takes it apart along dim 0, and {name} is {shape(tensor.shape)}: {tensor.shape[0]} rows "
            f"of {wanted}{graph}. Its {wanted} columns are the parts you want: {parts} = {name}.T (or {name}.unbind(1))."
        )
    loader = bound_to(ast.unparse(value), frame)
    if isinstance(loader, torch.utils.data.DataLoader) and isinstance(statement, ast.For):
        collate = loader.collate_fn
        if collate is torch.utils.data.default_collate or getattr(collate, "__module__", "").startswith(
            "torch."
        ):
            return None
        name = ast.unparse(value)
        looped = re.match(r"for\s+(.+?)\s+in\s", code or "")
        return (
            f"Each batch of {name} is what its collate_fn returns, and {looped.group(1) if looped else 'the loop'} takes it apart into "
            f"{wanted}: this collate_fn returns something else (a list of the batch's samples, if it hands them "
            f"back as given). Make it return one stacked tensor per part, collate_fn=lambda b: "
            "(torch.stack([x for x, _ in b]), torch.stack([y for _, y in b])), or leave collate_fn out: the default "
            "one stacks (x, y) samples into [xb, yb]."
        )
    return None


def _split_batch(op: str, ts: list[torch.Tensor], rec: Recorder) -> str | None:
    """A linear layer given half a batch of twice its features: the encoder's output was
    split into (mu, logvar) along dim 0 (``.chunk(2)``'s default) instead of the features."""
    if op != "linear" or len(ts) < 2 or ts[0].dim() != 2 or ts[1].dim() != 2:
        return None
    given, features = ts[0], ts[1].shape[1]
    if given.shape[1] != 2 * features:
        return None
    found = line_matching(rec.statement_lines, _CHUNKED_BATCH)
    if found is None:
        return None
    at, written = found
    split = _CHUNKED_BATCH.search(written)
    chunk = split.group(0) if split else "chunk(2)"
    default = "" if "0" in chunk.split(",", 1)[-1] else f" ({chunk} splits dim 0 unless told otherwise)"
    return (
        f"Line {at} ({written}) splits along dim 0, the batch{default}: each half "
        f"keeps all {given.shape[1]} features of half the samples, so this layer, which takes {features}, gets "
        f"{shape(given.shape)}. Split the features instead: chunk(2, dim=-1)."
    )


def _tied_weight(op: str, ts: list[torch.Tensor], frame: FrameType | None) -> str | None:
    """A linear layer whose weight was replaced by another layer's (``head.weight =
    emb.weight``, weight tying) of another width than the layer was built for."""
    if op != "linear" or len(ts) < 2 or ts[1].dim() != 2 or ts[0].dim() < 1:
        return None
    weight = ts[1]
    owners: list[tuple[str, torch.nn.Module]] = []
    for scope in outer_scopes(frame):
        for name, value in list(scope.items()):
            if is_module(value):
                owners.extend(
                    (f"{name}.{sub}" if sub else name, m)
                    for sub, m in value.named_modules()
                    if any(p is weight for p in m.parameters(recurse=False))
                )
    layer = next(((n, m) for n, m in owners if isinstance(m, torch.nn.Linear)), None)
    other = next(((n, m) for n, m in owners if layer is None or m is not layer[1]), None)
    if layer is None or other is None or layer[1].in_features == weight.shape[1]:
        return None
    (head, linear), (tied, _) = layer, other
    given = ts[0].shape[-1]
    return (
        f"{head} was built as nn.Linear({linear.in_features}, {linear.out_features}), but its weight is now "
        f"{tied}.weight, {shape(weight.shape)} (tied): the layer takes the width of that weight, {weight.shape[1]} "
        f"features, and this input has {given}. Tying needs the two widths equal: make {tied} {given} wide "
        f"(its embedding_dim {given}), or give {head} inputs of {weight.shape[1]}."
    )
