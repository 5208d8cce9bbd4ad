"""README.md quotes what pitfalls and hints say ("the lr fell from 0.1 to 0 at step 3 …"):
each quote pinned here must be in the engine's current text and in README.md, so a change of
wording or of a number that forgets the README fails here. A README quote that elides with
"…" is pinned as its pieces."""

from __future__ import annotations

import glob
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import queries as q
from engine import record
from engine.pitfalls import PITFALL_KINDS
from tests.conftest import case_source
from tests.engine import test_pitfall_activation_twice as activation_twice
from tests.engine import test_pitfall_clip_and_schedule49 as schedule49
from tests.engine import test_pitfall_custom_backward as custom_backward
from tests.engine import test_pitfall_data_edit as data_edit
from tests.engine import test_pitfall_dead_relu as dead_relu
from tests.engine import test_pitfall_heads_reshape as heads
from tests.engine import test_pitfall_hunt47 as hunt47
from tests.engine import test_pitfall_hunt48 as hunt48
from tests.engine import test_pitfall_inputs_shuffled_apart as shuffled
from tests.engine import test_pitfall_kl_sign as kl_sign
from tests.engine import test_pitfall_late_retain as late_retain
from tests.engine import test_pitfall_leaked_gradients as leaked
from tests.engine import test_pitfall_loss_inputs as loss_inputs
from tests.engine import test_pitfall_misses47 as misses47
from tests.engine import test_pitfall_misses48 as misses48
from tests.engine import test_pitfall_recurrent_axes as recurrent
from tests.engine import test_pitfall_scheduler_steps as scheduler_steps
from tests.engine import test_pitfall_seed_penalty as seeds
from tests.engine import test_pitfall_ungraded as ungraded
from tests.engine import test_pitfall_vanishing as vanishing
from tests.engine import test_pitfalls as pitfalls
from tests.engine.snippets import recorded_silently
from tests.engine.test_pitfall_diverging import rent
from tests.engine.test_pitfall_hand_updates import hand
from tests.engine.test_pitfall_never_stepped import loop as never_stepped_loop
from tests.engine.test_pitfall_symmetric import loop as symmetric_loop

ROOT = Path(__file__).resolve().parents[2]
# README's lines wrap anywhere, so its text and the engine's are compared with runs of
# whitespace made one space
README = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())


def in_readme_and_said(fragments: list[str], said: str) -> None:
    said = " ".join(said.split())
    for fragment in fragments:
        assert fragment in said, f"the engine no longer says {fragment!r}:\n{said}"
        assert fragment in README, f"README.md no longer quotes {fragment!r}"


