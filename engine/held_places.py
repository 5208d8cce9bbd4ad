"""The tensors a snippet holds in plain containers, by their place: ``params[1][0]``,
``cfg['enc'][0]`` (NOTE [Tensors held in a plain container] in tensors.py)."""

from __future__ import annotations

from .source import is_a

__all__ = ["held_places"]

_MAX_HELD = 256  # the most items of a plain container searched for tensors to name
_MAX_DEPTH = 3  # and how deep in containers held in containers


def held_places(place: str, value: object, depth: int = _MAX_DEPTH) -> list[tuple[str, object]]:
    """Each item of ``value``, when it is a plain list, tuple or dict of at most 256 items, by
    its place (``place[0]``, ``place['w']``), then the items of the containers among them, to
    ``depth`` levels."""
    plain = is_a(value, list) or is_a(value, tuple) or is_a(value, dict)
    if (
        depth == 0
        or not plain
        or not isinstance(value, list | tuple | dict)
        or not 0 < len(value) <= _MAX_HELD
    ):
        return []
    places = value.items() if isinstance(value, dict) else enumerate(value)
    found = [(f"{place}[{key!r}]", item) for key, item in places]
    for inner, item in list(found):
        found.extend(held_places(inner, item, depth - 1))
    return found
