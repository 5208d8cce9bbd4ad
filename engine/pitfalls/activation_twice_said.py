"""What activation-applied-twice says of one doubled activation (the detector: activation_twice.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..source import quoted_code
from .kinds import Said

__all__ = ["Doubled", "doubled_said"]

_SIGMOID_OF_ONE = 1 / (1 + math.exp(-1))  # sigmoid(sigmoid(x)) < sigmoid(1) = 0.731 for every x
_MODULES = {"sigmoid": "Sigmoid", "softmax": "Softmax", "log_softmax": "LogSoftmax"}


@dataclass
class Doubled:
    """What the run showed of one activation applied to another's output."""

    line: int | None  # the second activation's snippet line
    first: str  # sigmoid, softmax
    second: str  # sigmoid, softmax, log_softmax
    first_line: int | None
    dim: int | None  # the softmaxes' dim
    classes: int | None  # the size of that dim
    first_module: tuple[str, str] | None = None  # (path, class) of the module the first ran in
    second_module: tuple[str, str] | None = None  # the same of the second
    first_written: str | None = None  # the name the snippet called the first by, where not its
    second_written: str | None = None  # own (torch.special.expit): the same of the second
    low: float = math.inf  # the least and greatest of the second's outputs over the run
    high: float = -math.inf
    loss: str | None = None  # the loss that read the doubled output (BCELoss, nll_loss, …)
    loss_line: int | None = None
    loss_value: float | None = None  # its last value
    floor: float | None = None  # the least it can give on its last targets, whatever is learned
    threshold: tuple[int | None, float] | None = None  # (line, number) of a `>` that read it
    calls: int = 0  # the second activation's calls seen (those recorded in full)
    last_step: int = 0  # the optimizer steps taken by the last of them
    seen_all: bool = True  # no optimizer step went by unseen after the last
    trained: bool = False  # the loss that read it had a graph
    backward_on_it: bool | None = None  # backward() ran on that loss (None: not known)
    loss_at_end: bool = False  # loss_value is the run's last backward() loss, that loss's

    def bounds(self) -> tuple[float, float]:
        """The least and greatest value the second activation can give, whatever its input."""
        if self.second == "sigmoid":
            return 0.5, _SIGMOID_OF_ONE
        others = (self.classes or 1) - 1  # softmax of probabilities: one at 1, the others at 0
        low, high = 1 / (1 + others * math.e), math.e / (math.e + others)
        return (math.log(low), math.log(high)) if self.second == "log_softmax" else (low, high)


def doubled_said(facts: Doubled, source_lines: Sequence[str]) -> Said:
    """activation-applied-twice for ``facts``, quoting the snippet's ``source_lines``."""
    code = quoted_code(source_lines, facts.line)
    where = f"Line {facts.line} ({code})" if code else f"Line {facts.line}"
    opening = f"{where} applies {_second(facts)} to {_first(facts)}"
    if facts.second == "sigmoid":
        title = (
            "Sigmoid applied twice: every prediction is above 0.5"
            if facts.low > 0.5
            else "Sigmoid applied twice: no prediction is below 0.5"
        )
        message = opening + _sigmoid_story(facts)
    elif facts.second == "softmax":
        title = "Softmax applied twice: the probabilities are squashed toward uniform"
        message = opening + _softmax_story(facts)
    else:
        title = "log_softmax of a softmax's output: the probabilities are squashed twice"
        message = opening + _log_softmax_story(facts)
    return Said("activation-applied-twice", facts.line, title, message + " Nothing raises.", _fix(facts), [])


def _first(facts: Doubled) -> str:
    """What made the second activation's input, as the message names it."""
    same = " over the same dim" if facts.first == "softmax" else ""
    if facts.first_module is not None:
        path, cls = facts.first_module
        if cls == _MODULES[facts.first]:
            if "." in path and facts.second_module is None:
                return (
                    f"the output of {path.split('.')[0]}, whose last layer is already nn.{cls}{same} ({path})"
                )
            return (
                f"the output of {path}, already an nn.{cls}{same}"
                if path
                else f"the output of an nn.{cls}{same}"
            )
        owner = path or cls
        return f"the output of {_the_first(facts)}{same} at line {facts.first_line}, in {owner}'s forward"
    if facts.first_line == facts.line:
        if facts.first_written is not None:
            return f"the output of {_the_first(facts)}{same} on the same line"
        return f"the output of another {facts.first}{same} on the same line"
    return f"the output of {_the_first(facts)}{same} at line {facts.first_line}"


def _the_first(facts: Doubled) -> str:
    """The first activation as the snippet wrote it: ``the sigmoid``, ``torch.special.expit``."""
    if facts.first_written is None:
        return f"the {facts.first}"
    return f"{facts.first_written} (a sigmoid)" if _expit(facts.first_written) else facts.first_written


def _expit(written: str | None) -> bool:
    return written is not None and written.endswith("expit")


def _second(facts: Doubled) -> str:
    module = facts.second_module
    if module is not None and module[1] == _MODULES[facts.second]:
        return _layer(module, "an")
    if facts.second_written is not None:
        named = (
            f"{facts.second_written} (a sigmoid)" if _expit(facts.second_written) else facts.second_written
        )
        return named if facts.second == "sigmoid" else f"{named} over dim {facts.dim}"
    return "a sigmoid" if facts.second == "sigmoid" else f"{facts.second} over dim {facts.dim}"


def _range(facts: Doubled, digits: int) -> str:
    when = "over the run" if facts.seen_all else f"in the {facts.calls} iterations recorded in full"
    return f"here {facts.low:.{digits}f} to {facts.high:.{digits}f} {when}"


