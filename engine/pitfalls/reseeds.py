"""seed-reset-in-loop: ``torch.manual_seed(…)`` run again and again inside the training loop
(NOTE [A seed inside the loop] in seed_loops.py).

library_calls.py wraps ``torch.manual_seed`` while the run records and hands each call of the
snippet's to :meth:`Reseeds.before` and :meth:`Reseeds.after`; the end of the run asks
:meth:`Reseeds.reports`. A line is reported when the run shows it reseeding: the same seed at
the same line in two or more iterations, with optimizer steps between them and the random
generator drawn from between them (its state moved), and when its source shows training and
random draws after it in the loop.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

import torch

from ..source import SNIPPET_FILENAME, quoted_code
from .kinds import Said
from .seed_loops import SeedLoop, SourceLoops

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["Reseeds"]

_MAX_LINES = 100  # seed lines followed, at most


@dataclass
class _SeedLine:
    """One line that seeds inside a loop: what the source says of it, and what the run did."""

    loop: SeedLoop | None
    seed: int
    calls: int = 0
    repeats: int = 0  # calls after steps and draws since the one before, with the same seed
    first_steps: int = 0  # optimizer steps taken by the first call
    steps: int = 0  # optimizer steps taken by the latest call
    state: tuple[torch.Tensor, ...] = ()  # the generators' states right after the latest call


def _states() -> tuple[torch.Tensor, ...]:
    """The default generators' states: the CPU's, and the current GPU's once CUDA is up."""
    cpu = torch.get_rng_state()
    return (cpu, torch.cuda.get_rng_state()) if torch.cuda.is_initialized() else (cpu,)


class Reseeds:
    """The snippet's ``torch.manual_seed`` calls inside loops, by the line in the loop."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._lines: dict[int, _SeedLine] = {}

    @functools.cached_property
    def _source(self) -> SourceLoops:
        """The source, read at the first call (the recorder has it by then)."""
        return SourceLoops(self._rec.source_lines)

    def before(self, seed: object) -> _SeedLine | None:
        """Look at a call ``torch.manual_seed(seed)`` about to run; return what :meth:`after`
        takes once it ran (``None``: not a call of the snippet's in a loop)."""
        rec = self._rec
        try:
            if not isinstance(seed, int):
                return None
            place = self._in_loop()
            if place is None:
                return None
            line, frame = place
            with rec.mute():
                known = self._lines.get(line)
                if known is None:
                    if len(self._lines) >= _MAX_LINES:
                        return None
                    known = self._lines[line] = _SeedLine(
                        self._source.seed_loop(line, frame), seed, first_steps=rec.training.total_steps
                    )
                elif known.loop is not None:
                    steps = rec.training.total_steps
                    drawn = any(not torch.equal(a, b) for a, b in zip(known.state, _states(), strict=False))
                    if known.seed == seed and steps > known.steps and drawn:
                        known.repeats += 1
                known.seed = seed
                known.calls += 1
                known.steps = rec.training.total_steps
            return known if known.loop is not None else None
        except Exception:
            rec.observation_failed()
            return None

    def after(self, line: _SeedLine) -> None:
        """Read the generators' states the call :meth:`before` looked at left."""
        try:
            with self._rec.mute():
                line.state = _states()
        except Exception:
            self._rec.observation_failed()

    def _in_loop(self) -> tuple[int, FrameType] | None:
        """The line and frame of the innermost snippet frame on the stack whose line is in a
        loop (``set_seed(0)`` in the loop, whose body calls ``torch.manual_seed``)."""
        f: FrameType | None = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == SNIPPET_FILENAME and self._source.loop_of(f.f_lineno) is not None:
                return f.f_lineno, f
            f = f.f_back
        return None

    def reports(self) -> list[Said]:
        """seed-reset-in-loop for each line that reseeded as NOTE [A seed inside the loop] says."""
        said = []
        source = self._rec.source_lines
        for line, seeded in self._lines.items():
            if seeded.loop is None or seeded.repeats < 1:
                continue
            steps = seeded.steps - seeded.first_steps
            code = quoted_code(source, line) or "torch.manual_seed(…)"
            loop_line = seeded.loop.loop_line
            draws = "; ".join(seeded.loop.draws)
            said.append(
                Said(
                    "seed-reset-in-loop",
                    line,
                    "The seed is reset inside the loop: every iteration draws the same numbers",
                    f"{code} ran {seeded.calls} times, once per iteration of the loop at line {loop_line}, "
                    f"with {steps} optimizer step{'' if steps == 1 else 's'} between the first call and the "
                    f"last. Each call puts the random generator back to the state of seed {seeded.seed}, so "
                    f"what is drawn after it comes out the same in every iteration: {draws}. What should "
                    "change from one iteration to the next (the random batch, the shuffled order, the "
                    "noise, the dropout masks) repeats, and the model keeps training on the same numbers, "
                    "with nothing to say so.",
                    f"Seed once, above the loop: move {code} before line {loop_line}. To draw the same "
                    "numbers on purpose (a fixed evaluation set), give those draws a generator of their "
                    f"own: g = torch.Generator().manual_seed({seeded.seed}); torch.randn(…, generator=g).",
                    [],
                )
            )
        return said
