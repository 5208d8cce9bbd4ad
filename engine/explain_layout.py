"""Hints for the shape and layout errors a learner meets first: what a layer or a loss
expects its input to look like, read from PyTorch's message (and, where the failing op was
recorded, from its operands), with the line of code that fixes it.

Covered: a convolution given channels-last or unbatched images, an LSTM/GRU/RNN given the
wrong feature size, an embedding given non-integer (float, uint8) or out-of-range indices, cross_entropy given a
2-D target, BCE given a target of another shape, ``view`` of a transposed tensor,
``torch.stack``/``torch.cat`` of mismatched tensors, and an optimizer given no parameters.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_reading import find_call, wrapped
from .explain_reading import shape as printed_shape
from .explain_targets import bce_fix
from .source import is_a, is_module, visible_names

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["FIXED_BATCH_VIEW", "layout_hint"]

_CHANNELS = re.compile(
    r"weight of size \[(\d+), (\d+), [\d, ]+\], expected input\[([\d, ]+)\] to have (\d+) channels"
)
_CONV_DIMS = re.compile(
    r"Expected (\d)D \(unbatched\) or (\d)D \(batched\) input to (conv\w+), but got input of size: \[([\d, ]*)\]"
)
_RNN_SIZE = re.compile(r"input\.size\(-1\) must be equal to input_size\. Expected (\d+), got (\d+)")
_BCE_SIZES = re.compile(
    r"Target size \(torch\.Size\(\[([\d, ]*)\]\)\) must be the same as input size \(torch\.Size\(\[([\d, ]*)\]\)\)"
    # binary_cross_entropy's (nn.BCELoss) own words for the same
    r"|Using a target size \(torch\.Size\(\[([\d, ]*)\]\)\) that is different to the input size "
    r"\(torch\.Size\(\[([\d, ]*)\]\)\)"
)
_STACK = re.compile(
    r"stack expects each tensor to be equal size, but got \[([\d, ]*)\] at entry (\d+) and \[([\d, ]*)\] at entry (\d+)"
)
_CAT = re.compile(
    r"Sizes of tensors must match except in dimension (\d+)\. Expected size (\d+) but got size (\d+) for tensor number (\d+)"
)


def layout_hint(
    exc: BaseException, rec: Recorder, code: str | None = None, frame: FrameType | None = None
) -> str | None:
    """The hint for a shape or layout error ``exc`` raised at a line reading ``code`` (in
    ``frame``; see the module docstring); ``None`` for any other error. ``rec.failed_op``
    names the op it came from, where that was recorded."""
    text = str(exc)
    failed = rec.failed_op
    operands = failed[1] if failed is not None else []
    for hint in (
        _flatten_hint(failed[0] if failed else None, operands),
        _in_features_hint(failed[0] if failed else None, operands, code),
        _conv_hint(text, operands),
        _rnn_hint(text),
        _embedding_hint(exc, text, failed[0] if failed else None, operands),
        _target_hint(text, operands, failed[0] if failed else None),
        _join_hint(text, operands if failed is not None and failed[0] == "cat" else [], code),
    ):
        if hint:
            return hint
    if "view size is not compatible with input tensor's size and stride" in text:
        return (
            "view() reads the elements in the order they lie in memory, and after t(), transpose() or "
            "permute() that is no longer row by row, so this view cannot be made without a copy. Use "
            ".reshape(…), which copies when it must, or .contiguous().view(…)."
        )
    if "optimizer got an empty parameter list" in text:
        plain = _plain_tensor_attributes(frame)
        if plain:
            model, names = plain
            named = [f"self.{n}" for n in names]
            listed = ", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else named[0]
            return (
                f"The optimizer was given no parameters: {model}.parameters() found none, because {listed} "
                f"{'is a plain tensor' if len(names) == 1 else 'are plain tensors'} (requires_grad=True does not "
                "make a parameter). nn.Module registers only nn.Parameter attributes and submodules: write "
                f"self.{names[0]} = nn.Parameter(torch.randn(…)) in __init__."
            )
        return (
            "The optimizer was given no parameters: model.parameters() found none. nn.Module registers "
            "layers assigned as attributes, or kept in nn.ModuleList / nn.ModuleDict, not layers in a plain "
            "Python list or dict; and a generator such as model.parameters() is empty once something has "
            "read it (params = model.parameters() used twice). Keep the layers in nn.ModuleList, and pass "
            "model.parameters() straight to the optimizer."
        )
    return None


def _sizes(text: str) -> list[int]:
    return [int(n) for n in text.replace(" ", "").split(",") if n]


def _flatten_hint(op: str | None, operands: list[torch.Tensor]) -> str | None:
    """nn.Linear given images: an input whose dimensions after the first multiply to the
    layer's in_features, but whose last one is not it."""
    if op != "linear" or len(operands) < 2 or operands[0].dim() < 3:
        return None
    given, weight = operands[0], operands[1]
    features = weight.shape[-1]
    if given.shape[-1] == features or given[0].numel() != features:
        return None
    return (
        f"nn.Linear({features}, …) takes each sample as a vector of {features} numbers, and this input, "
        f"{printed_shape(list(given.shape))}, still has the shape of an image: flatten each sample first, "
        "x.flatten(1) (or an nn.Flatten() layer before the linear one)."
    )


