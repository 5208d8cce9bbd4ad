"""Class scores passed through a ReLU (or another activation that keeps them at or above 0)
before cross-entropy (relu-into-cross-entropy).

``nn.Sequential(…, nn.Linear(h, C), nn.ReLU())`` as a classifier, or ``return
F.relu(self.fc2(x))`` in a forward: the scores cross_entropy gets can never go below 0.
cross_entropy wants raw scores (logits) of any sign; behind a ReLU a class whose
pre-activation is negative for a sample scores exactly 0 and gets no gradient back from it,
so it cannot be raised for that sample, and a class cut to 0 for every input never learns
again. The others can only be pushed down to 0, not below. Nothing raises: the loss falls,
slower and not as far.

Told at the loss, from the node that made its input, so no activation has to be watched:
only cross_entropy is. The nodes read:

- ``ReluBackward0``: nn.ReLU, F.relu, torch.relu, in place or not;
- ``HardtanhBackward0`` clipped to a range whose low end is 0 or above: nn.ReLU6 (also capped
  at 6, which puts a floor under the loss, said with its value), a Hardtanh(0, 1);
- ``SoftplusBackward0``: every score above 0, none cut off, but a score near 0 gets little
  gradient back (``sigmoid(β·pre) = 1 - exp(-β·score)``), so the message says that, not
  "exactly 0";
- any of these seen through a dropout after it (``nn.Sequential(…, nn.ReLU(),
  nn.Dropout(0.5))``: ``NativeDropoutBackward0``, or on the CPU a ``MulBackward0`` by a mask
  of 0s and one positive value), which only zeroes or scales the scores up.

A ReLU before the last Linear (the idiomatic hidden layer), LeakyReLU's, ELU's and a
Hardtanh(-1, 1)'s output (negative scores possible), and any of them before a regression
loss are left alone; an input made under no_grad has no node to read.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch

from ..tensor_facts import autograd_of
from ..values import has_storage

__all__ = ["relu_into_cross_entropy"]


class _Floor(NamedTuple):
    """The activation that keeps the scores at or above 0, as the report names it."""

    name: str  # "ReLU", "ReLU6", "Hardtanh(0, 1)", "Softplus"
    top: float | None  # the cap on the scores (ReLU6: 6), if any
    beta: float | None  # Softplus's β; None for the activations that cut at 0
    dropped: bool  # seen through a dropout after it


def relu_into_cross_entropy(
    given: torch.Tensor, target: Any, line: int | None
) -> tuple[str, str, str, str] | None:
    """``(kind, title, message, fix)`` when ``given``, the input of cross_entropy at snippet
    ``line`` with ``target``, is the output of a ReLU, a ReLU6 or a Softplus (perhaps through a
    dropout after it), class scores on dim 1 or the only dim; else None."""
    facts = autograd_of(given) if given.requires_grad else None
    floor = _floor_of(facts[0]) if facts is not None else None
    if floor is None:
        return None
    if not (given.is_floating_point() and given.numel() and has_storage(given)) or given.dim() > 5:
        return None
    scores = given.detach()
    classes = scores.shape[1] if scores.dim() >= 2 else scores.shape[0]
    if classes < 2 or bool((scores < 0).any()):
        return None
    where = f" at line {line}" if line is not None else ""
    made = f"a {floor.name}" + (" and the dropout after it" if floor.dropped else "")
    opening = f"The scores cross_entropy gets{where} come straight out of {made}, so none of the {classes} "
    expects = (
        "cross_entropy applies log_softmax itself and expects raw scores (logits) of any sign. Nothing "
        "raises: the loss falls, slower and not as far."
    )
    right = _right_class(scores, target, floor)
    if floor.beta is not None:
        message = opening + _softplus_story(scores, floor.beta, right) + expects
    else:
        message = opening + _cut_story(scores, classes, floor, right) + expects
    module = floor.name.split("(")[0]  # ReLU, ReLU6, Hardtanh, Softplus
    fix = (
        f"Remove the {floor.name} after the last layer (a final nn.{module}() in the nn.Sequential, or "
        f"F.{module.lower()} around the last layer's output in forward) and give cross_entropy / "
        "nn.CrossEntropyLoss the last Linear's output as it is."
    )
    if floor.dropped:
        fix += (
            f" Put the Dropout before the last Linear instead: nn.Sequential(…, nn.{module}(), "
            "nn.Dropout(p), nn.Linear(h, C)), so no class score is zeroed at random."
        )
    title = f"{floor.name} output fed to cross-entropy: no score can go below 0"
    return "relu-into-cross-entropy", title, message, fix


def _cut_story(scores: torch.Tensor, classes: int, floor: _Floor, right: tuple[int, int] | None) -> str:
    """The middle of the message for an activation that cuts the scores at 0 (ReLU, ReLU6)."""
    zeros = int((scores == 0).sum())
    share = f"{zeros:,} of {scores.numel():,} ({zeros / scores.numel():.0%})"
    samples = (
        f", and for {right[0]} of the {right[1]} samples the score of the right class is 0"
        if right is not None and right[0]
        else ""
    )
    name = floor.name
    if floor.top is None:
        capped, cut, cap_floor = "", "0", ""
    else:
        top = f"{floor.top:g}"
        floor_loss = math.log1p((classes - 1) * math.exp(-floor.top))
        capped, cut = f" (nor above {top})", f"0 (or to {top})"
        cap_floor = (
            f" With every score between 0 and {top}, the loss cannot fall below "
            f"log(1 + {classes - 1}·e^-{top}) = {floor_loss:.4g}, even for a sample it gets right."
        )
    return (
        f"classes' scores can go below 0{capped}. In the first batch seen {share} are exactly 0{samples}. "
        f"{name} passes no gradient back to a score it cut to {cut}: that class cannot be raised for that "
        "sample, a class cut to 0 for every input never learns again, and the others can be pushed down only "
        f"to 0, not below.{cap_floor} "
    )


def _softplus_story(scores: torch.Tensor, beta: float, right: tuple[int, int] | None) -> str:
    """The middle of the message for a Softplus: every score above 0, none cut off, but one near
    0 passes back little gradient (``1 - exp(-β·score)``, under a half below ``log 2 / β``)."""
    half = math.log(2) / beta
    kept = "1 - exp(-score)" if beta == 1 else f"1 - exp(-{beta:g}·score)"
    low = int((scores < half).sum())
    share = f"{low:,} of {scores.numel():,} ({low / scores.numel():.0%})"
    samples = (
        f", among them the score of the right class for {right[0]} of the {right[1]} samples"
        if right is not None and right[0]
        else ""
    )
    return (
        "classes' scores can go below 0: a score only nears 0 as the last layer's output for it goes to "
        f"minus infinity, and Softplus passes back only {kept} of the gradient to a score, less than half of it below "
        f"{half:.3g}. In the first batch seen {share} are below {half:.3g}{samples}. A class pushed near 0 for "
        "a sample can hardly be raised again for it, and pushing the wrong classes lower slows to a crawl. "
    )


def _floor_of(node: Any) -> _Floor | None:
    """The activation behind ``node`` (the scores' grad_fn) that keeps them at or above 0,
    looking through one dropout after it; else None."""
    dropped = False
    name = type(node).__name__
    if name == "NativeDropoutBackward0" or (name == "MulBackward0" and _by_a_dropout_mask(node)):
        node, dropped = node.next_functions[0][0], True
        name = type(node).__name__
    if name == "ReluBackward0":
        return _Floor("ReLU", None, None, dropped)
    if name == "HardtanhBackward0":
        low, top = _saved(node, "_saved_min_val"), _saved(node, "_saved_max_val")
        if low is None or top is None or low < 0 or top <= low:
            return None
        named = "ReLU6" if (low, top) == (0, 6) else f"Hardtanh({low:g}, {top:g})"
        return _Floor(named, top, None, dropped)
    if name == "SoftplusBackward0":
        beta = _saved(node, "_saved_beta")
        return _Floor("Softplus", None, beta, dropped) if beta is not None and beta > 0 else None
    return None


def _saved(node: Any, attribute: str) -> float | None:
    """A number an autograd node saved (``_saved_min_val``), or None."""
    value = getattr(node, attribute, None)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _by_a_dropout_mask(node: Any) -> bool:
    """Whether a ``MulBackward0`` multiplied a tensor with a graph (its first input) by one
    without (its second): a mask of 0s and one positive value, as dropout on the CPU does."""
    nexts = node.next_functions
    if len(nexts) != 2 or nexts[0][0] is None or nexts[1][0] is not None:
        return False
    try:
        mask = node._saved_other
    except RuntimeError:  # saved tensors freed by a backward already
        return False
    if not isinstance(mask, torch.Tensor) or not mask.is_floating_point() or not has_storage(mask):
        return False
    kept = mask[mask != 0]
    return bool((mask >= 0).all()) and (not kept.numel() or bool((kept == kept.flatten()[0]).all()))


def _right_class(scores: torch.Tensor, target: Any, floor: _Floor) -> tuple[int, int] | None:
    """``(samples whose right class scores low, samples)`` for ``(N, C)`` scores and ``(N,)``
    class indices (those out of range, an ``ignore_index``, left out): low is exactly 0, or for
    a Softplus below ``log 2 / β``; else None."""
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
    low = picked < math.log(2) / floor.beta if floor.beta is not None else picked == 0
    return int(low.sum()), len(rows)
