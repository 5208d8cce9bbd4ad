"""Hints a hunt over 145 learner snippets found wrong or missing: each was wrong for its snippet
(it named another cause or gave a fix that would not run) or absent. Each snippet raises as it does
without gradwalk, the hint holds the cause and the fix, and the fix runs."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    # previously: make the layer nn.Linear(2, 2)
    "a batch viewed with a fixed batch size (the last batch is smaller)": (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.data import TensorDataset, DataLoader\nbatch_size = 32\nds = TensorDataset(torch.randn(100, 1, 4, 4), torch.randint(0, 2, (100,)))\nfc = nn.Linear(16, 2)\nfor xb, yb in DataLoader(ds, batch_size=batch_size):\n    out = fc(xb.view(batch_size, -1))\n",
        8,
        [
            "was made by .view(batch_size, -1) with the batch size written down: this batch holds 4 samples of 16 numbers",
            "xb.view(xb.size(0), -1)",
        ],
        [("xb.view(batch_size, -1)", "xb.view(xb.size(0), -1)")],
    ),
    # previously: make the layer nn.Linear(100, 1)
    "data laid out a sample per column": (
        "import numpy as np\nimport torch\nimport torch.nn as nn\nfeatures = np.random.rand(3, 100).astype(np.float32)\nx = torch.from_numpy(features)\nmodel = nn.Linear(3, 1)\nout = model(x)\n",
        7,
        ["the data is laid out a sample per column", "x.T (which is (100, 3))"],
        [("model(x)", "model(x.T)")],
    ),
    # previously: keep the layers in nn.ModuleList
    "parameters kept as plain tensors": (
        "import torch\nimport torch.nn as nn\nclass LinReg(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.w = torch.randn(3, 1, requires_grad=True)\n        self.b = torch.zeros(1, requires_grad=True)\n    def forward(self, x):\n        return x @ self.w + self.b\nmodel = LinReg()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        11,
        ["because self.w and self.b are plain tensors", "self.w = nn.Parameter(torch.randn(…))"],
        [
            ("torch.randn(3, 1, requires_grad=True)", "nn.Parameter(torch.randn(3, 1))"),
            ("torch.zeros(1, requires_grad=True)", "nn.Parameter(torch.zeros(1))"),
        ],
    ),
    # previously: add a forward to ModuleList
    "an nn.ModuleList called as a layer": (
        "import torch\nimport torch.nn as nn\nclass MLP(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)])\n    def forward(self, x):\n        return self.layers(x)\nout = MLP()(torch.randn(2, 4))\n",
        8,
        ["An nn.ModuleList only holds layers", "for layer in self.layers: x = layer(x)"],
        [
            (
                "        return self.layers(x)",
                "        for layer in self.layers:\n            x = layer(x)\n        return x",
            )
        ],
    ),
    # previously: a plain function goes in forward()
    "nn.Sequential given a list": (
        "import torch.nn as nn\nlayers = [nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)]\nmodel = nn.Sequential(layers)\n",
        3,
        ["was given one list of them", "nn.Sequential(*layers)"],
        [("nn.Sequential(layers)", "nn.Sequential(*layers)")],
    ),
    # previously: build the layer with in_channels=8
    "one-channel signals without their channel dimension": (
        "import torch\nimport torch.nn as nn\nconv = nn.Conv1d(1, 4, kernel_size=3)\nsignal = torch.randn(8, 100)\nout = conv(signal)\n",
        5,
        ["was read as one signal of 8 channels", "x.unsqueeze(1), which gives (8, 1, 100)"],
        [("conv(signal)", "conv(signal.unsqueeze(1))")],
    ),
    # previously: build it with batch_first=True
    "a batch_first Transformer given two batch sizes": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1, batch_first=True)\nsrc = torch.randn(2, 10, 16)\ntgt = torch.randn(3, 10, 16)\nout = model(src, tgt)\n",
        6,
        ["built with batch_first=True, so dim 0 of src and of tgt is the batch"],
        [("torch.randn(3, 10, 16)", "torch.randn(2, 7, 16)")],
    ),
    # previously: named cross_entropy
    "nll_loss given a column of targets": (
        "import torch\nimport torch.nn.functional as F\nlogp = torch.randn(4, 3).log_softmax(dim=1)\ny = torch.tensor([[0], [2], [1], [1]])\nloss = F.nll_loss(logp, y)\n",
        5,
        ["nll_loss (nn.NLLLoss) takes one class index per sample", "y.squeeze(1)"],
        [("F.nll_loss(logp, y)", "F.nll_loss(logp, y.squeeze(1))")],
    ),
    # previously: reshape, unsqueeze or transpose one operand
    "* between the matrices of a product": (
        "import torch\nX = torch.randn(3, 4)\nW = torch.randn(4, 5)\nY = X * W\n",
        4,
        ["are (3, 4) and (4, 5): the shapes of a matrix product", "use @ (torch.matmul), which gives (3, 5)"],
        [("X * W", "X @ W")],
    ),
    # no hint before
    "an LSTM's h0 made batch-first": (
        "import torch\nimport torch.nn as nn\nlstm = nn.LSTM(input_size=4, hidden_size=20, batch_first=True)\nx = torch.randn(3, 5, 4)\nh0 = torch.zeros(1, 5, 20)\nc0 = torch.zeros(1, 5, 20)\nout, (h, c) = lstm(x, (h0, c0))\n",
        7,
        [
            "even with batch_first=True",
            "this batch has 3 sequences, and h0 has 5 in dim 1",
            "torch.zeros(1, x.size(0), 20)",
        ],
        [("torch.zeros(1, 5, 20)", "torch.zeros(1, x.size(0), 20)")],
    ),
    # no hint before
    "an LSTM given h0 alone": (
        "import torch\nimport torch.nn as nn\nlstm = nn.LSTM(4, 20, batch_first=True)\nx = torch.randn(3, 5, 4)\nh0 = torch.zeros(1, 3, 20)\nout, h = lstm(x, h0)\n",
        6,
        ["An nn.LSTM's state is a pair, (h0, c0)", "lstm(x, (h0, c0)) with c0 = torch.zeros_like(h0)"],
        [("out, h = lstm(x, h0)", "out, h = lstm(x, (h0, torch.zeros_like(h0)))")],
    ),
    # no hint before
    "a two-layer GRU given a one-layer h0": (
        "import torch\nimport torch.nn as nn\nrnn = nn.GRU(4, 20, num_layers=2, batch_first=True)\nx = torch.randn(3, 5, 4)\nh0 = torch.zeros(1, 3, 20)\nout, h = rnn(x, h0)\n",
        6,
        ["Dim 0 of h0 counts layers × directions: this layer has 2", "torch.zeros(2, 3, 20)"],
        [("h0 = torch.zeros(1, 3, 20)", "h0 = torch.zeros(2, 3, 20)")],
    ),
    # no hint before
    "token ids fed straight to an LSTM": (
        "import torch\nimport torch.nn as nn\nlstm = nn.LSTM(input_size=1, hidden_size=16, batch_first=True)\ntokens = torch.randint(0, 100, (4, 12, 1))\nout, _ = lstm(tokens)\n",
        5,
        ["This input holds integers (int64), token ids most likely", "nn.Embedding(vocab_size, dim)"],
        [
            (
                "out, _ = lstm(tokens)",
                "out, _ = nn.LSTM(8, 16, batch_first=True)(nn.Embedding(100, 8)(tokens.squeeze(-1)))",
            )
        ],
    ),
    # no hint before
    "token ids fed straight to a Transformer layer": (
        "import torch\nimport torch.nn as nn\nlayer = nn.TransformerEncoderLayer(d_model=32, nhead=4, batch_first=True)\ntokens = torch.randint(0, 1000, (2, 10))\nout = layer(tokens)\n",
        5,
        ["was given integer token ids", "nn.Embedding(vocab_size, 32)"],
        [("out = layer(tokens)", "out = layer(nn.Embedding(1000, 32)(tokens))")],
    ),
    # no hint before
    "a model class called with the data": (
        "import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n    def forward(self, x):\n        return self.fc(x)\nout = Net(torch.randn(3, 4))\n",
        9,
        [
            "Net(torch.randn(3, 4)) makes a new Net and hands torch.randn(3, 4) to its __init__",
            "model = Net()",
        ],
        [("out = Net(torch.randn(3, 4))", "out = Net()(torch.randn(3, 4))")],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hint_names_the_cause_and_its_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)


def test_a_tuple_with_no_recurrent_layer_in_sight_is_not_called_an_rnns_output() -> None:
    source = (
        "import torch\nimport torch.nn.functional as F\nout = torch.randn(2, 3)\nyb = ('cat', 'dog')\n"
        "loss = F.cross_entropy(out, yb)\n"
    )
    err = hinted(source, 5, ["got a tuple: take the tensor out of it"])
    assert "LSTM" not in err.hint
    with_rnn = "import torch.nn as nn\nrnn = nn.GRU(3, 4)\n" + source
    assert "nn.LSTM, nn.GRU and nn.RNN return a pair" in hinted(with_rnn, 7, []).hint


def test_unsqueeze_out_of_range_counts_the_tensors_own_dimensions() -> None:
    # a dim the factories' hint cannot read off the call: the range hint, told for unsqueeze
    err = hinted(
        "import torch\nx = torch.randn(5)\ndims = [2]\ny = x.unsqueeze(*dims)\n",
        4,
        ["for a tensor of 1 dimension"],
    )
    assert "has 2 dimensions" not in err.hint
