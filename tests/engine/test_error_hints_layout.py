"""Shape, layout and value-kind errors a learner meets first (engine/explain_layout.py,
engine/explain_values.py): each keeps PyTorch's own error and gets a hint that says what
the layer, loss or call expects and the line that fixes it, with this input's shapes."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_error

CASES = {
    "bce_shape": (
        "import torch, torch.nn as nn\nlogits = torch.randn(32, 1, requires_grad=True)\ny = torch.randint(0, 2, (32,)).float()\nloss = nn.BCEWithLogitsLoss()(logits, y)\nloss.backward()\n",
        "here the input is (32, 1) and the target (32,)",
    ),
    "ce_2d_target": (
        "import torch, torch.nn.functional as F\nlogits = torch.randn(4, 3, requires_grad=True)\ny = torch.tensor([[0], [1], [2], [0]])\nloss = F.cross_entropy(logits, y)\nloss.backward()\n",
        "Here it has shape (4, 1). A column of indices, (N, 1), becomes (N,) with y.squeeze(1)",
    ),
    "conv_nhwc": (
        "import torch, torch.nn as nn\nconv = nn.Conv2d(3, 16, 3)\nimg = torch.randn(1, 28, 28, 3)\nout = conv(img)\n",
        "This input, [1, 28, 28, 3], has its 3 channels last",
    ),
    "conv_2d_input": (
        "import torch, torch.nn as nn\nconv = nn.Conv2d(1, 16, 3)\nimg = torch.randn(28, 28)\nout = conv(img)\n",
        "x.unsqueeze(0).unsqueeze(0) a batch of one",
    ),
    "empty_params": (
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = [nn.Linear(2, 2)]\nnet = Net()\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n",
        "not layers in a plain Python list or dict",
    ),
    "view_noncontig": (
        "import torch\nx = torch.randn(4, 6, requires_grad=True)\ny = x.t().view(24)\n",
        "Use .reshape(…), which copies when it must",
    ),
    "linear_3d_wrong": (
        "import torch, torch.nn as nn\nfc = nn.Linear(784, 10)\nimgs = torch.randn(16, 1, 28, 28)\nout = fc(imgs)\n",
        "and this input, (16, 1, 28, 28), still has the shape of an image: flatten each sample first, x.flatten(1)",
    ),
    "lstm_input_dim": (
        "import torch, torch.nn as nn\nlstm = nn.LSTM(10, 20, batch_first=True)\nx = torch.randn(5, 10)\nout, _ = lstm(x.unsqueeze(0).transpose(1, 2))\n",
        "built with input_size=10, and reads each step's features from the input's last dimension, which is 5 here",
    ),
    "embedding_float": (
        "import torch, torch.nn as nn\nemb = nn.Embedding(10, 4)\nidx = torch.tensor([1.0, 2.0])\nout = emb(idx)\n",
        "convert it with idx.long()",
    ),
    "embedding_oob": (
        "import torch, torch.nn as nn\nemb = nn.Embedding(10, 4)\nidx = torch.tensor([3, 10])\nout = emb(idx)\n",
        "This nn.Embedding has 10 rows, for the indices 0 to 9, and the input holds 10",
    ),
    "stack_shapes": (
        "import torch\na, b = torch.randn(3), torch.randn(4)\nc = torch.stack([a, b])\n",
        "entry 0 is [3] and entry 1 [4]",
    ),
    "cat_dims": (
        "import torch\na, b = torch.randn(2, 3), torch.randn(2, 4)\nc = torch.cat([a, b], dim=0)\n",
        "torch.cat joins tensors along dim=0, and every other dimension must agree: tensor 1 has 4 where the first has 3",
    ),
    "numpy_into_model": (
        "import torch, torch.nn as nn\nimport numpy as np\nmodel = nn.Linear(3, 1)\nx = np.random.rand(8, 3).astype('float32')\nout = model(x)\n",
        "linear() takes a tensor as its input (argument 1) and got a numpy.ndarray: convert the array first: torch.from_numpy(x).float()",
    ),
    "bool_ambiguous": (
        "import torch\nx = torch.randn(3, requires_grad=True)\nif x > 0:\n    y = x * 2\n",
        "Python asked this tensor for one True or False (if x > 0:), and it holds one per element",
    ),
    "dim_out_of_range": (
        "import torch, torch.nn.functional as F\nlogits = torch.randn(3, requires_grad=True)\np = F.softmax(logits, dim=1)\n",
        "The tensor has 1 dimension (dims -1 to 0), and this call asked for dim 1",
    ),
    "mean_bool": (
        "import torch\npred = torch.tensor([1, 0, 1])\ny = torch.tensor([1, 1, 1])\nacc = (pred == y).mean()\n",
        "Convert first: (pred == y).float().mean() for an accuracy",
    ),
    "mean_long": (
        "import torch\ncounts = torch.tensor([1, 2, 3])\navg = counts.mean()\n",
        "mean() of a long tensor is refused",
    ),
    "target_int_python": (
        "import torch, torch.nn as nn\nlogits = torch.randn(1, 3, requires_grad=True)\nloss = nn.CrossEntropyLoss()(logits, 2)\n",
        "got an int: wrap the number: torch.tensor([2])",
    ),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_layout_error_gets_a_hint_with_its_shapes(name: str) -> None:
    source, says = CASES[name]
    (error,) = q.errors(record(source))
    assert error.message == str(plain_error(source))
    assert error.hint is not None and says in error.hint, error.hint
