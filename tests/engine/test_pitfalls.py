"""Each pitfall detector fires at the right line on its case, and stays silent on a near miss."""

from __future__ import annotations

import math
from typing import Any

import pytest

from engine import queries as q
from engine import record
from engine.events import Limits
from tests.conftest import case_source
from tests.engine.snippets import gan_loop, plain_stdout, recorded_silently, the_pitfall

EXPECTED_LINES = {
    "pitfall_forgot_zero_grad.py": ("missing-zero-grad", 14),
    "pitfall_loss_tensor_total.py": ("loss-tensor-accumulated", 12),
    "pitfall_eval_without_no_grad.py": ("graph-built-in-evaluation", 11),
    "pitfall_no_grad_without_eval.py": ("train-mode-in-evaluation", 11),
    "pitfall_broadcast_loss.py": ("broadcast-in-loss", 9),
    "pitfall_unregistered_layers.py": ("parameter-not-optimized", 10),
    "pitfall_nan_loss.py": ("non-finite-loss", 15),
    "pitfall_uninitialised.py": ("parameter-never-initialised", 10),
    "pitfall_step_without_gradients.py": ("step-without-gradients", 16),
    "pitfall_loop_variable_rebound.py": ("loop-variable-rebound", 17),
    "pitfall_nan_gradient.py": ("non-finite-gradient", 5),
    "pitfall_tensor_copy.py": ("tensor-copied-off-graph", 7),
    "pitfall_softmax_nll.py": ("nll-loss-without-log-softmax", 13),
    "pitfall_dead_relu.py": ("relu-units-dead", 18),
    "pitfall_vanishing_gradients.py": ("vanishing-gradients", 19),
    "pitfall_data_edit.py": ("data-edit-hidden-from-autograd", 16),
    "pitfall_activation_twice.py": ("activation-applied-twice", 14),
}


@pytest.mark.parametrize("file", sorted(EXPECTED_LINES))
def test_pitfall_at_its_line_with_an_explanation(file: str) -> None:
    kind, line = EXPECTED_LINES[file]
    found = q.pitfalls(record(case_source(file)))
    assert [(p.kind, p.line) for p in found] == [(kind, line)]
    p = found[0]
    assert p.title and len(p.message) > 60 and p.fix


@pytest.mark.parametrize("file", ["pitfall_forgot_zero_grad.py", "pitfall_nan_loss.py"])
def test_pitfalls_found_in_metrics_only_steps_keep_their_line(file: str) -> None:
    """Past the first step nothing is recorded in detail; the backward-time detectors then
    look the line up only when they report, and it is the same line."""
    kind, line = EXPECTED_LINES[file]
    found = q.pitfalls(record(case_source(file), limits=Limits(detail_steps=0)))
    assert [(p.kind, p.line) for p in found] == [(kind, line)]


def test_a_running_total_counts_the_iterations_it_was_not_seen_in() -> None:
    (p,) = q.pitfalls(record(TRAINING_TOTAL))
    assert "into a running total 10 times" in p.message


def test_missing_zero_grad_shows_the_leftover_gradient() -> None:
    p = q.pitfalls(record(case_source("pitfall_forgot_zero_grad.py")))[0]
    assert "optimizer step 1" in p.message and "‖grad‖ is now" in p.message
    assert p.fix.startswith("Call opt.zero_grad() once per step")


def test_zero_grad_named_without_its_parentheses_is_pointed_at() -> None:
    # `optimizer.zero_grad` reads the method and drops it: the loop looks right and never clears
    source = (
        "import torch\nw = torch.randn(3, requires_grad=True)\noptimizer = torch.optim.SGD([w], lr=0.1)\n"
        "for i in range(3):\n    optimizer.zero_grad\n    loss = (w ** 2).sum()\n    loss.backward()\n"
        "    optimizer.step()\n"
    )
    p, named = q.pitfalls(record(source))
    assert (p.kind, p.line) == ("missing-zero-grad", 7)
    assert (named.kind, named.line, named.title) == (
        "method-not-called",
        5,
        "optimizer.zero_grad is named, not called",
    )
    assert p.fix == (
        "Line 5 names optimizer.zero_grad without calling it, which does nothing: Python reads the "
        "method and drops it. Add the parentheses: optimizer.zero_grad()."
    )
    # with the parentheses, nothing to say
    assert q.pitfalls(record(source.replace("optimizer.zero_grad\n", "optimizer.zero_grad()\n"))) == []


LOOP_STEPS = (
    "import torch, torch.nn as nn\ntorch.manual_seed(0)\nnet = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))\n"
    "opt = torch.optim.SGD(net.parameters(), lr=0.1)\nx, y = torch.randn(16, 4), torch.randn(16, 1)\n"
    "for i in range(3):\n    opt.zero_grad()\n    loss = ((net(x) - y) ** 2).mean()\n    loss.backward()\n"
    "    opt.step()\n    print(loss.item())\nnet.eval()\n"
)


@pytest.mark.parametrize(
    ("call", "consequence"),
    [
        ("loss.backward()", "no gradient is computed"),
        ("opt.step()", "the optimizer never moves the parameters"),
        ("net.eval()", "dropout still drops"),
    ],
)
def test_a_loop_method_named_without_parentheses_is_a_line_that_does_nothing(
    call: str, consequence: str
) -> None:
    assert q.pitfalls(record(LOOP_STEPS)) == []
    line = LOOP_STEPS.splitlines().index(next(s for s in LOOP_STEPS.splitlines() if s.strip() == call)) + 1
    trace = record(LOOP_STEPS.replace(call, call[:-2]))
    (p,) = [p for p in q.pitfalls(trace) if p.kind == "method-not-called"]
    assert p.line == line and p.title == f"{call[:-2]} is named, not called"
    assert consequence in p.message and p.fix == f"Add the parentheses: {call}."


