"""Hints for image and token layouts whose first hint was wrong or missing (a hunt over CV
and NLP snippets): the fix each gives keeps the batch, where the old one resized a layer
and lost it. Each snippet raises as it does without gradwalk, and the fix runs to the
shape it should."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, (wrong, right), printed once fixed)
    "the batch flattened with view(-1)": (
        "import torch\nimport torch.nn as nn\nx = torch.rand(4, 8, 5, 5)\nfc = nn.Linear(8 * 5 * 5, 10)\n"
        "out = fc(x.view(-1))\nprint(out.shape)\n",
        5,
        ["its input is one vector of 800 = 4 × 200: the batch of 4 was flattened too", "x.flatten(1)"],
        ("x.view(-1)", "x.flatten(1)"),
        "torch.Size([4, 10])\n",
    ),
    "one image without its batch dimension": (
        "import torch\nimport torch.nn as nn\nimg = torch.rand(3, 32, 32)\n"
        "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.Linear(8 * 30 * 30, 10))\n"
        "out = model(img)\nprint(out.shape)\n",
        5,
        [
            "its input, (8, 900), holds exactly 7200: one sample whose batch dimension is missing",
            "img.unsqueeze(0)",
        ],
        ("model(img)", "model(img.unsqueeze(0))"),
        "torch.Size([1, 10])\n",
    ),
    "grayscale images without their channel dimension": (
        "import torch\nimport torch.nn as nn\nx = torch.rand(4, 28, 28)\nconv = nn.Conv2d(1, 8, 3)\n"
        "out = conv(x)\nprint(out.shape)\n",
        5,
        ["(4, 28, 28), was read as one image of 4 channels", "x.unsqueeze(1), which gives (4, 1, 28, 28)"],
        ("conv(x)", "conv(x.unsqueeze(1))"),
        "torch.Size([4, 8, 26, 26])\n",
    ),
    "-1 as a padding index": (
        "import torch\nimport torch.nn as nn\nemb = nn.Embedding(10, 4)\nids = torch.tensor([1, 2, -1])\n"
        "out = emb(ids)\nprint(out.shape)\n",
        5,
        ["The input holds -1, and an nn.Embedding has no negative rows", "padding_idx=0"],
        ("[1, 2, -1]", "[1, 2, 0]"),
        "torch.Size([3, 4])\n",
    ),
    "poolings that shrink the image to nothing": (
        "import torch\nimport torch.nn as nn\nx = torch.rand(2, 3, 8, 8)\n"
        "model = nn.Sequential(*[nn.MaxPool2d(2) for _ in range(4)])\nout = model(x)\nprint(out.shape)\n",
        5,
        ["down to 1×1 per channel, too small for its window", "nn.AdaptiveAvgPool2d(1)"],
        ("range(4)", "range(3)"),
        "torch.Size([2, 3, 1, 1])\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_layout_mistake_gets_the_fix_that_keeps_the_batch(name: str) -> None:
    source, line, phrases, fix, printed = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, [fix], printed)
