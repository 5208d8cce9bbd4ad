"""Hunt 53, the two things left: a claim that did not hold, and three spellings unseen.

- parameter-not-optimized (parameters.py, cleared_grads.py): its message said "no zero_grad()
  clears them: their .grad only grows" of an A3C worker's local model that the snippet clears
  itself (``model.zero_grad()``). The sentence is said now only where the source shows nothing
  that may clear those parameters' ``.grad`` (a ``zero_grad()`` of a module or optimizer
  holding them, ``p.grad = None`` in a loop over them); where it is true it stays;
- the detectors of what made a loss's input (loss_inputs.py: sigmoid-into-bce-with-logits,
  probabilities-into-cross-entropy, nll-loss-without-log-softmax, softmax-over-batch) and
  probability-thresholded-at-zero (thresholds.py) did not see ``torch.special.expit``,
  ``torch.special.softmax`` and ``torch.special.log_softmax``, which reached
  activation-applied-twice alone. Told now as the sigmoid, softmax and log_softmax they are,
  the message naming the call as written (``torch.sigmoid`` and ``F.sigmoid`` are "sigmoid");
  their correct uses stay silent.
"""

from __future__ import annotations

import pytest

from tests.engine.snippets import recorded_silently, the_pitfall
from tests.engine.test_pitfall_hunt52c import A3C_WORKER, A3C_WORKER_CLONES
from tests.engine.test_pitfall_intent import HEAD_ONLY
from tests.engine.test_pitfall_loss_inputs import classifier, loss_line
from tests.engine.test_pitfall_misses47 import _S_BAD1_SOFTMAX_DIM0_PRED
from tests.engine.test_pitfall_target_copies import _TARGET_WITH_GRAPH
from tests.engine.test_pitfall_thresholds import _EVAL

_ONLY_GROWS = "their .grad only grows"


def _twin(source: str) -> str:
    """The A3C worker whose local gradients are never handed to the shared model."""
    twin = source.replace("    ensure_shared_grads(model, shared_model)\n", "")
    assert twin != source and "    model.zero_grad()\n" in twin
    return twin


@pytest.mark.parametrize(
    ("source", "line"),
    [(A3C_WORKER, 19), (A3C_WORKER_CLONES, 17)],
    ids=["_grad = grad", "grad = grad.clone()"],
)
def test_a_local_model_the_snippet_zeroes_is_not_said_to_grow(source: str, line: int) -> None:
    p = the_pitfall(_twin(source), "parameter-not-optimized", line)
    assert p.title == "model is used but no optimizer holds its parameters"
    assert _ONLY_GROWS not in p.message and "no zero_grad() clears them" not in p.message
    assert p.message.endswith("backward() still computes their gradients every step, which nothing uses.")
    # without the local model's zero_grad(), its .grad does only grow: said
    kept = the_pitfall(_twin(source).replace("    model.zero_grad()\n", ""), "parameter-not-optimized", line)
    assert kept.message.endswith(
        "and since no optimizer holds them, no zero_grad() clears them: their .grad only grows."
    )


@pytest.mark.parametrize(
    "clears",
    [
        "    model.zero_grad()\n",
        "    for p in model.backbone.parameters():\n        p.grad = None\n",
        "    for p in model.parameters():\n        if p.grad is not None:\n            p.grad.data.zero_()\n",
        "    model.backbone[0].weight.grad = None\n    model.backbone[0].bias.grad = None\n",
    ],
    ids=["model.zero_grad()", "p.grad = None", "p.grad.data.zero_()", "weight.grad = None"],
)
def test_a_head_only_optimizer_is_said_to_let_grads_grow_only_where_nothing_clears_them(
    clears: str,
) -> None:
    p = the_pitfall(HEAD_ONLY, "parameter-not-optimized", 12)
    assert "its zero_grad() never clears them: their .grad only grows." in p.message
    cleared = HEAD_ONLY.replace("    opt.zero_grad()\n", "    opt.zero_grad()\n" + clears)
    assert cleared != HEAD_ONLY
    p = the_pitfall(cleared, "parameter-not-optimized", 12)
    assert p.title == "The optimizer trains only model.fc"
    assert _ONLY_GROWS not in p.message and "never clears them" not in p.message
    assert "backward() still computes their gradients every step, which nothing uses." in p.message


def test_a_target_copy_the_snippet_zeroes_is_not_said_to_grow() -> None:
    p = the_pitfall(_TARGET_WITH_GRAPH, "parameter-not-optimized", 6)
    assert "which grows every step (no optimizer's zero_grad() clears it)" in p.message
    cleared = _TARGET_WITH_GRAPH.replace(
        "    opt.zero_grad()\n", "    opt.zero_grad()\n    q_target.zero_grad()\n"
    )
    p = the_pitfall(cleared, "parameter-not-optimized", 6)
    assert "grows every step" not in p.message and "clears it" not in p.message
    assert "every backward() also walks q_target and computes its .grad: time and memory spent" in p.message


def test_a_clearing_of_another_models_grads_leaves_the_sentence() -> None:
    # the optimizer's own zero_grad() and a zero_grad() of the head it holds clear nothing of the backbone
    source = HEAD_ONLY.replace("    opt.zero_grad()\n", "    opt.zero_grad()\n    model.fc.zero_grad()\n")
    p = the_pitfall(source, "parameter-not-optimized", 12)
    assert "its zero_grad() never clears them: their .grad only grows." in p.message


