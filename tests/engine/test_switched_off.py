"""Lines that look as if they switch something off and do not, or switch it off for longer
than meant: a bare ``torch.no_grad()`` statement, ``torch.set_grad_enabled(False)`` left on,
``module.requires_grad = False`` (an attribute nothing reads). Each is named at its line."""

from __future__ import annotations

import torch

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_error, recorded_silently


def test_a_bare_no_grad_statement_is_named_at_the_in_place_update_it_did_not_cover() -> None:
    source = (
        "import torch\nw = torch.randn(3, requires_grad=True)\nloss = (w ** 2).sum()\nloss.backward()\n"
        "torch.no_grad()\nw -= 0.1 * w.grad\n"
    )
    err = q.errors(record(source))[0]
    assert (err.exc_type, err.message, err.line) == ("RuntimeError", str(plain_error(source)), 6)
    assert (
        err.hint is not None and "Line 5 (torch.no_grad()) makes a no_grad context and drops it" in err.hint
    )
    assert "with torch.no_grad():" in err.hint


def test_set_grad_enabled_false_left_on_is_named_at_the_backward_it_broke() -> None:
    source = (
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(3, 1)\nx, y = torch.randn(10, 3), torch.randn(10, 1)\n"
        "torch.set_grad_enabled(False)\nprint(nn.functional.mse_loss(model(x), y).item())\n"
        "loss = nn.functional.mse_loss(model(x), y)\nloss.backward()\n"
    )
    err = q.errors(record(source))[0]
    assert (err.exc_type, err.line) == ("RuntimeError", 8)
    assert err.hint is not None
    assert (
        "Line 5 (torch.set_grad_enabled(False)) switched gradient recording off for every line after it"
        in err.hint
    )
    assert "torch.set_grad_enabled(True)" in err.hint
    # switched back on before the loss: the same backward() runs
    fixed = source.replace("loss = nn", "torch.set_grad_enabled(True)\nloss = nn")
    assert record(fixed).events[-1].status == "ok"


FROZEN_BY_ATTRIBUTE = """
import torch, torch.nn as nn
torch.manual_seed(0)
backbone, head = nn.Linear(4, 8), nn.Linear(8, 1)
backbone.requires_grad = False
model = nn.Sequential(backbone, nn.ReLU(), head)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(32, 4), torch.randn(32, 1)
for i in range(3):
    opt.zero_grad()
    nn.functional.mse_loss(model(X), y).backward()
    opt.step()
"""


def test_requires_grad_set_on_a_module_is_said_to_freeze_nothing() -> None:
    (p,) = q.pitfalls(record(FROZEN_BY_ATTRIBUTE))
    assert (p.kind, p.line) == ("requires-grad-set-on-module", 5)
    assert p.title == "backbone.requires_grad = False freezes nothing: backbone kept training"
    assert "an nn.Module has no requires_grad of its own" in p.message
    assert "backbone.requires_grad_(False)" in p.fix
    # the method freezes it: silent, and the backbone gets no gradient
    recorded_silently(
        FROZEN_BY_ATTRIBUTE.replace("backbone.requires_grad = False", "backbone.requires_grad_(False)")
    )


def test_settings_a_snippet_changes_for_good_are_put_back_after_its_run() -> None:
    # a notebook that recorded this snippet was left without gradients: every later
    # backward() in it, and the next run of a worker, failed
    printing = torch._tensor_str.get_printoptions()
    trace = record(
        "import torch\ntorch.set_grad_enabled(False)\ntorch.set_default_dtype(torch.float64)\n"
        "torch.autograd.set_detect_anomaly(True)\ntorch.set_printoptions(precision=2, sci_mode=True)\n"
        "torch.use_deterministic_algorithms(True, warn_only=True)\n"
    )
    assert trace.events[-1].status == "ok"
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32
    assert not torch.is_anomaly_enabled()
    # print options and deterministic algorithms too (a notebook's tensors printed with 2 digits)
    assert torch._tensor_str.get_printoptions() == printing
    assert not torch.are_deterministic_algorithms_enabled()
    assert not torch.is_deterministic_algorithms_warn_only_enabled()
    after = record("import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n")
    assert after.events[-1].status == "ok"
