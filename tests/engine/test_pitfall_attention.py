"""attention-mask-misread (engine/pitfalls/attention_masks.py): a bool mask read the other
way round blocks every key of a row (NaN), and a float 0/1 mask, added to the scores, hides
nothing. Correct masks of every common form stay silent."""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall

HEAD = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"
    "attn = nn.MultiheadAttention(16, 2, batch_first=True)\nx = torch.rand(2, 5, 16)\n"
)

SAID = {
    # name: (the call, the title, phrases of the message, the fix's start)
    "torch.tril as MultiheadAttention's attn_mask": (
        "out, _ = attn(x, x, x, attn_mask=torch.tril(torch.ones(5, 5)).bool())",
        "The attention mask blocks every key of a row: its output is NaN",
        ["whose True marks what a query may NOT attend to, and row 4 blocks every key"],
        "Pass the blocked positions: ~mask",
    ),
    "a mask of real tokens as key_padding_mask": (
        "out, _ = attn(x, x, x, key_padding_mask=torch.tensor([[True] * 5, [True, True, True, False, False]]))",
        "key_padding_mask blocks every key of a sequence: its output is NaN",
        ["marks with True the padding, the keys to ignore, and row 0 marks all of them"],
        "Pass the padding, not the tokens",
    ),
    "a float 0/1 causal mask": (
        "out = F.scaled_dot_product_attention(x, x, x, attn_mask=torch.tril(torch.ones(5, 5)))",
        "A float attn_mask of 0s and 1s masks nothing",
        ["is added to the attention scores, so a 1 only adds 1"],
        "Pass a bool mask",
    ),
}


@pytest.mark.parametrize("name", sorted(SAID))
def test_a_misread_attention_mask_is_said_at_its_call(name: str) -> None:
    call, title, phrases, fix = SAID[name]
    p = the_pitfall(HEAD + call + "\nprint(out.isnan().any().item())\n", "attention-mask-misread", 7)
    assert p.title == title
    for phrase in phrases:
        assert phrase in p.message, (phrase, p.message)
    assert p.fix.startswith(fix), p.fix


@pytest.mark.parametrize(
    "call",
    [
        "out, _ = attn(x, x, x, attn_mask=torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1))",
        "out, _ = attn(x, x, x, attn_mask=nn.Transformer.generate_square_subsequent_mask(5))",
        "out, _ = attn(x, x, x, key_padding_mask=torch.tensor([[False] * 5, [False, False, False, True, True]]))",
        "out = F.scaled_dot_product_attention(x, x, x, attn_mask=torch.tril(torch.ones(5, 5, dtype=torch.bool)))",
        "out = F.scaled_dot_product_attention(x, x, x, is_causal=True)",
    ],
    ids=[
        "a bool causal mask",
        "generate_square_subsequent_mask",
        "padding marked True",
        "SDPA's bool mask",
        "SDPA's is_causal",
    ],
)
def test_correct_attention_masks_stay_silent(call: str) -> None:
    recorded_silently(HEAD + call + "\nprint(out.isnan().any().item())\n")


# scaled_dot_product_attention gives a row with no key zeros, not NaN (torch 2.13): a row masked
# on purpose and cleaned up after is no mistake (a false-positive hunt's two finds)
MASKED_ON_PURPOSE = {
    "a -inf row, then nan_to_num": "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n\nq = torch.randn(1, 1, 4, 8)\nk = torch.randn(1, 1, 4, 8)\nv = torch.randn(1, 1, 4, 8)\nmask = torch.zeros(4, 4)\nmask[2, :] = float('-inf')\nout = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\nout = torch.nan_to_num(out, nan=0.0)\nprint(out[0, 0, 2])\n",
    "padded queries, zeroed after": "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n\n# mask with no True in a row replaced: bool attend mask, rows fully blocked handled\nq = torch.randn(2, 1, 4, 8); k = torch.randn(2, 1, 4, 8); v = torch.randn(2, 1, 4, 8)\nvalid = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)\nmask = valid[:, None, :, None] & valid[:, None, None, :]\nout = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\nout = out.masked_fill(~valid[:, None, :, None], 0.0)\nprint(torch.isnan(out).any().item())\n",
}


@pytest.mark.parametrize("name", sorted(MASKED_ON_PURPOSE))
def test_rows_masked_on_purpose_in_scaled_dot_product_attention_stay_silent(name: str) -> None:
    recorded_silently(MASKED_ON_PURPOSE[name])
