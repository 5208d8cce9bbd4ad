"""seed-reset-in-loop: a seed run again and again inside the training loop (NOTE [A seed
inside the loop] in seed_loops.py): ``torch.manual_seed(…)``, ``random.seed(…)`` or
``np.random.seed(…)``.

library_calls.py wraps the three while the run records and hands each call of the snippet's
to :meth:`Reseeds.before` (with the generator it resets) and :meth:`Reseeds.after`; the end of
the run asks :meth:`Reseeds.reports`. A line is reported when the run shows it reseeding a
generator: the same seed at the same line in two or more iterations, with optimizer steps
between them and that generator drawn from between them (its state moved), and when its
source shows training and draws from that generator after it in the loop (for Python's and
NumPy's, a call of the global generator's, not of a ``random.Random`` or ``default_rng`` of
the snippet's own). A line that reseeds several (a ``set_seed(…)`` helper) is told once,
naming each generator whose draws repeat.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from ..source import SNIPPET_FILENAME, quoted_code
from .kinds import Said
from .seed_loops import SeedLoop, SourceLoops

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["Reseeds"]

_MAX_LINES = 100  # seed lines followed, at most
_GENERATORS = ("torch", "random", "numpy")  # in the order a report names them
_OWNERS = {"torch": "torch's", "random": "Python's", "numpy": "NumPy's"}
_OWN_GENERATOR = {
    "torch": "g = torch.Generator().manual_seed({seed}); torch.randn(…, generator=g)",
    "random": "rng = random.Random({seed}); rng.{draw}(…)",
    "numpy": "rng = np.random.default_rng({seed}); rng.{draw}(…)",
}

# NumPy's legacy draws and what np.random.default_rng's Generator calls them
_NUMPY_GENERATOR_NAMES = {
    "randn": "standard_normal",
    "rand": "random",
    "random_sample": "random",
    "sample": "random",
    "ranf": "random",
    "randint": "integers",
    "random_integers": "integers",
}


@dataclass
class _SeedLine:
    """One line that seeds one generator inside a loop: what the source says of it, and what
    the run did."""

    loop: SeedLoop | None
    generator: str  # "torch", "random" or "numpy"
    seed: int
    calls: int = 0
    repeats: int = 0  # calls after steps and draws since the one before, with the same seed
    first_steps: int = 0  # optimizer steps taken by the first call
    steps: int = 0  # optimizer steps taken by the latest call
    state: Any = None  # the generator's state right after the latest call (:func:`_state`)


def _state(generator: str) -> Any:
    """The state of ``generator`` now: for torch the default generators' (the CPU's, and the
    current GPU's once CUDA is up), else Python's or NumPy's global one's."""
    if generator == "random":
        return sys.modules["random"].getstate()
    if generator == "numpy":
        return sys.modules["numpy"].random.get_state(legacy=True)
    cpu = torch.get_rng_state()
    return (cpu, torch.cuda.get_rng_state()) if torch.cuda.is_initialized() else (cpu,)


def _moved(generator: str, before: Any, now: Any) -> bool:
    """Whether ``generator`` drew between two of its states (:func:`_state`)."""
    if before is None:
        return False
    if generator == "torch":
        return any(not torch.equal(a, b) for a, b in zip(before, now, strict=False))
    if generator == "numpy":  # ("MT19937", keys, position, has_gauss, cached_gaussian)
        return bool((before[1] != now[1]).any()) or before[2:] != now[2:]
    return bool(before != now)


def _as_seed(seed: object) -> int | None:
    """An integer seed (NumPy's integers too) as an int; None for any other (None, a string)."""
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        return None
    try:
        return int(seed.__index__())
    except Exception:
        return None


class Reseeds:
    """The snippet's seed calls inside loops, by the line in the loop and the generator."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._lines: dict[tuple[int, str], _SeedLine] = {}

    @functools.cached_property
    def _source(self) -> SourceLoops:
        """The source, read at the first call (the recorder has it by then)."""
        return SourceLoops(self._rec.source_lines)

    def before(self, seed: object, generator: str = "torch") -> _SeedLine | None:
        """Look at a call that seeds ``generator`` (``"torch"``: ``torch.manual_seed``,
        ``"random"``: ``random.seed``, ``"numpy"``: ``np.random.seed``) with ``seed``, about to
        run; return what :meth:`after` takes once it ran (``None``: not a call of the snippet's
        in a loop)."""
        rec = self._rec
        try:
            number = _as_seed(seed)
            if number is None:
                return None
            place = self._in_loop()
            if place is None:
                return None
            line, frame = place
            with rec.mute():
                known = self._lines.get((line, generator))
                if known is None:
                    if len(self._lines) >= _MAX_LINES:
                        return None
                    known = self._lines[(line, generator)] = _SeedLine(
                        self._source.seed_loop(line, frame, generator),
                        generator,
                        number,
                        first_steps=rec.training.total_steps,
                    )
                elif known.loop is not None:
                    steps = rec.training.total_steps
                    drawn = _moved(generator, known.state, _state(generator))
                    if known.seed == number and steps > known.steps and drawn:
                        known.repeats += 1
                known.seed = number
                known.calls += 1
                known.steps = rec.training.total_steps
            return known if known.loop is not None else None
        except Exception:
            rec.observation_failed()
            return None

    def after(self, line: _SeedLine) -> None:
        """Read the state the call :meth:`before` looked at left its generator in."""
        try:
            with self._rec.mute():
                line.state = _state(line.generator)
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
        by_line: dict[int, list[_SeedLine]] = {}
        for (line, _), seeded in self._lines.items():
            if seeded.loop is not None and seeded.repeats >= 1:
                by_line.setdefault(line, []).append(seeded)
        return [self._report(line, seeded) for line, seeded in by_line.items()]

    def _report(self, line: int, seeded: list[_SeedLine]) -> Said:
        """The report for ``line``, which reseeded each of ``seeded``'s generators."""
        seeded.sort(key=lambda s: _GENERATORS.index(s.generator))
        first = seeded[0]
        assert first.loop is not None  # (reports() keeps only those)
        steps = first.steps - first.first_steps
        code = quoted_code(self._rec.source_lines, line) or _default_code(first.generator)
        loop_line = first.loop.loop_line
        draws = "; ".join(dict.fromkeys(d for s in seeded if s.loop is not None for d in s.loop.draws))
        if [s.generator for s in seeded] == ["torch"]:
            reset = "the random generator"
        else:
            owners = " and ".join(_OWNERS[s.generator] for s in seeded)
            reset = f"{owners} random generator{'s' if len(seeded) > 1 else ''}"
        own = "; ".join(_OWN_GENERATOR[s.generator].format(seed=s.seed, draw=_drawn_by(s)) for s in seeded)
        return Said(
            "seed-reset-in-loop",
            line,
            "The seed is reset inside the loop: every iteration draws the same numbers",
            f"{code} ran {first.calls} times, once per iteration of the loop at line {loop_line}, "
            f"with {steps} optimizer step{'' if steps == 1 else 's'} between the first call and the "
            f"last. Each call puts {reset} back to the state of seed {first.seed}, so "
            f"what is drawn after it comes out the same in every iteration: {draws}. What should "
            "change from one iteration to the next (the random batch, the shuffled order, the "
            "noise, the dropout masks) repeats, and the model keeps training on the same numbers, "
            "with nothing to say so.",
            f"Seed once, above the loop: move {code} before line {loop_line}. To draw the same "
            f"numbers on purpose (a fixed evaluation set), give those draws a generator of their own: {own}.",
            [],
        )


def _default_code(generator: str) -> str:
    """How a report names a seed call whose line it cannot quote."""
    return {"random": "random.seed(…)", "numpy": "np.random.seed(…)"}.get(generator, "torch.manual_seed(…)")


def _drawn_by(seeded: _SeedLine) -> str:
    """The method of the first draw after a seed of Python's or NumPy's generator
    (``permutation`` for ``np.random.permutation at line 12``), which a generator of the
    snippet's own has too."""
    draws = seeded.loop.draws if seeded.loop is not None else []
    called = draws[0].split(" at line ")[0].rsplit(".", 1)[-1] if draws else ""
    if seeded.generator == "numpy":
        called = _NUMPY_GENERATOR_NAMES.get(called, called)
    return called if called.isidentifier() else "random"
