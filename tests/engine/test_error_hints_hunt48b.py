"""Hints a second hunt over learner snippets found missing, generic or wrong: per-pixel
cross_entropy given one-hot targets (it was told of a mask's channel of size 1) or channel-last
scores; a flatten that kept the batch read as one sample without its batch dimension because
the sizes multiplied out by chance; an autocast result used outside the block; a GradScaler
unscaled twice, never updated, or stepped with the loss; torch.distributions given a value
outside the support, a parameter outside its constraint (negative, NaN, a Beta's through its
Dirichlet), or asked for rsample() of a discrete distribution; optimizer parameter groups that
share parameters, a list mixing tensors and group dicts, a hyperparameter given as a string.
Each snippet raises as it does without gradwalk, at the line given, the hint names the
snippet's own variables, and the fix it gives runs. Near misses keep the other hints."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
SCALER = (
    H
    + "model = nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    + 'scaler = torch.amp.GradScaler("cpu")\n'
)
ONE_STEP = SCALER + "loss = model(torch.randn(8, 4)).pow(2).mean()\nscaler.scale(loss).backward()\n"
DIST = H + "from torch.distributions import Bernoulli, Beta, Categorical, Normal\n"

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, the edits that fix it)
    "one-hot per-pixel targets": (
        H
        + "scores = torch.randn(2, 4, 8, 8, requires_grad=True)\nlabels = torch.randint(0, 4, (2, 8, 8))\n"
        + "onehot = F.one_hot(labels, 4)\nloss = F.cross_entropy(scores, onehot)\n",
        7,
        ["onehot is (2, 8, 8, 4), a one-hot vector of 4 classes per pixel", "onehot.argmax(-1)"],
        [("F.cross_entropy(scores, onehot)", "F.cross_entropy(scores, onehot.argmax(-1))")],
    ),
    "one-hot per-pixel targets kept as probabilities": (
        H
        + "scores = torch.randn(2, 4, 8, 8, requires_grad=True)\nlabels = torch.randint(0, 4, (2, 8, 8))\n"
        + "onehot = F.one_hot(labels, 4)\nloss = F.cross_entropy(scores, onehot)\n",
        7,
        ["onehot.permute(0, 3, 1, 2).float()"],
        [("F.cross_entropy(scores, onehot)", "F.cross_entropy(scores, onehot.permute(0, 3, 1, 2).float())")],
    ),
    "channel-last segmentation scores": (
        H
        + "scores = torch.randn(2, 16, 16, 5, requires_grad=True)\nmask = torch.randint(0, 5, (2, 16, 16))\n"
        + "loss = F.cross_entropy(scores, mask)\n",
        6,
        ["scores is (2, 16, 16, 5), its 5 classes last", "F.cross_entropy(scores.permute(0, 3, 1, 2), mask)"],
        [("F.cross_entropy(scores, mask)", "F.cross_entropy(scores.permute(0, 3, 1, 2), mask)")],
    ),
    "a flatten that kept the batch, of a pooled size": (
        H
        + "x = torch.randn(4, 3, 32, 32)\n"
        + "features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))\n"
        + "fc = nn.Linear(8 * 32 * 32, 10)\nh = features(x)\nlogits = fc(h.view(h.size(0), -1))\n",
        8,
        ["its input, of shape (4, 2048), has 2048", "make the layer nn.Linear(2048, 10)"],
        [("nn.Linear(8 * 32 * 32, 10)", "nn.Linear(2048, 10)")],
    ),
    "an autocast result used outside the block": (
        H
        + 'model = nn.Linear(4, 4)\nx = torch.randn(2, 4)\nwith torch.autocast("cpu", dtype=torch.bfloat16):\n'
        + "    h = model(x)\nout = h @ torch.randn(4, 4)\n",
        8,
        ["so h, bfloat16 from the block, meets float32 here", "h.float()"],
        [("out = h @", "out = h.float() @")],
    ),
    "a GradScaler unscaled twice": (
        ONE_STEP + "scaler.unscale_(opt)\nscaler.unscale_(opt)\nscaler.step(opt)\n",
        10,
        ["scaler.unscale_(opt) may run once per optimizer", "it ran twice (lines 9, 10)"],
        [("scaler.unscale_(opt)\nscaler.unscale_(opt)\n", "scaler.unscale_(opt)\n")],
    ),
    "a GradScaler never updated": (
        SCALER
        + "for step in range(3):\n    opt.zero_grad()\n    loss = model(torch.randn(8, 4)).pow(2).mean()\n"
        + "    scaler.scale(loss).backward()\n    scaler.unscale_(opt)\n"
        + "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.step(opt)\n",
        11,
        ["this snippet never calls scaler.update()", "scaler.step(opt) and then scaler.update()"],
        [("    scaler.step(opt)\n", "    scaler.step(opt)\n    scaler.update()\n")],
    ),
    "a GradScaler stepped with the loss": (
        ONE_STEP + "scaler.step(loss)\n",
        9,
        ["scaler.step() takes the optimizer, scaler.step(opt), not loss"],
        [("scaler.step(loss)", "scaler.step(opt)")],
    ),
    "a Bernoulli's log_prob of a probability": (
        DIST
        + "probs = torch.tensor([0.2, 0.7])\nd = Bernoulli(probs)\nlp = d.log_prob(torch.tensor([0.5, 1.0]))\n",
        7,
        ["d.log_prob(torch.tensor([0.5, 1.0])) scores values Bernoulli can produce", "Boolean(): 0 or 1"],
        [("[0.5, 1.0]", "[0.0, 1.0]")],
    ),
    "a Categorical's log_prob of a class past the last": (
        DIST
        + "probs = torch.tensor([0.2, 0.3, 0.5])\nd = Categorical(probs=probs)\nlp = d.log_prob(torch.tensor([3]))\n",
        7,
        ["class indices from 0 to 2", "torch.tensor([3]) holds values outside it"],
        [("torch.tensor([3])", "torch.tensor([2])")],
    ),
    "rsample of a Categorical": (
        DIST
        + "logits = torch.randn(4, 3, requires_grad=True)\nd = Categorical(logits=logits)\na = d.rsample()\n",
        7,
        ["Categorical has no rsample()", "Draw with d.sample()", "RelaxedOneHotCategorical"],
        [("d.rsample()", "d.sample()")],
    ),
    "rsample of a Bernoulli gate": (
        DIST
        + "logits = torch.randn(5, requires_grad=True)\ngate = Bernoulli(logits=logits)\nz = gate.rsample()\n",
        7,
        [
            "Bernoulli has no rsample()",
            "gate.sample()",
            "RelaxedBernoulli(torch.tensor(0.5), logits=…).rsample()",
        ],
        [
            (
                "gate.rsample()",
                "torch.distributions.RelaxedBernoulli(torch.tensor(0.5), logits=logits).rsample()",
            )
        ],
    ),
    "a Normal with a negative scale": (
        DIST
        + "mu = torch.zeros(3, requires_grad=True)\nsigma = torch.tensor([1.0, -0.5, 2.0])\nd = Normal(mu, sigma)\n",
        7,
        [
            "Normal's scale must satisfy GreaterThan(lower_bound=0.0), and sigma holds",
            "F.softplus(sigma) + 1e-5",
        ],
        [("Normal(mu, sigma)", "Normal(mu, F.softplus(sigma) + 1e-5)")],
    ),
    "a Normal with a NaN scale": (
        DIST
        + 'mu = torch.zeros(3)\nlog_std = torch.tensor([0.0, float("nan"), 1.0])\nd = Normal(mu, log_std.exp())\n',
        7,
        ["Normal's scale (log_std.exp()) holds NaN", "set_detect_anomaly(True)"],
        [('float("nan")', "0.5")],
    ),
    "a Beta with a zero concentration": (
        DIST + "alpha = torch.tensor([2.0, 0.0])\nd = Beta(alpha, torch.ones(2))\n",
        6,
        ["Beta builds a Dirichlet of its parameters (alpha, torch.ones(2))", "Give Beta parameters that do"],
        [("[2.0, 0.0]", "[2.0, 0.5]")],
    ),
    "a group holding a later group's parameters": (
        H
        + "model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))\n"
        + 'opt = torch.optim.SGD([{"params": model.parameters()}, {"params": model[1].parameters(), "lr": 0.01}], lr=0.1)\n',
        5,
        [
            "model.parameters() already holds every parameter of model, model[1].parameters()'s among them",
            "special = {id(p) for p in model[1].parameters()}",
        ],
        [
            (
                '{"params": model.parameters()}',
                '{"params": [p for p in model.parameters() if id(p) not in {id(q) for q in model[1].parameters()}]}',
            )
        ],
    ),
    "a group holding a submodule's parameters by its own name": (
        H
        + "enc = nn.Linear(4, 4)\nhead = nn.Linear(4, 2)\nmodel = nn.Sequential(enc, head)\n"
        + 'opt = torch.optim.Adam([{"params": model.parameters()}, {"params": head.parameters(), "lr": 1e-4}], lr=1e-3)\n',
        7,
        ["model.parameters() already holds every parameter of model, head.parameters()'s among them"],
        [('{"params": model.parameters()}', '{"params": enc.parameters()}')],
    ),
    "a tensor beside group dicts": (
        H
        + "model = nn.Linear(4, 1)\n"
        + 'opt = torch.optim.SGD([model.weight, {"params": [model.bias], "lr": 0.01}], lr=0.1)\n',
        5,
        ["model.weight is a tensor beside the group dicts", "{'params': [model.weight]}"],
        [("[model.weight, {", '[{"params": [model.weight]}, {')],
    ),
    "lr as a string": (
        H + 'model = nn.Linear(4, 1)\nopt = torch.optim.Adam(model.parameters(), lr="1e-3")\n',
        5,
        ["lr is given as a string, '1e-3'", "lr=0.001"],
        [('lr="1e-3"', "lr=0.001")],
    ),
    "lr read from a config as a string": (
        H
        + 'config = {"lr": "3e-4", "weight_decay": 0.01}\nmodel = nn.Linear(4, 1)\nlr = config["lr"]\n'
        + 'opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=config["weight_decay"])\n',
        7,
        ["lr is given as a string, lr = '3e-4'", "float(lr)"],
        [("lr=lr", "lr=float(lr)")],
    ),
    "momentum as a string": (
        H + 'model = nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1, momentum="0.9")\n',
        5,
        ["momentum is given as a string, '0.9'", "momentum=0.9"],
        [('momentum="0.9"', "momentum=0.9")],
    ),
    "a positional table shorter than the sequences": (
        H
        + "pe = torch.randn(1, 100, 64)\nemb = nn.Embedding(1000, 64)\ntokens = torch.randint(0, 1000, (4, 128))\n"
        + "x = emb(tokens) + pe\n",
        7,
        [
            "emb(tokens) holds sequences of 128 tokens",
            "pe, (1, 100, 64), holds only 100 positions",
            "max_len of at least 128",
        ],
        [("torch.randn(1, 100, 64)", "torch.randn(1, 128, 64)")],
    ),
    "a positional table longer than the sequences": (
        H
        + "pos_enc = torch.randn(1, 100, 64)\nemb = nn.Embedding(1000, 64)\ntokens = torch.randint(0, 1000, (4, 20))\n"
        + "x = emb(tokens)\nx = x + pos_enc\n",
        8,
        ["x holds sequences of 20 tokens", "add only the first 20, pos_enc[:, :20]"],
        [("x + pos_enc", "x + pos_enc[:, :20]")],
    ),
    "a positional table of another width": (
        H
        + "pe = torch.randn(100, 64)\nemb = nn.Embedding(1000, 32)\ntokens = torch.randint(0, 1000, (4, 20))\n"
        + "x = emb(tokens) + pe[:20]\n",
        7,
        ["the positional table pe[:20] is (20, 64), 64 wide", "nn.Embedding(vocab, 64)"],
        [("nn.Embedding(1000, 32)", "nn.Embedding(1000, 64)")],
    ),
    "an integer src_key_padding_mask": (
        H
        + "layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, batch_first=True)\nx = torch.randn(2, 5, 16)\n"
        + "pad = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]])\nout = layer(x, src_key_padding_mask=pad.int())\n",
        7,
        ["A Transformer layer takes src_key_padding_mask as bool", "src_key_padding_mask=pad.bool()"],
        [("src_key_padding_mask=pad.int()", "src_key_padding_mask=pad.bool()")],
    ),
    "a key_padding_mask with a trailing dimension": (
        H
        + "attn = nn.MultiheadAttention(16, 2, batch_first=True)\nx = torch.randn(2, 5, 16)\n"
        + "pad = torch.zeros(2, 5, 1, dtype=torch.bool)\nout, _ = attn(x, x, x, key_padding_mask=pad)\n",
        7,
        ["key_padding_mask is (batch, key length)", "pad is (2, 5, 1)", "pad.squeeze(2)"],
        [("key_padding_mask=pad)", "key_padding_mask=pad.squeeze(2))")],
    ),
    "log_prob of values of another shape": (
        DIST
        + "mu = torch.zeros(4, 2)\nd = Normal(mu, torch.ones(4, 2))\nactions = torch.randn(4, 3)\n"
        + "lp = d.log_prob(actions)\n",
        8,
        ["d.log_prob(actions) scores each value against its own component", "= (4, 2)", "it is (4, 3)"],
        [("torch.randn(4, 3)", "torch.randn(4, 2)")],
    ),
    "a covariance that is not positive definite": (
        DIST
        + "from torch.distributions import MultivariateNormal\nmean = torch.zeros(2)\ncov = torch.tensor([[1.0, 2.0], [2.0, 1.0]])\n"
        + "d = MultivariateNormal(mean, covariance_matrix=cov)\n",
        8,
        ["covariance_matrix must be positive definite", "cov is not", "A @ A.T + 1e-3 * torch.eye(n)"],
        [("covariance_matrix=cov)", "covariance_matrix=cov @ cov.T + 1e-3 * torch.eye(2))")],
    ),
    "a two-channel output against a binary mask": (
        H
        + "net = nn.Conv2d(3, 2, 1)\nimg = torch.randn(2, 3, 8, 8)\nmask = torch.randint(0, 2, (2, 8, 8))\n"
        + "loss = F.binary_cross_entropy_with_logits(net(img), mask)\n",
        7,
        ["the input holds 2 numbers per position (dim 1, channels) and the target one", "use cross_entropy"],
        [("F.binary_cross_entropy_with_logits(net(img), mask)", "F.cross_entropy(net(img), mask)")],
    ),
    "a mask of another size than the output": (
        H
        + "net = nn.Conv2d(3, 1, 1)\nimg = torch.randn(2, 3, 32, 32)\nmask = torch.rand(2, 1, 16, 16).round()\n"
        + "loss = nn.BCEWithLogitsLoss()(net(img), mask)\n",
        7,
        ["32×32 against 16×16", "F.interpolate(target, size=(32, 32), mode='nearest')"],
        [("(net(img), mask)", "(net(img), F.interpolate(mask, size=(32, 32), mode='nearest'))")],
    ),
    "a parameters generator given to a second optimizer": (
        H
        + "model = nn.Linear(4, 1)\nparams = model.parameters()\nopt1 = torch.optim.SGD(params, lr=0.1)\n"
        + "opt2 = torch.optim.Adam(params, lr=0.01)\n",
        7,
        [
            "params is a generator, model.parameters() (line 5)",
            "what read it before (line 6)",
            "params = list(model.parameters())",
        ],
        [("params = model.parameters()", "params = list(model.parameters())")],
    ),
    "a group's lr as a string, met at step()": (
        H
        + "model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))\n"
        + 'opt = torch.optim.SGD([{"params": model[0].parameters(), "lr": "0.01"}, {"params": model[1].parameters()}], lr=0.1)\n'
        + "loss = model(torch.randn(2, 4)).sum()\nloss.backward()\nopt.step()\n",
        8,
        ["opt's parameter group 0 holds lr as a string, '0.01'", "'lr': 0.01"],
        [('"lr": "0.01"', '"lr": 0.01')],
    ),
    "a Normal built from integers": (
        DIST + "d = Normal(torch.tensor([0, 1]), torch.tensor([1, 1]))\ns = d.sample()\n",
        6,
        ["d is a Normal whose loc and scale are integer tensors", "torch.tensor([0.0, 1.0])"],
        [
            (
                "Normal(torch.tensor([0, 1]), torch.tensor([1, 1]))",
                "Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 1.0]))",
            )
        ],
    ),
    "a 1-D pooling longer than a channel-last sequence": (
        H + "x = torch.randn(4, 8, 3)\npool = nn.MaxPool1d(4)\nout = pool(x)\n",
        6,
        [
            "pool, nn.MaxPool1d(4), slides a window of 4",
            "x, (4, 8, 3), which is only 3 long",
            "pool(x.transpose(1, 2))",
        ],
        [("pool(x)", "pool(x.transpose(1, 2))")],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_hint_names_the_cause_and_its_fix_runs(name: str) -> None:
    source, line, phrases, edits = CASES[name]
    hinted(source, line, phrases)
    fixed_runs(source, edits)


def test_a_mask_with_a_channel_of_size_1_keeps_the_squeeze_hint() -> None:
    source = (
        H
        + "seg = nn.Conv2d(3, 5, 1)\nimg = torch.randn(2, 3, 16, 16)\nmask = torch.randint(0, 5, (2, 1, 16, 16))\n"
        + "loss = nn.CrossEntropyLoss()(seg(img), mask)\n"
    )
    err = hinted(source, 7, ["a channel of size 1", "squeeze(1)"])
    assert "one-hot" not in err.hint, err.hint


def test_an_image_without_its_batch_dimension_keeps_that_hint() -> None:
    # nn.Flatten() of a (C, H, W) image: the channels were taken for the batch
    source = (
        H
        + "model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Flatten(), nn.Linear(4 * 8 * 8, 2))\n"
        + "img = torch.randn(3, 8, 8)\nout = model(img)\n"
    )
    hinted(source, 6, ["one sample whose batch dimension is missing", "img.unsqueeze(0)"])


def test_half_precision_without_autocast_keeps_the_model_half_hint() -> None:
    source = H + "model = nn.Linear(4, 2).half()\nx = torch.randn(3, 4)\nout = model(x)\n"
    err = hinted(source, 6, ["x.to(torch.float16)"])
    assert "autocast result" not in err.hint, err.hint


def test_a_sum_of_other_tensors_keeps_the_broadcasting_hint() -> None:
    source = H + "a = torch.randn(4, 20, 64)\nb = torch.randn(1, 10, 64)\nc = a + b\n"
    err = hinted(source, 6, ["Broadcasting lines the shapes up from the right"])
    assert "positional" not in err.hint, err.hint


def test_a_string_compared_with_a_float_outside_an_optimizer_is_not_called_a_hyperparameter() -> None:
    source = H + 'threshold = "0.5"\nscore = 0.7\nok = score <= threshold\n'
    err = raised_as_plain(source, 6)
    assert err.hint is None or "is given as a string" not in err.hint, err.hint
