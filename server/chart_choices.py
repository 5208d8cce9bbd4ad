"""The charts' choices a link, an embed, an export and a classroom carry: the y scale of
their axes, whether gradient and update norms are drawn per parameter, which other run
is drawn dashed under the one shown, and which charts are hidden; with them travels the
graph's backward() call (:data:`CallChoice`).

The names match the viewer's query string (``web/src/url-state.ts``):
``?yscale=auto|linear|log&norms=together|per-parameter&compare=RUN_ID&hide=grad,update``.
``hide`` is one string of comma-separated chart ids (``loss``, ``calls``, ``grad``,
``update``, ``lr``, ``memory``, ``cuda`` or ``metric:NAME``; empty: nothing hidden), at
most :data:`MAX_HIDDEN` of them, each matching :data:`HIDE_ID_PATTERN` as written there (a
``,`` or ``%`` in a metric's name is written ``%2C`` or ``%25``: :func:`hide_text`).

>>> parse_hide("grad,metric:val_acc,grad")
['grad', 'metric:val_acc']
>>> parse_hide(""), parse_hide(None)
([], [])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal, get_args

from pydantic import Field

__all__ = [
    "CALL_CHOICE",
    "COMPARE_PATTERN",
    "HIDE_IDS_TEXT",
    "HIDE_ID_PATTERN",
    "HIDE_PATTERN",
    "MAX_HIDDEN",
    "MAX_HIDE_LENGTH",
    "MAX_ID_LENGTH",
    "NORMS",
    "SELECTION_PATTERN",
    "Y_SCALES",
    "CallChoice",
    "Norms",
    "YScale",
    "check_hide",
    "hide_text",
    "parse_hide",
]

YScale = Literal["auto", "linear", "log"]
# the graph's backward() call: one, counted from 1, or "all" (every call's graph); none is
# the run's default (web/src/graph-calls.ts defaultCall). CALL_CHOICE is it for validation.
CallChoice = int | Literal["all"]
CALL_CHOICE = Annotated[int, Field(ge=1, le=10_000_000)] | Literal["all"]
#: ``sel``: the node (``n12``) or tensor (``t3``) picked, as the app's links write it
SELECTION_PATTERN = r"^[nt]\d{1,9}$"
Norms = Literal["together", "per-parameter"]
Y_SCALES: tuple[str, ...] = get_args(YScale)
NORMS: tuple[str, ...] = get_args(Norms)
# a run id as the server makes them, as ``compare`` names one (the viewer accepts the same)
COMPARE_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# one chart id in ``hide``: a chart (``grad``) or a logged metric (``metric:val_acc``,
# ``metric:acc (%)``): up to 128 characters (a metric's name is up to 100), none a control
# character. In the comma-separated text of a link or a room, an id's ``%`` and ``,`` are
# written ``%25`` and ``%2C`` (:func:`hide_text`). The viewer draws ids as text and the
# export page writes them as JSON, so no character of a name can become markup.
MAX_ID_LENGTH = 128
_HIDE_ID = rf"[^,\x00-\x1f\x7f]{{1,{MAX_ID_LENGTH}}}"
HIDE_ID_PATTERN = rf"^{_HIDE_ID}$"
MAX_HIDDEN = 32
# the longest ``hide`` string: MAX_HIDDEN of the longest ids and the commas between them
MAX_HIDE_LENGTH = MAX_HIDDEN * (MAX_ID_LENGTH + 1) - 1
# the chart ids, in words, for the descriptions of the route, the CLI flag and the room field
HIDE_IDS_TEXT = "loss, calls, grad, update, lr, memory, cuda, metric:NAME"
# the whole ``hide`` string: empty, or 1 to MAX_HIDDEN ids joined by commas
HIDE_PATTERN = rf"^(?:{_HIDE_ID}(?:,{_HIDE_ID}){{0,{MAX_HIDDEN - 1}}})?$"

_HIDE_ID_RE = re.compile(HIDE_ID_PATTERN)
_ESCAPED = re.compile(r"%(25|2[Cc])")


def hide_text(ids: Sequence[str]) -> str:
    """``ids`` as one ``hide`` text: comma-separated, each id's ``%`` and ``,`` escaped.

    >>> hide_text(["grad", "metric:top-1, top-5"])
    'grad,metric:top-1%2C top-5'
    """
    return ",".join(map(_escape, ids))


def _escape(chart: str) -> str:
    """One chart id as a ``hide`` text writes it."""
    return chart.replace("%", "%25").replace(",", "%2C")


def parse_hide(text: str | None) -> list[str]:
    """The chart ids in ``hide``'s comma-separated ``text`` (none for ``None`` or ``""``),
    each stripped of spaces around it (``grad, lr`` is ``grad`` and ``lr``, as the viewer reads
    it), duplicates dropped in order; ``ValueError`` names a bad id, or says there are too many.

    An id's ``%2C`` and ``%25`` are its ``,`` and ``%`` (:func:`hide_text` writes them).

    >>> parse_hide("grad,metric:acc (%),metric:top-1%2C top-5")
    ['grad', 'metric:acc (%)', 'metric:top-1, top-5']
    >>> parse_hide("grad,,lr")
    Traceback (most recent call last):
    ...
    ValueError: hide: '' is not a chart id (1 to 128 characters, none a control character)
    """
    if not text:
        return []
    ids = _at_most([chart.strip(" ") for chart in text.split(",")])
    for chart in ids:
        _check_id(chart)
    return list(dict.fromkeys(_ESCAPED.sub(lambda m: "%" if m[1] == "25" else ",", chart) for chart in ids))


def check_hide(ids: Sequence[str]) -> list[str]:
    """``ids`` as a list, duplicates dropped in order, if each is a chart id and there are
    at most :data:`MAX_HIDDEN`; else ``ValueError`` naming the bad id (a bare string, which
    would be read letter by letter, is refused too).
    """
    if isinstance(ids, str):
        raise ValueError(f"hide must be a list of chart ids, not the string {ids!r}")
    for chart in _at_most(ids):
        _check_id(_escape(chart) if isinstance(chart, str) else chart, shown=chart)
    return list(dict.fromkeys(ids))


def _at_most(ids: Sequence[str]) -> Sequence[str]:
    """``ids``, if there are at most :data:`MAX_HIDDEN`; else ``ValueError`` saying so."""
    if len(ids) > MAX_HIDDEN:
        raise ValueError(f"hide: at most {MAX_HIDDEN} charts, not {len(ids)}")
    return ids


def _check_id(text: object, shown: object = None) -> None:
    """Refuse ``text`` unless it is one chart id as a ``hide`` text writes it."""
    if not isinstance(text, str) or not _HIDE_ID_RE.fullmatch(text):
        raise ValueError(
            f"hide: {text if shown is None else shown!r} is not a chart id (1 to {MAX_ID_LENGTH} "
            "characters, none a control character)"
        )
