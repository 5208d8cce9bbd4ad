"""Hints for saving and loading a model (engine/explain_saving.py): a checkpoint whose keys
carry DataParallel's "module." prefix (or a wrapped model given a plain one), a checkpoint of
another size, a whole model pickled and refused by torch.load, torch.save of the state_dict
method, a BytesIO loaded without seek(0), load_state_dict given a model or a path, and the
report load_state_dict returns kept as the model. Each snippet raises as it does without
gradwalk, and each fix the hint gives runs, printing what plain Python prints."""

from __future__ import annotations

import pytest

from tests.engine.snippets import fixed_runs, hinted, raised_as_plain

SAVED = "import io\nimport torch\nimport torch.nn as nn\n"
TO_FILE = (
    "import os, tempfile\nimport torch\nimport torch.nn as nn\n"
    "path = os.path.join(tempfile.mkdtemp(), 'm.pt')\nmodel = nn.Linear(3, 1)\ntorch.save(model.state_dict(), path)\n"
)

CASES = {
    # name: (snippet, the line that raises, phrases the hint must hold, fixes: each a list of (wrong, right))
    "a checkpoint saved from DataParallel": (
        SAVED + "model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n"
        'saved = {"module." + k: v for k, v in model.state_dict().items()}\n'
        "buf = io.BytesIO(); torch.save(saved, buf); buf.seek(0)\n"
        "fresh = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n"
        "fresh.load_state_dict(torch.load(buf))\nprint(torch.equal(fresh[0].weight, model[0].weight))\n",
        8,
        [
            "starts with 'module.' ('module.0.weight' for '0.weight')",
            "nn.DataParallel",
            "none of its names match fresh's",
        ],
        [
            [
                (
                    "fresh.load_state_dict(torch.load(buf))",
                    "fresh.load_state_dict({k.removeprefix('module.'): v for k, v in torch.load(buf).items()})",
                )
            ]
        ],
    ),
    "a DataParallel model given a plain checkpoint": (
        SAVED
        + "model = nn.Linear(3, 1)\nbuf = io.BytesIO(); torch.save(model.state_dict(), buf); buf.seek(0)\n"
        "wrapped = nn.DataParallel(nn.Linear(3, 1))\nwrapped.load_state_dict(torch.load(buf))\n",
        7,
        ["wrapped wraps the model (nn.DataParallel)", "wrapped.module.load_state_dict(torch.load(buf))"],
        [[("wrapped.load_state_dict(", "wrapped.module.load_state_dict(")]],
    ),
    "a checkpoint with another number of classes": (
        SAVED + "old = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 10))\n"
        "buf = io.BytesIO(); torch.save(old.state_dict(), buf); buf.seek(0)\n"
        "new = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 5))\nnew.load_state_dict(torch.load(buf))\n"
        "print(new(torch.ones(1, 3)).shape)\n",
        7,
        [
            "the checkpoint's 2.weight is (10, 4) where new's is (5, 4), and 2.bias (10,) where it is (5,)",
            "Its layer 2 was saved as nn.Linear(4, 10), and new builds it as nn.Linear(4, 5)",
            "if k not in ('2.weight', '2.bias')}, strict=False)",
        ],
        [
            [("nn.Linear(4, 5))", "nn.Linear(4, 10))")],
            [
                (
                    "new.load_state_dict(torch.load(buf))",
                    "new.load_state_dict({k: v for k, v in torch.load(buf).items() if k not in ('2.weight', '2.bias')}, "
                    "strict=False)",
                )
            ],
        ],
    ),
    "a whole model pickled": (
        SAVED + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(3, 1)\n    def forward(self, x):\n        return self.fc(x)\n"
        "buf = io.BytesIO()\ntorch.save(Net(), buf)\nbuf.seek(0)\nmodel = torch.load(buf)\nprint(model(torch.ones(2, 3)).shape)\n",
        13,
        [
            "holds a whole Net, pickled by line 11 (torch.save(Net(), buf))",
            "torch.save(Net().state_dict(), buf)",
            "model = Net(); model.load_state_dict(torch.load(buf))",
            "a last resort",
        ],
        [
            [
                ("torch.save(Net(), buf)", "torch.save(Net().state_dict(), buf)"),
                ("model = torch.load(buf)", "model = Net(); model.load_state_dict(torch.load(buf))"),
            ]
        ],
    ),
    "the state_dict method saved": (
        SAVED
        + "model = nn.Linear(3, 1)\nbuf = io.BytesIO()\ntorch.save(model.state_dict, buf)\nbuf.seek(0)\n"
        "model.load_state_dict(torch.load(buf))\nprint(model.weight.shape)\n",
        8,
        ["Line 6 saves model.state_dict without its call", "torch.save(model.state_dict(), buf)"],
        [[("model.state_dict,", "model.state_dict(),")]],
    ),
    "a BytesIO loaded without seek(0)": (
        SAVED + "model = nn.Linear(3, 1)\nbuf = io.BytesIO()\ntorch.save(model.state_dict(), buf)\n"
        "state = torch.load(buf)\nprint(sorted(state))\n",
        7,
        ["torch.save at line 6 left buf's position at the end", "buf.seek(0), then torch.load(buf)"],
        [[("state = torch.load(buf)", "buf.seek(0)\nstate = torch.load(buf)")]],
    ),
    "load_state_dict given a model": (
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(3, 1)\nbackup = nn.Linear(3, 1)\n"
        "model.load_state_dict(backup)\nprint(torch.equal(model.weight, backup.weight))\n",
        5,
        ["backup is a model itself (a Linear)", "model.load_state_dict(backup.state_dict())"],
        [[("(backup)", "(backup.state_dict())")]],
    ),
    "load_state_dict given a path": (
        TO_FILE + "model.load_state_dict(path)\n",
        7,
        ["path is a string, a file's path", "model.load_state_dict(torch.load(path))"],
        [[("(path)\n", "(torch.load(path))\n")]],
    ),
    "the report load_state_dict returns called as the model": (
        SAVED + "buf = io.BytesIO(); torch.save(nn.Linear(3, 1).state_dict(), buf); buf.seek(0)\n"
        "model = nn.Linear(3, 1)\nmodel = model.load_state_dict(torch.load(buf))\nout = model(torch.randn(2, 3))\n"
        "print(out.shape)\n",
        7,
        [
            "Line 6 sets model to what load_state_dict returns",
            "drop the assignment, model.load_state_dict(torch.load(buf))",
        ],
        [[("model = model.load_state_dict", "model.load_state_dict")]],
    ),
    "the report load_state_dict returns kept from a new model": (
        TO_FILE + "net = nn.Linear(3, 1).load_state_dict(torch.load(path))\nnet.eval()\n",
        8,
        [
            "Line 7 sets net to what load_state_dict returns",
            "net = nn.Linear(3, 1), then net.load_state_dict(torch.load(path))",
        ],
        [
            [
                (
                    "net = nn.Linear(3, 1).load_state_dict(torch.load(path))",
                    "net = nn.Linear(3, 1)\nnet.load_state_dict(torch.load(path))",
                )
            ]
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_saving_mistake_is_told_in_the_snippets_terms(name: str) -> None:
    source, line, phrases, fixes = CASES[name]
    hinted(source, line, phrases)
    for fix in fixes:  # each fix the hint gives runs, and prints what plain Python prints
        fixed_runs(source, fix)


NEAR_MISSES = {
    # a checkpoint of another model: its keys differ by more than a prefix
    "another model's keys": (
        SAVED + "buf = io.BytesIO(); torch.save(nn.Linear(3, 1).state_dict(), buf); buf.seek(0)\n"
        "model = nn.Sequential(nn.Linear(3, 1))\nmodel.load_state_dict(torch.load(buf))\n",
        6,
    ),
    # nothing was ever written into the buffer: rewinding it would not help
    "an empty BytesIO": (SAVED + "buf = io.BytesIO()\nstate = torch.load(buf)\n", 5),
    # load_state_dict given a list: neither a model nor a path
    "load_state_dict given a list": (
        "import torch.nn as nn\nmodel = nn.Linear(3, 1)\nmodel.load_state_dict([1, 2])\n",
        3,
    ),
    # weights_only refuses a class of the snippet's that is not a model
    "a pickled object that is not a model": (
        SAVED
        + "class Config:\n    lr = 0.1\nbuf = io.BytesIO()\ntorch.save({'cfg': Config()}, buf)\nbuf.seek(0)\n"
        "state = torch.load(buf)\n",
        9,
    ),
}

SAVING_PHRASES = ("checkpoint", "pickled", "position", "load_state_dict takes", "load_state_dict returns")


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_a_similar_error_of_another_cause_gets_no_saving_hint(name: str) -> None:
    source, line = NEAR_MISSES[name]
    hint = raised_as_plain(source, line).hint or ""
    assert not any(phrase in hint for phrase in SAVING_PHRASES), hint