STEP_WITHOUT_GRADIENTS = {
    # name: (how the loop's body differs, the words the message must hold, the fix's)
    "backward() forgotten": (
        "    opt.zero_grad()\n    loss = ((w - 3) ** 2).sum()\n    opt.step()\n",
        "No backward() ran before this step",
        "Call loss.backward() after opt.zero_grad() and before opt.step()",
    ),
    "zero_grad() between backward() and step()": (
        "    loss = ((w - 3) ** 2).sum()\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n",
        "backward() did run (line 6): line 7 (opt.zero_grad()) cleared the gradients between it and this step",
        "Move opt.zero_grad() (line 7) to the start of the iteration, before the forward pass",
    ),
    "backward() of a loss that does not reach the optimizer's parameter": (
        "    opt.zero_grad()\n    v = torch.ones(1, requires_grad=True)\n    loss = ((v - 3) ** 2).sum()\n"
        "    loss.backward()\n    opt.step()\n",
        "backward() did run (line 8): the gradients were cleared between it and this step",
        "Call loss.backward() after opt.zero_grad() and before opt.step()",
    ),
    "backward named, not called": (
        "    opt.zero_grad()\n    loss = ((w - 3) ** 2).sum()\n    loss.backward\n    opt.step()\n",
        "No backward() ran before this step",
        "Line 7 names loss.backward without calling it",
    ),
}


@pytest.mark.parametrize("name", sorted(STEP_WITHOUT_GRADIENTS))
def test_a_step_that_found_no_gradients_says_nothing_was_updated(name: str) -> None:
    body, words, fix = STEP_WITHOUT_GRADIENTS[name]
    source = (
        "import torch\nw = torch.zeros(1, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
        f"for i in range(5):\n{body}print(w.item())\n"
    )
    trace = record(source)
    (p,) = [p for p in q.pitfalls(trace) if p.kind == "step-without-gradients"]
    assert p.line == source.splitlines().index("    opt.step()") + 1  # once, at the step
    assert p.title == "step() found no gradients: nothing was updated"
    assert words in p.message and fix in p.fix, (p.message, p.fix)
    assert q.stdout(trace) == "0.0\n"  # w never moved, as without gradwalk


def test_a_loop_variable_rebound_to_an_update_says_the_parameter_never_changes() -> None:
    source = (
        "import torch, torch.nn as nn\ntorch.manual_seed(0)\nmodel = nn.Linear(2, 1)\nX = torch.randn(8, 2)\n"
        "for i in range(3):\n    model.zero_grad()\n    loss = (model(X) - 1).pow(2).mean()\n    loss.backward()\n"
        "    with torch.no_grad():\n        for p in model.parameters():\n            p = p - 0.1 * p.grad  # step\n"
        "    print(round(loss.item(), 6))\n"
    )
    trace = record(source)
    (p,) = q.pitfalls(trace)
    assert (p.kind, p.line) == ("loop-variable-rebound", 11)
    assert p.title == "p = … makes a new tensor: the parameter never changes"
    assert "the tensor p held (the parameter) is never changed" in p.message
    assert p.fix.startswith(
        "Change the parameter in place, outside the graph: with torch.no_grad(): p -= 0.1 * p.grad"
    )
    losses = q.stdout(trace).split()
    assert len(losses) == 3 and len(set(losses)) == 1  # nothing trained, as without gradwalk


NAN_BEFORE_ANY_UPDATE = {
    # name: (snippet, the line of its backward())
    "no optimizer": (
        "import torch\nx = torch.tensor([-1.0, 2.0], requires_grad=True)\nloss = torch.log(x).sum()\nloss.backward()\n",
        4,
    ),
    "an optimizer not stepped yet": (
        "import torch\nw = torch.tensor([-1.0, 2.0], requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
        "loss = torch.log(w).sum()\nloss.backward()\nopt.step()\n",
        5,
    ),
}


@pytest.mark.parametrize("name", sorted(NAN_BEFORE_ANY_UPDATE))
def test_a_nan_loss_before_any_update_blames_an_op_not_the_learning_rate(name: str) -> None:
    source, line = NAN_BEFORE_ANY_UPDATE[name]
    (p,) = q.pitfalls(record(source))
    assert (p.kind, p.line) == ("non-finite-loss", line)
    said = p.message + p.fix
    assert "learning rate" not in said and "step" not in said, said
    assert "the loss is nan" in p.message and "log()" in p.message


def test_a_loss_that_overflows_in_training_says_how_many_steps_came_before_it() -> None:
    # lr 0.5 makes the loss inf after 19 updates: the loss the charts show at step 20. The
    # report said "At optimizer step 19", which read as the step before the one charted
    trace = record(case_source("pitfall_nan_loss.py"))
    (p,) = q.pitfalls(trace)
    steps = q.events_of(trace, "optimizer_step")
    first = next(e.step for e in steps if e.loss is not None and not math.isfinite(e.loss))
    assert first == 20
    assert p.message.startswith("After 19 optimizer steps the loss is inf."), p.message
    assert "a learning rate that is too high (here 0.5)" in p.message, p.message


@pytest.mark.filterwarnings("ignore:Using a target size")  # PyTorch warns too, for mse_loss and l1_loss
def test_a_loss_function_given_mismatched_shapes_says_what_they_broadcast_to() -> None:
    trace = record(POSITIVES["mse_loss of (N, 1) and (N,)"][0])
    (p,) = q.pitfalls(trace)
    assert "(4, 4)" in p.title and "4×4 = 16 terms" in p.message
    assert trace.events[-1].counts.unrecorded == 0


