"""Hints a hunt over learner snippets found missing or generic: a loss (or its number) given to
an optimizer's step(), which takes a closure; pack_padded_sequence of lengths that do not go
down, or of an empty sequence; pad_packed_sequence given too short a total_length, or none, so
its output is shorter than the targets of the input's length; a PackedSequence handed to a
layer, and the lengths handed to an RNN as a keyword; torch.func.grad of a function that does not
return one number, or given argnums past its arguments; a 2-D batch read by an RNN as one
sequence; a scheduler or gradient clip without the number it needs; a leaf's requires_grad
switched off; per-step scores against one label per sequence; mse_loss of argmax's indices;
load_state_dict given a whole checkpoint; autograd.grad by a model; a forward that returns its
last layer; a DataLoader loop with a counter and no enumerate; torch.no_grad without its call;
SGD's nesterov without momentum; an LBFGS closure that returns nothing; a LayerNorm of another
width; cross_entropy of scores and targets of different lengths (the sequence-model hint it got
read them as a layout to permute); jacrev of a number; random_split's counts; functional_call
given bare parameters; an RNN's prediction at every step against one target per sequence; dict
samples unpacked as a pair; a half-precision model given float32 data; an optimizer loading
the model's weights. Each snippet raises as it does without gradwalk, at the line
given, the hint names the snippet's own variables, and the fix it gives runs. Near misses
keep the other hints."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted

H = "import torch\nimport torch.nn as nn\n"
STEP = (
    H
    + "model = nn.Linear(3, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    + "x, y = torch.randn(8, 3), torch.randn(8, 1)\n"
)
PACK = H + "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
FUNC = "import torch\nfrom torch.func import grad\n"

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    "a loss's number given to step()": (
        STEP + "loss = nn.functional.mse_loss(model(x), y)\nloss.backward()\noptimizer.step(loss.item())\n",
        8,
        [
            "optimizer.step() takes no loss: its only argument is a closure",
            "so it called loss.item(), a float",
            "loss.backward() (line 7) has computed them, so call optimizer.step()",
        ],
        [("optimizer.step(loss.item())", "optimizer.step()")],
    ),
    "a loss computed in step()'s brackets": (
        STEP
        + "for epoch in range(3):\n    optimizer.zero_grad()\n    loss = nn.functional.mse_loss(model(x), y)\n"
        + "    loss.backward()\n    optimizer.step(nn.functional.mse_loss(model(x), y))\n",
        10,
        [
            "so it called nn.functional.mse_loss(model(x), y), a tensor",
            "loss.backward() (line 9) has computed them, so call optimizer.step()",
        ],
        [("optimizer.step(nn.functional.mse_loss(model(x), y))", "optimizer.step()")],
    ),
    "an epoch given to step()": (
        STEP
        + "for epoch in range(2):\n    loss = nn.functional.mse_loss(model(x), y)\n    optimizer.zero_grad()\n"
        + "    loss.backward()\n    optimizer.step(epoch)\n",
        10,
        ["so it called epoch, an int. It takes no epoch or count", "call optimizer.step() with nothing"],
        [("optimizer.step(epoch)", "optimizer.step()")],
    ),
    "a loss given to step() as its closure keyword": (
        STEP + "loss = nn.functional.mse_loss(model(x), y)\nloss.backward()\noptimizer.step(closure=loss)\n",
        8,
        [
            "so it called loss, a tensor",
            "loss.backward() (line 7) has computed them, so call optimizer.step()",
        ],
        [("optimizer.step(closure=loss)", "optimizer.step()")],
    ),
    "pack_padded_sequence of lengths that do not go down": (
        PACK
        + "seqs = torch.randn(3, 5, 4)\nlengths = torch.tensor([2, 5, 3])\nrnn = nn.GRU(4, 8, batch_first=True)\n"
        + "packed = pack_padded_sequence(seqs, lengths, batch_first=True)\nout, h = rnn(packed)\n",
        7,
        [
            "lengths ([2, 5, 3]) do not go down",
            "pack_padded_sequence(seqs, lengths, batch_first=True, enforce_sorted=False)",
            "in the batch's own order",
        ],
        [("lengths, batch_first=True)", "lengths, batch_first=True, enforce_sorted=False)")],
    ),
    "pack_padded_sequence of an empty sequence": (
        PACK
        + "seqs = torch.randn(3, 5, 4)\nlengths = torch.tensor([5, 3, 0])\n"
        + "packed = pack_padded_sequence(seqs, lengths, batch_first=True, enforce_sorted=False)\n",
        6,
        ["a sequence of no steps has none to pack: lengths[2] is 0", "lengths.clamp(min=1)"],
        [("seqs, lengths,", "seqs, lengths.clamp(min=1),")],
    ),
    "pad_packed_sequence given too short a total_length": (
        PACK
        + "seqs = torch.randn(3, 6, 4)\nlengths = [5, 3, 2]\nrnn = nn.LSTM(4, 8, batch_first=True)\n"
        + "packed = pack_padded_sequence(seqs, lengths, batch_first=True)\nout, _ = rnn(packed)\n"
        + "padded, lens = pad_packed_sequence(out, batch_first=True, total_length=4)\n",
        9,
        [
            "the longest sequence here has 5 steps: it cannot be cut to 4",
            "total_length=seqs.size(1)",
            "pad_packed_sequence(out, batch_first=True) pads to 5",
        ],
        [("total_length=4", "total_length=seqs.size(1)")],
    ),
    "pad_packed_sequence's output against targets of the input's length": (
        PACK
        + "seqs = torch.randn(3, 6, 4)\ntargets = torch.randn(3, 6, 8)\nlengths = [5, 3, 2]\n"
        + "rnn = nn.LSTM(4, 8, batch_first=True)\n"
        + "packed = pack_padded_sequence(seqs, lengths, batch_first=True)\nout, _ = rnn(packed)\n"
        + "padded, lens = pad_packed_sequence(out, batch_first=True)\n"
        + "loss = nn.functional.mse_loss(padded, targets)\n",
        11,
        [
            "pad_packed_sequence (line 10) pads the output back only to the longest sequence, 5 steps",
            "seqs, the padded input, has 6",
            "pad_packed_sequence(out, batch_first=True, total_length=seqs.size(1))",
            "targets[:, :5]",
        ],
        [("batch_first=True)\nloss", "batch_first=True, total_length=seqs.size(1))\nloss")],
    ),
    "pad_packed_sequence's output, flattened for cross_entropy, sequence first": (
        PACK
        + "seqs = torch.randn(6, 3, 4)\ntargets = torch.randint(0, 5, (6, 3))\nlengths = [5, 3, 2]\n"
        + "rnn = nn.GRU(4, 5)\npacked = pack_padded_sequence(seqs, lengths)\nout, _ = rnn(packed)\n"
        + "out, _ = pad_packed_sequence(out)\n"
        + "loss = nn.functional.cross_entropy(out.reshape(-1, 5), targets.reshape(-1))\n",
        11,
        ["only to the longest sequence, 5 steps", "pad_packed_sequence(out, total_length=seqs.size(0))"],
        [("pad_packed_sequence(out)", "pad_packed_sequence(out, total_length=seqs.size(0))")],
    ),
    "a PackedSequence handed to a linear layer": (
        PACK
        + "seqs = torch.randn(3, 5, 4)\nlengths = torch.tensor([5, 3, 2])\nrnn = nn.GRU(4, 8, batch_first=True)\n"
        + "fc = nn.Linear(8, 2)\npacked = pack_padded_sequence(seqs, lengths, batch_first=True)\n"
        + "out, h = rnn(packed)\nlogits = fc(out)\n",
        10,
        [
            "out is a PackedSequence, not a tensor",
            "fc (an nn.Linear) takes a tensor",
            "out, lengths = pad_packed_sequence(out, batch_first=True)",
        ],
        [
            (
                "out, h = rnn(packed)\n",
                "out, h = rnn(packed)\nout, lengths = pad_packed_sequence(out, batch_first=True)\n",
            )
        ],
    ),
    "an LSTM given the lengths as a keyword": (
        H
        + "from torch.nn.utils.rnn import pad_sequence\nbatch = pad_sequence([torch.randn(5, 4), torch.randn(3, 4)], "
        + "batch_first=True)\nrnn = nn.LSTM(4, 8, batch_first=True)\nout, (h, c) = rnn(batch, lengths=[5, 3])\n",
        6,
        [
            "nn.LSTM takes no lengths",
            "nn.utils.rnn.pack_padded_sequence(batch, [5, 3], batch_first=True, enforce_sorted=False)",
        ],
        [
            (
                "rnn(batch, lengths=[5, 3])",
                "rnn(nn.utils.rnn.pack_padded_sequence(batch, [5, 3], batch_first=True, enforce_sorted=False))",
            )
        ],
    ),
    "torch.func.grad of a function that returns a vector": (
        FUNC + "def f(x):\n    return x ** 2\nx = torch.randn(3)\ng = grad(f)(x)\n",
        6,
        [
            "so f must return a 0-dim tensor, and it returned a tensor of 1 dimension",
            "torch.func.jacrev(f)(x)",
            "grad(lambda t: f(t).sum())(x)",
        ],
        [("grad(f)(x)", "grad(lambda t: f(t).sum())(x)")],
    ),
    "torch.func.grad of a function that returns .item()": (
        FUNC
        + "def loss_fn(w, x):\n    return (x @ w).sum().item()\nw = torch.randn(3)\nx = torch.randn(4, 3)\n"
        + "g = grad(loss_fn)(w, x)\n",
        7,
        ["loss_fn returned a float. .item(), float() or a NumPy value leaves the graph"],
        [(".sum().item()", ".sum()")],
    ),
    "torch.func.grad of a function that returns a pair": (
        FUNC
        + "def f(x):\n    return x.sin().sum(), x.cos()\nx = torch.randn(3)\ng = torch.func.grad(f)(x)\n",
        6,
        ["f returned a tuple", "grad(f, has_aux=True)(x)"],
        [("torch.func.grad(f)(x)", "torch.func.grad(f, has_aux=True)(x)")],
    ),
    "torch.func.grad of a gradient": (
        FUNC + "def loss(w):\n    return (w ** 3).sum()\nw = torch.randn(3)\ng2 = grad(grad(loss))(w)\n",
        6,
        ["grad(loss) is itself a gradient", "torch.func.hessian(loss)(w)"],
        [("grad(grad(loss))(w)", "torch.func.hessian(loss)(w)")],
    ),
    "a 2-D batch read by an LSTM as one sequence": (
        H
        + "rnn = nn.LSTM(input_size=10, hidden_size=20, batch_first=True)\nx = torch.randn(4, 10)\n"
        + "out, (h, c) = rnn(x)\nfc = nn.Linear(20, 2)\ny = fc(h)\n"
        + "loss = nn.functional.cross_entropy(y, torch.tensor([0, 1, 1, 0]))\n",
        8,
        [
            "x is 2-D, (4, 10), and rnn (an nn.LSTM, line 5) reads a 2-D input as one sequence without a batch",
            "the loss got 1 prediction for 4 targets",
            "rnn(x.unsqueeze(1))",
            "h[-1]",
        ],
        [("rnn(x)", "rnn(x.unsqueeze(1))"), ("fc(h)", "fc(h[-1])")],
    ),
    "StepLR without its step_size": (
        H
        + "model = nn.Linear(3, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "scheduler = torch.optim.lr_scheduler.StepLR(opt)\n",
        5,
        ["StepLR needs step_size", "torch.optim.lr_scheduler.StepLR(opt, step_size=10)"],
        [("StepLR(opt)", "StepLR(opt, step_size=10)")],
    ),
    "clip_grad_norm_ without its max_norm": (
        H
        + "model = nn.Linear(3, 1)\nloss = model(torch.randn(5, 3)).mean()\nloss.backward()\n"
        + "nn.utils.clip_grad_norm_(model.parameters())\n",
        6,
        ["clip_grad_norm_ needs max_norm", "nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"],
        [("(model.parameters())", "(model.parameters(), max_norm=1.0)")],
    ),
    "backward() of a tensor computed after its leaf's requires_grad was switched off": (
        "import torch\nx = torch.randn(3, requires_grad=True)\ny = (x ** 2).sum()\ny.backward()\n"
        + "x.requires_grad = False\nz = (x * 2).sum()\nz.backward()\n",
        7,
        [
            "Line 5 (x.requires_grad = False) switched gradients off for x",
            "z was computed from x after it, at line 6",
        ],
        [("x.requires_grad = False\n", "")],
    ),
    "cross_entropy of scores at every step against one label per sequence": (
        H
        + "seq = torch.randint(0, 100, (4, 12))\nemb = nn.Embedding(100, 16)\n"
        + "lstm = nn.LSTM(16, 32, batch_first=True)\nfc = nn.Linear(32, 2)\nlabels = torch.tensor([0, 1, 0, 1])\n"
        + "out, (h, c) = lstm(emb(seq))\nlogits = fc(out)\nloss = nn.functional.cross_entropy(logits, labels)\n",
        10,
        [
            "labels holds one class index per sequence, (4,), and logits is (4, 12, 2)",
            "reads as 12 classes at 2 positions",
            "F.cross_entropy(logits[:, -1], labels)",
        ],
        [("cross_entropy(logits, labels)", "cross_entropy(logits[:, -1], labels)")],
    ),
    "mse_loss of an argmax's class indices": (
        H
        + "model = nn.Linear(3, 2)\nx = torch.randn(4, 3)\ny = torch.tensor([0, 1, 1, 0])\nout = model(x)\n"
        + "pred = out.argmax(dim=1)\nloss = nn.functional.mse_loss(pred, y)\n",
        8,
        ["pred holds int64 indices, made by argmax at line 7", "F.cross_entropy(out, y)"],
        [("nn.functional.mse_loss(pred, y)", "nn.functional.cross_entropy(out, y)")],
    ),
    "load_state_dict given a whole checkpoint": (
        H
        + "import io\nnet = nn.Linear(4, 2)\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\nbuf = io.BytesIO()\n"
        + "torch.save({'model': net.state_dict(), 'opt': opt.state_dict()}, buf)\nbuf.seek(0)\n"
        + "ck = torch.load(buf)\nnet.load_state_dict(ck)\n",
        10,
        [
            "ck is a checkpoint of several parts, keyed 'model', 'opt'",
            "net.load_state_dict(ck['model'])",
        ],
        [("net.load_state_dict(ck)", "net.load_state_dict(ck['model'])")],
    ),
    "torch.autograd.grad by a model": (
        H
        + "model = nn.Sequential(nn.Linear(4, 2))\nloss = model(torch.randn(3, 4)).sum()\n"
        + "grads = torch.autograd.grad(loss, model)\n",
        5,
        [
            "was given model, a model (an nn.Sequential), not tensors",
            "torch.autograd.grad(loss, list(model.parameters()))",
        ],
        [("grad(loss, model)", "grad(loss, list(model.parameters()))")],
    ),
    "torch.func.grad's argnums past the arguments": (
        FUNC
        + "def f(w, x):\n    return (w * x).sum()\nw = torch.randn(3)\nxs = torch.randn(5, 3)\n"
        + "g = grad(f, argnums=2)(w, xs[0])\n",
        7,
        ["argnums=2 is past the 2 it is given: w is argnums=0, xs[0] is argnums=1"],
        [("argnums=2", "argnums=1")],
    ),
    "a forward that returns its last layer, not its output": (
        H
        + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + "        self.fc1 = nn.Linear(4, 8)\n        self.fc2 = nn.Linear(8, 1)\n    def forward(self, x):\n"
        + "        x = torch.relu(self.fc1(x))\n        return self.fc2\nmodel = Model()\n"
        + "out = model(torch.randn(2, 4))\nloss = out.sum()\n",
        13,
        [
            "out is the layer self.fc2 itself (an nn.Linear), not a tensor: line 12 set it to what model(…) returned",
            "Model.forward (line 8) returns self.fc2 without calling it",
            "return self.fc2(x)",
        ],
        [("return self.fc2\n", "return self.fc2(x)\n")],
    ),
    "a loss of a model whose forward returns its last layer": (
        H
        + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + "        self.fc = nn.Linear(4, 1)\n    def forward(self, inputs):\n        return self.fc\n"
        + "model = Model()\nloss = nn.functional.mse_loss(model(torch.randn(2, 4)), torch.randn(2, 1))\n",
        10,
        ["model(…) gives the layer self.fc itself (an nn.Linear)", "return self.fc(inputs)"],
        [("return self.fc\n", "return self.fc(inputs)\n")],
    ),
    "pack_sequence of sequences that do not go longest first": (
        PACK.replace("pack_padded_sequence, pad_packed_sequence", "pack_sequence")
        + "seqs = [torch.randn(2, 4), torch.randn(5, 4), torch.randn(3, 4)]\npacked = pack_sequence(seqs)\n",
        5,
        ["the lengths of seqs ([2, 5, 3]) do not go down", "pack_sequence(seqs, enforce_sorted=False)"],
        [("pack_sequence(seqs)", "pack_sequence(seqs, enforce_sorted=False)")],
    ),
    "a loop over a DataLoader with a counter and no enumerate": (
        H
        + "from torch.utils.data import TensorDataset, DataLoader\n"
        + "ds = TensorDataset(torch.randn(20, 4), torch.randint(0, 2, (20,)))\nloader = DataLoader(ds, batch_size=5)\n"
        + "for i, (x, y) in loader:\n    print(i)\n",
        6,
        ["for i, (x, y) in loader: unpacks each batch itself", "for i, (x, y) in enumerate(loader):"],
        [("in loader:", "in enumerate(loader):")],
    ),
    "torch.no_grad without its call": (
        H + "model = nn.Linear(3, 1)\nwith torch.no_grad:\n    out = model(torch.randn(2, 3))\n",
        4,
        ["torch.no_grad is a class", "with torch.no_grad():"],
        [("torch.no_grad:", "torch.no_grad():")],
    ),
    "SGD with nesterov and no momentum": (
        H + "model = nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1, nesterov=True)\n",
        4,
        [
            "so it needs momentum too",
            "torch.optim.SGD(model.parameters(), lr=0.1, nesterov=True, momentum=0.9)",
        ],
        [("nesterov=True)", "nesterov=True, momentum=0.9)")],
    ),
    "an LBFGS closure that returns nothing": (
        STEP
        + "lbfgs = torch.optim.LBFGS(model.parameters())\ndef closure():\n    lbfgs.zero_grad()\n"
        + "    loss = nn.functional.mse_loss(model(x), y)\n    loss.backward()\nlbfgs.step(closure)\n",
        11,
        ["lbfgs.step() calls closure (line 7)", "closure returns nothing (None)", "return loss"],
        [("    loss.backward()\n", "    loss.backward()\n    return loss\n")],
    ),
    "a LayerNorm built for another width": (
        H + "norm = nn.LayerNorm(10)\nh = torch.randn(4, 8)\nout = norm(h)\n",
        5,
        [
            "norm (nn.LayerNorm(10)) normalises the last dimension",
            "h, (4, 8), has 8 there",
            "nn.LayerNorm(8)",
        ],
        [("nn.LayerNorm(10)", "nn.LayerNorm(8)")],
    ),
    "cross_entropy of (batch, classes, positions) scores longer than the targets": (
        PACK
        + "seqs = [torch.randn(6, 2), torch.randn(4, 2), torch.randn(3, 2)]\nlabels = torch.randint(0, 3, (3, 6))\n"
        + "padded = nn.utils.rnn.pad_sequence(seqs, batch_first=True)\ngru = nn.GRU(2, 3, batch_first=True)\n"
        + "out, h = gru(pack_padded_sequence(padded, [6, 4, 3], batch_first=True))\n"
        + "out, _ = pad_packed_sequence(out, batch_first=True, total_length=8)\n"
        + "loss = nn.functional.cross_entropy(out.transpose(1, 2), labels)\n",
        10,
        [
            "they differ in length: the scores are (3, 3, 8), 8 positions, the targets (labels) (3, 6), 6",
            "out.transpose(1, 2)[:, :, :6]",
        ],
        [("out.transpose(1, 2), labels", "out.transpose(1, 2)[:, :, :6], labels")],
    ),
    "jacrev of a function that returns .item()": (
        FUNC
        + "def f(x):\n    return (x ** 2).sum().item()\nx = torch.randn(3)\nJ = torch.func.jacrev(f)(x)\n",
        6,
        ["torch.func.jacrev differentiates the tensors f returns, and f returned a float"],
        [(".sum().item()", ".sum()")],
    ),
    "random_split of counts that do not add up": (
        "import torch\nfrom torch.utils.data import TensorDataset, random_split\n"
        + "ds = TensorDataset(torch.randn(99, 3), torch.randn(99))\ntrain, val = random_split(ds, [80, 20])\n",
        4,
        ["ds's 99 samples", "[80, 20] adds up to 100", "[80, len(ds) - 80]"],
        [("[80, 20]", "[80, len(ds) - 80]")],
    ),
    "functional_call given the parameters without their names": (
        H
        + "from torch.func import functional_call\nmodel = nn.Linear(3, 1)\nx = torch.randn(4, 3)\n"
        + "out = functional_call(model, model.parameters(), (x,))\n",
        6,
        [
            "model.parameters() is a generator of bare tensors",
            "functional_call(model, dict(model.named_parameters()), (x,))",
        ],
        [("model.parameters(), (x,)", "dict(model.named_parameters()), (x,)")],
    ),
    "mse_loss of an RNN's prediction at every step against one target per sequence": (
        H
        + "gru = nn.GRU(8, 16, batch_first=True)\nx = torch.randn(4, 10, 8)\nout, h = gru(x)\nfc = nn.Linear(16, 1)\n"
        + "pred = fc(out)\ny = torch.randn(4, 1)\nloss = nn.functional.mse_loss(pred, y)\n",
        9,
        [
            "pred is (4, 10, 1), a value at each of 10 steps",
            "against a target (4, 1), one per sequence",
            "out[:, -1]",
        ],
        [("pred = fc(out)", "pred = fc(out[:, -1])")],
    ),
    "a DataLoader of dict samples unpacked as a pair": (
        "import torch\nfrom torch.utils.data import Dataset, DataLoader\nclass DS(Dataset):\n"
        + "    def __len__(self):\n        return 10\n    def __getitem__(self, i):\n"
        + "        return {'x': torch.randn(3), 'y': i}\nloader = DataLoader(DS(), batch_size=4)\n"
        + "for xb, yb in loader:\n    print(xb.shape)\n",
        10,
        ["unpacked its keys: xb is 'x', yb is 'y'", "xb, yb = batch['x'], batch['y']"],
        [("for xb, yb in loader:\n", "for batch in loader:\n    xb, yb = batch['x'], batch['y']\n")],
    ),
    "a half-precision model given float32 data": (
        H + "model = nn.Linear(3, 2)\nmodel.half()\nx = torch.randn(5, 3)\nout = model(x)\n",
        6,
        ["some operands are float16", "x.to(torch.float16), or keep the model float32"],
        [("model(x)", "model(x.to(torch.float16))")],
    ),
    "an optimizer loading the model's weights": (
        H
        + "model = nn.Linear(3, 1)\nopt = torch.optim.Adam(model.parameters(), lr=0.01)\n"
        + "opt.load_state_dict(model.state_dict())\n",
        5,
        ["opt is an optimizer", "model.state_dict() has no 'param_groups'"],
        [("opt.load_state_dict(model.state_dict())", "opt.load_state_dict(opt.state_dict())")],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hint_names_the_cause_and_its_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)


def test_a_tensor_called_on_a_step_line_is_not_blamed_on_step() -> None:
    # criterion names a tensor now: calling it fails in the snippet, before step() runs
    source = (
        STEP + "criterion = nn.MSELoss()\ncriterion = criterion(model(x), y)\n"
        "optimizer.step(criterion(model(x), y))\n"
    )
    err = hinted(source, 8, ["criterion names two things"])
    assert "takes no loss" not in err.hint, err.hint


def test_a_mismatch_after_pad_packed_sequence_of_other_sizes_keeps_the_broadcasting_hint() -> None:
    # the output is as long as the input (the longest sequence fills it): the sizes are another matter
    source = (
        PACK
        + "seqs = torch.randn(3, 6, 4)\nlengths = [6, 3, 2]\nrnn = nn.LSTM(4, 8, batch_first=True)\n"
        + "packed = pack_padded_sequence(seqs, lengths, batch_first=True)\nout, _ = rnn(packed)\n"
        + "padded, lens = pad_packed_sequence(out, batch_first=True)\nbias = torch.randn(7)\ny = padded + bias\n"
    )
    err = hinted(source, 11, [])
    assert "pad_packed_sequence" not in err.hint, err.hint


def test_a_switched_off_leaf_the_tensor_was_not_computed_from_is_not_blamed() -> None:
    # w never required grad; x's switch is no cause of z's missing graph
    source = (
        "import torch\nx = torch.randn(3, requires_grad=True)\nw = torch.randn(3)\nx.requires_grad = False\n"
        "z = (w * 2).sum()\nz.backward()\n"
    )
    err = hinted(source, 6, ["z is not part of any graph"])
    assert "switched gradients off" not in err.hint, err.hint


def test_mse_loss_of_integers_not_made_by_argmax_is_told_to_convert_them() -> None:
    source = (
        "import torch\nimport torch.nn.functional as F\npred = torch.tensor([1, 0, 2])\n"
        "y = torch.tensor([1, 1, 2])\nloss = F.mse_loss(pred, y)\n"
    )
    err = hinted(source, 5, ["pred and y both hold integers (int64)", "y.float()"])
    assert "argmax" not in err.hint, err.hint


def test_torch_argmax_names_the_scores_it_read() -> None:
    source = (
        "import torch\nimport torch.nn.functional as F\nscores = torch.randn(4, 3)\n"
        "labels = torch.tensor([0, 2, 1, 1])\npred = torch.argmax(scores, dim=1)\nloss = F.mse_loss(pred, labels)\n"
    )
    hinted(source, 6, ["made by argmax at line 5", "F.cross_entropy(scores, labels)"])


def test_integer_targets_of_a_bce_loss_are_converted_by_their_own_name() -> None:
    # the fix read `target.float()` whatever the snippet called its labels
    source = (
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(3, 1)\nX = torch.randn(8, 3)\n"
        "labels = torch.randint(0, 2, (8, 1))\nloss = nn.BCEWithLogitsLoss()(model(X), labels)\nprint(loss.shape)\n"
    )
    hinted(source, 6, ["the targets are integers", "pass labels.float()"])
    fixed_runs(source, [("model(X), labels)", "model(X), labels.float())")], "torch.Size([])\n")
