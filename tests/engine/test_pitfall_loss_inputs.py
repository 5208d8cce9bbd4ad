"""A loss function given what it does not expect (engine/pitfalls/loss_inputs.py): each case
fires at the loss's line with this run's numbers, and each near miss stays silent."""

from __future__ import annotations

import pytest

from engine import queries as q
from engine import record
from engine.events import Limits
from tests.engine.snippets import recorded_silently

CLASSIFIER = """
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = {model}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(32, 4), torch.randint(0, 3, (32,))
for i in range(5):
    opt.zero_grad()
    loss = {loss}
    loss.backward()
    opt.step()
print(loss.item())
"""


def classifier(model: str, loss: str) -> str:
    """A 5-step classification loop of ``model`` whose loss (line 9) is ``loss``."""
    return CLASSIFIER.format(model=model, loss=loss)


def loss_line(source: str) -> int:
    """The number of the line that computes ``loss``."""
    return next(i for i, text in enumerate(source.splitlines(), 1) if text.startswith("    loss ="))


def plain_losses(source: str) -> float:
    """The last loss the snippet prints when run without gradwalk."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "snippet.py", "exec"), {"__name__": "__main__"})
    return float(out.getvalue().split()[-1])


POSITIVES = {
    "nn.Softmax then nn.NLLLoss": (
        classifier("nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))", "nn.NLLLoss()(model(X), Y)"),
        "nll-loss-without-log-softmax",
        "nll_loss given probabilities",
    ),
    "softmax on its own line then F.nll_loss": (
        classifier("nn.Linear(4, 3)", "F.nll_loss(probs, Y)").replace(
            "    loss = F.nll_loss", "    probs = model(X).softmax(dim=1)\n    loss = F.nll_loss"
        ),
        "nll-loss-without-log-softmax",
        "the output of softmax at line 9",
    ),
    "logits into F.nll_loss": (
        classifier("nn.Linear(4, 3)", "F.nll_loss(model(X), Y)"),
        "nll-loss-without-log-softmax",
        "nll_loss given raw scores",
    ),
    "softmax by hand into F.nll_loss": (
        classifier("nn.Linear(4, 3)", "F.nll_loss(model(X).exp() / model(X).exp().sum(1, keepdim=True), Y)"),
        "nll-loss-without-log-softmax",
        "values between 0 and 1",
    ),
    "sigmoid outputs into nll_loss": (
        classifier("nn.Sequential(nn.Linear(4, 3), nn.Sigmoid())", "F.nll_loss(model(X), Y)"),
        "nll-loss-without-log-softmax",
        "Here it got values between 0 and 1, so the loss",
    ),
    "nn.Sigmoid then nn.BCEWithLogitsLoss": (
        classifier(
            "nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())",
            "nn.BCEWithLogitsLoss()(model(X), (Y == 0).float().unsqueeze(1))",
        ),
        "sigmoid-into-bce-with-logits",
        "between 0.50 and 0.73",
    ),
    "log_softmax over the batch into F.nll_loss": (
        classifier("nn.Linear(4, 3)", "F.nll_loss(F.log_softmax(model(X), dim=0), Y)"),
        "softmax-over-batch",
        "log_softmax normalises over dim 0, the 32 samples of the batch",
    ),
    "nn.LogSoftmax(dim=0) into nn.NLLLoss": (
        classifier("nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=0))", "nn.NLLLoss()(model(X), Y)"),
        "softmax-over-batch",
        "not those of each row across the 3 classes",
    ),
    "softmax(0) into cross_entropy": (
        classifier("nn.Linear(4, 3)", "F.cross_entropy(model(X).softmax(0), Y)"),
        "softmax-over-batch",
        "softmax normalises over dim 0",
    ),
    "softmax into cross_entropy": (
        classifier("nn.Linear(4, 3)", "F.cross_entropy(model(X).softmax(dim=1), Y)"),
        "probabilities-into-cross-entropy",
        "output of softmax",
    ),
    # every score in (0, 1): the right class's probability can never pass e / (e + 2)
    "nn.Sigmoid then nn.CrossEntropyLoss": (
        classifier("nn.Sequential(nn.Linear(4, 3), nn.Sigmoid())", "nn.CrossEntropyLoss()(model(X), Y)"),
        "probabilities-into-cross-entropy",
        "e / (e + 2) = 0.58, the loss cannot fall below 0.55",
    ),
}


@pytest.mark.parametrize("name", sorted(POSITIVES))
def test_a_loss_given_what_it_does_not_expect_is_flagged_at_its_line(name: str) -> None:
    source, kind, says = POSITIVES[name]
    trace = record(source)
    assert trace.events[-1].status == "ok"
    found = q.pitfalls(trace)
    assert [(p.kind, p.line) for p in found] == [(kind, loss_line(source))]
    assert says in found[0].message + found[0].title


def test_the_nll_loss_it_quotes_is_the_first_step_loss_pytorch_computes() -> None:
    # one step, so the loss the snippet prints is the one the pitfall saw
    source = classifier("nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))", "F.nll_loss(model(X), Y)")
    source = source.replace("range(5)", "range(1)")
    (p,) = q.pitfalls(record(source))
    loss = plain_losses(source)
    assert -1 < loss < 0
    assert f"({loss:.4g} when first seen)" in p.message


def test_raw_scores_into_nll_loss_quote_the_largest_score() -> None:
    source = """