@pytest.mark.parametrize(
    ("source", "combines", "fix"),
    [
        (
            "pred = torch.randn(4, 1, requires_grad=True)\ny = torch.randn(4)\nloss = ((pred - y) ** 2).mean()",
            "a column of 4 values (4, 1) with a vector of 4 values (4,)",
            "pred.squeeze(-1) (or y.unsqueeze(-1))",
        ),
        (
            "target = torch.randn(4, 1)\np = torch.randn(4, requires_grad=True)\nloss = ((target - p) ** 2).mean()",
            "a column of 4 values (4, 1) with a vector of 4 values (4,)",
            "target.squeeze(-1) (or p.unsqueeze(-1))",
        ),
        (
            "out = torch.randn(4, requires_grad=True)\nlabels = torch.randn(4, 1)\nloss = F.mse_loss(out, labels)",
            "a vector of 4 predictions (4,) with a column of 4 targets (4, 1)",
            "labels.squeeze(-1) (or out.unsqueeze(-1))",
        ),
    ],
    ids=["pred - y", "target - p", "mse_loss(vector, column)"],
)
@pytest.mark.filterwarnings("ignore:Using a target size")  # mse_loss's own warning, as without gradwalk
def test_a_broadcast_in_loss_says_which_operand_is_the_column_and_names_it(
    source: str, combines: str, fix: str
) -> None:
    # The message said "a column of predictions with a vector of targets" and the fix
    # "pred.squeeze(-1)" whichever operand was the column and whatever the snippet called it.
    (p,) = q.pitfalls(record("import torch\nimport torch.nn.functional as F\n" + source + "\n"))
    assert p.kind == "broadcast-in-loss"
    assert combines in p.message, p.message
    assert fix in p.fix, p.fix


def test_unregistered_layers_are_named() -> None:
    p = q.pitfalls(record(case_source("pitfall_unregistered_layers.py")))[0]
    assert "net.layers[0].weight" in p.message and p.tensors


# the DCGAN tutorial's order (see gan_loop)
GAN = gan_loop(6)

# a step by hand in a loop over the parameters; rebinding `p` there instead is a pitfall
STEP_BY_HAND_IN_PLACE = """
import torch, torch.nn as nn
model = nn.Linear(2, 1)
for i in range(3):
    model.zero_grad()
    model(torch.ones(4, 2)).pow(2).mean().backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
"""

NEAR_MISSES = {
    "deliberate gradient accumulation": """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    for micro in range(3):                     # three micro-batches, then one step
        loss = model(torch.randn(8, 3)).pow(2).mean() / 3
        loss.backward()
    opt.step()
    opt.zero_grad()
""",
    "zero_grad without set_to_none": """
import torch, torch.nn as nn
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    opt.zero_grad(set_to_none=False)
    model(torch.randn(8, 3)).pow(2).mean().backward()
    opt.step()
""",
    "running total of floats": """
import torch, torch.nn as nn
model = nn.Linear(4, 1)
total = 0.0
for batch in range(10):
    loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
    total += loss.item()
print(total)
""",
    "loss summed over batches for one backward": """
import torch, torch.nn as nn
model = nn.Linear(4, 1)
total = 0
for batch in range(5):
    total = total + nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
total.backward()
""",
    "a sequence loss summed in a function, then backpropagated": """
import torch, torch.nn as nn
cell, head = nn.RNNCell(3, 4), nn.Linear(4, 3)
opt = torch.optim.Adam(list(cell.parameters()) + list(head.parameters()), lr=0.01)
seq, tgt = torch.randn(6, 2, 3), torch.randint(0, 3, (6, 2))
def train_epoch():
    opt.zero_grad()
    h = torch.zeros(2, 4)
    loss = 0
    for t in range(6):
        h = cell(seq[t], h)
        loss += nn.functional.cross_entropy(head(h), tgt[t])
    loss.backward()
    opt.step()
    return loss.item()
for epoch in range(3):
    train_epoch()
""",
    "a loss of several terms in a function": """
import torch, torch.nn as nn
def train_step(model, opt, x, y):
    opt.zero_grad()
    out = model(x)
    loss = nn.functional.mse_loss(out, y) + 0.01 * out.abs().mean() + 0.001 * model.weight.pow(2).sum() + 0.1
    loss.backward()
    opt.step()
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(5):
    train_step(model, opt, torch.randn(16, 3), torch.randn(16, 1))
""",
    "a sum of terms backpropagated unnamed": """
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
((w * 1).sum() + (w * 2).sum() + (w * 3).sum() + (w * 4).sum()).backward()
""",
    "a summed loss averaged before backward": """
import torch, torch.nn as nn
model = nn.Linear(3, 1)
def step():
    total = 0
    for i in range(4):
        total = total + model(torch.randn(2, 3)).pow(2).mean()
    (total / 4).backward()
step()
""",
    "residual blocks": """
import torch, torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(4))
    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        return x
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    net(torch.randn(2, 4)).pow(2).mean().backward()
    opt.step()
""",
    "evaluation done right": """
import torch, torch.nn as nn
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
model.eval()
with torch.no_grad():
    for _ in range(3):
        model(torch.randn(5, 4))
""",
    "dropout in training with grad": """
import torch, torch.nn as nn
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
model(torch.randn(5, 4)).sum().backward()
""",
    "(N,1) - (N,1) loss": """
import torch
X, y = torch.randn(32, 4), torch.randn(32, 1)
w = torch.zeros(4, 1, requires_grad=True)
loss = ((X @ w - y) ** 2).mean()
loss.backward()
""",
    "logits into cross-entropy": """
import torch, torch.nn as nn
model = nn.Linear(4, 3)
logits = model(torch.randn(6, 4))
probs = logits.softmax(dim=-1)               # used for display only
loss = nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2, 0, 1, 2]))
loss.backward()
""",
    "log_softmax into nll_loss": """
import torch, torch.nn.functional as F
logits = torch.randn(6, 3, requires_grad=True)
F.nll_loss(F.log_softmax(logits, dim=-1), torch.tensor([0, 1, 2, 0, 1, 2])).backward()
""",
    "frozen parameter outside the optimizer with no grad": """
import torch, torch.nn as nn
body, head = nn.Linear(4, 4), nn.Linear(4, 1)
for p in body.parameters():
    p.requires_grad_(False)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    head(body(torch.randn(8, 4))).pow(2).mean().backward()
    opt.step()
""",
    "a healthy learning rate": case_source("rent_regression.py"),
    "an old .grad kept across zero_grad": """
import torch, torch.nn as nn
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for i in range(3):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    g = model.weight.grad                      # kept to print after the step
    opt.step()
    print(i, loss.item(), g.norm().item())
""",
    "gradients from autograd.grad set as .grad": """
import torch, torch.nn as nn
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for i in range(4):
    loss = ((model(x) - y) ** 2).mean()
    if i % 2 == 0:
        grads = torch.autograd.grad(loss, list(model.parameters()))
        for p, g in zip(model.parameters(), grads):
            p.grad = g
    else:
        opt.zero_grad()
        loss.backward()
    opt.step()
""",
    "a step by hand that uses the loop variable's new value": """
import torch
ws = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
for i in range(3):
    loss = sum((w ** 2).sum() for w in ws)
    loss.backward()
    updated = []
    for w in ws:
        w = (w - 0.1 * w.grad).detach().requires_grad_()
        updated.append(w)
    ws = updated
""",
    "a step by hand in place, in a loop over the parameters": STEP_BY_HAND_IN_PLACE,
    "a GAN: the generator's backward reaches the discriminator": GAN,
    "a GAN zeroing without set_to_none": GAN.replace(".zero_grad()", ".zero_grad(set_to_none=False)"),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])


