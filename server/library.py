"""The examples library: worked snippets with a title and one line of explanation each.

``server/examples/examples.json`` orders and describes the snippets; a ``.py`` file it does
not list still appears, titled after its file name, so adding a snippet never hides it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Example", "comment_title", "first_code_line", "load_examples", "title_for"]


@dataclass(frozen=True)
class Example:
    """One snippet of the library."""

    id: str
    title: str
    summary: str
    source: str
    file: str


def load_examples(folder: Path) -> list[Example]:
    """Read the library from ``folder``; an absent or empty folder gives an empty list."""
    if not folder.is_dir():
        return []
    described: list[dict[str, str]] = []
    index = folder / "examples.json"
    if index.is_file():
        described = json.loads(index.read_text())["examples"]
    out: list[Example] = []
    seen: set[str] = set()
    for entry in described:
        path = folder / entry["file"]
        if not path.is_file():
            continue
        seen.add(path.name)
        out.append(
            Example(
                id=entry.get("id", path.stem),
                title=entry["title"],
                summary=entry.get("summary", ""),
                source=path.read_text(),
                file=path.name,
            )
        )
    for path in sorted(folder.glob("*.py")):
        if path.name not in seen:
            out.append(
                Example(
                    id=path.stem,
                    title=path.stem.replace("_", " ").capitalize(),
                    summary="",
                    source=path.read_text(),
                    file=path.name,
                )
            )
    return out


def title_for(source: str, examples: list[Example]) -> str | None:
    """Name a snippet: the example it is, else its first comment line, else None."""
    stripped = source.strip()
    for ex in examples:
        if ex.source.strip() == stripped:
            return ex.title
    for line in source.split("\n")[:20]:
        title = comment_title(line)
        if title:
            return title
    return None


_IMPORT = re.compile(r"^(import|from)\s")
#: The longest first line :func:`first_code_line` gives whole; a longer one is cut, ending "…".
FIRST_LINE_MAX = 80


def first_code_line(source: str) -> str:
    """Name a snippet with no title (the recent runs list, ``RunSummary.first_line``): its first
    line of code that is not an import (``import torch`` would name almost every run), else its
    first import, else ""; comments and blank lines are skipped, and a line over
    ``FIRST_LINE_MAX`` characters is cut, ending in "…"."""
    code = [s for s in (line.strip() for line in source.split("\n")) if s and not s.startswith("#")]
    line = next((s for s in code if not _IMPORT.match(s)), code[0] if code else "")
    return line if len(line) <= FIRST_LINE_MAX else line[: FIRST_LINE_MAX - 1].rstrip() + "…"


# a file's encoding line (PEP 263): `# -*- coding: utf-8 -*-`, `# coding: utf-8`
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=]")
# a notebook's cell marks: jupytext's `# %%` (`# %% [markdown]`), nbconvert's `# In[3]:`
_CELL_MARK = re.compile(r"^%%(\s*\[\w+\])?|^In\s*\[[\d ]*\]:?$")


def comment_title(line: str) -> str | None:
    """The title a comment ``line`` gives its snippet (its text, at most 80 characters);
    ``None`` for code, a shebang, an encoding line, a notebook's cell mark without words
    (``# %%``, ``# In[3]:``) and a rule of dashes. Mirrored by ``commentTitle`` in
    web/src/trace-model.ts."""
    line = line.strip()
    if not line.startswith("#") or line.startswith("#!") or _CODING.match(line):
        return None
    text = _CELL_MARK.sub("", line.lstrip("#").strip()).strip()
    return text[:80] if any(c.isalpha() for c in text) else None