# each special spelling, and the torch.* spelling it is: (the loss line, kind, what is said)
_SPECIAL_TOLD = {
    "expit into binary_cross_entropy_with_logits": (
        classifier(
            "nn.Linear(4, 1)",
            "F.binary_cross_entropy_with_logits({act}(model(X)), (Y == 0).float().unsqueeze(1))",
        ),
        ("torch.special.expit", "torch.sigmoid"),
        "sigmoid-into-bce-with-logits",
        "Here it got the output of {named}: each prediction is squashed twice",
    ),
    "expit into cross_entropy": (
        classifier("nn.Linear(4, 3)", "F.cross_entropy({act}(model(X)), Y)"),
        ("torch.special.expit", "torch.sigmoid"),
        "probabilities-into-cross-entropy",
        "Here it got the output of {named}: every score is squashed into (0, 1)",
    ),
    "softmax into cross_entropy": (
        classifier("nn.Linear(4, 3)", "F.cross_entropy({act}(model(X), 1), Y)"),
        ("torch.special.softmax", "torch.softmax"),
        "probabilities-into-cross-entropy",
        "Here it got the output of {named}: probabilities are squashed a second time",
    ),
    "softmax into nll_loss": (
        classifier("nn.Linear(4, 3)", "F.nll_loss({act}(model(X), dim=1), Y)"),
        ("torch.special.softmax", "torch.softmax"),
        "nll-loss-without-log-softmax",
        "Here it got the output of {named}, so the loss is minus the mean probability",
    ),
    "softmax over the batch into cross_entropy": (
        classifier("nn.Linear(4, 3)", "F.cross_entropy({act}(model(X), 0), Y)"),
        ("torch.special.softmax", "torch.softmax"),
        "softmax-over-batch",
        "{named} normalises over dim 0, the 32 samples of the batch",
    ),
    "log_softmax over the batch into nll_loss": (
        classifier("nn.Linear(4, 3)", "F.nll_loss({act}(model(X), dim=0), Y)"),
        ("torch.special.log_softmax", "torch.log_softmax"),
        "softmax-over-batch",
        "{named} normalises over dim 0, the 32 samples of the batch",
    ),
}


@pytest.mark.parametrize("name", sorted(_SPECIAL_TOLD))
def test_each_special_spelling_is_told_as_what_it_is_named_as_written(name: str) -> None:
    template, (special, plain), kind, says = _SPECIAL_TOLD[name]
    for act, named in [(special, special), (plain, plain.removeprefix("torch."))]:
        if act == "torch.special.expit":
            named = "torch.special.expit (a sigmoid)"
        source = template.replace("{act}", act)
        p = the_pitfall(source, kind, loss_line(source))
        assert says.format(named=named) in p.message, p.message


def test_the_special_spelling_made_on_its_own_line_names_that_line() -> None:
    source = classifier(
        "nn.Linear(4, 1)", "F.binary_cross_entropy_with_logits(p, (Y == 0).float().unsqueeze(1))"
    ).replace("    loss = ", "    p = torch.special.expit(model(X))\n    loss = ")
    p = the_pitfall(source, "sigmoid-into-bce-with-logits", 10)
    assert "Here it got the output of torch.special.expit (a sigmoid) at line 9: each" in p.message


def test_expit_compared_with_zero_is_told_naming_expit() -> None:
    source = _EVAL.replace("torch.sigmoid(model(X)", "torch.special.expit(model(X)")
    assert source != _EVAL
    p = the_pitfall(source, "probability-thresholded-at-zero", 18)
    assert p.title == "probs > 0 is True everywhere: a probability is never below 0"
    assert "compares probs, the output of torch.special.expit (a sigmoid, line 17), with 0." in p.message
    assert "torch.special.expit gives a number above 0 for every input" in p.message
    recorded_silently(source.replace("(probs > 0)", "(probs > 0.5)"))


def test_a_special_softmax_over_the_batch_read_with_an_argmax_is_told() -> None:
    source = _S_BAD1_SOFTMAX_DIM0_PRED.replace("torch.softmax(", "torch.special.softmax(")
    assert source != _S_BAD1_SOFTMAX_DIM0_PRED
    p = the_pitfall(source, "softmax-over-batch", 10)
    assert "then an argmax over the classes" in p.title


@pytest.mark.parametrize(
    "source",
    [
        classifier("nn.Linear(4, 3)", "F.nll_loss(torch.special.log_softmax(model(X), dim=1), Y)"),
        classifier("nn.Linear(4, 3)", "F.cross_entropy(torch.special.log_softmax(model(X), 1), Y)"),
        classifier(
            "nn.Linear(4, 1)",
            "F.binary_cross_entropy(torch.special.expit(model(X)), (Y == 0).float().unsqueeze(1))",
        ),
        classifier(
            "nn.Linear(4, 1)",
            "F.binary_cross_entropy_with_logits(model(X), (Y == 0).float().unsqueeze(1))\n"
            "    shown = torch.special.expit(model(X)).detach()",
        ),
        _S_BAD1_SOFTMAX_DIM0_PRED.replace(
            "torch.softmax(model(x), dim=0)", "torch.special.softmax(model(x), dim=1)"
        ),
    ],
    ids=[
        "log_softmax into nll_loss",
        "log_softmax into cross_entropy",
        "expit into binary_cross_entropy",
        "expit for display",
        "softmax over the classes then argmax",
    ],
)
def test_correct_uses_of_the_special_spellings_stay_silent(source: str) -> None:
    recorded_silently(source)