# a total that grows for 10 steps, of which the tape sees the adds of the first two only
TRAINING_TOTAL = """
import torch, torch.nn as nn
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0
for batch in range(10):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
    loss.backward()
    opt.step()
    total += loss
print(total / 10)
"""

POSITIVES = {
    "softmax into cross-entropy": (
        """
import torch, torch.nn as nn
model = nn.Linear(4, 3)
probs = model(torch.randn(6, 4)).softmax(dim=-1)
loss = nn.CrossEntropyLoss()(probs, torch.tensor([0, 1, 2, 0, 1, 2]))
loss.backward()
""",
        ("probabilities-into-cross-entropy", 5),
    ),
    "evaluation in train mode after metrics-only steps": (
        # NOTE [Light module tracking]: the eval loop runs after full detail ended (step 3)
        """
import torch, torch.nn as nn
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(10):
    opt.zero_grad()
    model(torch.randn(4, 4)).pow(2).mean().backward()
    opt.step()
with torch.no_grad():
    val = model(torch.randn(4, 4)).mean().item()
""",
        ("train-mode-in-evaluation", 10),
    ),
    "graph built in evaluation after metrics-only steps": (
        """
import torch, torch.nn as nn
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(10):
    opt.zero_grad()
    model(torch.randn(4, 4)).pow(2).mean().backward()
    opt.step()
model.eval()
val = model(torch.randn(4, 4)).mean().item()
""",
        ("graph-built-in-evaluation", 10),
    ),
    "running total in a training loop, past full detail": (TRAINING_TOTAL, ("loss-tensor-accumulated", 11)),
    "running total made anew each time, past full detail": (
        TRAINING_TOTAL.replace("total += loss", "total = total + loss"),
        ("loss-tensor-accumulated", 11),
    ),
    "running total added on the right, past full detail": (
        TRAINING_TOTAL.replace("total += loss", "total = loss + total"),
        ("loss-tensor-accumulated", 11),
    ),
    "running total in a function, never backpropagated": (
        """
import torch, torch.nn as nn
model = nn.Linear(3, 1)
def evaluate():
    total = 0
    for i in range(5):
        total += model(torch.randn(2, 3)).pow(2).mean()
    return total.item() / 5
print(evaluate())
""",
        ("loss-tensor-accumulated", 7),
    ),
    "mse_loss of (N, 1) and (N,)": (
        """
import torch, torch.nn.functional as F
pred = torch.randn(4, 1, requires_grad=True)
target = torch.randn(4)
loss = F.mse_loss(pred, target)
loss.backward()
""",
        ("broadcast-in-loss", 5),
    ),
    "nn.MSELoss of (N, 1) and (N,)": (
        """
import torch, torch.nn as nn
pred = torch.randn(4, 1, requires_grad=True)
loss = nn.MSELoss()(pred, torch.randn(4))
loss.backward()
""",
        ("broadcast-in-loss", 4),
    ),
    "l1_loss of (N,) and (N, 1)": (
        """
import torch, torch.nn.functional as F
pred = torch.randn(4, requires_grad=True)
loss = F.l1_loss(pred, torch.randn(4, 1))
loss.backward()
""",
        ("broadcast-in-loss", 4),
    ),
    "a GAN that never zeroes the discriminator's gradients": (
        GAN.replace("    optD.zero_grad()\n", ""),
        ("missing-zero-grad", None),
    ),
    "a forgotten zero_grad, with the gradients clipped before each step": (
        case_source("pitfall_forgot_zero_grad.py").replace(
            "    opt.step()", "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()"
        ),
        ("missing-zero-grad", 14),
    ),
    "a loop variable rebound to its parameter's update": (
        STEP_BY_HAND_IN_PLACE.replace("p -= 0.1 * p.grad", "p = p - 0.1 * p.grad"),
        ("loop-variable-rebound", 9),
    ),
    "optimizer over another model": (
        """
import torch, torch.nn as nn
model, other = nn.Linear(3, 1), nn.Linear(3, 1)
opt = torch.optim.SGD(other.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(torch.randn(4, 3)).pow(2).mean().backward()
    opt.step()
""",
        ("parameter-not-optimized", None),
    ),
}


@pytest.mark.filterwarnings("ignore:Using a target size")  # PyTorch warns too, for mse_loss and l1_loss
@pytest.mark.parametrize("name", sorted(POSITIVES))
def test_more_positives(name: str) -> None:
    source, (kind, line) = POSITIVES[name]
    found = [(p.kind, p.line) for p in q.pitfalls(record(source))]
    assert [k for k, _ in found] == [kind]
    if line is not None:
        assert found[0][1] == line


