"""Names written in other scripts (`λ`, `损失`, `h_ñ`: Python 3 takes any letter) are read as
names by the hints, as ASCII ones are: the hints' patterns took `[A-Za-z_]` for a name's first
letter, so `损失.backward()` of several numbers said "out holds several … loss = out.sum()",
a name the snippet never wrote, and the no-graph hint named the loss among the tensors to
create with requires_grad=True (hunt 65, pasted source)."""

from __future__ import annotations

import pytest

from tests.engine.snippets import hinted

T = "import torch\n"


@pytest.mark.parametrize(
    "ascii_name, name",
    [("lam", "λ"), ("loss", "损失"), ("h_n", "h_ñ")],
)
def test_a_non_ascii_name_is_named_in_the_hint_as_an_ascii_one_is(ascii_name: str, name: str) -> None:
    several = T + "w = torch.tensor([2.0, 1.0], requires_grad=True)\nNAME = w * 3\nNAME.backward()\n"
    for written in (ascii_name, name):
        hinted(
            several.replace("NAME", written),
            4,
            [
                f"and {written} holds several",
                f"{written}.sum() or {written}.mean()",
                f"{written}.backward(torch.ones_like({written}))",
            ],
        )
    no_graph = T + "NAME = torch.tensor(2.0)\nout = NAME * 3\nout.backward()\n"
    for written in (ascii_name, name):
        err = hinted(no_graph.replace("NAME", written), 4, [f"({written}: requires_grad=False)"])
        assert f"{written} = torch.tensor(..., requires_grad=True)" in err.hint
