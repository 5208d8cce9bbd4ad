"""Class scores passed through a ReLU before cross-entropy (relu-into-cross-entropy).

``nn.Sequential(…, nn.Linear(h, C), nn.ReLU())`` as a classifier, or ``return
F.relu(self.fc2(x))`` in a forward: the scores cross_entropy gets can never go below 0.
cross_entropy wants raw scores (logits) of any sign; behind a ReLU a class whose
pre-activation is negative for a sample scores exactly 0 and gets no gradient back from it,
so it cannot be raised for that sample, and a class cut to 0 for every input never learns
again. The others can only be pushed down to 0, not below. Nothing raises: the loss falls,
slower and not as far.

Told at the loss, from the node that made its input (``ReluBackward0``: nn.ReLU, F.relu,
torch.relu, in place or not), so no ReLU has to be watched: only cross_entropy is. A ReLU
before the last Linear (the idiomatic hidden layer), LeakyReLU's output, and a ReLU before
a regression loss are left alone; an input made under no_grad has no node to read.
"""

from __future__ import annotations

from typing import Any

import torch

from ..tensors import autograd_of
from ..values import has_storage

__all__ = ["relu_into_cross_entropy"]

_RELU_NODES = frozenset({"ReluBackward0"})


def relu_into_cross_entropy(
    given: torch.Tensor, target: Any, line: int | None
) -> tuple[str, str, str, str] | None:
    """``(kind, title, message, fix)`` when ``given``, the input of cross_entropy at snippet
    ``line`` with ``target``, is a ReLU's output (class scores on dim 1, or the only dim);
    else None."""
    facts = autograd_of(given) if given.requires_grad else None
    if facts is None or type(facts[0]).__name__ not in _RELU_NODES:
        return None
    if not (given.is_floating_point() and given.numel() and has_storage(given)) or given.dim() > 5:
        return None
    scores = given.detach()
    classes = scores.shape[1] if scores.dim() >= 2 else scores.shape[0]
    if classes < 2:
        return None
    zeros = int((scores == 0).sum())
    share = f"{zeros:,} of {scores.numel():,} ({zeros / scores.numel():.0%})"
    right = _right_class_at_zero(scores, target)
    samples = (
        f", and for {right[0]} of the {right[1]} samples the score of the right class is 0"
        if right is not None and right[0]
        else ""
    )
    where = f" at line {line}" if line is not None else ""
    message = (
        f"The scores cross_entropy gets{where} come straight out of a ReLU, so none of the {classes} "
        f"classes' scores can go below 0. In the first batch seen {share} are exactly 0{samples}. ReLU "
        "passes no gradient back to a score it cut to 0: that class cannot be raised for that sample, a "
        "class cut to 0 for every input never learns again, and the others can be pushed down only to 0, "
        "not below. cross_entropy applies log_softmax itself and expects raw scores (logits) of any "
        "sign. Nothing raises: the loss falls, slower and not as far."
    )
    fix = (
        "Remove the ReLU after the last layer (a final nn.ReLU() in the nn.Sequential, or F.relu around "
        "the last layer's output in forward) and give cross_entropy / nn.CrossEntropyLoss the last "
        "Linear's output as it is."
    )
    return (
        "relu-into-cross-entropy",
        "ReLU output fed to cross-entropy: no score can go below 0",
        message,
        fix,
    )


def _right_class_at_zero(scores: torch.Tensor, target: Any) -> tuple[int, int] | None:
    """``(samples whose right class scores 0, samples)`` for ``(N, C)`` scores and ``(N,)``
    class indices (those out of range, an ``ignore_index``, left out); else None."""
    if not (
        isinstance(target, torch.Tensor)
        and scores.dim() == 2
        and target.dim() == 1
        and not target.is_floating_point()
        and len(target) == len(scores)
        and has_storage(target)
    ):
        return None
    target = target.to(scores.device)
    kept = (target >= 0) & (target < scores.shape[1])
    rows = kept.nonzero().squeeze(1)
    if not len(rows):
        return None
    picked = scores[rows, target[rows]]
    return int((picked == 0).sum()), len(rows)