#: xb.view(batch_size, -1): a batch reshaped with a batch size written down, not read off it
#: (explain_loaders.py reads it too, where the view itself fails at the last, smaller batch)
FIXED_BATCH_VIEW = re.compile(r"([^\W\d]\w*)\.(view|reshape)\(\s*([^\W\d]\w*|\d+)\s*,\s*-1\s*\)")


#: x.view(x.size(0), -1), x.flatten(1): a flatten that keeps the batch dimension
_BATCH_KEPT = re.compile(
    r"\.(?:view|reshape)\(\s*[\w.]+\.(?:size\(\s*0\s*\)|shape\[\s*0\s*\])\s*,\s*-1\s*\)"
    r"|\.flatten\(\s*(?:start_dim\s*=\s*)?1\s*\)"
)


def _in_features_hint(op: str | None, operands: list[torch.Tensor], code: str | None = None) -> str | None:
    """nn.Linear given samples of another number of features than its in_features (after a
    convolution and nn.Flatten, above all), or its data a sample per column, or a batch
    viewed with a fixed batch size (at the failing line ``code``)."""
    if op != "linear" or len(operands) < 2 or operands[0].dim() < 1 or operands[1].dim() != 2:
        return None
    given, weight = operands[0], operands[1]
    outputs, features = weight.shape
    arrived = given.shape[-1]
    if arrived == features:
        return None
    fixed = FIXED_BATCH_VIEW.search(code or "")
    samples, spare = divmod(given.numel(), features)
    if given.dim() == 2 and fixed and not spare and samples != given.shape[0]:
        viewed, how, size = fixed.groups()
        return (
            f"nn.Linear({features}, {outputs}) takes {features} features per sample, and its input, "
            f"{printed_shape(list(given.shape))}, was made by .{how}({size}, -1) with the batch size written down: this "
            f"batch holds {samples} samples of {features} numbers, which {how} cut into {given.shape[0]} rows of "
            f"{arrived}. A DataLoader's last batch is smaller when the dataset does not divide into batches: read "
            f"the size off the batch, {viewed}.{how}({viewed}.size(0), -1) or {viewed}.flatten(1) (or DataLoader(…, "
            "drop_last=True))."
        )
    if given.dim() == 2 and given.shape[0] == features:
        # data laid out a sample per column (features × samples), as NumPy/pandas code often has it
        return (
            f"nn.Linear({features}, {outputs}) reads one sample per row, {features} features each, and its input, "
            f"{printed_shape(list(given.shape))}, has its {features} features down the rows and {arrived} samples across: "
            f"the data is laid out a sample per column. Transpose it, x.T (which is ({arrived}, {features})), "
            "rather than resizing the layer."
        )
    if given.dim() == 1 and given.numel() % features == 0 and given.numel() > features:
        # x.view(-1), x.flatten(), nn.Flatten(0): the batch flattened into the one vector
        batch = given.numel() // features
        return (
            f"nn.Linear({features}, {outputs}) takes each sample as {features} numbers, and its input is one "
            f"vector of {given.numel()} = {batch} × {features}: the batch of {batch} was flattened too (x.view(-1), "
            f"x.flatten() and nn.Flatten(0) flatten every dimension). Keep the batch and flatten the rest, "
            f"x.flatten(1) (or x.view(x.size(0), -1), nn.Flatten()), which gives ({batch}, {features})."
        )
    if (
        given.dim() == 2
        and given.shape[0] * given.shape[1] == features
        and given.shape[0] > 1
        and not _BATCH_KEPT.search(
            code or ""
        )  # (x.view(x.size(0), -1): the batch was kept, by chance as big)
    ):
        # (C, H*W) from an image passed without its batch dimension (conv, then nn.Flatten)
        return (
            f"nn.Linear({features}, {outputs}) takes each sample as {features} numbers, and its input, "
            f"{printed_shape(list(given.shape))}, holds exactly {features}: one sample whose batch dimension is missing, "
            f"so its first dimension ({given.shape[0]}: the channels, for an image through a convolution) was "
            "taken for the batch and nn.Flatten() kept it. Give the sample its batch dimension at the start, "
            "img.unsqueeze(0) (a batch of one), rather than resizing the layer."
        )
    if given.dim() >= 4:  # images, not flattened (nor of as many numbers as the layer takes)
        flat = given[0].numel()
        return (
            f"nn.Linear({features}, {outputs}) takes each sample as a vector of {features} numbers, and its "
            f"input, {printed_shape(list(given.shape))}, still has the shape of an image: flatten each sample first, "
            f"x.flatten(1) (or an nn.Flatten() layer before the linear one), which gives {flat} numbers, and "
            f"make the layer nn.Linear({flat}, {outputs}) (or nn.LazyLinear({outputs}))."
        )
    return (
        f"nn.Linear({features}, {outputs}) takes {features} features per sample, and its input, of shape "
        f"{printed_shape(list(given.shape))}, has {arrived}. If the input is right, make the layer "
        f"nn.Linear({arrived}, {outputs}) (after a convolution and nn.Flatten, {arrived} is channels × height × "
        f"width), or nn.LazyLinear({outputs}), which takes its in_features from the first input; if the layer "
        "is, check where the input's shape comes from."
    )


