"""A loss function given what it does not expect: probabilities where it wants logits or
log-probabilities (probabilities-into-cross-entropy, nll-loss-without-log-softmax,
sigmoid-into-bce-with-logits), a ReLU's output where it wants scores of any sign
(relu-into-cross-entropy: relu_logits.py), or a softmax taken over the batch (softmax-over-batch).

Three losses squash their input themselves or expect it squashed a particular way, and none
of them raises when given the wrong thing: the run trains, worse, and nothing says why.

- ``cross_entropy`` applies log_softmax itself: softmax's probabilities squashed a second
  time shrink the gradients. (log_softmax's output is fine: log_softmax of log-probabilities
  is the same log-probabilities, so that near miss stays silent.)
- ``nll_loss`` only picks ``-input[i, target[i]]``: it expects log-probabilities, which are
  all <= 0. Given softmax's probabilities its loss is minus a probability, negative, with
  weak gradients; given raw scores it is unbounded below.
- ``binary_cross_entropy_with_logits`` applies the sigmoid itself: given sigmoid's output,
  every prediction is ``sigmoid(sigmoid(x))``, between 0.5 and 0.73.

- ``nll_loss`` or ``cross_entropy`` given a (log_)softmax over dim 0 of a batch: each
  column sums to 1 across the samples, not each row across the classes. A ``torch.log`` of a
  softmax (``x.log()`` too) counts as a log_softmax over the softmax's dim: log-probabilities,
  which neither loss minds, but over the batch all the same.

What made a loss's input is known by identity (the tape shows each softmax, log_softmax and
sigmoid output to :meth:`LossInputs.made`, whatever its spelling: ``torch.special.expit``,
``torch.special.softmax`` and ``torch.special.log_softmax`` count as what they are, and are
named as written in what is said); nll_loss's input is also read by value (its largest
element), since raw scores come from any op.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, NamedTuple

import torch

from ..values import has_storage
from .relu_logits import relu_into_cross_entropy

__all__ = ["LOG_OPS", "LOSS_INPUT_OPS", "MAKER_OPS", "MAKER_SPELLINGS", "LossInputs", "Made", "softmax_dim"]

# ops whose outputs are remembered, and the losses that look at what made their input
MAKER_OPS = frozenset({"softmax", "log_softmax", "sigmoid"})
# their other names, as the tape sees them (F.sigmoid and x.sigmoid() reach it as sigmoid): the
# maker each is, and how the snippet wrote it (op_checks.py hands each on as that maker, to
# these detectors and to activation_twice.py)
MAKER_SPELLINGS: dict[str, tuple[str, str]] = {
    "special_expit": ("sigmoid", "torch.special.expit"),
    "special_softmax": ("softmax", "torch.special.softmax"),
    "special_log_softmax": ("log_softmax", "torch.special.log_softmax"),
}
LOSS_INPUT_OPS = frozenset({"cross_entropy", "nll_loss", "binary_cross_entropy_with_logits"})
# ``torch.log(probs)``: of a softmax's output, a log_softmax written in two steps
LOG_OPS = frozenset({"log"})

# log_softmax's outputs are <= 0 up to rounding; an input larger than this is not log-probabilities
_ABOVE_ZERO = 1e-4
# sigmoid(sigmoid(x)) for x in [0, 1]: the only probabilities such a model can predict
_DOUBLE_SIGMOID = (0.5, 1 / (1 + math.exp(-1)))

Report = tuple[str, str, str, str]  # kind, title, message, fix


class Made(NamedTuple):
    """What made a remembered output: the op, its snippet line, the dim a softmax normalised
    over, and the name the snippet called it by, where not the op's own (``torch.special.expit``).
    The log of a softmax's output is a log_softmax made at the softmax's line, ``logged`` at
    the log's."""

    op: str  # softmax, log_softmax, sigmoid
    line: int | None
    dim: int | None
    written: str | None = None
    logged: int | None = None

    @property
    def named(self) -> str:
        """The op as what is said names it: ``sigmoid``, ``torch.special.expit (a sigmoid)``."""
        if self.written is None:
            return self.op
        return f"{self.written} (a sigmoid)" if self.written.endswith("expit") else self.written


