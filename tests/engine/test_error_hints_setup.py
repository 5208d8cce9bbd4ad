"""Hints for how a training run is set up (engine/explain_setup.py): a scheduler that needs
its metric, heads that do not divide the width, a method added without its call, integer
class weights, nn.Transformer without batch_first, a batch norm of the wrong dimension,
segmentation targets with a channel, attention masks of the wrong shape, pack_padded_sequence
of a batch-first input. Each snippet raises as it does without gradwalk, and the fix the hint gives
runs."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import raised_as_plain

LOOP = (
    "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 1)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nx, y = torch.randn(8, 4), torch.randn(8, 1)\n"
)

CASES = {
    # the hint took (h0, c0) for an RNN's returned (output, hidden state)
    "a GRU given an LSTM's (h0, c0)": (
        "import torch\nimport torch.nn as nn\nrnn = nn.GRU(3, 5, batch_first=True)\nx = torch.randn(2, 4, 3)\n"
        "h0 = (torch.zeros(1, 2, 5), torch.zeros(1, 2, 5))\nout, h = rnn(x, h0)\n",
        6,
        [
            "nn.GRU keeps one hidden state, a tensor h0 of (num_layers, batch, hidden), and was given a pair",
            "Pass h0 alone: rnn(x, h0)",
        ],
        ("rnn(x, h0)", "rnn(x, h0[0])"),
    ),
    "a key_padding_mask transposed": (
        "import torch\nimport torch.nn as nn\nattn = nn.MultiheadAttention(32, 4, batch_first=True)\n"
        "x = torch.rand(2, 6, 32)\npad = torch.tensor([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0]]).bool()\n"
        "out, w = attn(x, x, x, key_padding_mask=pad.T)\n",
        6,
        ["2 rows here, and this mask has 6 in dim 0", "Pass mask.T"],
        ("key_padding_mask=pad.T", "key_padding_mask=pad"),
    ),
    "a causal mask made for the source's length": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=1, "
        "num_decoder_layers=1, batch_first=True)\nsrc, tgt = torch.rand(2, 10, 32), torch.rand(2, 7, 32)\n"
        "mask = nn.Transformer.generate_square_subsequent_mask(10)\nout = model(src, tgt, tgt_mask=mask)\n",
        6,
        [
            "This 2-D attention mask is (10, 10) and the sequence it masks needs (7, 7)",
            "generate_square_subsequent_mask(tgt.size(1))",
        ],
        ("generate_square_subsequent_mask(10)", "generate_square_subsequent_mask(tgt.size(1))"),
    ),
    "pack_padded_sequence of a batch-first input": (
        "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\nx = torch.rand(3, 5, 4)\n"
        "packed = pack_padded_sequence(x, torch.tensor([5, 3, 2]))\n",
        4,
        ["it took dim 1 (5) for the batch against 3 lengths", "batch_first=True"],
        ("torch.tensor([5, 3, 2]))", "torch.tensor([5, 3, 2]), batch_first=True)"),
    ),
    "nn.Transformer given (batch, sequence, features)": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=1, "
        "num_decoder_layers=1)\nout = model(torch.rand(2, 10, 32), torch.rand(2, 7, 32))\n",
        4,
        ["unless it is built with batch_first=True", "nn.Transformer(…, batch_first=True)"],
        ("num_decoder_layers=1)", "num_decoder_layers=1, batch_first=True)"),
    ),
    "BatchNorm1d given images": (
        "import torch\nimport torch.nn as nn\nbn = nn.BatchNorm1d(16)\nout = bn(torch.rand(8, 16, 4, 4))\n",
        4,
        ["nn.BatchNorm1d takes (N, C) or (N, C, L), and this input is 4-D", "use nn.BatchNorm2d(C)"],
        ("nn.BatchNorm1d(16)", "nn.BatchNorm2d(16)"),
    ),
    "BatchNorm2d given features": (
        "import torch\nimport torch.nn as nn\nbn = nn.BatchNorm2d(16)\nout = bn(torch.rand(8, 16))\n",
        4,
        ["nn.BatchNorm2d takes (N, C, H, W), and this input is 2-D", "use nn.BatchNorm1d(C)"],
        ("nn.BatchNorm2d(16)", "nn.BatchNorm1d(16)"),
    ),
    "segmentation targets with a channel": (
        "import torch\nimport torch.nn as nn\nlogits = torch.randn(2, 4, 8, 8)\n"
        "mask = torch.randint(0, 4, (2, 1, 8, 8))\nloss = nn.CrossEntropyLoss()(logits, mask)\n",
        5,
        ["targets (N, H, W) of class indices", "target.squeeze(1)"],
        ("(logits, mask)", "(logits, mask.squeeze(1))"),
    ),
    # name: (snippet, the line that raises, phrases the hint must hold, (wrong, right) to fix it)
    "ReduceLROnPlateau stepped without its metric": (
        LOOP + "sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\nfor epoch in range(3):\n"
        "    loss = nn.functional.mse_loss(model(x), y)\n    opt.zero_grad()\n    loss.backward()\n"
        "    opt.step()\n    sched.step()\n",
        12,
        ["its step() takes that metric: scheduler.step(val_loss)"],
        ("sched.step()", "sched.step(loss.item())"),
    ),
    "heads that do not divide the width": (
        "import torch.nn as nn\nlayer = nn.TransformerEncoderLayer(d_model=10, nhead=3)\n",
        2,
        ["10 / 3 is not whole", "nhead one of 2, 5, 10", "keep nhead=3 with d_model=12"],
        ("d_model=10", "d_model=12"),
    ),
    "loss.item added without its call": (
        LOOP + "total = 0.0\nfor i in range(3):\n    loss = nn.functional.mse_loss(model(x), y)\n"
        "    total += loss.item\n",
        9,
        ["loss.item without parentheses is the method itself", "call it, loss.item()"],
        ("loss.item\n", "loss.item()\n"),
    ),
    "integer class weights": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 3)\n"
        "crit = nn.CrossEntropyLoss(weight=torch.tensor([1, 2, 5]))\n"
        "loss = crit(model(torch.randn(8, 4)), torch.randint(0, 3, (8,)))\n",
        5,
        ["class weights must be floats", "weight=torch.tensor([1., 2., 5.])"],
        ("torch.tensor([1, 2, 5])", "torch.tensor([1., 2., 5.])"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_set_up_mistake_is_told_in_the_snippets_terms(name: str) -> None:
    source, line, phrases, (wrong, right) = CASES[name]
    err = raised_as_plain(source, line)
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)
    assert q.errors(record(source.replace(wrong, right))) == []  # the fix it gives runs
