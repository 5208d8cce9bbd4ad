"""Pitfall detectors: the silent mistakes of PyTorch training code, caught and explained.

Each detector watches what the recorder sees (ops, module calls, backward calls, optimizer
steps, the end of the run) and emits at most one ``pitfall`` event per kind and line, with
a plain-language explanation that uses this run's numbers, and the fix. Detectors must be
cheap when nothing is wrong: :data:`WATCHED_OPS` keeps every other op away from them.
"""

from __future__ import annotations

from .detectors import PitfallWatch
from .kinds import PITFALL_KINDS
from .op_checks import WATCHED_OPS

__all__ = ["PITFALL_KINDS", "WATCHED_OPS", "PitfallWatch"]
