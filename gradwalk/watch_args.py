"""What :func:`gradwalk.watch` is given, read and checked: the snippet (its text, or a
``Path`` to a file) and its limits (a ``Limits``, or a dict of its fields)."""

from __future__ import annotations

import importlib.util
import os
import textwrap
from pathlib import Path
from typing import Any

__all__ = ["names_a_file", "watch_limits", "watch_source"]


def watch_limits(limits: object) -> Any:
    """``watch``'s ``limits`` as an ``engine.events.Limits``: one as it is, a dict of its fields
    (``{"detail_steps": 0}``) made into one, ``None`` for the defaults. Raises ``ValueError``
    naming a field that is not one or a value it refuses, ``TypeError`` for anything else."""
    from pydantic import ValidationError

    from engine.events import Limits

    if limits is None or isinstance(limits, Limits):
        return limits
    if not isinstance(limits, dict):
        raise TypeError(f"limits must be a Limits or a dict of its fields, not {type(limits).__name__}")
    try:
        return Limits.model_validate(limits)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"]))
        raise ValueError(f"limits: {where}: {first['msg']}") from None


def watch_source(source: object) -> tuple[str, str, str | None]:
    """The text of what :func:`watch` was given; the file name it runs as; the file's name
    without ``.py`` for a title (``None`` for a text).

    A file is read as ``python file.py`` reads it (a UTF-8 BOM, a ``# -*- coding`` line,
    ``\\r\\n`` line ends) and kept line for line: its blank first lines count, so errors
    name the lines Python names. A text (a notebook's triple-quoted string) loses one leading
    BOM, its common indentation and the blank lines around it."""
    if isinstance(source, os.PathLike):
        path = Path(source)
        return importlib.util.decode_source(path.read_bytes()), path.name, path.stem
    if isinstance(source, str) and names_a_file(source):
        raise ValueError(f"watch() records the text it is given: for the file, pass Path({source.strip()!r})")
    if isinstance(source, str):
        return textwrap.dedent(source.removeprefix("\ufeff")).strip("\n") + "\n", "notebook.py", None
    if callable(source):
        raise TypeError(
            "watch() records a snippet's text; to record a function, use gradwalk.watch_call(fn, *args)"
        )
    raise TypeError(
        f"watch() takes a snippet's text (a str) or a Path to a .py file, not {type(source).__name__}"
    )


def names_a_file(text: str) -> bool:
    """Whether ``text`` is one line naming an existing ``.py`` file (``watch("lesson.py")``)."""
    line = text.strip()
    return "\n" not in line and line.endswith(".py") and Path(line).is_file()
