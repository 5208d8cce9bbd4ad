"""A lesson's "try" as changes to its code, which the card's Try it button makes for the learner.

A try is one or more *steps*, each made (then run) on one press of the button, and a step is
one or more edits made together: the first ``replace`` in the code becomes ``with``. Most
tries are one step of one edit (``"try_edit": {"replace": ..., "with": ...}`` in
``lessons.json``); a try that changes two places at once, or that asks for a second change
after the first has run, is written out in full (``"try_steps": [[edit, ...], ...]``).

Read back, every edit must find its text in the code exactly once, as the code stands when the
edit is made, and no step may find its result in the code before it is made: the app takes a
step whose results are all in the code for a step already made (web/src/lesson-try.ts).

>>> steps = read_tries({"try_edit": {"replace": "0.5", "with": "0.05"}}, "x", "lr = 0.5\\n")
>>> steps
((TryEdit(replace='0.5', with_='0.05'),),)
>>> made(steps, "lr = 0.5\\n", 1)
'lr = 0.05\\n'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TryEdit", "TryStep", "made", "read_tries"]


@dataclass(frozen=True)
class TryEdit:
    """One change: the first ``replace`` in the code becomes ``with_`` (``"with"`` in ``lessons.json``)."""

    replace: str
    with_: str

    def made_in(self, source: str) -> str:
        """``source`` with this change made."""
        return source.replace(self.replace, self.with_, 1)


TryStep = tuple[TryEdit, ...]
"""The edits one press of Try it makes together, in order."""


def made(steps: tuple[TryStep, ...], source: str, count: int) -> str:
    """``source`` with the first ``count`` steps of a try made (what the app's code is then)."""
    for step in steps[:count]:
        for edit in step:
            source = edit.made_in(source)
    return source


def read_tries(entry: dict[str, Any], lesson_id: str, source: str) -> tuple[TryStep, ...]:
    """The try steps of a lesson's ``lessons.json`` entry (none where its try is not edits).

    Raise ValueError, naming the lesson and the edit, where an edit is not a pair of strings,
    where its text is not in the code once as the code stands when it is made, or where a step's
    results are in the code before it."""
    if "try_edit" in entry and "try_steps" in entry:
        raise ValueError(
            f"lesson {lesson_id!r}: try_edit and try_steps both given (try_edit is one step of one edit)"
        )
    if entry.get("try_edit") is not None:
        steps_json: Any = [[entry["try_edit"]]]
    elif entry.get("try_steps") is not None:
        steps_json = entry["try_steps"]
        if not (
            isinstance(steps_json, list) and steps_json and all(isinstance(s, list) and s for s in steps_json)
        ):
            raise ValueError(f"lesson {lesson_id!r}: try_steps must be a list of steps, each a list of edits")
    else:
        return ()
    one = "try_edit" in entry

    def name(k: int, j: int) -> str:  # an edit, as lessons.json spells it
        return "try_edit" if one else f"try_steps step {k + 1} edit {j + 1}"

    steps: list[TryStep] = []
    for k, step_json in enumerate(steps_json):
        before = source
        step = tuple(
            _read_edit(edit, f"lesson {lesson_id!r}: {name(k, j)}") for j, edit in enumerate(step_json)
        )
        for j, edit in enumerate(step):
            where = f"lesson {lesson_id!r}: {name(k, j)}"
            found = source.count(edit.replace) if edit.replace else 0
            if found != 1:
                raise ValueError(
                    f"{where} replaces {edit.replace!r}, which its code holds {found} times (it must hold it once)"
                )
            source = edit.made_in(source)
        results = [(j, edit.with_) for j, edit in enumerate(step) if edit.with_]
        if results and all(result in before for _, result in results):
            j, result = results[0]
            raise ValueError(f"lesson {lesson_id!r}: {name(k, j)}'s result {result!r} is in its code already")
        for j, result in results:
            if result not in source:
                raise ValueError(
                    f"lesson {lesson_id!r}: {name(k, j)}'s result {result!r} is undone by the step's next edit"
                )
        steps.append(step)
    return tuple(steps)


def _read_edit(entry: Any, where: str) -> TryEdit:
    if not (isinstance(entry, dict) and set(entry) == {"replace", "with"}) or not all(
        isinstance(v, str) for v in entry.values()
    ):
        raise ValueError(f'{where} must be {{"replace": str, "with": str}}')
    return TryEdit(replace=entry["replace"], with_=entry["with"])
