"""An attention mask read the other way round (attention-mask-misread).

``nn.MultiheadAttention`` (and ``nn.Transformer``'s layers) take a bool ``attn_mask`` or
``key_padding_mask`` whose True marks what a query may NOT attend to; ``torch.tril(…).bool()``,
the mask of what it may, blocks every key of its last row, whose softmax then divides 0 by 0:
NaN. (``F.scaled_dot_product_attention`` reads a bool mask the other way, True: attend, and
gives a row with no key zeros, so its bool masks are not judged.) Any float mask is *added*
to the scores, so a 0/1 mask hides nothing. Seen at the attention
op, by its masks: a row with every key blocked, or a float mask of only 0s and 1s.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["ATTENTION_OPS", "attention_mask_report"]

ATTENTION_OPS = frozenset({"multi_head_attention_forward", "scaled_dot_product_attention"})


def attention_mask_report(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str, str, str] | None:
    """``(title, message, fix)`` for attention op ``name`` called with ``args`` and ``kwargs``
    whose mask blocks every key of a row, or is a float mask of 0s and 1s; ``None`` otherwise."""
    mask = kwargs.get("attn_mask")
    if name == "scaled_dot_product_attention" and mask is None and len(args) > 3:
        mask = args[3]
    padding = kwargs.get("key_padding_mask") if name == "multi_head_attention_forward" else None
    with torch.no_grad():
        for which, m in (("attn_mask", mask), ("key_padding_mask", padding)):
            if not isinstance(m, torch.Tensor) or m.numel() == 0:
                continue
            if m.is_floating_point() and bool(((m == 0) | (m == 1)).all()) and bool((m == 1).any()):
                return _added(which)
            if name == "scaled_dot_product_attention":
                continue  # a row with no key to attend to comes out as zeros there, not NaN
            blocked = m
            if blocked.dtype == torch.bool:
                full = blocked.all(dim=-1)
            elif blocked.is_floating_point():
                full = torch.isneginf(blocked).all(dim=-1)
            else:
                continue
            if bool(full.any()):
                return _all_blocked(name, which, int(full.reshape(-1).nonzero()[0]))
    return None


def _all_blocked(name: str, which: str, row: int) -> tuple[str, str, str]:
    if which == "key_padding_mask":
        return (
            "key_padding_mask blocks every key of a sequence: its output is NaN",
            f"nn.MultiheadAttention's key_padding_mask marks with True the padding, the keys to ignore, and row "
            f"{row} marks all of them: that sequence has no key left, the softmax divides 0 by 0, and its output "
            "is NaN. A mask of the real tokens (True: keep), as other libraries make it, is the opposite.",
            "Pass the padding, not the tokens: key_padding_mask=~keep (or tokens == pad_idx).",
        )
    return (
        "The attention mask blocks every key of a row: its output is NaN",
        "nn.MultiheadAttention (and nn.Transformer's layers) take a bool attn_mask whose True marks what a "
        f"query may NOT attend to, and row {row} blocks every key: the softmax divides 0 by 0, and that row's "
        "output, and everything computed from it, is NaN. torch.tril(…).bool() is the mask of what each "
        "query may attend to: the opposite.",
        "Pass the blocked positions: ~mask, or torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1) "
        "(nn.Transformer.generate_square_subsequent_mask(L) makes the float form, -inf above the diagonal).",
    )


def _added(which: str) -> tuple[str, str, str]:
    return (
        f"A float {which} of 0s and 1s masks nothing",
        f"A float {which} is added to the attention scores, so a 1 only adds 1 to a score, and a 0 leaves it: "
        "no position is hidden (a 0/1 causal mask lets every query see the future). Masking takes -inf "
        "where a key must be ignored, or a bool mask.",
        "Pass a bool mask (True where a key must be ignored, for nn.MultiheadAttention), or a float one with "
        "-inf there: mask.masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, 0.0) for a 0/1 mask "
        "of allowed positions.",
    )