CHANGED_AFTER_SAVING = {
    # name: (snippet whose last line is the failing backward, what the hint must say)
    "an op's result": (
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = x.exp()\ny.add_(1)\ny.sum().backward()\n",
        "ExpBackward0 saved y for backward (line 3); then line 4 (y.add_(1)) changed it in place. "
        "backward() needs the value it saved: use the op's out-of-place form (y = y + … rather than "
        "y.add_(1)), or change a copy (y.clone()).",
    ),
    "a method, with a comment": (
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = x.sigmoid()\ny.clamp_(max=0.5)  # cap it\n"
        "y.sum().backward()\n",
        "then line 4 (y.clamp_(max=0.5)) changed it in place. backward() needs the value it saved: use "
        "the op's out-of-place form (y = y.clamp(…) rather than y.clamp_(max=0.5))",
    ),
    "an input the node saved": (
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = x * 2\nz = y * y\ny.add_(1)\nz.sum().backward()\n",
        "MulBackward0 saved y for backward (line 4); then line 5 (y.add_(1)) changed it in place.",
    ),
    "twice": (
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = x.exp()\ny += 1\ny *= 2\ny.sum().backward()\n",
        "then line 4 (y += 1) changed it in place (1 more in-place change followed)",
    ),
    "an element set": (
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = torch.sigmoid(x)\ny[0] = 0\ny.sum().backward()\n",
        "SigmoidBackward0 saved y for backward (line 3); then line 4 (y[0] = 0) changed it in place. "
        "backward() needs the value it saved: change a copy instead (y = y.clone() before line 4).",
    ),
    "a leaf": (
        "import torch\nw = torch.ones(3, requires_grad=True)\ny = (w * w).sum()\nwith torch.no_grad():\n"
        "    w.add_(1)\ny.backward()\n",
        "MulBackward0 saved w for backward (line 3); then line 5 (w.add_(1)) changed it in place. "
        "backward() needs the value it saved: change w after backward() has run",
    ),
    "an in-place layer": (
        "import torch, torch.nn as nn\nnet = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid(), nn.ReLU(inplace=True))\n"
        "out = net(torch.randn(2, 3))\nout.sum().backward()\n",
        "SigmoidBackward0 (in net.1) saved net.1's output for backward (line 3); then line 3 "
        "(out = net(torch.randn(2, 3))), in net.2, changed it in place. backward() needs the value it "
        "saved: drop inplace=True from net.2.",
    ),
    # two losses over one graph with opt.step() between their backward() calls (a GAN's, an
    # actor-critic's): the hint said "use y = y + 1 rather than y += 1", of code not in the snippet
    "an optimizer step between two backward() calls": (
        "import torch\nnet = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))\n"
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)\nout = net(torch.ones(4, 2))\n"
        "loss1 = out.mean()\nloss2 = (out ** 2).mean()\nopt.zero_grad()\nloss1.backward(retain_graph=True)\n"
        "opt.step()\nloss2.backward()\n",
        "AddmmBackward0 (in net.2) saved its mat2 for backward (line 4); then opt.step() (line 9) changed it "
        "in place: an optimizer updates net.2.weight in place, and this backward() still needs the value the "
        "forward used (its mat2, made from net.2.weight). Run every backward() over this graph before the "
        "step (sum the losses and call backward() once, or call each backward() first, then opt.step()), or "
        "compute the forward again after the step.",
    ),
    "through a view": (
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = x.exp()\nv = y[:2]\nv.mul_(2)\ny.sum().backward()\n",
        "ExpBackward0 saved y for backward (line 3); then line 5 (v.mul_(2)) changed it in place, through a "
        "view of it. backward() needs the value it saved: use the op's out-of-place form (v = v * … rather "
        "than v.mul_(2)), or take the view of a copy (y.clone()).",
    ),
}


@pytest.mark.parametrize("name", sorted(CHANGED_AFTER_SAVING))
def test_a_saved_tensor_changed_in_place_is_named_with_the_node_and_the_line(name: str) -> None:
    source, said = CHANGED_AFTER_SAVING[name]
    trace = record(source)
    err = q.errors(trace)[0]
    assert err.line == source.count("\n") and "modified by an inplace operation" in err.message
    assert err.hint and said in err.hint, err.hint
    assert err.node is not None and err.hint.startswith(q.node_names(trace)[err.node])  # the app opens it


def test_a_nan_gradient_caught_by_anomaly_mode_names_its_node() -> None:
    trace = record(
        "import torch\nwith torch.autograd.set_detect_anomaly(True):\n    x = torch.tensor([0.0], requires_grad=True)\n"
        "    y = torch.sqrt(x) * 0\n    y.backward()\n"
    )
    err = q.errors(trace)[0]
    assert err.node is not None and q.node_names(trace)[err.node] == "SqrtBackward0"


def test_an_element_set_is_on_the_tape_as_a_new_version_with_its_node() -> None:
    # `y[0] = 0` returns None: it was missing from the tape, and CopySlices from the graph
    source = "import torch\nx = torch.ones(3, requires_grad=True)\ny = x * 2\ny[0] = 0\ny.sum().backward()\n"
    trace = record(source)
    setitem = next(op for op in q.events_of(trace, "op") if op.name == "setitem")
    assert setitem.line == 4 and setitem.inplace and setitem.outputs != setitem.inputs[:1]
    assert [q.node_names(trace)[n] for n in setitem.nodes] == ["CopySlices"]
    plain: dict[str, Any] = {}
    exec(source, plain)
    assert q.final_grads(trace)["x"] == plain["x"].grad.tolist() == [0.0, 2.0, 2.0]


