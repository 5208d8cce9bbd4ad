"""Hints for making a tensor and changing its shape (engine/explain_factories.py): a factory
given the wrong kind of argument (torch.Tensor(0.5), torch.from_numpy of a list, randint's
size as a number, randn asked for integers, .to('float'), math.exp of a tensor, x.size[0],
rows of different lengths), and shape ops whose dimensions do not add up (reshape, permute,
unsqueeze, cat, einsum, an in-place op that would grow its target). Each snippet raises as
it does without gradwalk, the hint names its tensors and shapes, and every fix the hint
gives runs and prints what plain PyTorch prints."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, [(wrong, right), ...], printed once fixed)
    "x.size indexed, not called": (
        "import torch\nx = torch.randn(4, 3)\nn = x.size[0]\nprint(n)\n",
        3,
        ["x.size is a method, and [0] indexes the method", "x.size(0)", "x.shape[0]"],
        [("x.size[0]", "x.size(0)"), ("x.size[0]", "x.shape[0]")],
        "4\n",
    ),
    "rows of different lengths": (
        "import torch\nrows = [[1.0, 2.0, 3.0], [4.0, 5.0]]\nt = torch.tensor(rows)\nprint(t)\n",
        3,
        [
            "torch.tensor makes a rectangular tensor",
            "row 0 of rows has 3 elements and row 1 has 2",
            "torch.nn.utils.rnn.pad_sequence([torch.tensor(r) for r in rows], batch_first=True)",
        ],
        [
            (
                "torch.tensor(rows)",
                "torch.nn.utils.rnn.pad_sequence([torch.tensor(r) for r in rows], batch_first=True)",
            ),
            ("[4.0, 5.0]", "[4.0, 5.0, 0.0]"),
        ],
        "tensor([[1., 2., 3.],\n        [4., 5., 0.]])\n",
    ),
    "reshape to sizes of another count": (
        "import torch\nimages = torch.randn(8, 3, 32, 32)\nflat = images.reshape(8, 3 * 28 * 28)\nprint(flat.shape)\n",
        3,
        [
            "images holds 24576 numbers (8 × 3 × 32 × 32), and reshape(8, 3 * 28 * 28) asks for 8 × 2352 = 18816",
            "images.reshape(8, -1), which gives (8, 3072)",
        ],
        [("reshape(8, 3 * 28 * 28)", "reshape(8, -1)")],
        "torch.Size([8, 3072])\n",
    ),
    "cat of a 2-D and a 1-D tensor": (
        "import torch\nfeats = torch.randn(4, 3)\nextra = torch.randn(4)\nboth = torch.cat([feats, extra], dim=1)\n"
        "print(both.shape)\n",
        4,
        [
            "extra is (4,) where feats is (4, 3)",
            "extra.unsqueeze(1), which makes it (4, 1)",
            "torch.cat([feats, extra.unsqueeze(1)], dim=1), which gives (4, 4)",
        ],
        [("[feats, extra]", "[feats, extra.unsqueeze(1)]")],
        "torch.Size([4, 4])\n",
    ),
    "a dtype's name given to .to()": (
        "import torch\nx = torch.tensor([1, 2, 3])\nx = x.to('float')\nprint(x)\n",
        3,
        ["x.to('float') reads a string as a device", "x.to(torch.float32)", "x.float()"],
        [("x.to('float')", "x.to(torch.float32)"), ("x.to('float')", "x.float()")],
        "tensor([1., 2., 3.])\n",
    ),
    "torch.Tensor of one float": (
        "import torch\nlr = torch.Tensor(0.5)\nprint(lr)\n",
        2,
        ["got the float 0.5, which is neither", "torch.tensor(0.5)"],
        [("torch.Tensor(0.5)", "torch.tensor(0.5)")],
        "tensor(0.5000)\n",
    ),
    "randint's size as a number": (
        "import torch\nlabels = torch.randint(0, 10, 5)\nprint(labels.shape)\n",
        2,
        ["takes the size as a tuple", "got 5, a number: torch.randint(0, 10, (5,))"],
        [("0, 10, 5)", "0, 10, (5,))")],
        "torch.Size([5])\n",
    ),
    "from_numpy of a list": (
        "import torch\ndata = [[1.0, 2.0], [3.0, 4.0]]\nt = torch.from_numpy(data)\nprint(t)\n",
        3,
        ["data is a Python list", "torch.tensor(data)"],
        [("torch.from_numpy(data)", "torch.tensor(data)")],
        "tensor([[1., 2.],\n        [3., 4.]])\n",
    ),
    "math.exp of a tensor": (
        "import math\nimport torch\nx = torch.randn(4)\ny = math.exp(x)\nprint(y.shape)\n",
        4,
        ["math.exp works on one Python number", "x holds 4", "torch.exp(x)"],
        [("math.exp(x)", "torch.exp(x)")],
        "torch.Size([4])\n",
    ),
    "permute that leaves a dimension out": (
        "import torch\nimgs = torch.randn(4, 32, 32, 3)\nimgs = imgs.permute(0, 3, 1)\nprint(imgs.shape)\n",
        3,
        [
            "imgs has 4, (4, 32, 32, 3), where this call lists 3",
            "imgs.permute(0, 3, 1, 2), which gives (4, 3, 32, 32)",
        ],
        [("permute(0, 3, 1)", "permute(0, 3, 1, 2)")],
        "torch.Size([4, 3, 32, 32])\n",
    ),
    "an in-place add that would grow its target": (
        "import torch\ntotal = torch.zeros(3)\nfor _ in range(2):\n    total += torch.ones(4, 3)\nprint(total.shape)\n",
        4,
        [
            "total itself, which is (3,), and the result here is (4, 3)",
            "total = total + torch.ones(4, 3)",
            "total += torch.ones(4, 3).sum(0)",
        ],
        [("total += torch.ones(4, 3)", "total = total + torch.ones(4, 3)")],
        "torch.Size([4, 3])\n",
    ),
    "randn asked for integers": (
        "import torch\nnoise = torch.randn(3, 4, dtype=torch.long)\nprint(noise.shape, noise.dtype)\n",
        2,
        ["torch.randn draws real numbers", "dtype=torch.long", "torch.randint(0, 10, (3, 4))"],
        [("torch.randn(3, 4, dtype=torch.long)", "torch.randint(0, 10, (3, 4))")],
        "torch.Size([3, 4]) torch.int64\n",
    ),
    "einsum with a letter too few": (
        "import torch\nq = torch.randn(2, 7, 16)\nk = torch.randn(2, 7, 16)\nscores = torch.einsum('ij,kj->ik', q, k)\n"
        "print(scores.shape)\n",
        4,
        [
            "'ij' names 2 for q, which has 3, (2, 7, 16)",
            "torch.einsum('...ij,...kj->...ik', q, k), which gives (2, 7, 7)",
        ],
        [("'ij,kj->ik'", "'...ij,...kj->...ik'"), ("'ij,kj->ik'", "'bij,bkj->bik'")],
        "torch.Size([2, 7, 7])\n",
    ),
    "unsqueeze past the end": (
        "import torch\nx = torch.randn(5)\nx = x.unsqueeze(2)\nprint(x.shape)\n",
        3,
        ["x has 1 dimension, (5,)", "it can go at 0 to 1", "x.unsqueeze(-1) gives (5, 1)"],
        [("unsqueeze(2)", "unsqueeze(-1)")],
        "torch.Size([5, 1])\n",
    ),
    "torch.stack at a dim past the end": (
        "import torch\na = torch.ones(3)\nb = torch.zeros(3)\nc = torch.stack([a, b], dim=2)\nprint(c.shape)\n",
        4,
        [
            "each tensor has 1 dimension, (3,), and torch.stack adds one",
            "torch.stack([a, b], dim=-1) gives (3, 2)",
        ],
        [("dim=2", "dim=-1")],
        "torch.Size([3, 2])\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_factory_or_shape_mistake_gets_its_cause_and_a_fix_that_runs(name: str) -> None:
    source, line, phrases, fixes, printed = CASES[name]
    hinted(source, line, phrases)
    for fix in fixes:  # each fix the hint gives, alone
        fixed_runs(source, [fix], printed)


def test_unsqueeze_is_not_told_the_tensor_has_a_dimension_more() -> None:
    # the hint of a dim out of range counts the range's dims, one more than unsqueeze's tensor has
    err = raised_as_plain("import torch\nx = torch.randn(5)\ny = x.unsqueeze(2)\n", 3)
    assert "2 dimensions" not in err.hint and "x has 1 dimension" in err.hint, err.hint


NEAR_MISSES = {
    # name: (snippet, the line that raises, phrases of this module's hints the hint must not hold)
    # softmax's dim out of range: the range does count the tensor's dimensions, and its hint stays
    "softmax given a dim it does not have": (
        "import torch\nx = torch.randn(4, 3)\ny = torch.softmax(x, dim=2)\n",
        3,
        ["unsqueeze adds one"],
    ),
    # float() of several numbers, with no math.* on the line
    "float() of a tensor of several elements": (
        "import torch\nx = torch.randn(4)\ny = float(x)\n",
        3,
        ["math.", "torch function"],
    ),
    # an element of the target grown in place: a new tensor in its place would not fit either
    "an element grown in place": (
        "import torch\ntotal = torch.zeros(3)\ntotal[0] += torch.ones(4, 3)\n",
        3,
        ["Make a new tensor", "total = total"],
    ),
    # view(-1, K) of a batch sized for another feature map: explain_flatten.py's hint, not this one's
    "view(-1, K) of feature maps of another size": (
        "import torch\nx = torch.randn(8, 16, 5, 5)\ny = x.view(-1, 16 * 4 * 4)\n",
        3,
        ["a view keeps every number", "let -1 work it out"],
    ),
    # a torch.cat of a 1-D and a 3-D tensor: one unsqueeze would not make them join
    "cat of tensors two dimensions apart": (
        "import torch\na = torch.randn(2, 3, 4)\nb = torch.randn(4)\nc = torch.cat([a, b])\n",
        4,
        ["unsqueeze"],
    ),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_an_error_like_a_factory_mistake_keeps_its_hint_out(name: str) -> None:
    source, line, absent = NEAR_MISSES[name]
    err = raised_as_plain(source, line)
    for phrase in absent:
        assert phrase not in (err.hint or ""), (phrase, err.hint)
