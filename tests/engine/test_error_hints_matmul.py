"""Hints for matrix products whose shapes do not fit (@, torch.matmul, mm, bmm, mv, dot,
inner): each snippet raises as it does without gradwalk, and its hint names the operands
as the snippet does, with their shapes, the sizes that must agree, and what to change.
PyTorch's own messages speak of what the product became inside (``batch2``, ``mat1``,
``src``), which a learner never wrote."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from engine.events import ErrorRaised

PRODUCTS = {
    # name: (snippet whose last line raises, phrases the hint must hold)
    "1-D @ 1-D of different lengths": (
        "a = torch.randn(3)\nb = torch.randn(4)\nc = a @ b\n",
        [
            "a @ b needs a's length (3) to equal b's length (4)",
            "a has shape (3,) and b has shape (4,)",
            "torch.outer(a, b)",
        ],
    ),
    "1-D @ 1-D of unnamed tensors, as the line writes them": (
        "c = torch.randn(3) @ torch.randn(4)\n",
        [
            "torch.randn(3) @ torch.randn(4) needs torch.randn(3)'s length (3) to equal torch.randn(4)'s length (4)"
        ],
    ),
    "an operand the line computes, by its side": (
        "x = torch.randn(3)\nw = torch.randn(4)\ny = (x * 2) @ w\n",
        ["needs the left operand's length (3) to equal w's length (4)", "the left operand has shape (3,)"],
    ),
    "a module's parameter @ its input": (
        "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.W = torch.nn.Parameter(torch.randn(3, 4))\n\n    def forward(self, x):\n"
        "        return self.W @ x\n\n\ny = M()(torch.randn(5))\n",
        ["self.W @ x needs self.W's last size (4) to equal x's length (5)", "self.W has shape (3, 4)"],
    ),
    "batched scores of queries and keys": (
        "q = torch.randn(2, 5, 16)\nk = torch.randn(2, 5, 8)\nscores = q @ k.transpose(1, 2)\n",
        [
            "q @ k.transpose(1, 2) needs q's last size (16) to equal k.transpose(1, 2)'s second-to-last size (8)"
        ],
    ),
    "a transpose that should not be there (X @ w.T with w already (3, 2))": (
        "X = torch.randn(4, 3)\nw = torch.randn(3, 2)\ny = X @ w.T\n",
        [
            "X @ w.T needs X's last size (3) to equal w.T's first size (2)",
            "w itself has shape (3, 2), which fits: leave out the transpose, X @ w.",
        ],
    ),
    "an operand passed by keyword": (
        "a = torch.randn(3)\nb = torch.randn(4)\nc = torch.matmul(a, other=b)\n",
        ["needs a's length (3) to equal b's length (4)"],
    ),
    "torch.dot of different lengths": (
        "a = torch.randn(3)\nb = torch.randn(4)\nc = torch.dot(a, b)\n",
        ["torch.dot(a, b) needs a's length (3) to equal b's length (4)"],
    ),
    "torch.inner of different last sizes": (
        "a = torch.randn(3)\nb = torch.randn(4)\nc = torch.inner(a, b)\n",
        ["torch.inner(a, b) needs a's last size (3) to equal b's last size (4)"],
    ),
    "bmm of different batch sizes": (
        "a = torch.randn(2, 3, 4)\nb = torch.randn(5, 4, 6)\nc = torch.bmm(a, b)\n",
        [
            "torch.bmm(a, b) needs a's first size (2), its number of matrices, to equal b's (5)",
            "a has shape (2, 3, 4) and b has shape (5, 4, 6)",
        ],
    ),
    "bmm of different inner sizes": (
        "a = torch.randn(2, 3, 4)\nb = torch.randn(2, 5, 6)\nc = a.bmm(b)\n",
        ["a.bmm(b) needs a's last size (4) to equal b's second size (5)", "a has shape (2, 3, 4)"],
    ),
    "bmm of a 2-D tensor": (
        "a = torch.randn(3, 4)\nb = torch.randn(2, 4, 6)\nc = torch.bmm(a, b)\n",
        [
            "torch.bmm(a, b) takes two batches of matrices (3-D tensors), and a has shape (3, 4)",
            "a.unsqueeze(0)",
        ],
    ),
    "torch.mv of a vector too long": (
        "W = torch.randn(3, 4)\nv = torch.randn(5)\ny = torch.mv(W, v)\n",
        [
            "torch.mv(W, v) needs W's last size (4) to equal v's length (5)",
            "W has shape (3, 4) and v has shape (5,)",
        ],
    ),
    "matrix @ vector of the other size": (
        "W = torch.randn(3, 4)\nv = torch.randn(3)\ny = W @ v\n",
        ["W @ v needs W's last size (4) to equal v's length (3)", "transpose it: W.T @ v"],
    ),
    "vector @ matrix of the other size": (
        "W = torch.randn(3, 4)\nv = torch.randn(4)\ny = v @ W\n",
        ["v @ W needs v's length (4) to equal W's first size (3)", "transpose it: v @ W.T"],
    ),
    "data @ weights made the wrong shape": (
        "x = torch.randn(4, 3)\nW = torch.randn(4, 2, requires_grad=True)\nh = x @ W\n",
        [
            "x @ W needs x's last size (3) to equal W's first size (4)",
            "transpose it: x.T @ W; if x is right (4 rows of 3), W needs 3 rows: make it of shape (3, 2) "
            "where it is made.",
        ],
    ),
    "matrix @ matrix the wrong way round": (
        "a = torch.randn(3, 4)\nb = torch.randn(5, 4)\nc = a @ b\n",
        ["a @ b needs a's last size (4) to equal b's first size (5)", "transpose it: a @ b.T"],
    ),
    "matmul of batches that do not broadcast": (
        "a = torch.randn(2, 3, 4)\nb = torch.randn(3, 4, 6)\nc = torch.matmul(a, b)\n",
        [
            "torch.matmul(a, b) needs a's sizes before its last two (2) to broadcast with b's (3)",
            "a has shape (2, 3, 4) and b has shape (3, 4, 6)",
            "1 in one of the two",
        ],
    ),
    "matrix @ a batch of matrices": (
        "a = torch.randn(3, 4)\nb = torch.randn(7, 2, 5, 6)\nc = a @ b\n",
        ["a @ b needs a's last size (4) to equal b's second-to-last size (5)", "b has shape (7, 2, 5, 6)"],
    ),
    "a product inside a function, by its parameters' names": (
        "def f(p, q):\n    return p @ q\n\nx = torch.randn(3)\nw = torch.randn(4)\ny = f(x, w)\n",
        ["p @ q needs p's length (3) to equal q's length (4)"],
    ),
    "a single number @ a vector": (
        "a = torch.tensor(2.0)\nb = torch.randn(4)\nc = a @ b\n",
        ["a is a single number (shape ())", "a * b"],
    ),
}


def _plain(source: str) -> tuple[BaseException, int]:
    """The exception ``source`` raises when run plainly, and the innermost line of it it
    was raised at."""
    try:
        exec(compile(source, "<plain>", "exec"), {"__name__": "__main__"})
    except Exception as exc:  # the snippet's own error, whatever it is
        tb, line = exc.__traceback__, 0
        while tb is not None:
            line = tb.tb_lineno if tb.tb_frame.f_code.co_filename == "<plain>" else line
            tb = tb.tb_next
        return exc, line
    raise AssertionError("the snippet did not raise")


def _error(source: str) -> ErrorRaised:
    """The snippet's error as gradwalk records it, checked to be the one it raises plainly."""
    err = q.errors(record(source))[0]
    plain, line = _plain(source)
    assert (err.exc_type, err.message, err.line) == (type(plain).__name__, str(plain), line), err
    return err


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_a_product_of_shapes_that_do_not_fit_names_its_operands(name: str) -> None:
    body, phrases = PRODUCTS[name]
    err = _error("import torch\n" + body)
    assert err.hint is not None, err
    for phrase in phrases:
        assert phrase in err.hint, (phrase, err.hint)


def test_a_layer_given_the_wrong_size_and_a_sum_that_does_not_broadcast_keep_their_hints() -> None:
    layer = _error("import torch\nlayer = torch.nn.Linear(5, 2)\nx = torch.randn(3, 4)\ny = layer(x)\n")
    assert layer.hint is not None and layer.hint.startswith(
        "nn.Linear(5, 2) takes 5 features per sample, and its input, of shape (3, 4), has 4. If the input is "
        "right, make the layer nn.Linear(4, 2)"
    ), layer.hint
    add = _error("import torch\na = torch.randn(2, 3)\nb = torch.randn(4)\nc = a + b\n")
    assert add.hint is not None and add.hint.startswith("Broadcasting lines the shapes up from the right")
