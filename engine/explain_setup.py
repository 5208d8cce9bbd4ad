"""Errors of how a training run is set up, said in the snippet's terms: a scheduler that
needs the metric it watches, attention heads that do not divide the width, a method used
without its call, integer class weights, nn.Transformer without batch_first, a batch norm of
the wrong dimension, segmentation targets with a channel, a key_padding_mask transposed, a
causal mask made for the other sequence, pack_padded_sequence without batch_first.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from .explain_reading import calls

__all__ = ["setup_hint"]

_METHOD_NOT_CALLED = re.compile(
    r"unsupported operand type\(s\) for [^:]+: '\w+' and '(?:builtin_function_or_method|method)'"
)
_BOUND_METHOD = re.compile(r"(?<![\w.])([^\W\d][\w.]*)\.(item|mean|sum|numel|size|tolist|float)\b(?!\s*\()")
_WEIGHT_INTS = re.compile(r"weight\s*=\s*torch\.tensor\(\s*\[([\d\s,]+)\]\s*\)")


def setup_hint(text: str, code: str | None, source_lines: Sequence[str]) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` of ``source_lines`` (see
    the module's docstring); ``None`` for any other error."""
    if "the batch number of src and tgt must be equal" in text:
        if any(
            "Transformer(" in line and re.search(r"batch_first\s*=\s*True", line) for line in source_lines
        ):
            return (
                "This nn.Transformer is built with batch_first=True, so dim 0 of src and of tgt is the batch, "
                "and the two hold different numbers of sequences. Each source sequence goes with its target "
                "sequence: give both the same batch (src.size(0) == tgt.size(0)); their lengths, dim 1, may differ."
            )
        return (
            "nn.Transformer reads its inputs as (sequence, batch, features) unless it is built with "
            "batch_first=True, so a (batch, sequence, features) src and tgt were read with their sequence "
            "lengths as the batch, which differ. Build it with batch_first=True (nn.Transformer(…, "
            "batch_first=True)), or pass src.transpose(0, 1) and tgt.transpose(0, 1)."
        )
    if "'tuple' object has no attribute" in text:
        pair = _pair_state_to_gru(code, source_lines)
        if pair:
            return pair
    padded = _PADDING_ROWS.search(text)
    if padded:
        batch, got = padded.groups()
        return (
            f"key_padding_mask is (batch, key length), one row per sequence: {batch} rows here, and this mask "
            f"has {got} in dim 0, its key length: it is transposed ((length, batch), as a sequence-first "
            "pipeline keeps it). Pass mask.T (or build it as (batch, length))."
        )
    square = _SQUARE_MASK.search(text)
    if square:
        made, wanted = square.group(1), square.group(2)
        masked = _masked_sequence(code)
        if masked is not None:
            keyword, seq = masked
            return (
                f"This 2-D attention mask is ({made}) and the sequence it masks needs ({wanted}): a causal mask is "
                f"made for the length of the sequence it goes with, and {keyword}= goes with {seq} here. Make it "
                f"from that length: nn.Transformer.generate_square_subsequent_mask({seq}.size(1)) "
                f"({seq}.size(0) without batch_first)."
            )
        return (
            f"This 2-D attention mask is ({made}) and the sequence it masks needs ({wanted}): a causal mask is "
            "made for the length of the sequence it goes with, and tgt_mask goes with tgt (src_mask with "
            "src). Make it from that length: nn.Transformer.generate_square_subsequent_mask(tgt.size(1)) "
            "(tgt.size(0) without batch_first)."
        )
    lengths = _LENGTHS.search(text)
    if lengths:
        got, batch = lengths.groups()
        return (
            f"pack_padded_sequence reads its input as (length, batch, features) unless told batch_first=True, "
            f"so it took dim 1 ({batch}) for the batch against {got} lengths. For a (batch, length, features) "
            "input pass batch_first=True: pack_padded_sequence(x, lengths, batch_first=True) (and "
            "enforce_sorted=False unless the lengths go down)."
        )
    norm = _NORM_DIMS.search(text)
    if norm:
        return _norm_dims(norm.group(1), int(norm.group(2)))
    if "only batches of spatial targets supported (3D tensors) but got targets of dimension: 4" in text:
        return (
            "For per-pixel classes (segmentation) cross_entropy takes scores (N, C, H, W) and targets "
            "(N, H, W) of class indices, and these targets have a fourth dimension, a channel of size 1 "
            "(N, 1, H, W) as masks are often loaded: drop it, target.squeeze(1) (and .long())."
        )
    if "ReduceLROnPlateau.step() missing 1 required positional argument" in text:
        return (
            "ReduceLROnPlateau lowers the learning rate when a metric stops improving, so its step() takes "
            "that metric: scheduler.step(val_loss), once per epoch, with the number it watches (a loss, as a "
            "float: val_loss.item()). The other schedulers step on a count and take none."
        )
    if "embed_dim must be divisible by num_heads" in text:
        return _heads(code)
    if _METHOD_NOT_CALLED.search(text):
        found = _BOUND_METHOD.search(code or "")
        what = f"{found.group(1)}.{found.group(2)}" if found else "loss.item"
        return (
            f"{what} without parentheses is the method itself, not what it returns, and a number cannot be "
            f"added to a method: call it, {what}()."
        )
    if "expected scalar type Float but found Long" in text:
        weights = next((w for w in map(_WEIGHT_INTS.search, [code or "", *source_lines]) if w), None)
        if weights:
            floats = ", ".join(f"{w.strip()}." for w in weights.group(1).split(",") if w.strip())
            return (
                "A loss's class weights must be floats, like the scores they scale, and "
                f"torch.tensor([{weights.group(1).strip()}]) of whole numbers is int64: write them as floats, "
                f"weight=torch.tensor([{floats}]) (or add dtype=torch.float)."
            )
    return None


