"""Every pitfall kind the detectors can report, in the order the README's table lists them.

A ``pitfall`` event's ``kind`` is one of these; the detectors refuse any other (a typo in a
new detector fails the tests, which run strict), and the README's table is checked against
this list.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["PITFALL_KINDS", "Said"]

PITFALL_KINDS: tuple[str, ...] = (
    "missing-zero-grad",
    "gradient-leaked-from-other-loss",
    "step-without-gradients",
    "gradients-cleared-unused",
    "optimizer-never-stepped",
    "lr-scheduler-never-stepped",
    "scheduler-stepped-per-epoch",
    "scheduler-stepped-past-its-period",
    "method-not-called",
    "loop-variable-rebound",
    "seed-reset-in-loop",
    "clip-after-step",
    "clip-got-no-parameters",
    "clip-on-other-parameters",
    "hook-registered-in-loop",
    "optimizer-rebuilt",
    "parameter-not-optimized",
    "tensor-attribute-not-parameter",
    "requires-grad-set-on-module",
    "parameter-without-gradient",
    "symmetric-weights",
    "parameter-never-initialised",
    "snapshot-shares-weights",
    "loss-tensor-accumulated",
    "graph-built-in-evaluation",
    "train-mode-in-evaluation",
    "eval-mode-in-training",
    "functional-dropout-in-eval",
    "reshape-instead-of-permute",
    "rnn-last-step-from-batch-axis",
    "broadcast-in-loss",
    "broadcast-in-comparison",
    "probability-thresholded-at-zero",
    "attention-mask-misread",
    "probabilities-into-cross-entropy",
    "nll-loss-without-log-softmax",
    "sigmoid-into-bce-with-logits",
    "relu-into-cross-entropy",
    "activation-applied-twice",
    "relu-units-dead",
    "softmax-over-batch",
    "tensor-copied-off-graph",
    "penalty-without-gradient",
    "loss-through-rounding",
    "loss-diverging",
    "non-finite-loss",
    "non-finite-gradient",
    "grad-of-grad-accumulated",
    "custom-backward-ignores-gradient",
    "retain-grad-after-backward",
    "data-edit-hidden-from-autograd",
    "targets-flattened-in-other-order",
    "bootstrap-target-not-detached",
    "clip-before-unscale",
    "scores-compared-to-labels",
    "inputs-shuffled-apart-from-labels",
    "sample-instead-of-rsample",
    "kl-term-sign-flipped",
    "vanishing-gradients",
)


class Said(NamedTuple):
    """One pitfall to emit, in the order of ``PitfallWatch._say``'s arguments."""

    kind: str
    line: int | None
    title: str
    message: str
    fix: str
    tensors: list[int]