EXPLAINED = {
    # name: (snippet whose last line raises, a phrase the hint must hold)
    "a package that is not installed": (
        "import torch\nimport gradwalk_no_such_package\n",
        "'gradwalk_no_such_package' is not installed where gradwalk runs snippets",
    ),
    "a plotting library": (
        # (None in sys.modules: matplotlib cannot be imported, whether or not it is installed)
        "import sys\nsys.modules['matplotlib'] = None\nimport matplotlib.pyplot as plt\n",
        "gradwalk.log(",
    ),
    "integer leaf": (
        "import torch\nx = torch.tensor(2, requires_grad=True)\n",
        "torch.tensor(2.0, requires_grad=True)",
    ),
    "manual update of a leaf": (
        "import torch\nw = torch.ones(3, requires_grad=True)\n(w * 2).sum().backward()\nw -= 0.1 * w.grad\n",
        "with torch.no_grad():",
    ),
    "linear layer of the wrong size": (
        "import torch, torch.nn as nn\nlayer = nn.Linear(784, 256)\nout = layer(torch.randn(64, 10))\n",
        "nn.Linear(784, 256) takes 784 features per sample, and its input, of shape (64, 10), has 10",
    ),
    "input the output does not use": (
        "import torch\nx = torch.ones(1, requires_grad=True)\nz = torch.ones(1, requires_grad=True)\n"
        "g = torch.autograd.grad((x * 2).sum(), [x, z])\n",
        "allow_unused=True",
    ),
    "float class targets": (
        "import torch, torch.nn.functional as F\nloss = F.cross_entropy(torch.randn(4, 3), torch.tensor([0.0, 1.0, 2.0, 1.0]))\n",
        "pass the targets as .long()",
    ),
    # PyTorch 2.11 words cross_entropy's error so; multi_margin_loss still does
    "float class targets, older words": (
        "import torch, torch.nn.functional as F\nloss = F.multi_margin_loss(torch.randn(4, 3), torch.tensor([0.0, 1.0, 2.0, 1.0]))\n",
        "target.long()",
    ),
    "shapes that do not broadcast": ("import torch\ny = torch.ones(2, 3) + torch.ones(4)\n", "Broadcasting"),
    "numpy of a tensor in the graph": (
        "import torch\nx = torch.ones(2, requires_grad=True)\ny = (x * 3).numpy()\n",
        "(x * 3).detach().numpy()",
    ),
    "requires_grad set on a computed tensor": (
        "import torch\nx = torch.ones(2, requires_grad=True)\ny = x * 2\ny.requires_grad = False\n",
        "y.detach()",
    ),
    "a .grad used before backward": (
        "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * 3).sum()\nprint(w.grad * 2)\n",
        "w.grad is None because no backward() has run yet",
    ),
    "a .grad zeroed before backward": (
        "import torch\nw = torch.ones(2, requires_grad=True)\nw.grad.zero_()\n",
        "w.grad is None until the first backward() reaches w, so there is nothing to zero yet",
    ),
    "a NaN gradient under anomaly detection": (
        "import torch\nwith torch.autograd.set_detect_anomaly(True):\n    x = torch.tensor([0.0], requires_grad=True)\n"
        "    y = torch.sqrt(x) * 0\n    y.backward()\n",
        "the first node whose gradient came out NaN: SqrtBackward0",
    ),
    "float32 times float64": (
        "import torch\ny = torch.randn(2, 3) @ torch.ones(3, 2, dtype=torch.float64)\n",
        "x.to(w.dtype)",
    ),
}


@pytest.mark.parametrize("name", sorted(EXPLAINED))
def test_common_learner_errors_get_a_hint_at_their_line(name: str) -> None:
    source, phrase = EXPLAINED[name]
    err = q.errors(record(source))[0]
    assert err.line == source.count("\n"), err
    assert err.hint and phrase in err.hint, err.hint


def test_device_mismatch_names_both_tensors_and_where_they_were_made() -> None:
    trace = record("import torch\nx = torch.ones(3)\nw = torch.ones(3, device='meta')\ny = x + w\n")
    err = q.errors(trace)[0]
    assert err.line == 4
    assert "x (made at line 2) is on cpu" in err.hint and "w (made at line 3) is on meta" in err.hint


def test_recording_keeps_pytorchs_in_place_check() -> None:
    trace = record(
        "import torch\nx = torch.ones(3, requires_grad=True)\ny = x.exp()\ny.add_(1)\ny.sum().backward()\n"
    )
    assert q.errors(trace)[0].exc_type == "RuntimeError"
    assert "modified by an inplace operation" in q.errors(trace)[0].message


def test_two_optimizers_each_zeroing_their_own_grads_stay_silent() -> None:
    trace = record(
        "import torch, torch.nn as nn\n"
        "X, y = torch.randn(8, 3), torch.randn(8, 1)\n"
        "model, probe = nn.Linear(3, 1), nn.Linear(3, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "opt2 = torch.optim.SGD(probe.parameters(), lr=0.1)\n"
        "lossfn = nn.MSELoss()\n"
        "for epoch in range(5):\n"
        "    loss = lossfn(model(X), y)\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
        "    opt2.zero_grad()\n    lossfn(probe(X), y).backward()\n    opt2.step()\n"
    )
    assert trace.events[-1].status == "ok"
    assert q.pitfalls(trace) == []


def test_gradwalk_is_importable_in_a_snippet_run_by_the_engine() -> None:
    trace = record("import gradwalk\ngradwalk.log('x', 1.0)\n")
    assert trace.events[-1].status == "ok" and q.events_of(trace, "metric")


@pytest.mark.parametrize("name", sorted(CHANGED_AFTER_SAVING))
def test_the_in_place_error_reads_as_pytorchs_own(name: str) -> None:
    # PyTorch skips its in-place check under saved-tensor hooks, and gradwalk raises it in
    # PyTorch's words: which tensor, whose output it is now, the versions
    source = CHANGED_AFTER_SAVING[name][0]
    with pytest.raises(RuntimeError) as plain:
        exec(compile(source, "plain.py", "exec"), {"__name__": "__main__"})
    assert q.errors(record(source))[0].message.startswith(str(plain.value))


CLIPPED = (
    "import torch\nimport torch.nn as nn\n\ntorch.manual_seed(0)\nmodel = nn.Linear(4, 1)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nX, y = torch.randn(16, 4), torch.randn(16, 1)\n"
    "for step in range(20):\n    opt.zero_grad()\n    loss = ((model(X) - y) ** 2).mean()\n    loss.backward()\n"
    "{body}print(round(loss.item(), 6))\n"
)
CLIP = "    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)\n"
STEP = "    opt.step()\n"


@pytest.mark.parametrize("detail_steps", [3, 0])
def test_clipping_after_the_step_says_it_never_reaches_an_update(detail_steps: int) -> None:
    source = CLIPPED.format(body=STEP + CLIP)
    trace = record(source, limits=Limits(detail_steps=detail_steps))
    (p,) = q.pitfalls(trace)
    assert (p.kind, p.line) == ("clip-after-step", 13)
    assert p.title == "clip_grad_norm_ runs after step(): it clips nothing the step uses"
    assert (
        "it runs after opt.step() (line 12), with no backward() in between: step 1 has already" in p.message
    )
    assert p.fix.startswith("Clip between loss.backward() (line 11) and opt.step() (line 12)")
    # the run is the snippet's own: the loss it prints is PyTorch's
    assert q.stdout(trace) == plain_stdout(source)