# "Calculated padded input size per channel: (4 x 4). Kernel size: (5 x 5). Kernel size can't be greater ..."
_KERNEL_TOO_BIG = re.compile(r"padded input size per channel: \(([\d x]+)\)\. Kernel size: \(([\d x]+)\)")
# "running_mean should contain 10 elements not 16" (batch norm given the features elsewhere than dim 1)
_RUNNING_MEAN = re.compile(r"running_mean should contain (\d+) elements not (\d+)")


_TOO_SMALL = re.compile(
    r"Given input size: \(([\dx]+)\)\. Calculated output size: \(([\dx-]+)\)\. Output size is too small"
)


def _conv_hint(text: str, operands: Sequence[torch.Tensor] = ()) -> str | None:
    small = _TOO_SMALL.search(text)
    if small:
        given = small.group(1).split("x")
        size = "×".join(given[1:]) if len(given) > 1 else given[0]
        return (
            f"The input reaching this pooling (or convolution) is down to {size} per channel, too small for "
            "its window: the output would have no rows left. Each MaxPool2d(2) halves the height and width "
            "(8 → 4 → 2 → 1, and a fourth gives 0), and each convolution without padding takes kernel − 1 off. "
            "Use fewer poolings, a larger input or padding, or end with nn.AdaptiveAvgPool2d(1), which gives "
            "1×1 whatever the size."
        )
    big = _KERNEL_TOO_BIG.search(text)
    if big:
        size, kernel = big.group(1).replace(" x ", "×"), big.group(2).replace(" x ", "×")
        return (
            f"By the time the input reaches this convolution it is {size} per channel, smaller than the "
            f"{kernel} kernel: each convolution without padding takes kernel − 1 off its height and width, and "
            "each pooling halves it. Give the convolutions before it padding (nn.Conv2d(…, 5, padding=2) keeps "
            "the size), use smaller kernels or fewer poolings; print(x.shape) after each layer shows where it shrinks."
        )
    norm = _RUNNING_MEAN.search(text)
    if norm:
        at_dim1, features = norm.groups()
        return (
            f"Batch norm normalises dim 1 of its input, (N, C) or (N, C, L): it was built for {features} "
            f"features, and dim 1 of this input holds {at_dim1}. A sequence kept as (batch, time, features) has "
            f"its features last: move them to dim 1 and back, bn(x.transpose(1, 2)).transpose(1, 2), or use "
            f"nn.LayerNorm({features}), which normalises the last dimension."
        )
    found = _CHANNELS.search(text)
    if found:
        out, shape, wanted = int(found.group(1)), _sizes(found.group(3)), int(found.group(4))
        shown = f"[{', '.join(map(str, shape))}]"
        if len(shape) == 4 and shape[-1] == wanted and shape[1] != wanted:
            return (
                f"A convolution reads its input as (N, C, H, W), channels first. This input, {shown}, has its "
                f"{wanted} channels last (H×W×C, as NumPy and PIL keep images): move them with "
                f"x.permute(0, 3, 1, 2) (a batch) or x.permute(2, 0, 1) (one image)."
            )
        if len(shape) == 3 and shape[-1] == wanted and shape[1] != wanted:
            return (
                f"A convolution reads its input as (N, C, L), channels first. This input, {shown}, has its "
                f"{wanted} channels last: move them with x.permute(0, 2, 1) (or x.transpose(1, 2))."
            )
        given = operands[0] if operands else None
        if given is not None and given.dim() == 3 and len(shape) == 4 and wanted == 1 and shape[1] != 1:
            # (N, H, W) grayscale images, read as one unbatched image of N channels
            n, height, width = given.shape
            return (
                f"A 2-D convolution takes (N, C, H, W), or one image as (C, H, W), so this input, "
                f"{printed_shape(list(given.shape))}, was read as one image of {n} channels. For a batch of {n} "
                f"one-channel (grayscale) images, add the channel dimension: x.unsqueeze(1), which gives "
                f"({n}, 1, {height}, {width})."
            )
        if given is not None and given.dim() == 2 and len(shape) == 3 and wanted == 1 and shape[1] != 1:
            # (N, L) one-channel signals, read as one unbatched signal of N channels
            n, length = given.shape
            return (
                f"A 1-D convolution takes (N, C, L), or one signal as (C, L), so this input, "
                f"{printed_shape(list(given.shape))}, was read as one signal of {n} channels. For a batch of {n} "
                f"one-channel signals, add the channel dimension: x.unsqueeze(1), which gives ({n}, 1, {length})."
            )
        got = shape[1] if len(shape) >= 3 else shape[0] if shape else "?"
        if "transposed=1" in text:  # a transposed convolution's weight is (in, out / groups, …)
            out = int(found.group(2)) * _groups(text)
        return (
            f"The layer was built for {wanted} input channels (in_channels={wanted}, with {out} out) and the "
            f"input {shown} has {got} at the channel dimension (dim 1 of (N, C, …)): build the layer with "
            f"in_channels={got}, or check what feeds it."
        )
    dims = _CONV_DIMS.search(text)
    if dims:
        unbatched, batched, op, shape = (
            int(dims.group(1)),
            int(dims.group(2)),
            dims.group(3),
            _sizes(dims.group(4)),
        )
        shown = f"[{', '.join(map(str, shape))}]"
        if len(shape) == unbatched - 1:
            fix = f"one image without its channel dimension: x.unsqueeze(0) gives (1, {', '.join(map(str, shape))}), and x.unsqueeze(0).unsqueeze(0) a batch of one"
        else:
            fix = "reshape it to (N, C, …) or (C, …)"
        return (
            f"{op} takes (C, …) for one input or (N, C, …) for a batch: {unbatched} or {batched} dimensions. "
            f"This input has {len(shape)}, {shown}: {fix}."
        )
    return None


