"""The charts' choices a link, an embed, an export and a classroom carry: the y scale of
their axes, whether gradient and update norms are drawn per parameter, which other run
is drawn dashed under the one shown, and which charts are hidden.

The names match the viewer's query string (``web/src/url-state.ts``):
``?yscale=auto|linear|log&norms=together|per-parameter&compare=RUN_ID&hide=grad,update``.
``hide`` is one string of comma-separated chart ids (``loss``, ``calls``, ``grad``,
``update``, ``lr``, ``memory``, ``cuda`` or ``metric:NAME``; empty: nothing hidden), at
most :data:`MAX_HIDDEN` of them, each matching :data:`HIDE_ID_PATTERN`.

>>> parse_hide("grad,metric:val_acc,grad")
['grad', 'metric:val_acc']
>>> parse_hide(""), parse_hide(None)
([], [])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, get_args

__all__ = [
    "COMPARE_PATTERN",
    "HIDE_IDS_TEXT",
    "HIDE_ID_PATTERN",
    "HIDE_PATTERN",
    "MAX_HIDDEN",
    "NORMS",
    "Y_SCALES",
    "Norms",
    "YScale",
    "check_hide",
    "parse_hide",
]

YScale = Literal["auto", "linear", "log"]
Norms = Literal["together", "per-parameter"]
Y_SCALES: tuple[str, ...] = get_args(YScale)
NORMS: tuple[str, ...] = get_args(Norms)
# a run id as the server makes them, as ``compare`` names one (the viewer accepts the same)
COMPARE_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# one chart id in ``hide``: a chart (``grad``) or a logged metric (``metric:val_acc``)
_HIDE_ID = r"[A-Za-z0-9_.:/ -]{1,64}"
HIDE_ID_PATTERN = rf"^{_HIDE_ID}$"
MAX_HIDDEN = 32
# the chart ids, in words, for the descriptions of the route, the CLI flag and the room field
HIDE_IDS_TEXT = "loss, calls, grad, update, lr, memory, cuda, metric:NAME"
# the whole ``hide`` string: empty, or 1 to MAX_HIDDEN ids joined by commas
HIDE_PATTERN = rf"^(?:{_HIDE_ID}(?:,{_HIDE_ID}){{0,{MAX_HIDDEN - 1}}})?$"

_HIDE_ID_RE = re.compile(HIDE_ID_PATTERN)


def parse_hide(text: str | None) -> list[str]:
    """The chart ids in ``hide``'s comma-separated ``text`` (none for ``None`` or ``""``),
    each stripped of spaces around it (``grad, lr`` is ``grad`` and ``lr``, as the viewer reads
    it), duplicates dropped in order; ``ValueError`` names a bad id, or says there are too many.

    >>> parse_hide("grad,<b>")
    Traceback (most recent call last):
    ...
    ValueError: hide: '<b>' is not a chart id (1 to 64 letters, digits, spaces and _ . : / -)
    """
    return check_hide([chart.strip(" ") for chart in text.split(",")]) if text else []


def check_hide(ids: Sequence[str]) -> list[str]:
    """``ids`` as a list, duplicates dropped in order, if each is a chart id and there are
    at most :data:`MAX_HIDDEN`; else ``ValueError`` naming the bad id (a bare string, which
    would be read letter by letter, is refused too).
    """
    if isinstance(ids, str):
        raise ValueError(f"hide must be a list of chart ids, not the string {ids!r}")
    if len(ids) > MAX_HIDDEN:
        raise ValueError(f"hide: at most {MAX_HIDDEN} charts, not {len(ids)}")
    for chart in ids:
        if not isinstance(chart, str) or not _HIDE_ID_RE.fullmatch(chart):
            raise ValueError(
                f"hide: {chart!r} is not a chart id (1 to 64 letters, digits, spaces and _ . : / -)"
            )
    return list(dict.fromkeys(ids))
