"""retain-grad-after-backward: ``y.retain_grad()`` called once backward() had gone through
``y`` keeps nothing, and ``y.grad`` stays None with no warning. Said at the call, at the end of
the run; a call before backward(), or one a later backward() through a retained graph makes
good, stays silent."""

from __future__ import annotations

import pytest

from tests.engine.snippets import plain_stdout, recorded_silently, the_pitfall

_LATE = """import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
loss = (y ** 2).sum()
loss.backward()
y.retain_grad()
print(y.grad)
"""


def test_retain_grad_after_backward_is_said_at_the_call_with_the_line_that_made_the_tensor() -> None:
    said = the_pitfall(_LATE, "retain-grad-after-backward", 6)
    assert said.title == "y.retain_grad() comes after the backward() that went through y"
    assert "y.grad stays None" in said.message
    assert (
        said.fix == "Call y.retain_grad() right after y is computed (line 3: y = x * 3), before backward()."
    )
    assert plain_stdout(_LATE) == "None\n"


def test_the_fix_keeps_the_gradient_and_is_silent() -> None:
    fixed = _LATE.replace("y.retain_grad()\n", "").replace("y = x * 3\n", "y = x * 3\ny.retain_grad()\n")
    recorded_silently(fixed)
    assert plain_stdout(fixed) == "tensor([ 6., 12.])\n"


def test_a_late_call_in_a_loop_is_said_once() -> None:
    source = """import torch
w = torch.tensor([0.5, -1.0], requires_grad=True)
for step in range(3):
    h = w * 2
    loss = h.pow(2).sum()
    loss.backward()
    h.retain_grad()
    print(h.grad)
    w.grad = None
"""
    the_pitfall(source, "retain-grad-after-backward", 7)


@pytest.mark.parametrize(
    "source",
    [
        # a second backward() through the retained graph fills .grad after the late call
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x * 3\nloss = (y ** 2).sum()\n"
        "loss.backward(retain_graph=True)\ny.retain_grad()\nloss.backward()\nprint(y.grad)\n",
        # a leaf: retain_grad() does nothing, .grad is filled anyway
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n(x * 2).sum().backward()\n"
        "x.retain_grad()\nprint(x.grad)\n",
        # a new tensor of the same name, retained before its own backward()
        "import torch\nx = torch.tensor(2.0, requires_grad=True)\nfor _ in range(2):\n    y = x ** 2\n"
        "    y.retain_grad()\n    y.backward()\n    print(y.grad)\n",
    ],
)
def test_calls_that_keep_a_gradient_are_silent(source: str) -> None:
    recorded_silently(source)