_WIDTH = re.compile(r"(?:d_model|embed_dim)\s*=\s*(\d+)")
_HEADS = re.compile(r"(?:nhead|num_heads)\s*=\s*(\d+)")
_POSITIONAL = re.compile(
    r"(?:TransformerEncoderLayer|TransformerDecoderLayer|MultiheadAttention)\(\s*(\d+)\s*,\s*(\d+)"
)


def _heads(code: str | None) -> str:
    """Heads that do not divide the width, with the numbers the line gives where it does."""
    width, heads = _WIDTH.search(code or ""), _HEADS.search(code or "")
    positional = _POSITIONAL.search(code or "")
    d = int(width.group(1)) if width else int(positional.group(1)) if positional else None
    n = int(heads.group(1)) if heads else int(positional.group(2)) if positional else None
    rule = (
        "Multi-head attention splits the model's width (d_model, embed_dim) evenly among its heads, each "
        "taking d_model / nhead features, so d_model must be a multiple of nhead"
    )
    if d is None or n is None or n < 1:
        return rule + "."
    divisors = [k for k in range(1, d + 1) if d % k == 0 and k > 1][:4]
    wider = -(-d // n) * n
    return (
        f"{rule}: {d} / {n} is not whole. Keep d_model={d} with nhead one of "
        f"{', '.join(map(str, divisors)) or '1'}, or keep nhead={n} with d_model={wider}."
    )


def _masked_sequence(code: str | None) -> tuple[str, str] | None:
    """The mask's keyword and the sequence it goes with on a call such as ``enc(x, mask=causal)``
    or ``model(src, tgt, src_mask=m)``: its first argument, the source, where it is a name;
    ``None`` otherwise (a ``tgt_mask`` goes with an argument whose place depends on the module:
    nn.Transformer's second, a decoder's first)."""
    for call in calls(code):
        keyword = next((k.arg for k in call.keywords if k.arg in _SEQUENCE_MASKS), None)
        if keyword is None:
            continue
        if not call.args or not isinstance(call.args[0], ast.Name):
            return None
        return keyword, call.args[0].id
    return None


_SEQUENCE_MASKS = frozenset({"mask", "src_mask"})
_PADDING_ROWS = re.compile(r"Expected key_padded_mask\.shape\[0\] to be (\d+), but got (\d+)")
_SQUARE_MASK = re.compile(
    r"The shape of the 2D attn_mask is torch\.Size\(\[(\d+, \d+)\]\), but should be \((\d+, \d+)\)"
)
_LENGTHS = re.compile(
    r"Expected `len\(lengths\)` to be equal to batch_size, but got (\d+) \(batch_size=(\d+)\)"
)
_NORM_DIMS = re.compile(r"expected (2D or 3D|4D|5D) input \(got (\d)D input\)")


def _norm_dims(wanted: str, got: int) -> str | None:
    """Batch norm of one kind given the input of another: images to BatchNorm1d, features to
    BatchNorm2d."""
    kind = {"2D or 3D": "BatchNorm1d", "4D": "BatchNorm2d", "5D": "BatchNorm3d"}[wanted]
    right = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}.get(got)
    if right is None or right == kind:
        return None
    shapes = {
        "BatchNorm1d": "(N, C) or (N, C, L)",
        "BatchNorm2d": "(N, C, H, W)",
        "BatchNorm3d": "(N, C, D, H, W)",
    }
    return (
        f"nn.{kind} takes {shapes[kind]}, and this input is {got}-D: for {shapes[right]} use nn.{right}(C), "
        f"with C the size of dim 1 (the features or channels), in place of nn.{kind}."
    )


_CALLED = re.compile(r"(?<![\w.])([^\W\d][\w.]*)\(")


def _pair_state_to_gru(code: str | None, source_lines: Sequence[str]) -> str | None:
    """An nn.GRU or nn.RNN (built on a line of the snippet) called on this line, where the error
    is a tuple's: given an LSTM's (h0, c0) pair as its state."""
    for called in _CALLED.finditer(code or ""):
        name = called.group(1)
        built = re.compile(rf"^\s*{re.escape(name)}\s*=\s*(?:torch\.)?(?:nn\.)?(GRU|RNN)\(")
        kind = next((m.group(1) for m in map(built.match, source_lines) if m), None)
        if kind:
            return (
                f"nn.{kind} keeps one hidden state, a tensor h0 of (num_layers, batch, hidden), and was given a "
                f"pair: (h0, c0) is an LSTM's state (its cell state c is what a GRU does without). Pass h0 "
                f"alone: {name}(x, h0)."
            )
    return None