class LossInputs:
    """The softmax, log_softmax and sigmoid outputs of a run (held weakly, by identity), and
    the reports of losses given one of them, or given scores nll_loss cannot read."""

    def __init__(self) -> None:
        # id(tensor) -> (a weak reference to it, what made it)
        self._made: dict[int, tuple[weakref.ref[torch.Tensor], Made]] = {}

    def made(
        self,
        op: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: torch.Tensor,
        line: int | None,
        written: str | None = None,
    ) -> int | None:
        """Remember that ``op`` (one of :data:`MAKER_OPS`), run at ``line`` with ``args`` and
        ``kwargs``, made ``result``; return the dimension a softmax normalised over.
        ``written``: the name the snippet called it by (``torch.special.expit``), if another."""
        dim = softmax_dim(args, kwargs, result) if op != "sigmoid" else None
        self._made[id(result)] = (weakref.ref(result), Made(op, line, dim, written))
        return dim

    def logged(self, args: tuple[Any, ...], result: torch.Tensor, line: int | None) -> None:
        """Remember ``result``, the log (one of :data:`LOG_OPS`) run at ``line`` of ``args[0]``,
        as a log_softmax where ``args[0]`` is a softmax's output."""
        maker = self.maker_of(args[0]) if args else None
        if maker is not None and maker.op == "softmax":
            made = maker._replace(op="log_softmax", logged=line)
            self._made[id(result)] = (weakref.ref(result), made)

    def maker_of(self, t: object) -> Made | None:
        """What made ``t`` (softmax, log_softmax or sigmoid, and where), if ``t`` is a
        remembered output."""
        entry = self._made.get(id(t))
        if entry is None or entry[0]() is not t:
            return None
        return entry[1]

    def check(
        self, loss: str, args: tuple[Any, ...], result: torch.Tensor, line: int | None
    ) -> Report | None:
        """The report for a call of ``loss`` (one of :data:`LOSS_INPUT_OPS`) at ``line`` with
        positional ``args`` that returned ``result``; ``None`` when its input is what it expects."""
        given = args[0] if args else None
        if not isinstance(given, torch.Tensor):
            return None
        maker = self.maker_of(given)
        if (
            loss != "binary_cross_entropy_with_logits"
            and maker
            and maker.dim == 0
            and given.dim() >= 2
            and len(given) > 1
        ):
            return _softmax_over_batch(maker, loss, given, line)
        if loss == "cross_entropy":
            if maker and maker.op == "sigmoid" and given.dim() >= 2 and given.shape[1] > 1:
                return _sigmoid_into_cross_entropy(maker, line, given.shape[1])
            if maker is None:  # a ReLU's output is known by its node (relu_logits.py)
                return relu_into_cross_entropy(given, args[1] if len(args) > 1 else None, line)
            return _softmax_into_cross_entropy(maker) if maker.op == "softmax" else None
        if loss == "binary_cross_entropy_with_logits":
            return _sigmoid_into_bce_with_logits(maker, line) if maker and maker.op == "sigmoid" else None
        if maker and maker.op == "log_softmax":
            return None
        return _nll_loss_input(given, maker, result, line)


def softmax_dim(args: tuple[Any, ...], kwargs: dict[str, Any], result: torch.Tensor) -> int | None:
    """The dimension a softmax or log_softmax call normalised over, as a non-negative
    index; the one PyTorch picks when none is given (0 for 0-, 1- and 3-D inputs, else 1)."""
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None:
        return 0 if result.dim() in (0, 1, 3) else 1
    if not isinstance(dim, int) or result.dim() == 0:
        return None
    return dim % result.dim()


def _softmax_over_batch(maker: Made, loss: str, given: torch.Tensor, line: int | None) -> Report:
    rows, classes = given.shape[0], given.shape[1]
    logged = maker.logged is not None  # torch.log of a softmax
    op = maker.written or ("softmax" if logged else maker.op)
    log_at = _at(maker.logged, line) if maker.logged != maker.line else ""
    kept = f", and its log{log_at} keeps that" if logged else ""
    layer = "LogSoftmax" if maker.op == "log_softmax" and not logged else "Softmax"
    better = (
        f"; better still, {op.replace('softmax', 'log_softmax')}(…, dim=1) in place of the log of a softmax: "
        "the same log-probabilities, without the log of a probability that rounds to 0"
        if logged
        else ""
    )
    return (
        "softmax-over-batch",
        f"{op} over dim 0: normalised across the batch, not the classes",
        f"{op}{_at(maker.line, line)} normalises over dim 0, the {rows} samples of the batch{kept}: the "
        f"probabilities of each column sum to 1 across the samples, not those of each row across the {classes} "
        f"classes. {loss} then scores each sample against the other samples of its batch instead of its classes "
        "against each other: the loss depends on what else is in the batch, and the model learns the wrong "
        "thing without any error.",
        f"Normalise over the classes: {op}(…, dim=1) (or dim=-1), as nn.{layer}(dim=1){better}.",
    )


def _at(line: int | None, loss_line: int | None) -> str:
    """`` at line N`` for a maker's line, when it is known and not the loss's own."""
    return f" at line {line}" if line is not None and line != loss_line else ""