def _ends(facts: Doubled) -> str:
    """Where the loss that read the doubled output ends (or what it is, where that is not known)."""
    if facts.loss_value is None:
        return ""
    if facts.loss_at_end or (facts.seen_all and facts.trained):
        return f"; here it ends at {facts.loss_value:.2f}"
    if not facts.seen_all:
        return f"; here it is {facts.loss_value:.2f} in the last iteration recorded in full"
    return f"; here it is {facts.loss_value:.2f}"


def _sigmoid_story(facts: Doubled) -> str:
    low, high = facts.bounds()
    story = f": sigmoid(sigmoid(x)) always lies between {low} and {high:.3f}, whatever the logits, so every "
    if facts.low > low:
        story += (
            f"prediction is above 0.5 ({_range(facts, 2)}) and no sample is ever predicted class 0 (short "
            "of float32 rounding one to exactly 0.5)."
        )
    else:  # the first sigmoid's output so near 0 that float32 rounds the second's to 0.5 itself
        story += (
            f"prediction is at least 0.5 ({_range(facts, 2)}): it is exactly 0.5 only where float32 "
            "rounds it there, the model's own sigmoid being within 1e-7 of 0."
        )
    if facts.threshold is not None and facts.threshold[1] <= low:
        at, number = facts.threshold
        story += (
            f" Line {at} compares them with {number:g}: every one is above it, so every sample is called class 1."
            if facts.low > number
            else f" Line {at} compares them with {number:g}: none is below it, so a sample is called class 0 "
            "only where its prediction rounded to exactly 0.5."
        )
    if facts.loss is not None and facts.floor is not None:
        story += (
            f" {facts.loss} at line {facts.loss_line} can never fall below {facts.floor:.2f} on these targets"
        )
        if facts.loss in ("BCELoss", "binary_cross_entropy"):
            story += (
                f" (-log({high:.3f}) = {-math.log(high):.2f} for a target of 1, -log(0.5) = "
                f"{-math.log(0.5):.2f} for a target of 0)"
            )
        story += f", however well the model learns{_ends(facts)}."
    elif facts.loss is not None:
        story += f" {facts.loss} at line {facts.loss_line} reads them as predictions{_ends(facts)}."
    return story


def _softmax_story(facts: Doubled) -> str:
    low, high = facts.bounds()
    classes = facts.classes or 1
    story = (
        f": the {classes} probabilities of each row, squashed a second "
        f"time, always lie between {low:.3f} and {high:.3f} (1 / (1 + {classes - 1}·e) and e / (e + "
        f"{classes - 1})), near the uniform 1/{classes} = {1 / classes:.3f}, whatever the scores "
        f"({_range(facts, 3)}): the model can never give a class more than {high:.0%}, however sure it is."
    )
    if facts.loss is not None:
        story += f" {facts.loss} at line {facts.loss_line} reads them{_ends(facts)}."
    return story


def _log_softmax_story(facts: Doubled) -> str:
    low, high = facts.bounds()
    classes = facts.classes or 1
    story = (
        ": log_softmax reads those probabilities as scores and "
        f"squashes them again, so every log-probability lies between {low:.2f} and {high:.2f} whatever the "
        f"scores ({_range(facts, 2)}): the model can never give any of the {classes} classes more than "
        f"e / (e + {classes - 1}) = {math.exp(high):.2f}."
    )
    if facts.loss is not None and facts.floor is not None:
        story += (
            f" {facts.loss} at line {facts.loss_line} can never fall below -log({math.exp(high):.2f}) = "
            f"{facts.floor:.2f}, however well the model learns{_ends(facts)}."
        )
    elif facts.loss is not None:
        story += f" {facts.loss} at line {facts.loss_line} reads them{_ends(facts)}."
    return story


def _fix(facts: Doubled) -> str:
    first = (
        facts.first_module if facts.first_module and facts.first_module[1] == _MODULES[facts.first] else None
    )
    if facts.second == "log_softmax":
        drop = (
            f"drop {_layer(first, 'the')} from the model"
            if first
            else f"drop the {facts.first_written or 'softmax'} at line {facts.first_line}"
        )
        return (
            f"Take log_softmax of the logits, not of probabilities: {drop} and keep log_softmax and "
            "nll_loss (or give the logits to cross_entropy, which does both)."
        )
    name, loss, squash = (
        ("sigmoid", "nn.BCEWithLogitsLoss", "the sigmoid")
        if facts.second == "sigmoid"
        else ("softmax", "nn.CrossEntropyLoss", "log_softmax")
    )
    read = "predictions" if facts.second == "sigmoid" else "probabilities"
    if first:
        return (
            f"Apply the {name} once. Better: drop {_layer(first, 'the')} from the model and give its "
            f"logits to {loss}, which applies {squash} itself (more stably); apply torch.{name} only where "
            f"you read {read}. Or keep {first[0] or 'it'} and drop the {facts.second_written or name} at line "
            f"{facts.line}."
        )
    return (
        f"Apply the {name} once: drop the one at line {facts.line}. Better: keep the logits for the loss "
        f"({loss} applies {squash} itself, more stably) and apply torch.{name} only where you read {read}."
    )


def _layer(module: tuple[str, str], article: str) -> str:
    """``nn.Sigmoid (model.3)`` for a module named ``model.3``, else ``the nn.Sigmoid`` (``article``)."""
    path, cls = module
    return f"nn.{cls} ({path})" if path else f"{article} nn.{cls}"