def _groups(text: str) -> int:
    """The ``groups`` a convolution's channel error names (``Given groups=2, …``), 1 where it names none."""
    found = re.search(r"groups=(\d+)", text)
    return int(found.group(1)) if found else 1


def _rnn_hint(text: str) -> str | None:
    found = _RNN_SIZE.search(text)
    if not found:
        return None
    wanted, got = found.groups()
    return (
        f"The recurrent layer was built with input_size={wanted}, and reads each step's features from the "
        f"input's last dimension, which is {got} here. Its input is (seq, batch, features), or (batch, seq, "
        "features) with batch_first=True: check the order of the dimensions (a transpose too many or too "
        "few), or build the layer with the input_size the data has."
    )


def _held_dtype(text: str) -> str:
    """What PyTorch's ``but got torch.ByteTensor instead`` says the indices hold, in words."""
    got = re.search(r"but got torch\.(\w+)Tensor instead", text)
    kind = got.group(1) if got else "Float"
    return {
        "Float": "floats",
        "Double": "floats (float64)",
        "Half": "floats (float16)",
        "Byte": "uint8 (bytes)",
        "Bool": "booleans",
        "Short": "int16",
        "Char": "int8",
    }.get(kind, kind)


def _embedding_hint(
    exc: BaseException, text: str, op: str | None, operands: list[torch.Tensor]
) -> str | None:
    if "'indices' to have one of the following scalar types" in text:
        held = _held_dtype(text)
        return (
            "nn.Embedding looks rows up by index, so its input must hold integers of dtype int64 or int32, and "
            f"this one holds {held}: convert it with idx.long() (torch.tensor([1, 2]) of whole numbers is int64 "
            "already)."
        )
    if (
        isinstance(exc, IndexError)
        and "index out of range in self" in text
        and op == "embedding"
        and len(operands) >= 2
    ):
        indices, weight = operands[0], operands[1]
        rows = weight.shape[0]
        smallest = int(indices.min()) if indices.numel() else None
        if smallest is not None and smallest < 0:
            return (
                f"The input holds {smallest}, and an nn.Embedding has no negative rows: it looks up rows 0 to "
                f"{rows - 1}. For padding, use a real index the vocabulary keeps for it, such as 0 with "
                "nn.Embedding(…, padding_idx=0) (its row stays zero and gets no gradient), not -1."
            )
        largest = int(indices.max()) if indices.numel() else None
        seen = f", and the input holds {largest}" if largest is not None else ""
        return (
            f"This nn.Embedding has {rows} rows, for the indices 0 to {rows - 1}{seen}: num_embeddings must be "
            "larger than the largest index (the vocabulary's size, counting a padding or unknown token). "
            f"Build it with nn.Embedding({largest + 1 if largest is not None else 'max index + 1'}, …), or check "
            "how the indices were made."
        )
    return None