def _softmax_into_cross_entropy(maker: Made) -> Report:
    return (
        "probabilities-into-cross-entropy",
        "Softmax output fed to cross-entropy",
        "cross_entropy applies log_softmax itself, so it expects raw scores (logits). Here it got the "
        f"output of {maker.named}: probabilities are squashed a second time, gradients shrink, and "
        "training stalls at a mediocre loss.",
        "Pass the logits (the last layer's output, before softmax) to cross_entropy / nn.CrossEntropyLoss; "
        "or use log_softmax and nll_loss.",
    )


def _sigmoid_into_cross_entropy(maker: Made, line: int | None, classes: int) -> Report:
    best = math.e / (math.e + classes - 1)  # the scores squashed into (0, 1): one at 1, the rest at 0
    return (
        "probabilities-into-cross-entropy",
        "Sigmoid output fed to cross-entropy",
        f"cross_entropy applies log_softmax itself, so it expects raw scores (logits). Here it got the output "
        f"of {maker.named}{_at(maker.line, line)}: every score is squashed into (0, 1), so the softmax over the "
        f"{classes} classes can never be confident. The most it can give the right class is e / (e + "
        f"{classes - 1}) = {best:.2f}, the loss cannot fall below {-math.log(best):.2f}, and the gradients "
        "through the sigmoid fade as it saturates.",
        "Drop the sigmoid (nn.Sigmoid() as the last layer) and pass the logits to cross_entropy / "
        "nn.CrossEntropyLoss; a sigmoid goes with nn.BCEWithLogitsLoss, for yes/no (multi-label) targets.",
    )


def _sigmoid_into_bce_with_logits(maker: Made, line: int | None) -> Report:
    low, high = _DOUBLE_SIGMOID
    return (
        "sigmoid-into-bce-with-logits",
        "Sigmoid output fed to BCEWithLogitsLoss",
        "binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss) applies the sigmoid itself, so it expects "
        f"raw scores (logits). Here it got the output of {maker.named}{_at(maker.line, line)}: each prediction "
        f"is squashed twice, sigmoid(sigmoid(x)), which is always between {low:.2f} and {high:.2f}. The model "
        f"can never say class 0 with more than 50% confidence, the loss cannot go below "
        f"{-math.log(high):.2f} even for a perfect model, and the gradients are small.",
        "Leave out the sigmoid (nn.Sigmoid) before the loss and keep BCEWithLogitsLoss; apply torch.sigmoid "
        "only where you read predictions. Or keep the sigmoid and use nn.BCELoss (numerically less stable).",
    )


def _nll_loss_input(
    given: torch.Tensor,
    maker: Made | None,
    result: torch.Tensor,
    line: int | None,
) -> Report | None:
    """The report for nll_loss given softmax's probabilities, or anything with an element
    above 0 (log-probabilities never are); ``None`` for what may be log-probabilities."""
    if maker is None or maker.op != "softmax":
        if not (given.is_floating_point() and given.numel() and has_storage(given)):
            return None
        low, high = torch.aminmax(given.detach())
        largest, smallest = float(high), float(low)
        if not largest > _ABOVE_ZERO:  # also NaN: not for this pitfall to say
            return None
        probabilities = smallest >= 0 and largest <= 1
    else:
        probabilities = True
    loss = _scalar(result)
    said = f" ({loss:.4g} when first seen)" if loss is not None else ""
    fix = (
        "Apply log_softmax before nll_loss (nn.LogSoftmax(dim=1) as the model's last layer, not "
        "nn.Softmax), or drop the softmax and give the logits to cross_entropy, which does both."
    )
    if probabilities:
        source = (
            f"the output of {maker.named}{_at(maker.line, line)}"
            if maker and maker.op == "softmax"
            else "values between 0 and 1"
        )
        return (
            "nll-loss-without-log-softmax",
            "nll_loss given probabilities, not log-probabilities",
            "nll_loss only picks -input[i, target[i]] and averages it: it expects log-probabilities (all ≤ 0, "
            f"what log_softmax gives). Here it got {source}, so the loss is minus the mean probability of "
            f"the right class{said}: negative, never below -1, and its gradients through softmax are weak, "
            "so training crawls.",
            fix,
        )
    return (
        "nll-loss-without-log-softmax",
        "nll_loss given raw scores, not log-probabilities",
        "nll_loss only picks -input[i, target[i]] and averages it: it expects log-probabilities (all ≤ 0, "
        f"what log_softmax gives). Here its input has elements up to {largest:.4g}: raw scores (logits), so "
        f"the loss is minus the mean score of the right class{said}. It falls without bound as those scores "
        "grow (the weights grow with them, for as long as training runs), and nothing pushes the other "
        "classes' scores down: the loss says nothing about how well the classes are told apart.",
        fix,
    )


def _scalar(t: torch.Tensor) -> float | None:
    """The value of a one-element tensor, else ``None``."""
    if t.numel() != 1 or not has_storage(t):
        return None
    return float(t.detach())