def test_clipping_between_backward_and_step_is_not_flagged() -> None:
    trace = record(CLIPPED.format(body=CLIP + STEP).replace("clip_grad_norm_", "clip_grad_value_"))
    assert q.pitfalls(trace) == []
    # nor a clip before any step (a loop by hand that clips, then updates by hand)
    by_hand = (
        "import torch\nw = torch.ones(3, requires_grad=True)\nfor i in range(3):\n"
        "    (w ** 2).sum().backward()\n    torch.nn.utils.clip_grad_norm_([w], 1.0)\n"
        "    with torch.no_grad():\n        w -= 0.1 * w.grad\n    w.grad = None\n"
    )
    assert q.pitfalls(record(by_hand)) == []


EVAL_LEFT_ON = (
    "import torch\nimport torch.nn as nn\n\ntorch.manual_seed(0)\n"
    "model = nn.Sequential(nn.Linear(4, 16), nn.{layer}, nn.Linear(16, 1))\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.05)\nX, y = torch.randn(64, 4), torch.randn(64, 1)\n"
    "for epoch in range(10):\n{train}    opt.zero_grad()\n    loss = ((model(X) - y) ** 2).mean()\n"
    "    loss.backward()\n    opt.step()\n    if epoch == 4:\n        model.eval()\n"
    "        with torch.no_grad():\n            print(round(((model(X) - y) ** 2).mean().item(), 4))\n"
)


@pytest.mark.parametrize(
    ("layer", "effect"),
    [
        ("Dropout(0.5)", "dropout no longer drops anything"),
        (
            "BatchNorm1d(16)",
            "batch norm normalises with its running averages instead of each batch's statistics",
        ),
    ],
)
def test_a_model_left_in_eval_mode_after_validation_says_it_trains_in_eval_mode(
    layer: str, effect: str
) -> None:
    source = EVAL_LEFT_ON.format(layer=layer, train="")
    trace = record(source)
    (p,) = q.pitfalls(trace)
    kind = layer.split("(")[0]
    assert (p.kind, p.line) == ("eval-mode-in-training", 14)  # the model.eval() never undone
    assert p.title == f"Training in eval mode: {kind} is switched off"
    # epoch 4's evaluation: step 6 is the first to train in eval mode (recorded metrics-only)
    assert f"model.eval() at line 14 switched {kind} to its evaluation behaviour" in p.message
    assert "at optimizer step 6 the model trains in eval mode" in p.message and effect in p.message
    assert p.fix.startswith("Call model.train() at the start of every training iteration")
    assert q.stdout(trace) == plain_stdout(source)


def test_a_model_switched_back_to_training_is_not_flagged() -> None:
    trace = record(EVAL_LEFT_ON.format(layer="Dropout(0.5)", train="    model.train()\n"))
    assert q.pitfalls(trace) == []
    # nor one evaluated with gradients on and trained again in training mode
    source = EVAL_LEFT_ON.format(layer="Dropout(0.5)", train="    model.train()\n").replace(
        "        with torch.no_grad():\n            print(", "        if True:\n            print("
    )
    assert "eval-mode-in-training" not in {p.kind for p in q.pitfalls(record(source))}


GENERATOR_READ_TWICE = (
    "import torch\nimport torch.nn as nn\n\ntorch.manual_seed(0)\nmodel = nn.Linear(4, 1)\n"
    "params = model.parameters()\nopt = torch.optim.SGD(params, lr=0.1)\n"
    "X, y = torch.randn(16, 4), 10 * torch.randn(16, 1)\n"
    "for step in range(5):\n    opt.zero_grad()\n    loss = ((model(X) - y) ** 2).mean()\n    loss.backward()\n"
    "    torch.nn.utils.clip_grad_norm_({clipped}, 0.1)\n    opt.step()\n"
    "print(model.weight.detach().tolist())\n"
)


@pytest.mark.parametrize("detail_steps", [3, 0])
def test_clipping_a_generator_the_optimizer_read_says_it_clipped_nothing(detail_steps: int) -> None:
    source = GENERATOR_READ_TWICE.format(clipped="params")
    p = the_pitfall(source, "clip-got-no-parameters", 13, Limits(detail_steps=detail_steps))
    assert p.title == "clip_grad_norm_ clipped nothing: its parameters were an empty generator"
    assert "`params` is a generator" in p.message
    assert "line 7 read it first (`opt = torch.optim.SGD(params, lr=0.1)`)" in p.message
    assert p.fix.startswith("Pass a fresh generator, clip_grad_norm_(model.parameters(), …)")
    # PyTorch's own warning is in the output, as without gradwalk
    trace = record(source, limits=Limits(detail_steps=detail_steps))
    stderr = "".join(e.text for e in q.events_of(trace, "output") if e.stream == "stderr")
    assert "`parameters` is an empty generator" in stderr


@pytest.mark.parametrize(
    "clipped",
    [
        "model.parameters()",  # a fresh generator each time
        "list(model.parameters())",
        "(p for p in model.parameters() if not p.requires_grad)",  # empty from the start: not read before
    ],
)
def test_clipping_a_fresh_generator_or_a_list_is_not_flagged(clipped: str) -> None:
    trace = record(GENERATOR_READ_TWICE.format(clipped=clipped))
    assert q.pitfalls(trace) == [], [p.title for p in q.pitfalls(trace)]


HOOKED_IN_LOOP = (
    "import torch\nimport torch.nn as nn\n\ntorch.manual_seed(0)\nmodel = nn.Linear(3, 1)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nX, y = torch.randn(8, 3), torch.randn(8, 1)\n"
    "{above}for step in range(6):\n{hook}    opt.zero_grad()\n    loss = ((model(X) - y) ** 2).mean()\n"
    "    loss.backward()\n    opt.step()\n{after}print(model.weight.grad.tolist(), model.weight.tolist())\n"
)


