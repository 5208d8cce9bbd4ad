"""An optimizer built and never stepped (optimizer-never-stepped).

``opt.step()`` left out of the loop: backward() fills the gradients run after run, and
nothing uses them; the parameters keep their initial values and nothing raises. Told at the
end of the run: an optimizer the snippet holds that never stepped while backward() ran at
least twice and left gradients on its parameters, and updates no gradient by hand (``p -=
lr * p.grad``, an optimizer kept only for its ``zero_grad()``). Where the source has a
``step()`` of it that never ran (``if (i + 1) % 8 == 0`` in a loop of four), that line is
said; ``opt.step`` without its parentheses is method-not-called's.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from ..source import is_a, quoted_code

__all__ = ["NeverStepped", "never_stepped"]

_BY_HAND = re.compile(r"(-=|\+=|\.sub_\(|\.add_\(|\.copy_\(|\.data\s*=)")


class NeverStepped:
    """An optimizer of the snippet's that never stepped, and what to say about it."""

    def __init__(
        self,
        name: str,
        optimizer: torch.optim.Optimizer,
        graded: int,
        line: int | None,
        step_line: int | None,
    ) -> None:
        self.name = name
        self.optimizer = optimizer
        self.graded = graded  # its parameters that hold a gradient
        self.step_line = step_line  # its step() in the source, which never ran (None: there is none)
        self.line = step_line or line  # where it is said: that step(), or where it is built

    def report(self, backward_calls: int) -> tuple[str, str, str]:
        """``(title, message, fix)`` after ``backward_calls`` backward() calls."""
        kind = type(self.optimizer).__name__
        params = "parameter" if self.graded == 1 else "parameters"
        if self.step_line is not None:
            return (
                f"{self.name}.step() never ran: nothing is trained",
                f"{self.name}.step() at line {self.step_line} never ran: backward() ran {backward_calls} times "
                f"and filled the gradients of the {self.graded} {params} {self.name} ({kind}) holds, but the condition or "
                "loop around that line never let it run, so the parameters keep their initial values and the "
                "loss does not fall. Nothing raises.",
                f"Check what keeps line {self.step_line} from running. To step once every k backward() calls "
                f"(gradient accumulation), write `if (i + 1) % k == 0: {self.name}.step()` with k no more than "
                "the loop's iterations.",
            )
        where = f" at line {self.line}" if self.line else ""
        return (
            f"{self.name} is never stepped: nothing is trained",
            f"{self.name} ({kind}) is built{where} and never steps: backward() ran {backward_calls} times and "
            f"filled the gradients of its {self.graded} {params}, but nothing called {self.name}.step(), "
            "so the parameters keep their initial values and the loss does not fall. Nothing raises.",
            f"Call {self.name}.step() after loss.backward() in each iteration: zero_grad → forward → loss → "
            "backward → step.",
        )


def never_stepped(
    scope: dict[str, Any], stepped: Any, backward_calls: int, source_lines: list[str], *, ended_early: bool
) -> NeverStepped | None:
    """The first optimizer held by a variable of ``scope`` (the snippet's globals) that
    ``stepped`` (a predicate on optimizers) says never stepped, though ``backward_calls``
    (at least two) left gradients on its parameters, and no gradient is updated by hand;
    ``None`` otherwise. A run that ``ended_early`` (raised, exited) may have stopped before
    a ``step()`` of it in the source: that one is not said."""
    if backward_calls < 2:
        return None
    codes = [quoted_code(source_lines, i, 10_000) or "" for i in range(1, len(source_lines) + 1)]
    if any("grad" in code and _BY_HAND.search(code) for code in codes):
        return None
    for name, value in list(scope.items()):
        if name.startswith("_") or not is_a(value, torch.optim.Optimizer) or stepped(value):
            continue
        named = [i for i, code in enumerate(codes, 1) if re.search(rf"\b{re.escape(name)}\.step\b", code)]
        called = [i for i in named if re.search(rf"\b{re.escape(name)}\.step\s*\(", codes[i - 1])]
        if (named and not called) or (called and ended_early):
            continue  # ``opt.step`` without its parentheses is method-not-called's
        graded = sum(p.grad is not None for group in value.param_groups for p in group["params"])
        if graded:
            built = re.compile(rf"^{re.escape(name)}\s*=[^=]")
            line = next((i for i, code in enumerate(codes, 1) if built.search(code)), None)
            return NeverStepped(name, value, graded, line, called[0] if called else None)
    return None
