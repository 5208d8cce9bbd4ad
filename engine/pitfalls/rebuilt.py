"""An optimizer built anew at every iteration (optimizer-rebuilt).

``opt = torch.optim.Adam(model.parameters())`` inside the training loop makes a new
optimizer each iteration, with empty state: Adam's running averages (or SGD's momentum
buffer) restart at every step, so every update is the optimizer's first. Training still
runs, just not as the optimizer means to. Plain SGD keeps no state and is not flagged. The
training tracker tells the rebuild (NOTE [Rebuilt optimizers] in lineage.py); the line
that builds it is found in the snippet's source, above the step.

Built anew every epoch instead (above the batch loop, inside the epoch loop), with the same
settings, it drops its state every few steps: told at the third in a row. One rebuilt with
another learning rate or class (a second phase of training) is not flagged.
"""

from __future__ import annotations

import re

from ..source import line_matching, quoted_code

__all__ = ["construction_line", "rebuilt_report", "restarted_report"]


def construction_line(variable: str, step_line: int | None, source_lines: list[str]) -> int | None:
    """The nearest line above ``step_line`` that assigns ``variable`` (``opt = …``)."""
    if step_line is None or not variable.isidentifier():
        return None
    found = line_matching(
        source_lines, re.compile(rf"^{re.escape(variable)}\s*=[^=]"), range(step_line - 1, 0, -1)
    )
    return found[0] if found else None


def rebuilt_explained(
    label: str, kind: str, built_at: int | None, source_lines: list[str]
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for optimizer ``label`` (of class ``kind``), built anew
    before each of its steps, at ``built_at`` where known."""
    variable, where, state, first = _described(label, kind, built_at, source_lines)
    return (
        f"A new {kind} every iteration: its state restarts at every step",
        f"{variable} is built anew before each step{where}, so each {kind} takes one step and is "
        f"dropped: {state} start from nothing every time, and every update is a first step of "
        f"{kind}{first}, whatever the gradients before it were. Nothing errors, and the loss may "
        f"still fall, more slowly or less steadily than {kind} would make it.",
        f"Build the optimizer once, before the loop ({variable} = torch.optim.{kind}(…) above the "
        "for line), and keep only zero_grad → forward → loss → backward → step inside it.",
    )


def rebuilt_report(
    label: str, kind: str, step_line: int | None, source_lines: list[str]
) -> tuple[int | None, str, str, str]:
    """``(line, title, message, fix)`` for optimizer ``label`` of class ``kind``, rebuilt
    before each of its steps at ``step_line``: the line is the one that builds it, where
    the source shows it, else the step's."""
    built_at = construction_line(label.split(" (")[0], step_line, source_lines)
    return (built_at or step_line, *rebuilt_explained(label, kind, built_at, source_lines))


def restarted_report(
    label: str, kind: str, every: int, step_line: int | None, source_lines: list[str]
) -> tuple[int | None, str, str, str]:
    """``(line, title, message, fix)`` for optimizer ``label`` of class ``kind``, built anew
    with the same settings after every ``every`` steps (each epoch): the line is the one that
    builds it, where the source shows it, else the step's."""
    built_at = construction_line(label.split(" (")[0], step_line, source_lines)
    variable, where, state, first = _described(label, kind, built_at, source_lines)
    return (
        built_at or step_line,
        f"A new {kind} every epoch: its state restarts every {every} steps",
        f"{variable} is built anew every {every} steps{where}, with the same settings over the same "
        f"parameters, so {state} start from nothing each time: the first steps after each rebuild are "
        f"first steps of {kind}{first}, whatever it had learned of the gradients before. Nothing errors; "
        "training is noisier and slower than one optimizer kept for the whole run.",
        f"Build the optimizer once, before the epoch loop ({variable} = torch.optim.{kind}(…) above its for "
        "line); to change the learning rate between epochs, use a scheduler or set "
        f"{variable}.param_groups[0]['lr'].",
    )


def _described(
    label: str, kind: str, built_at: int | None, source_lines: list[str]
) -> tuple[str, str, str, str]:
    """``(variable, where it is built, what state it keeps, what a first step is)`` in words."""
    variable = label.split(" (")[0]
    code = quoted_code(source_lines, built_at) if built_at else None
    where = f", at line {built_at} ({code})" if code else f", at line {built_at}" if built_at else ""
    adam = kind in ("Adam", "AdamW", "NAdam", "RAdam", "Adamax")
    state = (
        "the running averages of the gradient and of its square"
        if adam
        else "the state it keeps from step to step (momentum, running averages)"
    )
    first = " (for Adam, a step of about lr in the direction of each gradient's sign)" if adam else ""
    return variable, where, state, first
