"""Hints for picking elements out of a tensor (engine/explain_indexing.py): gather, scatter_,
index_select, one_hot and torch.where given an index, mask or condition of the wrong shape
or dtype, and indexing with a float, past the end or with too many indices. Each snippet
raises as it does without gradwalk, the hint names its tensors and shapes, and every fix the
hint gives runs and prints what plain PyTorch prints."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, [(wrong, right), ...], printed once fixed)
    "gather given a 1-D index": (
        "import torch\nq_values = torch.randn(8, 4)\nactions = torch.randint(0, 4, (8,))\n"
        "chosen = q_values.gather(1, actions)\nprint(chosen.shape)\n",
        4,
        [
            "actions must have as many dimensions as the tensor it picks from: the tensor is (8, 4) and actions is (8,)",
            "q_values.gather(1, actions.unsqueeze(1)).squeeze(1), which gives (8,)",
        ],
        [("q_values.gather(1, actions)", "q_values.gather(1, actions.unsqueeze(1)).squeeze(1)")],
        "torch.Size([8])\n",
    ),
    "a one-hot made by scatter_ with a 1-D index": (
        "import torch\nlabels = torch.tensor([0, 2, 1, 3])\n"
        "one_hot = torch.zeros(4, 5).scatter_(1, labels, 1)\nprint(one_hot)\n",
        3,
        [
            "the tensor is (4, 5) and labels is (4,)",
            "torch.zeros(4, 5).scatter_(1, labels.unsqueeze(1), 1)",
            "torch.nn.functional.one_hot(labels, 5).float()",
        ],
        [
            ("scatter_(1, labels, 1)", "scatter_(1, labels.unsqueeze(1), 1)"),
            ("torch.zeros(4, 5).scatter_(1, labels, 1)", "torch.nn.functional.one_hot(labels, 5).float()"),
        ],
        "tensor([[1., 0., 0., 0., 0.],\n        [0., 0., 1., 0., 0.],\n        [0., 1., 0., 0., 0.],\n"
        "        [0., 0., 0., 1., 0.]])\n",
    ),
    "gather given a float index": (
        "import torch\nlogp = torch.randn(4, 3).log_softmax(1)\ntarget = torch.tensor([[0.], [2.], [1.], [1.]])\n"
        "picked = logp.gather(1, target)\nprint(picked.shape)\n",
        4,
        [
            "target holds float32 numbers, and gather takes its index as integers",
            "logp.gather(1, target.long())",
        ],
        [("gather(1, target)", "gather(1, target.long())")],
        "torch.Size([4, 1])\n",
    ),
    "index_select given a 2-D index": (
        "import torch\nemb = torch.randn(10, 4)\nids = torch.tensor([[1, 2], [3, 4]])\n"
        "rows = emb.index_select(0, ids)\nprint(rows.shape[-1])\n",
        4,
        [
            "index_select takes its indices as a vector (1-D), and ids is (2, 2)",
            "emb[ids], which gives (2, 2, 4)",
            "emb.index_select(0, ids.flatten()), which gives (4, 4)",
        ],
        [
            ("emb.index_select(0, ids)", "emb[ids]"),
            ("index_select(0, ids)", "index_select(0, ids.flatten())"),
        ],
        "4\n",
    ),
    "one_hot of float labels": (
        "import torch\nimport torch.nn.functional as F\nlabels = torch.tensor([0., 2., 1.])\n"
        "oh = F.one_hot(labels, num_classes=3)\nprint(oh)\n",
        4,
        ["labels holds float32 values", "F.one_hot(labels.long(), num_classes=3)"],
        [("F.one_hot(labels,", "F.one_hot(labels.long(),")],
        "tensor([[1, 0, 0],\n        [0, 0, 1],\n        [0, 1, 0]])\n",
    ),
    "one_hot of labels counted from 1": (
        "import torch\nimport torch.nn.functional as F\nlabels = torch.tensor([1, 2, 3])\n"
        "oh = F.one_hot(labels, num_classes=3)\nprint(oh.shape)\n",
        4,
        [
            "makes one column per class, 0 to 2, and labels holds 3",
            "F.one_hot(labels - 1, num_classes=3)",
            "num_classes=4",
        ],
        [("F.one_hot(labels,", "F.one_hot(labels - 1,")],
        "torch.Size([3, 3])\n",
    ),
    "one_hot of a label past num_classes": (
        "import torch\nimport torch.nn.functional as F\nlabels = torch.tensor([0, 4, 1])\n"
        "oh = F.one_hot(labels, num_classes=3)\nprint(oh.shape)\n",
        4,
        ["labels holds 4: num_classes must be larger than the largest label, num_classes=5"],
        [("num_classes=3", "num_classes=5")],
        "torch.Size([3, 5])\n",
    ),
    "torch.where given probabilities as its condition": (
        "import torch\nprobs = torch.rand(5)\npreds = torch.where(probs, 1, 0)\nprint(preds)\n",
        3,
        ["takes a bool tensor first", "probs holds float32 numbers", "torch.where(probs > 0.5, 1, 0)"],
        [("torch.where(probs,", "torch.where(probs > 0.5,")],
        "tensor([0, 1, 0, 0, 0])\n",
    ),
    "an index divided with /": (
        "import torch\nx = torch.arange(10)\nmid = x[len(x) / 2]\nprint(mid)\n",
        3,
        ["len(x) / 2 is a float", "Divide with //, which gives an int: x[len(x) // 2]"],
        [("len(x) / 2", "len(x) // 2")],
        "tensor(5)\n",
    ),
    "a loop that counts from 1": (
        "import torch\nx = torch.arange(5)\nfor i in range(1, 6):\n    print(x[i].item())\n",
        4,
        [
            "x has 5 entries, numbered 0 to 4",
            "asked for index i, which is 5",
            "The loop's range(1, 6) reaches 5, and indices start at 0: loop over range(len(x))",
        ],
        [("range(1, 6)", "range(len(x))")],
        "0\n1\n2\n3\n4\n",
    ),
    "a column past the end, inside a function": (
        "import torch\ndef last(t):\n    return t[0, 3]\nx = torch.arange(6).view(2, 3)\nprint(last(x))\n",
        3,
        ["t has 3 entries along dimension 1, numbered 0 to 2", "asked for index 3", "t[2] (or t[-1])"],
        [("t[0, 3]", "t[0, -1]")],
        "tensor(2)\n",
    ),
    "a mask for the columns laid over the rows": (
        "import torch\nx = torch.randn(4, 3)\nkeep = torch.tensor([True, False, True])\nrows = x[keep]\n"
        "print(rows.shape)\n",
        4,
        [
            "keep is a mask of 3 True/False values, and x[keep] lays it along dimension 0 of x, which has 4 "
            "(x is (4, 3))",
            "To pick columns with it, put it at dimension 1: x[:, keep], which gives (4, 2)",
        ],
        [("x[keep]", "x[:, keep]")],
        "torch.Size([4, 2])\n",
    ),
    "three indices for two dimensions": (
        "import torch\nbatch = torch.randn(4, 10)\nfirst = batch[0, :, 0]\nprint(first.shape)\n",
        3,
        [
            "batch has 2 dimensions, (4, 10), and batch[0, :, 0] gives 3 indices",
            "batch[0] the first along dimension 0, (10,)",
            "batch[:, 0] the first along dimension 1, (4,)",
        ],
        [("batch[0, :, 0]", "batch[:, 0]")],
        "torch.Size([4])\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_indexing_mistake_gets_its_cause_and_a_fix_that_runs(name: str) -> None:
    source, line, phrases, fixes, printed = CASES[name]
    hinted(source, line, phrases)
    for fix in fixes:  # each fix the hint gives, alone
        fixed_runs(source, [fix], printed)


NEAR_MISSES = {
    # name: (snippet, the line that raises, phrases of this module's hints the hint must not hold)
    # a list of indices after a slice: PyTorch counts the dimension otherwise, and names dim 0
    "a list of indices past the end": (
        "import torch\nx = torch.randn(3, 4)\ny = x[:, [1, 9]]\n",
        3,
        ["numbered 0 to", "Count from 0"],
    ),
    # gather given an index of more dimensions: unsqueeze would not help
    "gather given an index of more dimensions": (
        "import torch\nx = torch.randn(4, 5)\nidx = torch.zeros(4, 1, 1, dtype=torch.long)\ny = x.gather(1, idx)\n",
        4,
        ["unsqueeze", "as many dimensions as the tensor"],
    ),
    # integer class scores as the condition: neither a threshold nor .bool() is known to be meant
    "torch.where given counts": (
        "import torch\ncounts = torch.tensor([0, 3, 1])\ny = torch.where(counts, 1.0, 0.0)\n",
        3,
        ["Make the condition", "counts > 0.5"],
    ),
    # a float index from a Python float variable, not a division on the line
    "an index held as a float": (
        "import torch\nx = torch.randn(4)\ni = 1.0\ny = x[i]\n",
        4,
        ["Divide with //"],
    ),
    # a Python list indexed past its end: Python's own error, not a tensor's
    "a list past its end": (
        "import torch\nxs = [torch.zeros(1)] * 3\ny = xs[3]\n",
        3,
        ["entries", "numbered 0 to"],
    ),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_an_error_like_an_indexing_mistake_keeps_its_hint_out(name: str) -> None:
    source, line, absent = NEAR_MISSES[name]
    err = raised_as_plain(source, line)
    for phrase in absent:
        assert phrase not in (err.hint or ""), (phrase, err.hint)
