"""The examples library: worked snippets with a title and one line of explanation each.

``server/examples/examples.json`` orders and describes the snippets; a ``.py`` file it does
not list still appears, titled after its file name, so adding a snippet never hides it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Example", "load_examples", "title_for"]


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
    for line in source.splitlines()[:20]:
        line = line.strip()
        if line.startswith("#") and not line.startswith("#!") and line.lstrip("# ").strip():
            return line.lstrip("# ").strip()[:80]
    return None
