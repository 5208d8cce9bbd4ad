"""Hints for the errors learners of autograd hit most: each snippet raises as it does
without gradwalk (same type, line and message), and its hint names the cause and the fix
in the snippet's own terms."""

from __future__ import annotations

import warnings

import pytest

from engine import queries as q
from engine import record
from tests.engine.snippets import fixed_runs, plain_error

CASES = {
    # name: (snippet whose last line raises, exception type, phrases the hint must hold)
    # it spoke of cross_entropy and offered probability targets, which nll_loss refuses (hunt 64)
    "nll_loss given float class indices": (
        "import torch, torch.nn.functional as F\nlogits = torch.randn(4, 3, requires_grad=True)\n"
        "y = torch.tensor([0., 2., 1., 0.])\nloss = F.nll_loss(F.log_softmax(logits, 1), y)\n",
        "RuntimeError",
        ["class indices, integers of dtype torch.long", ".long()", "nll_loss takes indices only"],
    ),
    "nn.Linear fed NumPy float64": (
        "import torch\nimport numpy as np\nlayer = torch.nn.Linear(3, 1)\n"
        "x = torch.from_numpy(np.ones((2, 3)))\ny = layer(x)\n",
        "RuntimeError",
        ["x is float64", "the layer's weight is float32", "x.float()"],
    ),
    "nn.Linear fed integers": (
        "import torch\nlayer = torch.nn.Linear(3, 1)\nx = torch.tensor([[1, 2, 3]])\ny = layer(x)\n",
        "RuntimeError",
        ["x (made at line 3) is int64", "integer tensor", "x.float()"],
    ),
    # the conversion is on a line of its own, its result kept nowhere: "convert it with
    # x.float()" repeated what the snippet wrote
    "x.float() thrown away": (
        "import torch\nlayer = torch.nn.Linear(4, 1)\nx = torch.randint(0, 10, (8, 4))\nx.float()\ny = layer(x)\n",
        "RuntimeError",
        [
            "Line 4 (x.float()) makes a converted copy of x and throws it away",
            "Keep what it returns: x = x.float().",
            "x (made at line 3) is int64",
        ],
    ),
    "x.to(torch.float64) thrown away, the model converted in place": (
        "import torch\nmodel = torch.nn.Linear(4, 1)\nx = torch.randn(8, 4)\nx.to(torch.float64)\n"
        "model.double()\ny = model(x)\n",
        "RuntimeError",
        ["Line 4 (x.to(torch.float64)) makes a converted copy of x", "x = x.to(torch.float64)"],
    ),
    # a forward with no return, called inside the loss: "takes a tensor … pass a tensor"
    "a forward with no return inside the loss": (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 3)\n"
        "    def forward(self, x):\n        x = self.fc(x)\nmodel = Net()\n"
        "loss = F.cross_entropy(model(torch.randn(5, 4)), torch.tensor([0, 1, 2, 0, 1]))\n",
        "TypeError",
        ["model(…) is None here: Net.forward (line 8) has no return statement", "return x"],
    ),
    # nn.BCELoss says it in other words than BCEWithLogitsLoss: it had no hint
    "nn.BCELoss given (8, 1) and (8,)": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())\n"
        "y = torch.randint(0, 2, (8,)).float()\nloss = nn.BCELoss()(model(torch.randn(8, 4)), y)\n",
        "ValueError",
        ["here the input is (8, 1) and the target (8,)", "y.unsqueeze(1)"],
    ),
    # the input made on the call's line: the hint said to pass allow_unused=True, which gives None
    "autograd.grad with respect to a slice made after the output": (
        "import torch\nX = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)\nu = (X ** 2).sum(dim=1)\n"
        "g, = torch.autograd.grad(u.sum(), X[:, 0])\n",
        "RuntimeError",
        [
            "X[:, 0] is a new tensor, made on this line from X after u.sum() was computed",
            "torch.autograd.grad(u.sum(), X)[0][:, 0]",
        ],
    ),
    "autograd.grad with respect to a view made after the output": (
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = (x ** 2).sum()\n"
        "g, = torch.autograd.grad(y, x.view(-1, 1))\n",
        "RuntimeError",
        ["x.view(-1, 1) is a new tensor", "torch.autograd.grad(y, x)[0].view(-1, 1)"],
    ),
    # masking an element of a leaf: the hint was about an optimizer's update under no_grad
    "an element of a leaf set in place": (
        "import torch\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\nx[0] = 0.0\n",
        "RuntimeError",
        [
            "x[0] = 0.0 writes into x in place, and x is a leaf that requires grad",
            "y = x.clone(); y[0] = 0.0",
        ],
    ),
    "requires_grad_ on torch.arange": (
        "import torch\nx = torch.arange(5)\nx.requires_grad_()\n",
        "RuntimeError",
        ["torch.arange(5)", "int64", "x.float().requires_grad_()"],
    ),
    "backward of a loss built from argmax": (
        "import torch\nx = torch.randn(4, 3, requires_grad=True)\npred = x.argmax(dim=1).float()\n"
        "loss = pred.sum()\nloss.backward()\n",
        "RuntimeError",
        [
            "loss is not part of any graph",
            "Line 3 (pred = x.argmax(dim=1).float())",
            "a position has no gradient",
        ],
    ),
    "autograd.grad of a non-scalar": (
        "import torch\nx = torch.randn(3, requires_grad=True)\ny = x * 2\ng, = torch.autograd.grad(y, x)\n",
        "RuntimeError",
        ["torch.autograd.grad of y", "grad_outputs=torch.ones_like(y)"],
    ),
    "backward of a non-scalar names it": (
        "import torch\nx = torch.randn(3, requires_grad=True)\nout2 = x * 2\nout2.backward()\n",
        "RuntimeError",
        ["out2 holds several", "out2.sum()", "out2.backward(torch.ones_like(out2))"],
    ),
    "numpy() names the tensor": (
        "import torch\nw = torch.randn(3, requires_grad=True)\nout = w * 2\narr = out.numpy()\n",
        "RuntimeError",
        ["out is part of the autograd graph", "out.detach().numpy()"],
    ),
    "cross_entropy target out of range": (
        "import torch\nimport torch.nn.functional as F\nlogits = torch.randn(4, 3, requires_grad=True)\n"
        "target = torch.tensor([0, 3, 1, 2])\nloss = F.cross_entropy(logits, target)\n",
        "IndexError",
        ["class index, and 3 is not one", "logits (made at line 3) has shape (4, 3)", "0 to 2", "target - 1"],
    ),
    "CrossEntropyLoss target -1": (
        "import torch\nlogits = torch.randn(4, 3)\ntarget = torch.tensor([0, 1, 1, -1])\n"
        "loss = torch.nn.CrossEntropyLoss()(logits, target)\n",
        "IndexError",
        ["-1 is not one", "ignore_index=-1"],
    ),
    "cross_entropy batch sizes differ": (
        "import torch\nimport torch.nn.functional as F\nlogits = torch.randn(4, 3)\n"
        "target = torch.tensor([0, 1, 2])\nloss = F.cross_entropy(logits, target)\n",
        "ValueError",
        ["4 predictions but 3 targets", ".shape"],
    ),
    "BCELoss of logits": (
        "import torch\np = torch.randn(4, requires_grad=True)\nt = torch.ones(4)\n"
        "loss = torch.nn.BCELoss()(p, t)\n",
        "RuntimeError",
        ["between 0 and 1", "binary_cross_entropy_with_logits", "torch.sigmoid"],
    ),
    "one of unbind's views changed in place": (
        "import torch\nx = torch.ones(4, 2, requires_grad=True)\na, b = (x * 2).unbind(1)\na.add_(1)\n",
        "RuntimeError",
        ["a is one of the views unbind() returned", "(a = a + … rather than a.add_(1))", "a = a.clone()"],
    ),
    "one of split's views changed in place by index": (
        "import torch\nx = torch.randn(3, requires_grad=True)\nxs = (x * 1).split(1)\nxs[0].mul_(2)\n",
        "RuntimeError",
        ["xs[0] is one of the views split() returned", "(p = xs[0] * … rather than xs[0].mul_(2))"],
    ),
    "a view made under no_grad changed with grad on": (
        "import torch\nx = torch.ones(3, requires_grad=True)\nwith torch.no_grad():\n    v = x[:2]\nv.zero_()\n",
        "RuntimeError",
        ["v was made under torch.no_grad() as a view", "with torch.no_grad(): v.zero_()"],
    ),
    "integer timesteps into a Linear": (
        "import torch\nfrom torch import nn\nemb = nn.Sequential(nn.Linear(1, 8), nn.SiLU())\n"
        "t = torch.randint(0, 1000, (4, 1))\nh = emb(t)\n",
        "RuntimeError",
        ["t (made at line 4) is int64", "convert it with t.float()"],
    ),
    "multinomial of raw scores": (
        "import torch\ntorch.manual_seed(0)\nlogits = torch.randn(2, 5)\nidx = torch.multinomial(logits, 1)\n",
        "RuntimeError",
        ["logits holds negative numbers", "torch.softmax(logits, dim=-1)", "Categorical(logits=logits)"],
    ),
    "BCELoss of class indices as targets": (
        "import torch\np = torch.rand(4, requires_grad=True)\nt = torch.tensor([0.0, 1.0, 1.0, 2.0])\n"
        "loss = torch.nn.BCELoss()(p, t)\n",
        "RuntimeError",
        ["this target holds others (0, 1, 2)", "Classes numbered 0 to 2", "F.cross_entropy"],
    ),
    "BCELoss of labels -1 and 1": (
        "import torch\np = torch.rand(4, requires_grad=True)\nt = torch.tensor([-1.0, 1.0, 1.0, -1.0])\n"
        "loss = torch.nn.BCELoss()(p, t)\n",
        "RuntimeError",
        ["this target holds others (-1, 1)", "(y + 1) / 2"],
    ),
    "BCEWithLogitsLoss of integer targets": (
        "import torch\np = torch.randn(4, requires_grad=True)\nt = torch.tensor([0, 1, 1, 0])\n"
        "loss = torch.nn.BCEWithLogitsLoss()(p, t)\n",
        "RuntimeError",
        ["binary_cross_entropy_with_logits computes in floating point", "pass t.float()"],
    ),
    "float added in place to an integer tensor": (
        "import torch\nx = torch.arange(3)\nx += 0.5\n",
        "RuntimeError",
        ["integer tensor", "x = x.float()"],
    ),
    # the snippet's own `device = "cuda"` replaced gradwalk's: "use the variable device" was
    # the line that failed (hunt 64, left then; 65)
    "cuda the snippet chose itself, on a machine without one": (
        "import torch\ndevice = 'cuda'\nx = torch.ones(3, device=device)\n",
        "AssertionError",
        [
            "line 2 sets device to 'cuda' itself",
            "Write line 2 as device = 'cuda' if torch.cuda.is_available() else 'cpu'",
        ],
    ),
    "cuda:0 the snippet chose itself as a torch.device, on a machine without one": (
        'import torch\ndevice = torch.device("cuda:0")  # the GPU\nx = torch.ones(3).to(device)\n',
        "AssertionError",
        ["line 2 sets device to 'cuda' itself"],
    ),
    "cuda on a machine without one": (
        "import torch\nmodel = torch.nn.Linear(3, 1)\nmodel = model.to('cuda')\n",
        "AssertionError",
        ["no GPU", "model.to(device)", "torch.cuda.is_available()"],
    ),
    "optimizer given a computed tensor": (
        "import torch\nw = torch.randn(3, requires_grad=True) * 0.1\nopt = torch.optim.SGD([w], lr=0.1)\n",
        "ValueError",
        [
            "w is computed (its grad_fn is MulBackward0), not a leaf",
            "w = (torch.randn(3) * 0.1).requires_grad_()",
        ],
    ),
    "item() of a non-scalar": (
        "import torch\nx = torch.randn(3, requires_grad=True)\nloss = (x - 1) ** 2\nprint(loss.item())\n",
        "RuntimeError",
        ["loss holds several", "loss.mean().item()", "loss.tolist()"],
    ),
    "softmax told no dim": (
        "import torch\nx = torch.randn(4, 3, requires_grad=True)\np = torch.softmax(x)\n",
        "TypeError",
        ["softmax normalises along one dimension, and must be told which", "torch.softmax(x, dim=-1)"],
    ),
    "log_softmax told no dim": (
        "import torch\nx = torch.randn(4, 3)\nlp = x.log_softmax()\n",
        "TypeError",
        ["each row's exp then sums to 1", "torch.log_softmax(x, dim=-1)", "Not dim=0 for a batch"],
    ),
    "backward given a gradient of another shape": (
        "import torch, torch.nn as nn\nmodel = nn.Linear(3, 2)\nout = model(torch.randn(5, 3))\n"
        "out.backward(torch.ones(5))\n",
        "RuntimeError",
        [
            "The gradient to start from must have the shape of out, (5, 2); the one passed has (5,)",
            "Pass torch.ones_like(out)",
            "call backward() without a gradient",
        ],
    ),
    "autograd.grad given grad_outputs of another shape": (
        "import torch\nx = torch.randn(3, requires_grad=True)\ny = x * 2\n(g,) = torch.autograd.grad(y, x, torch.ones(2))\n",
        "RuntimeError",
        ["must have the shape of y, (3,); the one passed has (2,)", "grad_outputs=torch.ones_like(y)"],
    ),
    "MSELoss given class indices": (
        "import torch, torch.nn as nn\nlogits = torch.randn(4, 3, requires_grad=True)\n"
        "y = torch.tensor([0, 2, 1, 1])\nloss = nn.MSELoss()(logits, y)\n",
        "RuntimeError",
        [
            "the prediction has shape (4, 3) and the target (4,): one score per class against one class index",
            "F.cross_entropy(scores, target)",
        ],
    ),
    "l1_loss given a target with more values": (
        "import torch, torch.nn as nn\nmodel = nn.Linear(3, 2)\n"
        "loss = nn.functional.l1_loss(model(torch.randn(8, 3)), torch.randn(8, 3))\n",
        "RuntimeError",
        ["the prediction has shape (8, 2) and the target (8, 3)", "as many outputs as the target has values"],
    ),
    "an LSTM's (output, hidden) pair into a layer": (
        "import torch, torch.nn as nn\nlstm = nn.LSTM(4, 8, batch_first=True)\nfc = nn.Linear(8, 1)\n"
        "out = lstm(torch.randn(2, 5, 4))\ny = fc(out)\n",
        "TypeError",
        ["got a tuple: nn.LSTM, nn.GRU and nn.RNN return a pair, (output, hidden state)", "out, h = rnn(x)"],
    ),
    "BatchNorm given a batch of one": (
        "import torch, torch.nn as nn\nmodel = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))\n"
        "y = model(torch.randn(1, 4))\n",
        "ValueError",
        ["needs at least 2 samples, and this batch has 1", "drop_last=True", "model.eval()"],
    ),
    "an optimizer given the model": (
        "import torch, torch.nn as nn\nmodel = nn.Linear(3, 2)\nopt = torch.optim.SGD(model, lr=0.1)\n",
        "TypeError",
        ["not the model (a Linear)", "torch.optim.SGD(model.parameters(), lr=…)"],
    ),
    "nn.Linear after Conv2d and Flatten with the wrong in_features": (
        "import torch, torch.nn as nn\n"
        "model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(100, 10))\n"
        "y = model(torch.randn(2, 1, 28, 28))\n",
        "RuntimeError",
        [
            "nn.Linear(100, 10) takes 100 features per sample, and its input, of shape (2, 2704), has 2704",
            "make the layer nn.Linear(2704, 10) (after a convolution and nn.Flatten, 2704 is channels × height",
            "nn.LazyLinear(10)",
        ],
    ),
    "nn.Linear given unflattened images of another size": (
        "import torch, torch.nn as nn\nmodel = nn.Sequential(nn.Conv2d(1, 4, 3), nn.Linear(100, 10))\n"
        "y = model(torch.randn(2, 1, 28, 28))\n",
        "RuntimeError",
        ["(2, 4, 26, 26), still has the shape of an image: flatten each sample first", "nn.Linear(2704, 10)"],
    ),
    "float indices": (
        "import torch\nx = torch.randn(5, requires_grad=True)\ny = x[torch.tensor([0.0, 2.0])]\n",
        "IndexError",
        ["An index tensor must hold integers", "idx.long()"],
    ),
    "a loss class called with the tensors": (
        "import torch\nimport torch.nn as nn\npred = torch.randn(4, 1, requires_grad=True)\n"
        "y = torch.randn(4, 1)\nloss = nn.MSELoss(pred, y)\n",
        "RuntimeError",
        [
            "nn.MSELoss(pred, y) makes a new loss, with pred and y as its settings (size_average, reduce)",
            "criterion = nn.MSELoss(), then call it: criterion(pred, y)",
        ],
    ),
    "a loss class bound without parentheses": (
        "import torch\ncrit = torch.nn.CrossEntropyLoss\nlogits = torch.randn(4, 3, requires_grad=True)\n"
        "y = torch.tensor([0, 1, 2, 0])\nloss = crit(logits, y)\n",
        "RuntimeError",
        [
            "crit is the class nn.CrossEntropyLoss itself",
            "(weight, size_average)",
            "crit = nn.CrossEntropyLoss(), then call it: crit(logits, y)",
        ],
    ),
    "a layer class bound without parentheses": (
        "import torch\nlayer = torch.nn.Linear\nx = torch.randn(4, 3)\nout = layer(x)\n",
        "TypeError",
        ["layer is the class nn.Linear itself", "x as its settings (in_features)", "layer = nn.Linear(…)"],
    ),
    "backward of a number from .item()": (
        "import torch\nw = torch.randn(3, requires_grad=True)\nloss = (w ** 2).sum().item()\nloss.backward()\n",
        "AttributeError",
        # "call loss.backward()" was the line that had just failed: keep the tensor (hunt 64)
        [
            "loss is a Python float, not a tensor",
            "Keep the tensor in loss and put the number in a name of its own (loss_value = loss.item()",
        ],
    ),
    "backward of a NumPy loss": (
        "import torch\nimport numpy as np\nw = torch.randn(3, requires_grad=True)\n"
        "loss = np.sum(w.detach().numpy() ** 2)\nloss.backward()\n",
        "AttributeError",
        ["loss is a NumPy value (numpy.float32), not a tensor", "autograd sees nothing NumPy does"],
    ),
    "torch.cat given the tensors one by one": (
        "import torch\na = torch.randn(3, requires_grad=True)\nb = torch.randn(3)\nc = torch.cat(a, b)\n",
        "TypeError",
        ["torch.cat takes the tensors to join as one list (or tuple)", "torch.cat([a, b])"],
    ),
    "torch.stack given the tensors one by one, and a dim": (
        "import torch\na = torch.randn(2, 3, requires_grad=True)\nb = torch.randn(2, 3)\n"
        "c = torch.stack(a, b, dim=1)\n",
        "TypeError",
        ["torch.stack takes the tensors to join", "torch.stack([a, b], dim=1)"],
    ),
    "shape called like a method": (
        "import torch\nx = torch.randn(4, 3, requires_grad=True)\nn = x.shape()\n",
        "TypeError",
        ["shape is an attribute, not a method: write x.shape (no parentheses)"],
    ),
    "a method taken without its parentheses": (
        "import torch\nx = torch.randn(3, requires_grad=True)\ny = torch.exp(x).sum\ny.backward()\n",
        "AttributeError",
        ["y is a method, not the tensor it would give", "(x.sum rather than x.sum())"],
    ),
    "backward of autograd.grad's tuple": (
        "import torch\nx = torch.randn(3, requires_grad=True)\n"
        "grads = torch.autograd.grad((x ** 2).sum(), x, create_graph=True)\ngrads.backward()\n",
        "AttributeError",
        ["grads is a tuple, not a tensor", "take grads[0]"],
    ),
    "a layer called with two inputs": (
        "import torch\nlayer = torch.nn.Linear(3, 1)\na, b = torch.randn(4, 3), torch.randn(4, 3)\nout = layer(a, b)\n",
        "TypeError",
        ["Linear takes 1 input when called, and got 2", "torch.cat([a, b], dim=1)"],
    ),
    "a model called without one of its inputs": (
        "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, y):\n        return x + y\n"
        "out = Net()(torch.randn(4, 3))\n",
        "TypeError",
        ["Net's forward() also needs 'y'"],
    ),
    "a number assigned to a .grad": (
        "import torch\nw = torch.tensor(1.0, requires_grad=True)\n(w * 2).backward()\nw.grad = 0\n",
        "TypeError",
        ["this line gives it 0, a Python int", "w.grad = None"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_common_error_gets_a_true_hint_at_its_line(name: str) -> None:
    if "cuda" in name and __import__("torch").cuda.is_available():
        pytest.skip("the machine has a GPU: 'cuda' works")
    source, exc_type, phrases = CASES[name]
    err = q.errors(record(source))[0]
    with warnings.catch_warnings():  # plain PyTorch warns as the recorded run did (a loss's sizes)
        warnings.simplefilter("ignore")
        plain = plain_error(source)
    assert (err.exc_type, err.message) == (type(plain).__name__, str(plain)) and err.exc_type == exc_type
    assert err.line == source.count("\n"), err
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)


def test_an_error_raised_after_a_caught_op_error_is_not_explained_with_that_ops_operands() -> None:
    # The tape keeps the last op that failed, for hints that name its operands. A snippet
    # that caught that error and later raised another (here one of its own; a device clash
    # inside backward is another) got the old op's operands in its hint: "(matmul: a (made
    # at line 2) is on cpu, b (made at line 3) is on cpu)".
    message = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    source = (
        "import torch\na = torch.randn(3)\nb = torch.randn(4)\n"
        "try:\n    a @ b\nexcept RuntimeError:\n    pass\n"
        f"raise RuntimeError({message!r})\n"
    )
    err = q.errors(record(source))[0]
    assert err.line == 8 and err.message == message
    assert err.hint is not None and "different devices" in err.hint and "matmul" not in err.hint, err.hint
    # the op's own error, raised again from where it was caught, keeps its operands
    again = source.replace("    pass\n", "    raise\n").replace(f"raise RuntimeError({message!r})\n", "")
    assert "a @ b needs a's length (3)" in (q.errors(record(again))[0].hint or "")


def test_a_loss_made_with_class_weights_is_not_taken_for_a_class_called_with_its_inputs() -> None:
    source = (
        "import torch\nimport torch.nn as nn\nw = torch.tensor([1.0, 2.0, 3.0])\n"
        "logits = torch.randn(4, 3, requires_grad=True)\ny = torch.tensor([0, 1, 2, 5])\n"
        "loss = nn.CrossEntropyLoss(w)(logits, y)\n"
    )
    err = q.errors(record(source))[0]
    assert err.exc_type == "IndexError" and err.hint is not None, err
    assert "takes each target as a class index, and 5 is not one" in err.hint, err.hint
    assert "settings" not in err.hint, err.hint


def test_a_conversion_that_changed_nothing_is_not_blamed() -> None:
    # a.float() of a float32 a, kept nowhere, and the int64 b fails the matmul: a is no cause
    source = "import torch\na = torch.randn(3, 4)\na.float()\nb = torch.randint(0, 5, (4, 2))\nc = a @ b\n"
    err = q.errors(record(source))[0]
    assert err.hint is not None and "throws it away" not in err.hint, err.hint
    assert "b (made at line 4) is int64" in err.hint


def test_a_conversion_thrown_away_of_another_tensor_is_not_blamed() -> None:
    # y.float() is thrown away too, but the op failed on x: the hint is the dtype one
    source = (
        "import torch\nlayer = torch.nn.Linear(4, 1)\nx = torch.randint(0, 10, (8, 4))\n"
        "y = torch.randn(8, 1)\ny.float()\nout = layer(x)\n"
    )
    err = q.errors(record(source))[0]
    assert err.hint is not None and "throws it away" not in err.hint, err.hint
    assert "x (made at line 3) is int64" in err.hint


@pytest.mark.parametrize(
    ("name", "edits"),
    [
        ("one of unbind's views changed in place", [("a.add_(1)", "a = a + 1")]),
        ("one of split's views changed in place by index", [("xs[0].mul_(2)", "p = xs[0] * 2")]),
        ("a view made under no_grad changed with grad on", [("\nv.zero_()", "\n    v.zero_()")]),
        (
            "integer timesteps into a Linear",
            [("emb(t)", "emb(t.float())")],
        ),
        (
            "multinomial of raw scores",
            [("multinomial(logits, 1)", "multinomial(torch.softmax(logits, dim=-1), 1)")],
        ),
    ],
)
def test_the_fix_a_hint_gives_runs(name: str, edits: list[tuple[str, str]]) -> None:
    fixed_runs(CASES[name][0], edits)
