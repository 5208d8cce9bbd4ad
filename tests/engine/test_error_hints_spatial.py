"""Hints for the feature maps of a conv net that stop lining up (engine/explain_spatial.py):
a U-Net's skip connection after pooling an odd side, a transposed convolution one short, a
residual block that strides and widens without its shortcut doing the same, and F.pad's
tuple read front to back. Each snippet raises as it does without gradwalk, and the fix the
hint gives runs to the shape it should. Near misses keep the generic hints."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

UNET = """import torch
import torch.nn as nn
import torch.nn.functional as F
class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.mid = nn.Conv2d(8, 8, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2)
        self.out = nn.Conv2d(16, 1, 1)
    def forward(self, x):
        skip = F.relu(self.down(x))
        up = self.up(F.relu(self.mid(self.pool(skip))))
        return self.out(torch.cat([skip, up], dim=1))
y = UNet()(torch.rand(2, 3, 33, 33))
print(y.shape)
"""

TRANSPOSED = """import torch
import torch.nn as nn
decode = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1)
low = torch.rand(1, 16, 7, 7)
skip = torch.rand(1, 8, 14, 14)
y = decode(low) + skip
print(y.shape)
"""

RESIDUAL = """import torch
import torch.nn as nn
class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
    def forward(self, x):
        out = self.conv2(torch.relu(self.conv1(x)))
        return torch.relu(out + x)
y = Block(16, 32, 2)(torch.rand(2, 16, 8, 8))
print(y.shape)
"""

PADDED = """import torch
import torch.nn.functional as F
x = torch.rand(2, 3, 10, 8)
y = F.pad(x, (1, 1, 0, 0))
z = y + torch.rand(2, 3, 12, 8)
print(z.shape)
"""

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, (wrong, right), printed once fixed)
    "a U-Net's skip joined after pooling an odd side": (
        UNET,
        15,
        [
            "33×33 and 32×32",
            "round an odd side down (33 → 16 → 32)",
            "F.interpolate(up, size=skip.shape[2:])",
        ],
        (
            "up = self.up(F.relu(self.mid(self.pool(skip))))",
            "up = F.interpolate(F.relu(self.mid(self.pool(skip))), size=skip.shape[2:])",
        ),
        "torch.Size([2, 1, 33, 33])\n",
    ),
    "a transposed convolution one short of its skip": (
        TRANSPOSED,
        6,
        [
            "ConvTranspose2d(16, 8, kernel_size=3, stride=2, padding=1) turns 7×7 into 13×13",
            "output_padding=1",
        ],
        ("padding=1)", "padding=1, output_padding=1)"),
        "torch.Size([1, 8, 14, 14])\n",
    ),
    "a residual block that strides and widens with a bare shortcut": (
        RESIDUAL,
        10,
        [
            "widens 16 → 32 channels and strides by 2 (8×8 → 4×4)",
            "nn.Conv2d(16, 32, kernel_size=1, stride=2, bias=False), nn.BatchNorm2d(32)",
        ],
        (
            "        return torch.relu(out + x)",
            "        return torch.relu(out + self.shortcut(x))",
        ),
        "torch.Size([2, 32, 4, 4])\n",
    ),
    "F.pad's tuple read front to back": (
        PADDED,
        5,
        ["(1, 1, 0, 0) pads the last dimension by (1, 1)", "F.pad(…, (0, 0, 1, 1))"],
        ("(1, 1, 0, 0)", "(0, 0, 1, 1)"),
        "torch.Size([2, 3, 12, 8])\n",
    ),
}
SHORTCUT = (
    "        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)\n",
    "        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)\n"
    "        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, kernel_size=1, stride=stride, bias=False), "
    "nn.BatchNorm2d(cout))\n",
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_feature_maps_that_stop_lining_up_get_the_cause_and_a_fix_that_runs(name: str) -> None:
    source, line, phrases, fix, printed = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, [fix, *([SHORTCUT] if SHORTCUT[0] in source else [])], printed)


NEAR_MISSES = {
    # the batches of two image sizes joined along dim 0: nothing pooled, the sizes differ
    "images of two sizes joined into one batch": (
        "import torch\nimport torch.nn as nn\nconv = nn.Conv2d(3, 4, 3)\na, b = torch.rand(2, 3, 32, 32), "
        "torch.rand(2, 3, 31, 31)\nbatch = torch.cat([a, b])\n",
        5,
        "torch.cat joins tensors along dim=0",
    ),
    # attention scores and a mask made for half the length: no conv net in sight
    "attention scores and a mask of another length": (
        "import torch\nscores = torch.rand(2, 4, 10, 10)\nmask = torch.rand(2, 4, 5, 5)\nout = scores + mask\n",
        4,
        "Broadcasting lines the shapes up from the right",
    ),
    # a padded sequence that meets another length: the tuple's order is not why
    "a pad that is too short whichever way it is read": (
        "import torch\nimport torch.nn.functional as F\nx = torch.rand(2, 3, 10, 8)\ny = F.pad(x, (1, 1, 1, 1))\n"
        "z = y + torch.rand(2, 3, 13, 8)\n",
        5,
        "Broadcasting lines the shapes up from the right",
    ),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_shape_errors_of_other_causes_keep_the_generic_hints(name: str) -> None:
    source, line, begins = NEAR_MISSES[name]
    err = raised_as_plain(source, line)
    assert err.hint is not None and err.hint.startswith(begins), err.hint