def _target_hint(text: str, operands: list[torch.Tensor], op: str | None = None) -> str | None:
    if "0D or 1D target tensor expected, multi-target not supported" in text:
        target = operands[1] if len(operands) >= 2 else None
        shape = f" Here it has shape {tuple(target.shape)}." if target is not None else ""
        if op and op.startswith("nll_loss"):
            return (
                "nll_loss (nn.NLLLoss) takes one class index per sample: an int64 target of shape (N,) with "
                f"values 0 to C - 1.{shape} A column of indices, (N, 1), becomes (N,) with y.squeeze(1) (or "
                "y.view(-1)); one-hot rows become indices with y.argmax(1)."
            )
        return (
            "cross_entropy (nn.CrossEntropyLoss) takes one class index per sample: an int64 target of shape "
            f"(N,) with values 0 to C - 1.{shape} A column of indices, (N, 1), becomes (N,) with y.squeeze(1) "
            "(or y.view(-1)); one-hot rows become indices with y.argmax(1) (or pass them as float "
            "probabilities, shape (N, C))."
        )
    sizes = _BCE_SIZES.search(text)
    if sizes:
        target_text, given_text = (
            (sizes.group(1), sizes.group(2)) if sizes.group(2) is not None else sizes.group(3, 4)
        )
        wanted, given = _sizes(target_text), _sizes(given_text)
        if not given and wanted == [1]:
            return (
                "Binary cross-entropy compares each prediction with its own target, element by element: here the "
                "input is a single number, shape (), and the target (1,). A batch of one sample whose output went "
                "through .squeeze() loses its batch dimension too: squeeze() drops every dimension of size 1, "
                "and (1, 1) becomes (). Squeeze only the last one, model(x).squeeze(1) (or .squeeze(-1)), which "
                "keeps (1,) for one sample and (N,) for N."
            )
        if given == [*wanted, 1]:
            fix = "give the target the output's shape, y.unsqueeze(1) (or y.view(-1, 1)), or drop the output's last dimension, logits.squeeze(1)"
        elif wanted == [*given, 1]:
            fix = (
                "drop the target's last dimension, y.squeeze(1), or give the output one, logits.unsqueeze(1)"
            )
        else:
            fix = bce_fix(given, wanted)
        return (
            "Binary cross-entropy compares each prediction with its own target, element by element, so the "
            f"two must have one shape: here the input is {printed_shape(given)} and the target {printed_shape(wanted)}. "
            f"PyTorch refuses rather than broadcast them to a matrix: {fix}."
        )
    return None


