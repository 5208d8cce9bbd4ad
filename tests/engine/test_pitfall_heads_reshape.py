"""reshape-instead-of-permute for attention heads: ``(B, T, C)`` cut into ``(B, H, T, C // H)``
by ``view`` alone (heads before the sequence axis, where ``view(B, T, H, C // H).transpose(1, 2)``
was meant), and ``(B, H, T, D)`` joined back into ``(B, T, C)`` without the ``transpose(1, 2)``
first. Both run, both fit what follows, and each head attends over a mix of positions and
features. Each silent near miss is one edit away from a snippet that is said."""

from __future__ import annotations

import pytest
import torch

from tests.engine.snippets import recorded_silently, the_pitfall

_ATTENTION = """import torch, torch.nn as nn
torch.manual_seed(0)
B, T, C, H = 2, 5, 12, 4
x = torch.randn(B, T, C)
wq, wk, wv = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
q = wq(x).view(B, T, H, C // H).transpose(1, 2)
k = wk(x).view(B, T, H, C // H).transpose(1, 2)
v = wv(x).view(B, T, H, C // H).transpose(1, 2)
att = (q @ k.transpose(-2, -1) / (C // H) ** 0.5).softmax(-1)
y = (att @ v).transpose(1, 2).reshape(B, T, C)
loss = y.pow(2).mean()
loss.backward()
print(round(loss.item(), 4), tuple(y.shape))
"""


def test_heads_split_by_a_view_alone_are_said_with_the_element_it_took() -> None:
    source = _ATTENTION.replace(
        "k = wk(x).view(B, T, H, C // H).transpose(1, 2)", "k = wk(x).view(B, H, T, C // H)"
    )
    said = the_pitfall(source, "reshape-instead-of-permute", 7)
    assert said.title == "view mixes heads with positions: (2, 5, 12) cut into (2, 4, 5, 3)"
    assert "makes wk(x) of shape (2, 5, 12) into (2, 4, 5, 3): a split into 4 heads" in said.message
    # head 1 at position 0 is position 1's first features, where it should be position 0's 4th to 6th
    assert (
        "So k[0, 1, 0, 0] is wk(x)[0, 1, 3], where splitting and then moving the axes would give wk(x)[0, 0, 3]"
        in said.message
    )
    assert said.fix == (
        "Split the last axis where it is, then move the heads: k = wk(x).view(B, T, H, C // H).transpose(1, 2)."
    )


def test_heads_joined_back_without_the_transpose_are_said_with_the_fixed_line() -> None:
    source = _ATTENTION.replace("(att @ v).transpose(1, 2).reshape(B, T, C)", "(att @ v).reshape(B, T, C)")
    said = the_pitfall(source, "reshape-instead-of-permute", 10)
    assert said.title == "reshape mixes heads with positions: (2, 4, 5, 3) cut into (2, 5, 12)"
    assert "4 heads joined back without first moving them behind the sequence axis" in said.message
    assert (
        "So y[0, 0, 3] is the input's [0, 0, 1, 0], where moving the axes first would give the input's [0, 1, 0, 0]"
        in said.message
    )
    assert said.fix == (
        "Move the heads behind the sequence axis before the reshape: y = (att @ v).transpose(1, 2).reshape(B, T, C)."
    )


def test_the_element_it_names_is_the_one_pytorch_gives() -> None:
    x = torch.arange(2 * 5 * 12).view(2, 5, 12)
    assert x.view(2, 4, 5, 3)[0, 1, 0, 0] == x[0, 1, 3]
    assert x.view(2, 5, 4, 3).transpose(1, 2)[0, 1, 0, 0] == x[0, 0, 3]
    heads = torch.arange(2 * 4 * 5 * 3).view(2, 4, 5, 3)
    assert heads.reshape(2, 5, 12)[0, 0, 3] == heads[0, 0, 1, 0]
    assert heads.transpose(1, 2).reshape(2, 5, 12)[0, 0, 3] == heads[0, 1, 0, 0]


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        # written right, as above; and by permute and -1
        ("", ""),
        (
            "v = wv(x).view(B, T, H, C // H).transpose(1, 2)",
            "v = wv(x).reshape(B, T, H, -1).permute(0, 2, 1, 3)",
        ),
        (
            "(att @ v).transpose(1, 2).reshape(B, T, C)",
            "(att @ v).transpose(1, 2).contiguous().view(B, T, -1)",
        ),
        # as many heads as positions: the shapes cannot tell the orders apart
        ("B, T, C, H = 2, 5, 12, 4", "B, T, C, H = 2, 4, 12, 4"),
        # a view that keeps the sequence axis whole: an image's pixels made rows and columns
        (
            "loss = y.pow(2).mean()",
            "img = torch.randn(2, 3, 16).view(2, 3, 4, 4)\nloss = y.pow(2).mean() + img.mean()",
        ),
        # the library's own reshapes, on a line that writes another
        (
            "loss = y.pow(2).mean()",
            "mha = nn.MultiheadAttention(C, H, batch_first=True)\nloss = mha(x, x, x)[0].reshape(B, T, C).pow(2).mean()",
        ),
    ],
)
def test_heads_split_and_joined_as_meant_stay_silent(wrong: str, right: str) -> None:
    assert wrong in _ATTENTION
    recorded_silently(_ATTENTION.replace(wrong, right, 1))