import torch, torch.nn.functional as F
scores = torch.tensor([[2.5, -1.0, 0.5], [0.25, 1.0, -3.0]], requires_grad=True)
loss = F.nll_loss(scores, torch.tensor([0, 1]))
loss.backward()
"""
    (p,) = q.pitfalls(record(source))
    assert (p.kind, p.line) == ("nll-loss-without-log-softmax", 4)
    assert "elements up to 2.5:" in p.message and "(-1.75 when first seen)" in p.message


def test_found_in_the_first_step_of_a_long_loop_recorded_metrics_only_after_it() -> None:
    source = classifier(
        "nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())",
        "F.binary_cross_entropy_with_logits(model(X), (Y == 0).float().unsqueeze(1))",
    )
    found = q.pitfalls(record(source.replace("range(5)", "range(50)"), limits=Limits(detail_steps=1)))
    assert [(p.kind, p.line) for p in found] == [("sigmoid-into-bce-with-logits", 9)]


NEAR_MISSES = {
    # log_softmax of log-probabilities is the same log-probabilities: the same loss, the same gradients
    "log_softmax into cross_entropy": classifier(
        "nn.Linear(4, 3)", "F.cross_entropy(F.log_softmax(model(X), dim=1), Y)"
    ),
    "nn.LogSoftmax then nn.NLLLoss": classifier(
        "nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=1))", "nn.NLLLoss()(model(X), Y)"
    ),
    "log of softmax into nll_loss": classifier(
        "nn.Linear(4, 3)", "F.nll_loss(torch.log(model(X).softmax(dim=1) + 1e-9), Y)"
    ),
    "sigmoid for display, logits into BCEWithLogitsLoss": classifier(
        "nn.Linear(4, 1)",
        "F.binary_cross_entropy_with_logits(model(X), (Y == 0).float().unsqueeze(1))\n"
        "    shown = torch.sigmoid(model(X)).detach()",
    ),
    "sigmoid into BCELoss": classifier(
        "nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())",
        "nn.BCELoss()(model(X), (Y == 0).float().unsqueeze(1))",
    ),
    "log_softmax over dim -1 into nll_loss": classifier(
        "nn.Linear(4, 3)", "F.nll_loss(model(X).log_softmax(-1), Y)"
    ),
    "log_softmax with PyTorch's implicit dim into nll_loss": classifier(
        "nn.Linear(4, 3)", "F.nll_loss(F.log_softmax(model(X)), Y)"
    ),
    # a sigmoid gate inside the model: what reaches cross_entropy is not the sigmoid's output
    "a sigmoid gate before the last layer, logits into cross_entropy": classifier(
        "nn.Sequential(nn.Linear(4, 8), nn.Sigmoid(), nn.Linear(8, 3))", "nn.CrossEntropyLoss()(model(X), Y)"
    ),
    "softmax for display, logits into cross_entropy": classifier(
        "nn.Linear(4, 3)", "F.cross_entropy(model(X), Y)\n    shown = model(X).softmax(dim=1).detach()"
    ),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_stays_silent(name: str) -> None:
    recorded_silently(NEAR_MISSES[name])