def _join_hint(text: str, joined: Sequence[torch.Tensor] = (), code: str | None = None) -> str | None:
    stack = _STACK.search(text)
    if stack:
        first, i, other, j = stack.groups()
        return (
            f"torch.stack puts tensors side by side along a new dimension, so they must all have one shape: "
            f"entry {i} is [{first}] and entry {j} [{other}]. To join along a dimension they already have, "
            "use torch.cat; to stack sequences of different lengths, pad them first "
            "(torch.nn.utils.rnn.pad_sequence)."
        )
    cat = _CAT.search(text)
    if cat:
        dim, wanted, got, number = cat.groups()
        token = _token_joined(int(dim), joined, code)
        if token:
            return token
        return (
            f"torch.cat joins tensors along dim={dim}, and every other dimension must agree: tensor {number} "
            f"has {got} where the first has {wanted}. If that is the dimension to join along, pass it: "
            "torch.cat([...], dim=…) with the dimension whose sizes differ."
        )
    return None


def _token_joined(dim: int, joined: Sequence[torch.Tensor], code: str | None) -> str | None:
    """torch.cat of one learned token, batch size 1 (a ViT's class token, (1, 1, D)), with a
    batch of sequences: every other dimension differs only in the batch, where the token has 1.
    The two are named as ``code``'s ``torch.cat([cls, x], …)`` lists them, where it does."""
    if len(joined) != 2 or dim == 0 or joined[0].dim() != joined[1].dim() or joined[0].dim() < 2:
        return None
    sizes = [list(t.shape) for t in joined]
    one = next((i for i in (0, 1) if sizes[i][0] == 1 and sizes[1 - i][0] > 1), None)
    if one is None:
        return None
    batch = sizes[1 - one][0]
    if any(sizes[0][d] != sizes[1][d] for d in range(1, len(sizes[0])) if d != dim):
        return None
    call = find_call(code, ("cat", "concat", "concatenate"), ("dim",))
    listed = ast.parse(call["self"], mode="eval").body if call and "self" in call else None
    elements = listed.elts if isinstance(listed, ast.List | ast.Tuple) else []
    written = len(elements) == 2
    names = [ast.unparse(e) for e in elements] if written else ["the first tensor", "the second tensor"]
    token, other = names[one], names[1 - one]
    batch_of = f"{other}.size(0)" if written and re.fullmatch(r"[\w.]+", other) else str(batch)
    expand = f"{wrapped(token)}.expand" if written else "token.expand"
    expanded = ", ".join(["-1"] * (len(sizes[one]) - 1))
    return (
        f"torch.cat joins along dim={dim}, and every other dimension must agree: {token} is "
        f"{printed_shape(sizes[one])}, a batch of 1, and {other} {printed_shape(sizes[1 - one])}, a batch of {batch}. "
        "One learned token (a class token, nn.Parameter of batch size 1) does not spread over the batch in "
        f"torch.cat: expand it to the batch first, {expand}({batch_of}, {expanded}) (a view, no copy), then join."
    )


def _plain_tensor_attributes(frame: FrameType | None) -> tuple[str, list[str]] | None:
    """A model in sight of ``frame`` holding tensors that require grad as plain attributes
    (``self.w = torch.randn(3, 1, requires_grad=True)``), which ``parameters()`` never lists:
    its name and theirs."""
    for name, value in visible_names(frame).items():
        if is_module(value):
            held = [
                key
                for key, attr in vars(value).items()
                if is_a(attr, torch.Tensor) and not is_a(attr, torch.nn.Parameter) and attr.requires_grad
            ]
            if held:
                return name, held
    return None