@pytest.mark.parametrize("detail_steps", [3, 2])
def test_a_hook_registered_in_the_loop_says_the_hooks_pile_up(detail_steps: int) -> None:
    source = HOOKED_IN_LOOP.format(
        above="", hook="    model.weight.register_hook(lambda g: g * 0.5)\n", after=""
    )
    # the gradients pile up as in plain PyTorch: the sixth backward halves w's gradient six times
    p = the_pitfall(source, "hook-registered-in-loop", 9, Limits(detail_steps=detail_steps))
    assert p.title == "register_hook runs on every iteration: the hooks on model.weight pile up"
    assert "each pass through line 9 adds one more, and after its second model.weight holds 2" in p.message
    assert p.fix.startswith("Register the hook once, above the loop; or keep its handle, h = model.weight")


@pytest.mark.parametrize(
    ("above", "hook", "after"),
    [
        ("model.weight.register_hook(lambda g: g * 0.5)\n", "", ""),  # once, above the loop
        ("", "    h = model.weight.register_hook(lambda g: g * 0.5)\n", "    h.remove()\n"),
        ("", "    out = model(X)\n    out.register_hook(lambda g: g * 0.5)\n", ""),  # a new tensor each time
    ],
    ids=["once above the loop", "removed each iteration", "on a tensor made in the loop"],
)
def test_a_hook_that_does_not_pile_up_is_not_flagged(above: str, hook: str, after: str) -> None:
    source = HOOKED_IN_LOOP.format(above=above, hook=hook, after=after.replace("    h.remove()\n", ""))
    if after:
        source = source.replace("    opt.step()\n", "    opt.step()\n" + after)
    trace = record(source)
    assert q.pitfalls(trace) == [], [p.title for p in q.pitfalls(trace)]
    assert q.stdout(trace) == plain_stdout(source)


BATCHES = (
    "import torch\nimport torch.nn as nn\nfrom torch.utils.data import TensorDataset, DataLoader\n"
    "torch.manual_seed(0)\nloader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)\n"
    "model = nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(3):\n"
    "    for i, (xb, yb) in enumerate(loader):\n{body}print(model.weight.tolist())\n"
)
STEP_OUTSIDE = (
    "        opt.zero_grad()\n        loss = nn.functional.mse_loss(model(xb), yb)\n        loss.backward()\n"
    "    opt.step()\n"
)


def test_a_step_outside_the_batch_loop_says_the_batches_gradients_are_cleared_unused() -> None:
    p = the_pitfall(BATCHES.format(body=STEP_OUTSIDE), "gradients-cleared-unused", 12)
    assert p.title == "opt.step() misses most backward() calls: their gradients are cleared before it runs"
    assert (
        "loss.backward() at line 12 ran 4 times before opt.step() (line 13), and 3 times the gradients it "
        "left were cleared by opt.zero_grad() (line 10) before any step used them" in p.message
    )
    assert p.fix.startswith("Step after every backward(): put opt.step() in the same loop")


@pytest.mark.parametrize(
    "body",
    [
        # the usual loop
        "        opt.zero_grad()\n        loss = nn.functional.mse_loss(model(xb), yb)\n        loss.backward()\n"
        "        opt.step()\n",
        # gradient accumulation: four batches summed, then one step, then zero_grad
        "        loss = nn.functional.mse_loss(model(xb), yb) / 4\n        loss.backward()\n"
        "        if i % 4 == 3:\n            opt.step()\n            opt.zero_grad()\n",
        # zero_grad(set_to_none=False) in the usual loop
        "        opt.zero_grad(set_to_none=False)\n        nn.functional.mse_loss(model(xb), yb).backward()\n"
        "        opt.step()\n",
    ],
    ids=["the usual loop", "gradient accumulation", "zeroed in place"],
)
def test_steps_that_use_every_backward_are_not_flagged(body: str) -> None:
    trace = record(BATCHES.format(body=body))
    assert [p.kind for p in q.pitfalls(trace)] == []


def test_a_gans_discriminator_gradients_cleared_by_its_own_zero_grad_are_not_flagged() -> None:
    trace = record(gan_loop(4))
    assert "gradients-cleared-unused" not in [p.kind for p in q.pitfalls(trace)]


@pytest.mark.parametrize(
    ("source", "line", "worked"),
    [
        (
            "import torch\nx = torch.tensor(3.0, requires_grad=True)\ny = x ** 3\ny.backward(create_graph=True)\n"
            "x.grad.backward()\nprint(x.grad)\n",
            5,
            "x.grad is now their sum (27 + 18 = 45 here, where the second derivative is 18)",
        ),
        (
            "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n(x ** 3).sum().backward(create_graph=True)\n"
            "x.grad.sum().backward()\nprint(x.grad)\n",
            4,
            "x.grad is now their sum, not the second derivative",
        ),
    ],
    ids=["x.grad.backward()", "x.grad.sum().backward()"],
)
def test_a_second_derivative_taken_through_grad_says_it_is_added_to_the_first(
    source: str, line: int, worked: str
) -> None:
    p = the_pitfall(source, "grad-of-grad-accumulated", line)
    assert p.title == "The second derivative is added to the first, in x.grad"
    assert worked in p.message
    assert "g = x.grad; x.grad = None; g.backward()" in p.fix
    # the fix gives the second derivative alone
    fixed = source.replace("x.grad.backward()", "g = x.grad\nx.grad = None\ng.backward()")
    if fixed != source:
        assert plain_stdout(fixed) == "tensor(18.)\n"
        assert q.pitfalls(record(fixed)) == []


def test_a_backward_that_does_not_differentiate_the_gradient_is_not_flagged() -> None:
    # create_graph=True, then another loss's backward() adds into x.grad: no second derivative
    source = (
        "import torch\nx = torch.tensor(3.0, requires_grad=True)\n(x ** 3).backward(create_graph=True)\n"
        "(x * 2).backward()\nprint(x.grad)\n"
    )
    assert "grad-of-grad-accumulated" not in [p.kind for p in q.pitfalls(record(source))]
