"""A traceback the snippet reads holds the frames it holds without gradwalk: none of gradwalk's
wrappers (``Tensor.backward``, ``torch.autograd.backward`` and ``grad``, a DataLoader's
``__next__``) and no hand-off to its tape mode (NOTE [Errors leave without gradwalk's frames])."""

from __future__ import annotations

import pytest

from tests.engine.snippets import assert_as_plain

# what a snippet reads of the traceback it caught: each frame's function, and its file (the
# snippet's own, or a library file by its base name)
READ = """
def frames(error):
    return [
        (f.name, True if f.filename == here else os.path.basename(f.filename))
        for f in traceback.extract_tb(error.__traceback__)
    ]
"""
HEAD = (
    "import inspect, os, traceback\nimport torch\nhere = inspect.currentframe().f_code.co_filename\n" + READ
)

CALLS = {
    "backward run twice": "y = (a * 2).sum()\ny.backward()\ntry:\n    y.backward()\nexcept RuntimeError as e:\n    print(frames(e))\n",
    "autograd.backward run twice": (
        "y = (a * 2).sum()\ntorch.autograd.backward(y)\n"
        "try:\n    torch.autograd.backward(y)\nexcept RuntimeError as e:\n    print(frames(e))\n"
    ),
    "autograd.grad run twice": (
        "y = (a * 2).sum()\ntorch.autograd.grad(y, a)\n"
        "try:\n    torch.autograd.grad(y, a)\nexcept RuntimeError as e:\n    print(frames(e))\n"
    ),
    "a hook that raises": (
        "def hook(g):\n    raise ValueError('no')\n"
        "y = a * 2\ny.register_hook(hook)\n"
        "try:\n    y.sum().backward()\nexcept ValueError as e:\n    print(frames(e))\n"
    ),
    "a saved tensor changed in place": (
        "y = a.exp()\ny.add_(1)\ntry:\n    y.sum().backward()\nexcept RuntimeError as e:\n    print(frames(e))\n"
    ),
    "a Dataset's __getitem__ that raises": (
        "class Data(torch.utils.data.Dataset):\n    def __len__(self):\n        return 4\n"
        "    def __getitem__(self, i):\n        return [1.0, 2.0][i]\n"
        "loader = torch.utils.data.DataLoader(Data(), batch_size=2)\n"
        "try:\n    for batch in loader:\n        (a * batch.sum()).sum().backward()\n"
        "except IndexError as e:\n    print(frames(e))\n"
    ),
}


@pytest.mark.parametrize("call", CALLS)
def test_a_caught_error_has_the_traceback_it_has_without_gradwalk(call: str) -> None:
    assert_as_plain(HEAD + "a = torch.tensor([1.0, 2.0], requires_grad=True)\n" + CALLS[call])
