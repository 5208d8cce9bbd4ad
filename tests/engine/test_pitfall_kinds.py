"""The pitfall kinds are listed once (engine/pitfalls/kinds.py): the README's table names each
of them, in that order, and the detectors refuse a kind that is not listed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.pitfalls import PITFALL_KINDS, PitfallWatch
from engine.recorder import Recorder

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_lists_every_kind_in_order() -> None:
    section = README.read_text().split("### Pitfalls", 1)[1].split("In detail:", 1)[0]
    rows = re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE)
    assert rows == list(PITFALL_KINDS)
    assert len(set(PITFALL_KINDS)) == len(PITFALL_KINDS)


def test_an_unlisted_kind_is_refused() -> None:
    watch = PitfallWatch(Recorder(lambda event: None))
    with pytest.raises(ValueError, match="unknown pitfall kind 'missing-zero-grads'"):
        watch._say("missing-zero-grads", 1, "title", "message", "fix")