# id: (the snippet, the pitfall kind it raises, the fragments README quotes of its title,
# message or fix)
CASES: dict[str, tuple[Callable[[], str], str, list[str]]] = {
    "loss-diverging": (
        lambda: rent(0.2, 20),
        "loss-diverging",
        [
            "Under opt (SGD) the loss went from 106.6 at step 1 to 3.773e+19 at step 20",
            "too high (here 0.2)",
            "try 0.02",
        ],
    ),
    "optimizer-never-stepped": (
        never_stepped_loop,
        "optimizer-never-stepped",
        [
            "opt (SGD) is built at line 5 and never steps: backward() ran 10 times and filled the "
            "gradients of its 2 parameters, but nothing called opt.step()"
        ],
    ),
    "lr-scheduler-never-stepped": (
        lambda: hunt47.STEP_LR.format(after=""),
        "lr-scheduler-never-stepped",
        [
            "sched (StepLR with step_size=5, gamma=0.1) is built at line 5 and never steps: opt "
            "stepped 15 times, all at 0.1"
        ],
    ),
    "scheduler-stepped-per-epoch": (
        lambda: scheduler_steps._PER_EPOCH,
        "scheduler-stepped-per-epoch",
        [
            "sched (OneCycleLR) stepped 3 times (line 12), while opt stepped 18 times",
            "it has taken 3 steps of the 18 its cycle has",
        ],
    ),
    "a cosine stepped per batch": (
        lambda: schedule49._COSINE,
        "scheduler-stepped-past-its-period",
        [
            "the lr fell from 0.1 to 0 at step 3 and climbed back to 0.1 by step 6; over 24 steps it "
            "went through 8 cosine half-periods where one was meant",
            "T_max=epochs * 8",
        ],
    ),
    "milestones counted in batches": (
        lambda: schedule49._COSINE.replace(
            "CosineAnnealingLR(opt, T_max=epochs)", "MultiStepLR(opt, milestones=[1, 2])"
        ),
        "scheduler-stepped-past-its-period",
        [
            "milestones=[1, 2] count batches, not epochs: the lr fell from 0.1 to 0.001 at step 2, its "
            "last milestone, and stayed there for the other 22 of its 24 steps",
            "milestones=[m * 8 for m in [1, 2]]",
        ],
    ),
    "symmetric-weights": (
        lambda: symmetric_loop("for p in model.parameters():\n    nn.init.zeros_(p)"),
        "symmetric-weights",
        ["After 20 optimizer steps all 16 rows of model.0.weight are still equal (every weight is 0)"],
    ),
    "parameter-never-initialised": (
        lambda: case_source("pitfall_uninitialised.py"),
        "parameter-never-initialised",
        [
            "layer.weight is made at line 10 (torch.Tensor(n_out, n_in)): torch.Tensor(sizes), like "
            "torch.empty, allocates memory and does not set it",
            "on another run it holds other bytes (zeros, 1e+38, NaN)",
        ],
    ),
    "snapshot-shares-weights": (
        lambda: hunt47.BEST_STATE.format(taken="model.state_dict()"),
        "snapshot-shares-weights",
        [
            "best_state['0.weight'] is model.0.weight itself",
            "(10 steps ran in all)",
            "model.load_state_dict(best_state) (line 15) loads model into itself: nothing is restored",
        ],
    ),
    "parameter-without-gradient": (
        lambda: ungraded.NEVER_RUNS,
        "parameter-without-gradient",
        [
            "model.fc2.weight and model.fc2.bias are stepped by opt (Adam) but had no gradient at any "
            "of its 10 steps: model.fc2 never runs in the forward pass"
        ],
    ),
    "nll-loss-without-log-softmax": (
        lambda: loss_inputs.POSITIVES["nn.Softmax then nn.NLLLoss"][0],
        "nll-loss-without-log-softmax",
        ["(-0.374 when first seen): negative, never below -1"],
    ),
    "softmax-over-batch": (
        lambda: loss_inputs.POSITIVES["nn.LogSoftmax(dim=0) into nn.NLLLoss"][0],
        "softmax-over-batch",
        [
            "the probabilities of each column sum to 1 across the samples, not those of each row across the 3 classes"
        ],
    ),
    "a sigmoid into cross_entropy": (
        lambda: loss_inputs.POSITIVES["nn.Sigmoid then nn.CrossEntropyLoss"][0],
        "probabilities-into-cross-entropy",
        ["The most it can give the right class is e / (e + 2) = 0.58, the loss cannot fall below 0.55"],
    ),
    "relu-into-cross-entropy": (
        lambda: misses47._R_BAD2_FORWARD_RELU_CELOSS,
        "relu-into-cross-entropy",
        ["149 of 320 (47%) are exactly 0, and for 28 of the 64 samples the score of the right class is 0"],
    ),
    "activation-applied-twice, a sigmoid on nn.Sigmoid": (
        lambda: activation_twice.SIGMOID_TWICE,
        "activation-applied-twice",
        [
            "every prediction is above 0.5 (here 0.59 to 0.64 in the 3 iterations recorded in full)",
            "BCELoss at line 12 can never fall below 0.50 on these targets (-log(0.731) = 0.31 for a target of 1, "
            "-log(0.5) = 0.69 for a target of 0), however well the model learns; here it ends at 0.65",
        ],
    ),
    "activation-applied-twice, a softmax twice": (
        lambda: activation_twice.SOFTMAX_TWICE,
        "activation-applied-twice",
        ["squashed a second time", "near the uniform 1/5"],
    ),
    "activation-applied-twice, log_softmax of nn.Softmax": (
        lambda: activation_twice.LOG_SOFTMAX_OF_SOFTMAX,
        "activation-applied-twice",
        ["nll_loss at line 12 can never fall below -log(0.58) = 0.55"],
    ),
    "activation-applied-twice, thresholded": (
        lambda: activation_twice.EVALUATED_TWICE,
        "activation-applied-twice",
        ["every sample is called class 1"],
    ),
    "gradients-cleared-unused": (
        lambda: pitfalls.BATCHES.format(body=pitfalls.STEP_OUTSIDE),
        "gradients-cleared-unused",
        [
            "loss.backward() at line 12 ran 4 times before opt.step() (line 13), and 3 times the "
            "gradients it left were cleared by opt.zero_grad() (line 10)"
        ],
    ),
    "heads split by a view alone": (
        lambda: heads._ATTENTION.replace(
            "q = wq(x).view(B, T, H, C // H).transpose(1, 2)", "q = wq(x).view(B, H, T, C // H)"
        ),
        "reshape-instead-of-permute",
        [
            "So q[0, 1, 0, 0] is wq(x)[0, 1, 3], where splitting and then moving the axes would give wq(x)[0, 0, 3]",
            "wq(x).view(B, T, H, C // H).transpose(1, 2)",
        ],
    ),
    "channels-last images viewed as channels-first": (
        lambda: hunt47.NHWC.format(made="imgs.view(4, 3, 12, 12)"),
        "reshape-instead-of-permute",
        ["x[0, 1, 0, 0] is imgs[0, 4, 0, 0], where moving the axes would give imgs[0, 0, 0, 1]"],
    ),
    "rnn-last-step-from-batch-axis": (
        lambda: recurrent._CLASSIFIER,
        "rnn-last-step-from-batch-axis",
        ["its 16×10×3 input as 16 time steps of a batch of 10"],
    ),
    "custom-backward-ignores-gradient": (
        lambda: custom_backward._SQUARE,
        "custom-backward-ignores-gradient",
        ["received grad_output = [3, 3] and sent [2, 4] regardless"],
    ),
    "retain-grad-after-backward": (
        lambda: late_retain._LATE,
        "retain-grad-after-backward",
        ["Call y.retain_grad() right after y is computed (line 3: y = x * 3), before backward()"],
    ),
    "data-edit-hidden-from-autograd": (
        lambda: data_edit._DOCS,
        "data-edit-hidden-from-autograd",
        [
            "Line 5 (x.data.mul_(2)) changes x in place through .data after MulBackward0 (line 4) saved it for backward",
            "used x as line 5 left it, where the gradient needs the values the forward saw: w.grad is [6, 8]",
        ],
    ),
    "targets-flattened-in-other-order": (
        lambda: hunt48._SEQUENCE,
        "targets-flattened-in-other-order",
        ["Only 6 of the 96 targets sit on their own row"],
    ),
    "bootstrap-target-not-detached": (
        lambda: hunt48._DQN,
        "bootstrap-target-not-detached",
        ["4 parameter tensors (226 numbers: q.0.bias, q.0.weight,"],
    ),
    "clip-before-unscale": (
        lambda: hunt48._SCALED,
        "clip-before-unscale",
        ["multiplied by the scale, 65,536 now", "a gradient of norm max_norm / 65,536"],
    ),
    "scores-compared-to-labels": (
        lambda: misses48._MAX_VALUES,
        "scores-compared-to-labels",
        ["32 floating-point scores such as 1.465", "0 of 32 are equal here"],
    ),
    "inputs-shuffled-apart-from-labels": (
        lambda: shuffled._FULL,
        "inputs-shuffled-apart-from-labels",
        ["only 30 of the 64 rows the loss scored keep their own label"],
    ),
    "kl-term-sign-flipped, after 60 epochs": (
        lambda: kl_sign._VAE.replace("range(30)", "range(60)"),
        "kl-term-sign-flipped",
        ["kl is -9495 at the end of this run", "here the loss ends at -8617"],
    ),
    "relu-units-dead": (
        lambda: dead_relu._UNSCALED,
        "relu-units-dead",
        [
            "All 16 units of the ReLU after fc1 (run from line 8) are 0 for every sample from step 4 on",
            "They died in the update of step 3 (lr 0.01)",
        ],
    ),
    "vanishing-gradients": (
        lambda: vanishing._DEEP_SIGMOID,
        "vanishing-gradients",
        [
            "At step 1 model.0.weight's gradient is 8.4e-09, 3e+07 times smaller than",
            "model.18.weight's (0.25)",
            "the gradient shrinks through the 9 sigmoids between them (each",
            "multiplies it by 0.25 at most)",
        ],
    ),
    "gradient-leaked-from-other-loss": (
        lambda: leaked._GAN,
        "gradient-leaked-from-other-loss",
        ["d_loss's part has norm 0.109 and g_loss's 0.0938, pointing against it (cosine -1.00)"],
    ),
    "seed-reset-in-loop": (
        lambda: seeds._SEED_PER_EPOCH,
        "seed-reset-in-loop",
        ["the shuffled order of loader (line 12)", "the dropout masks of model (line 13)"],
    ),
    "zero_grad() between backward() and step()": (
        lambda: case_source("pitfall_step_without_gradients.py"),
        "step-without-gradients",
        ["backward() did run (line 14): line 15 (opt.zero_grad()) cleared the gradients"],
    ),
    "missing-zero-grad, stepped by hand": (
        lambda: hand("        w -= 0.05 * w.grad"),
        "missing-zero-grad",
        [
            "This backward() adds its gradient to the one w.grad still holds from the backward() before, "
            "though w was updated in between (line 11: w -= 0.05 * w.grad)"
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_pitfall_says_what_the_readme_quotes(name: str) -> None:
    make, kind, fragments = CASES[name]
    trace = record(make())
    found = [p for p in q.pitfalls(trace) if p.kind == kind]
    assert len(found) == 1, [(p.kind, p.line) for p in q.pitfalls(trace)]
    p = found[0]
    in_readme_and_said(fragments, f"{p.title} {p.message} {p.fix}")


def test_a_step_recorded_metrics_only_names_the_step_as_the_readme_quotes() -> None:
    source = (
        "import torch\nw = torch.tensor([1.0], requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.5)\n"
        "for step in range(8):\n    opt.zero_grad()\n    loss = torch.where(w > 0, w.sqrt(), 0.0).sum()\n"
        "    loss.backward()\n    opt.step()\n"
    )
    (p,) = q.pitfalls(record(source))
    assert p.kind == "non-finite-gradient"
    in_readme_and_said(
        ["At optimizer step 5 the gradient norm is nan, though the loss was finite"], p.message
    )


def test_a_saved_tensor_changed_by_an_element_set_is_named_as_the_readme_quotes() -> None:
    source, _ = pitfalls.CHANGED_AFTER_SAVING["an element set"]
    (error,) = q.errors(record(source))
    assert error.hint is not None
    in_readme_and_said(
        ["SigmoidBackward0 saved y for backward (line 3); then line 4 (y[0] = 0) changed it in place"],
        error.hint,
    )


def test_the_examples_menu_has_the_seventeen_pitfall_examples_the_readme_counts() -> None:
    # README: "Seventeen of them have an example in the examples menu (…; the other 42 kinds have none)"
    kinds = set()
    for path in sorted(glob.glob(str(ROOT / "server" / "examples" / "pitfall_*.py"))):
        kinds |= {p.kind for p in q.pitfalls(record(Path(path).read_text(encoding="utf-8")))}
    assert len(kinds) == 17 and "Seventeen of them have an example" in README
    assert f"the other {len(set(PITFALL_KINDS) - kinds)} kinds have none" in README


def test_a_gradient_norm_penalty_is_not_said_to_accumulate_a_second_derivative() -> None:
    # README (grad-of-grad-accumulated): "A penalty computed from two or more parameters'
    # gradients (gradient-norm regularisation …) is not flagged"
    assert "(gradient-norm regularisation," in README
    recorded_silently(
        "import torch, torch.nn as nn\ntorch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.01)\nx, y = torch.randn(8, 3), torch.randn(8, 1)\n"
        "for i in range(3):\n    opt.zero_grad()\n    loss = ((model(x) - y) ** 2).mean()\n"
        "    loss.backward(create_graph=True)\n"
        "    (0.1 * sum(p.grad.pow(2).sum() for p in model.parameters())).backward()\n    opt.step()\n"
    )
