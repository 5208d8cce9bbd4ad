"""Hints for errors whose cause sits away from the line that raised: a model written wrong
(a forward with no return, a misspelt forward, a layer class in nn.Sequential, a layer built
inside forward, a CNN flattened with view(-1, K)), and what cross_entropy, a convolution or a 0-dim loss cannot take. Each
snippet raises at its last line as it does without gradwalk, and the hint names the cause
in the snippet's own terms."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import raised_as_plain

NET = (
    "import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.fc1 = nn.Linear(4, 8)\n        self.fc2 = nn.Linear(8, 1)\n"
)

CNN = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nclass CNN(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(1, 4, 3{pad})\n"
    "        self.fc = nn.Linear({k}, 10)\n    def forward(self, x):\n        x = F.max_pool2d(F.relu(self.conv(x)), 2)\n"
    "        x = x.view(-1, {k})\n        return self.fc(x)\nmodel = CNN()\n"
    "loss = F.cross_entropy(model(torch.randn(8, 1, 28, 28)), torch.randint(0, 10, (8,)))\n"
)

CASES = {
    # a linear layer on a GRU's h_n, (num_layers, batch, hidden): the hint was the generic batch one
    "scores computed from an RNN's final hidden state": (
        "import torch\nimport torch.nn as nn\ngru = nn.GRU(32, 64, batch_first=True)\nout, h = gru(torch.rand(4, 10, 32))\n"
        "logits = nn.Linear(64, 3)(h)\nloss = nn.CrossEntropyLoss()(logits, torch.randint(0, 3, (4,)))\n",
        "ValueError",
        [
            "The scores have shape (1, 4, 3)",
            "h_n is (num_layers, batch, hidden), even with batch_first=True",
            "h[-1]",
        ],
    ),
    # an LSTM's output and state taken as one tensor: the hint was None
    "an LSTM's returned pair indexed as a tensor": (
        "import torch\nimport torch.nn as nn\nclass RNNModel(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.lstm = nn.LSTM(5, 8, batch_first=True)\n        self.fc = nn.Linear(8, 2)\n"
        "    def forward(self, x):\n        out = self.lstm(x)\n        return self.fc(out[:, -1])\n"
        "y = RNNModel()(torch.randn(4, 6, 5))\n",
        "TypeError",
        ["out is a pair, (output, hidden state), not a tensor", "out, (h, c) = layer(x)"],
    ),
    # 4 x 14 x 14 per sample viewed as rows of 4 * 7 * 7: 32 rows for 8 targets
    "a CNN flattened with view(-1, K) into more rows": (
        CNN.format(pad=", padding=1", k="4 * 7 * 7"),
        "ValueError",
        [
            "Line 11 (x = x.view(-1, 4 * 7 * 7)) lets -1 make the batch size: each sample has 784 numbers",
            "the 8 samples became 32 rows of 196",
            "x = x.flatten(1)",
            "nn.Linear(784, …)",
        ],
    ),
    # 4 x 13 x 13 per sample: no whole number of rows of 4 * 6 * 6
    "a CNN flattened with view(-1, K) that does not divide": (
        CNN.format(pad="", k="4 * 6 * 6"),
        "RuntimeError",
        [
            "view(-1, 144) needs a multiple of 144 numbers, and this batch, 8 × 4 × 13 × 13, holds 5408",
            "676 per sample",
            "nn.Linear(676, …)",
        ],
    ),
    # name: (snippet whose last line raises, exception type, phrases the hint must hold)
    "a forward with no return": (
        NET + "    def forward(self, x):\n        x = self.fc2(torch.relu(self.fc1(x)))\n"
        "model = Net()\npred = model(torch.randn(2, 4))\n"
        "loss = nn.functional.mse_loss(pred, torch.randn(2, 1))\n",
        "AttributeError",
        [
            "pred is None: line 11 set it to what model(…) returned",
            "Net.forward (line 8) has no return statement",
        ],
    ),
    "forward misspelt": (
        NET
        + "    def foward(self, x):\n        return self.fc2(self.fc1(x))\nout = Net()(torch.randn(2, 4))\n",
        "NotImplementedError",
        ["Net defines foward (line 8), not forward", "Rename foward to forward"],
    ),
    "forward defined outside its class": (
        NET + "def forward(self, x):\n    return self.fc2(self.fc1(x))\nout = Net()(torch.randn(2, 4))\n",
        "NotImplementedError",
        ["forward (line 8) is defined outside class Net", "Indent it under the class"],
    ),
    "a layer class in nn.Sequential": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(4, 8), nn.ReLU, nn.Linear(8, 1))\n",
        "TypeError",
        ["was given the class nn.ReLU itself", "add the parentheses, nn.ReLU()"],
    ),
    "a function in nn.Sequential": (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        "model = nn.Sequential(nn.Linear(4, 8), F.relu, nn.Linear(8, 1))\n",
        "TypeError",
        ["for relu, its layer is nn.ReLU()"],
    ),
    "a layer built inside forward": (
        NET + "    def forward(self, x):\n        x = nn.ReLU(self.fc1(x))\n        return self.fc2(x)\n"
        "model = Net()\nout = model(torch.randn(2, 4))\n",
        "TypeError",
        [
            "x is an nn.ReLU layer, not a tensor: line 9 (x = nn.ReLU(self.fc1(x))) builds a new nn.ReLU",
            "x = torch.relu(self.fc1(x))",
            "self.act = nn.ReLU()",
        ],
    ),
    "uint8 images into a convolution": (
        "import torch\nimport torch.nn as nn\nx = torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8)\n"
        "out = nn.Conv2d(3, 4, 3)(x)\n",
        "RuntimeError",
        ["x (made at line 3) is uint8, the layer's weight is float32", "x = x.float() / 255"],
    ),
    "torch.Tensor given requires_grad": (
        "import torch\nw = torch.Tensor([0.5, -0.3], requires_grad=True)\n",
        "TypeError",
        ["torch.Tensor is a tensor class", "torch.tensor([...], requires_grad=True)"],
    ),
    "a sequence's scores into cross_entropy": (
        "import torch\nimport torch.nn.functional as F\nlogits = torch.randn(4, 7, 20, requires_grad=True)\n"
        "targets = torch.randint(0, 20, (4, 7))\nloss = F.cross_entropy(logits, targets)\n",
        "RuntimeError",
        [
            "logits is (4, 7, 20)",
            "F.cross_entropy(logits.permute(0, 2, 1), targets)",
            "logits.reshape(-1, 20)",
        ],
    ),
    "one-hot integer targets into cross_entropy": (
        "import torch\nimport torch.nn.functional as F\nscores = torch.randn(8, 3, requires_grad=True)\n"
        "y = F.one_hot(torch.randint(0, 3, (8,)), num_classes=3)\nloss = F.cross_entropy(scores, y)\n",
        "RuntimeError",
        ["y has the scores' shape (8, 3)", "y.argmax(1)", "y.float()"],
    ),
    "cross_entropy's arguments swapped": (
        "import torch\nimport torch.nn as nn\nscores = torch.randn(4, 3, requires_grad=True)\n"
        "y = torch.tensor([0, 2, 1, 1])\nloss = nn.CrossEntropyLoss()(y, scores)\n",
        "NotImplementedError",
        ["the first argument (y) is int64 of shape (4,)", "they are swapped", "criterion(scores, y)"],
    ),
    "loss.data[0] of a 0-dim loss": (
        "import torch\nw = torch.randn(3, requires_grad=True)\nloss = (w ** 2).sum()\nprint(loss.data[0])\n",
        "IndexError",
        ["loss is a 0-dim tensor", "loss.item()"],
    ),
    "torch.max with a dim compared with labels": (
        "import torch\nlogits = torch.randn(10, 3)\ny = torch.randint(0, 3, (10,))\n"
        "pred = torch.max(logits, dim=1)\nacc = (pred == y).float().mean()\n",
        "AttributeError",
        ["pred is what torch.max returns when given a dim: a pair (values, indices)", "pred.indices"],
    ),
}


# where the error is raised inside forward, the line is forward's (the snippet's innermost)
RAISED_AT = {
    "a layer built inside forward": 10,
    "an LSTM's returned pair indexed as a tensor": 10,
    "a CNN flattened with view(-1, K) that does not divide": 11,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_error_away_from_its_cause_gets_a_hint_naming_the_cause(name: str) -> None:
    source, exc_type, phrases = CASES[name]
    err = raised_as_plain(source, RAISED_AT.get(name, source.count("\n")))
    assert err.exc_type == exc_type, err
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)


def test_a_function_that_returns_its_value_is_not_blamed_for_a_none() -> None:
    # the None came from a dict lookup, not from the model: no hint about a missing return
    source = NET + (
        "    def forward(self, x):\n        return self.fc2(self.fc1(x))\nmodel = Net()\n"
        "pred = model(torch.randn(2, 4))\nlabels = {}.get('y')\nloss = nn.functional.mse_loss(pred, labels)\n"
    )
    err = q.errors(record(source))[0]
    assert "return statement" not in (err.hint or ""), err.hint


def test_a_sequence_models_view_is_not_taken_for_a_flattened_batch() -> None:
    # (N, T, C) scores viewed as (N * T, C) against (N,) targets: the fix is in the targets, not
    # in flatten(1), and no feature maps are flattened here
    source = (
        "import torch\nimport torch.nn.functional as F\nscores = torch.randn(4, 5, 10)\n"
        "y = torch.randint(0, 10, (4,))\nloss = F.cross_entropy(scores.view(-1, 10), y)\n"
    )
    err = raised_as_plain(source, 5)
    assert "flatten(1)" not in (err.hint or ""), err.hint


def test_a_pair_where_no_rnn_is_in_sight_is_not_taken_for_an_rnns_output() -> None:
    # a tuple of two tensors indexed as one, and no LSTM, GRU or RNN anywhere: no RNN hint
    source = (
        "import torch\nimport torch.nn as nn\nfc = nn.Linear(4, 2)\na = (torch.randn(3, 4), torch.randn(3, 4))\n"
        "out = fc(a[:, 0])\n"
    )
    err = raised_as_plain(source, 5)
    assert "hidden state" not in (err.hint or ""), err.hint
