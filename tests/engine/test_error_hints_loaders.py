"""Hints for a DataLoader, its dataset or its batches used wrong (engine/explain_loaders.py,
engine/explain_datasets.py): each snippet raises as it does without gradwalk, the hint says
what the loader, the dataset or the loop did, and each fix it gives runs."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

HEAD = (
    "import torch\nimport torch.nn as nn\nfrom torch.utils.data import TensorDataset, DataLoader\n"
    "loader = DataLoader(TensorDataset(torch.randn(20, 4), torch.randn(20, 1)), batch_size=5)\n"
    "model = nn.Linear(4, 1)\n"
)

# a map-style dataset of sequences of different lengths (the tail, __getitem__, comes per case)
SENTENCES = (
    "import torch\nfrom torch.utils.data import Dataset, DataLoader\nclass Sentences(Dataset):\n"
    "    def __init__(self):\n        self.data = [torch.randint(0, 50, (n,)) for n in (5, 7, 3, 6)]\n"
    "    def __len__(self):\n        return len(self.data)\n    def __getitem__(self, i):\n"
)
PAD = "from torch.nn.utils.rnn import pad_sequence\n"

POINTS = (
    "import torch\nfrom torch.utils.data import Dataset, DataLoader\nclass Points(Dataset):\n"
    "    def __init__(self):\n        self.x = torch.randn(10, 2)\n    def __getitem__(self, i):\n"
    "        return self.x[i]\n"
)

PAIRS = (
    "import torch\nfrom torch.utils.data import Dataset, DataLoader\nclass Pairs(Dataset):\n"
    "    def __init__(self):\n        self.x = torch.randn(6, 2); self.y = torch.randint(0, 2, (6,))\n"
    "    def __len__(self):\n        return len(self.x)\n    def __getitem__(self, i):\n"
    "        sample = (self.x[i], self.y[i])\n"
    "for xb, yb in DataLoader(Pairs(), batch_size=3):\n    pass\n"
)

TWO = "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nX = torch.randn(20, 3)\ny = torch.randint(0, 2, (20,))\n"

SPLIT = (
    "import torch\nfrom torch.utils.data import TensorDataset, DataLoader\n"
    "ds = TensorDataset(torch.randn(20, 3), torch.randn(20, 1))\nloader = DataLoader(ds, batch_size=5)\n"
)

ANIMALS = (
    "import torch\nimport torch.nn as nn\nfrom torch.utils.data import Dataset, DataLoader\nclass Animals(Dataset):\n"
    "    def __init__(self):\n        self.x = torch.randn(4, 3); self.y = ['cat', 'dog', 'cat', 'bird']\n"
    "    def __len__(self):\n        return 4\n    def __getitem__(self, i):\n        return self.x[i], self.y[i]\n"
    "model = nn.Linear(3, 3)\nfor xb, yb in DataLoader(Animals(), batch_size=2):\n"
    "    loss = nn.CrossEntropyLoss()(model(xb), yb)\n"
)

BATCH_TO = (
    "import torch\nfrom torch.utils.data import Dataset, DataLoader\nclass Pairs(Dataset):\n"
    "    def __len__(self):\n        return 6\n    def __getitem__(self, i):\n"
    "        return torch.randn(2), torch.tensor(i % 2)\n"
    "for batch in DataLoader(Pairs(), batch_size=3):\n    batch = batch.to('cpu')\n"
)

VIEWED = (
    "import torch\nimport torch.nn as nn\nfrom torch.utils.data import TensorDataset, DataLoader\nbatch_size = 32\n"
    "ds = TensorDataset(torch.randn(100, 1, 4, 5), torch.randint(0, 2, (100,)))\nfc = nn.Linear(20, 2)\n"
    "for xb, yb in DataLoader(ds, batch_size=batch_size):\n    out = fc(xb.view(batch_size, -1))\n"
)

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the snippet fixed each way the hint says)
    "enumerate(loader) unpacked as the batch": (
        HEAD + "for xb, yb in enumerate(loader):\n    out = model(xb)\n",
        7,
        ["xb is a number, the batch's index", "for i, (xb, yb) in enumerate(loader):"],
        [HEAD + "for i, (xb, yb) in enumerate(loader):\n    out = model(xb)\n"],
    ),
    "the whole batch into the model": (
        HEAD + "for batch in loader:\n    out = model(batch)\n",
        7,
        ["batch is the whole batch, a list [inputs, targets]", "for xb, yb in loader:"],
        [HEAD + "for xb, yb in loader:\n    out = model(xb)\n"],
    ),
    "the whole batch of a DataLoader made in the loop into the model": (
        SPLIT
        + "model = torch.nn.Linear(3, 1)\nfor batch in DataLoader(ds, batch_size=4):\n    out = model(batch)\n",
        7,
        ["batch is the whole batch, a list [inputs, targets]", "for xb, yb in DataLoader(ds, batch_size=4):"],
        [
            SPLIT
            + "model = torch.nn.Linear(3, 1)\nfor xb, yb in DataLoader(ds, batch_size=4):\n    out = model(xb)\n"
        ],
    ),
    "the pair (X, y) as the dataset": (
        TWO
        + "loader = DataLoader((X, y), batch_size=4)\nfor xb, yb in loader:\n    print(xb.shape, yb.shape)\n",
        6,
        ["Line 5 gives DataLoader the pair (X, y) as its dataset", "DataLoader(TensorDataset(X, y), …)"],
        [
            TWO
            + "loader = DataLoader(TensorDataset(X, y), batch_size=4)\nfor xb, yb in loader:\n    print(xb.shape, yb.shape)\n"
        ],
    ),
    "sequences of different lengths collated": (
        SENTENCES
        + "        return self.data[i]\nfor batch in DataLoader(Sentences(), batch_size=2):\n    print(batch.shape)\n",
        10,
        [
            "The DataLoader's default collate stacks a batch's samples into one tensor",
            "Sentences.__getitem__ returns samples of different sizes: in this batch sample 0 is [5] and sample 1 [7]",
            "collate_fn=lambda b: pad_sequence(b, batch_first=True)",
        ],
        [
            PAD + SENTENCES + "        return self.data[i]\n"
            "for batch in DataLoader(Sentences(), batch_size=2, collate_fn=lambda b: pad_sequence(b, batch_first=True)):\n"
            "    print(batch.shape)\n"
        ],
    ),
    "(sequence, label) pairs of different lengths collated": (
        SENTENCES
        + "        return self.data[i], i % 2\nfor xb, yb in DataLoader(Sentences(), batch_size=2):\n    print(xb.shape)\n",
        10,
        [
            "sample 0 is [5] and sample 1 [7]",
            "collate_fn=lambda b: (pad_sequence([x for x, y in b], batch_first=True), default_collate([y for x, y in b]))",
            "from torch.utils.data import default_collate",
        ],
        [
            PAD
            + "from torch.utils.data import default_collate\n"
            + SENTENCES
            + "        return self.data[i], i % 2\n"
            "for xb, yb in DataLoader(Sentences(), batch_size=2, collate_fn=lambda b: (pad_sequence([x for x, y in b], "
            "batch_first=True), default_collate([y for x, y in b]))):\n    print(xb.shape)\n"
        ],
    ),
    "a Dataset without __len__": (
        POINTS + "loader = DataLoader(Points(), batch_size=4, shuffle=True)\nfor xb in loader:\n    pass\n",
        8,
        [
            "Points has no __len__",
            "a DataLoader asks its dataset how many samples it holds",
            "def __len__(self): return len(self.x)",
        ],
        [
            POINTS + "    def __len__(self): return len(self.x)\n"
            "loader = DataLoader(Points(), batch_size=4, shuffle=True)\nfor xb in loader:\n    pass\n"
        ],
    ),
    "a __getitem__ without return": (
        PAIRS,
        10,
        [
            "Pairs.__getitem__ (line 8) has no return statement",
            "default collate found None",
            "return sample (line 9 makes sample",
        ],
        [
            PAIRS.replace(
                "        sample = (self.x[i], self.y[i])\n",
                "        sample = (self.x[i], self.y[i])\n        return sample\n",
            )
        ],
    ),
    "DataLoader(X, y, batch_size=4)": (
        TWO + "loader = DataLoader(X, y, batch_size=4)\n",
        5,
        [
            "DataLoader(X, y, batch_size=4) gives y as batch_size, and batch_size=4 gives it again",
            "DataLoader(TensorDataset(X, y), batch_size=4)",
        ],
        [TWO + "loader = DataLoader(TensorDataset(X, y), batch_size=4)\n"],
    ),
    "DataLoader(X, y)": (  # (labels the same each run: the message prints them)
        TWO.replace("torch.randint(0, 2, (20,))", "torch.arange(20) % 2") + "loader = DataLoader(X, y)\n",
        5,
        ["DataLoader(X, y) gives y as batch_size", "DataLoader(TensorDataset(X, y))"],
        [TWO + "loader = DataLoader(TensorDataset(X, y))\n"],
    ),
    "TensorDataset(X) unpacked as xb, yb": (
        TWO.replace("y = torch.randint(0, 2, (20,))", "y = torch.randn(20, 1)") + "ds = TensorDataset(X)\n"
        "for xb, yb in DataLoader(ds, batch_size=5):\n    pass\n",
        6,
        [
            "ds is TensorDataset(X), a dataset of 1 tensor",
            "unpacks it into 2 names",
            "ds = TensorDataset(X, y)",
        ],
        [
            TWO.replace("y = torch.randint(0, 2, (20,))", "y = torch.randn(20, 1)")
            + "ds = TensorDataset(X, y)\n"
            "for xb, yb in DataLoader(ds, batch_size=5):\n    pass\n"
        ],
    ),
    "next(loader)": (
        SPLIT + "xb, yb = next(loader)\n",
        5,
        ["loader is a DataLoader", "not itself an iterator", "next(iter(loader))"],
        [SPLIT + "xb, yb = next(iter(loader))\n", SPLIT + "batches = iter(loader)\nxb, yb = next(batches)\n"],
    ),
    "loader[0]": (
        SPLIT + "xb, yb = loader[0]\n",
        5,
        ["loader is a DataLoader", "cannot be indexed", "ds[0]", "next(iter(loader))"],
        [SPLIT + "xb, yb = ds[0]\n", SPLIT + "xb, yb = next(iter(loader))\n"],
    ),
    "TensorDataset of tensors of different lengths": (
        "import torch\nfrom torch.utils.data import TensorDataset\nX = torch.randn(100, 3)\ny = torch.randn(80)\nds = TensorDataset(X, y)\n",
        5,
        [
            "TensorDataset(X, y) pairs its tensors row by row",
            "X has 100 (shape (100, 3)) and y 80 (shape (80,))",
        ],
        [],
    ),
    "TensorDataset of data a sample per column": (
        "import torch\nfrom torch.utils.data import TensorDataset\nX = torch.randn(3, 100)\ny = torch.randn(100)\nds = TensorDataset(y, X)\n",
        5,
        [
            "y has 100 (shape (100,)) and X 3 (shape (3, 100))",
            "X holds a sample per column",
            "TensorDataset(y, X.T)",
        ],
        [
            "import torch\nfrom torch.utils.data import TensorDataset\nX = torch.randn(3, 100)\ny = torch.randn(100)\nds = TensorDataset(y, X.T)\n"
        ],
    ),
    "string labels collated into a tuple": (
        ANIMALS,
        13,
        [
            "yb is a tuple of strings, ('cat', 'dog'), not a tensor",
            "default collate makes a tensor only of numbers and tensors",
            "yb = torch.tensor([classes.index(c) for c in yb])",
        ],
        [
            ANIMALS.replace(
                "model = ", "classes = sorted(set(['cat', 'dog', 'cat', 'bird']))\nmodel = "
            ).replace("    loss = ", "    yb = torch.tensor([classes.index(c) for c in yb])\n    loss = ")
        ],
    ),
    "string labels of a dataset the snippet holds": (
        ANIMALS.replace(
            "for xb, yb in DataLoader(Animals(),", "ds = Animals()\nfor xb, yb in DataLoader(ds,"
        ),
        14,
        ["classes = sorted(set(ds.y))", "yb = torch.tensor([classes.index(c) for c in yb])"],
        [
            ANIMALS.replace(
                "for xb, yb in DataLoader(Animals(),",
                "ds = Animals()\nclasses = sorted(set(ds.y))\nfor xb, yb in DataLoader(ds,",
            ).replace("    loss = ", "    yb = torch.tensor([classes.index(c) for c in yb])\n    loss = ")
        ],
    ),
    ".to of the whole batch": (
        BATCH_TO,
        9,
        [
            "batch is the whole batch, a list [inputs, targets], and a list has no .to",
            "for xb, yb in DataLoader(Pairs(), batch_size=3):",
            "xb, yb = xb.to('cpu'), yb.to('cpu')",
        ],
        [
            BATCH_TO.replace("for batch in", "for xb, yb in").replace(
                "batch = batch.to('cpu')", "xb, yb = xb.to('cpu'), yb.to('cpu')"
            )
        ],
    ),
    "a batch viewed with the batch size written down": (
        VIEWED,
        8,
        [
            "This batch holds 4 samples, not 32",
            "its dataset's 100 samples make 3 of 32 and one of 4",
            "xb.view(xb.size(0), -1)",
            "xb.flatten(1)",
            "drop_last=True",
        ],
        [
            VIEWED.replace("xb.view(batch_size, -1)", "xb.view(xb.size(0), -1)"),
            VIEWED.replace("xb.view(batch_size, -1)", "xb.flatten(1)"),
            VIEWED.replace("batch_size=batch_size)", "batch_size=batch_size, drop_last=True)"),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_loader_used_wrong_is_told_what_it_did(name: str) -> None:
    source, line, phrases, fixes = CASES[name]
    hinted(source, line, phrases)
    for fixed in fixes:  # each fix the hint gives runs
        fixed_runs(fixed, [])


def test_an_int_from_elsewhere_is_not_blamed_on_enumerate() -> None:
    # enumerate(loader) unpacked right, and a count passed to the model: the int hint stays
    source = HEAD + "for i, (xb, yb) in enumerate(loader):\n    out = model(i)\n"
    err = raised_as_plain(source, 7)
    assert err.hint is not None and "batch's index" not in err.hint, err.hint


NEAR_MISSES = {
    # the same messages, raised by the snippet's own code beside a DataLoader: not a loader's doing
    "its own torch.stack of ragged tensors": (
        HEAD + "x = torch.stack([torch.randn(5), torch.randn(7)])\n",
        6,
        "collate",
    ),
    "len() of a class of its own": (HEAD + "class Bag:\n    pass\nn = len(Bag())\n", 8, "__len__"),
    "a pair unpacked into three names": (HEAD + "for a, b, c in [(1, 2)]:\n    pass\n", 6, "TensorDataset"),
    ".to of a list of its own": (
        HEAD + "for xs in [[torch.randn(2), torch.randn(2)]]:\n    xs = xs.to('cpu')\n",
        7,
        "whole batch",
    ),
    "a tensor viewed with a fixed size outside the loader's loop": (
        HEAD + "batch_size = 32\nx = torch.randn(4, 20)\ny = x.view(batch_size, -1)\n",
        8,
        "batch",
    ),
    "strings given as the loss's target": (
        HEAD + "yb = ('cat', 'dog')\nloss = nn.CrossEntropyLoss()(torch.randn(2, 3), yb)\n",
        7,
        "collate",
    ),
    "next() of a list": (HEAD + "xb = next([1, 2])\n", 6, "DataLoader"),
    "a batch size given twice, the dataset right": (
        SPLIT + "loader = DataLoader(ds, 4, batch_size=4)\n",
        5,
        "TensorDataset",
    ),
    "a __getitem__ that returns, with None in its sample": (
        PAIRS.replace("        sample = (self.x[i], self.y[i])\n", "        return self.x[i], None\n"),
        10,
        "return",
    ),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_the_same_error_away_from_a_loader_gets_no_loader_hint(name: str) -> None:
    source, line, absent = NEAR_MISSES[name]
    err = raised_as_plain(source, line)
    assert err.hint is None or absent not in err.hint, err.hint
