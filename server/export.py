"""Render a trace as one self-contained HTML page: the read-only viewer, its CSS and the trace inline.

The page needs no server and no network: it works opened from disk (``file://``), from any
static host or LMS, and inside a notebook's ``<iframe srcdoc>``. It carries the built
viewer bundle (``server/static/dist/viewer.js`` and ``viewer.css``, from ``make web``) and,
unless ``elk=False``, the graph layout worker's code (about 1.6 MB), run from a blob; without
it the graph is laid out breadth-first.

This module imports no FastAPI, so the command line (``gradwalk export``, in
export_command.py) and notebooks can use it.

>>> from server.export import render_export
>>> page = render_export(open("cubic.trace.json").read(), title="x**3 - 4x")  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from .chart_choices import (
    COMPARE_PATTERN,
    HIDE_IDS_TEXT,
    SELECTION_PATTERN,
    Y_SCALES,
    CallChoice,
    YScale,
    check_hide,
)
from .library import title_for
from .version import VERSION

__all__ = [
    "CHARTS",
    "DIST",
    "SELECTION_PATTERN",
    "THEMES",
    "VIEWS",
    "BundleMissing",
    "backward_steps",
    "check_call_in",
    "check_chart_names",
    "check_choices",
    "check_selection_in",
    "check_step_in",
    "first_problem",
    "render_export",
    "safe_id",
    "selection_option",
]

DIST = Path(__file__).resolve().parent / "static" / "dist"
VIEWS = ("graph", "stepper", "tape", "inspector", "code", "charts")

_SOURCE_MAP = re.compile(r"^[ \t]*(//|/\*)# sourceMappingURL=.*$", re.MULTILINE)
_CLOSE_TAG = re.compile(r"</(script|style)", re.IGNORECASE)


class BundleMissing(FileNotFoundError):
    """The viewer bundle is not built; the message says to run ``make web``."""


def _read(dist: Path, name: str) -> str:
    path = dist / name
    try:
        return _read_cached(path, path.stat().st_mtime_ns)
    except FileNotFoundError:
        raise BundleMissing(
            f"the viewer bundle is not built ({path} is missing): run `make web` first"
        ) from None


@functools.lru_cache(maxsize=8)
def _read_cached(path: Path, mtime_ns: int) -> str:
    # Keyed by modification time, so a rebuilt bundle is read again; a server exports often.
    return path.read_text(encoding="utf-8")


def _inline_script(text: str) -> str:
    """Make JS safe inside a <script> element: no closing tag, no comment opener."""
    text = _SOURCE_MAP.sub("", text)
    # \x3C means "<" in a JS string, template or regex; neither sequence occurs in plain code.
    return _CLOSE_TAG.sub(r"\\x3C/\1", text).replace("<!--", "\\x3C!--")


def _inline_style(text: str) -> str:
    """Make CSS safe inside a <style> element (in CSS, \\/ means "/")."""
    return _CLOSE_TAG.sub(r"<\\/\1", _SOURCE_MAP.sub("", text))


def _inline_json(data: str) -> str:
    # "<" can only occur inside JSON strings, where \u003c means the same.
    return data.replace("<", "\\u003c")


def _notices(dist: Path) -> str:
    legal = dist / "viewer.js.LEGAL.txt"
    if not legal.is_file():
        return ""
    text = legal.read_text(encoding="utf-8").replace("--", "- -")
    return f"<!-- Third-party notices (bundled libraries):\n{text}\n-->\n"


def _title_of(trace: dict[str, Any]) -> str:
    source = trace.get("source") or ""
    title = title_for(source, []) if isinstance(source, str) else None
    if title:
        return title
    for event in trace.get("events", [])[:1]:
        if isinstance(event, dict) and event.get("filename"):
            return str(event["filename"])
    return "gradwalk trace"


_COMPARE_ID = re.compile(COMPARE_PATTERN)


def _parse_trace(trace_json: str | bytes, what: str | None = None) -> tuple[str, dict[str, Any]]:
    """The text of a trace and the trace; ``ValueError`` names ``what`` when it is not one."""
    text = trace_json.decode("utf-8") if isinstance(trace_json, bytes) else trace_json
    prefix = f"{what} is not a gradwalk trace" if what else "not a gradwalk trace"
    try:
        trace = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{prefix}: the JSON does not parse ({exc})") from None
    if not isinstance(trace, dict) or not isinstance(trace.get("events"), list):
        raise ValueError(f"{prefix}: expected an object with an 'events' list")
    return text, trace


THEMES = ("light", "dark")
SELECTION = re.compile(SELECTION_PATTERN)


def check_choices(
    *,
    view: str | None = None,
    step: int | None = None,
    theme: str | None = None,
    yscale: str | None = None,
    hide: Sequence[str] | None = (),
    call: CallChoice | None = None,
    sel: str | None = None,
) -> list[str]:
    """Raise ``ValueError`` naming the first choice of a page's view that is not one
    (see :func:`render_export`; ``step`` must be a whole number, 0 or more, ``call`` one
    from 1 or ``"all"``, not another string, a float or a bool, ``sel`` a node or tensor as the
    app's links write it: ``n12``, ``t3``); return the ``hide`` ids, checked
    (:func:`check_hide`; ``None`` hides none)."""
    if sel is not None and not (isinstance(sel, str) and SELECTION.fullmatch(sel)):
        raise ValueError(
            f"sel must name a node (n12) or a tensor (t3), as the app's links write it, not {sel!r}"
        )
    if view is not None and view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise ValueError(f"step must be a whole number, 0 or more, not {step!r}")
    if step is not None and step < 0:
        raise ValueError("step must be 0 or more")
    if (
        call is not None
        and call != "all"
        and (isinstance(call, bool) or not isinstance(call, int) or call < 1)
    ):
        raise ValueError(
            "call must be a whole number from 1 (the backward() call, as the app counts them) or 'all' "
            f"(every call's graph), not {call!r}"
        )
    if theme is not None and theme not in THEMES:
        raise ValueError(f"theme must be one of {', '.join(THEMES)} (or None: the reader's), not {theme!r}")
    if yscale is not None and yscale not in Y_SCALES:
        raise ValueError(f"yscale must be one of {', '.join(Y_SCALES)}, not {yscale!r}")
    return check_hide(hide or ())


CHARTS = ("loss", "calls", "grad", "update", "lr", "memory", "cuda")


def check_chart_names(ids: Sequence[str]) -> None:
    """Raise ``ValueError`` naming the first of ``ids`` (checked by :func:`check_choices`) that
    is no chart a page draws: one of :data:`CHARTS`, or ``metric:NAME``. For ids an author
    types (``gradwalk export --hide``, a notebook's ``hide=``), where ``grads`` or ``val_acc``
    would otherwise hide nothing, silently; a browser's own state is not checked so."""
    for chart in ids:
        if chart not in CHARTS and not (chart.startswith("metric:") and len(chart) > len("metric:")):
            raise ValueError(f"hide: {chart!r} is no chart: name one of {HIDE_IDS_TEXT}")


def backward_steps(events: Iterable[Any]) -> int:
    """How many positions the stepper walks in ``events`` (dicts, as in a trace's JSON, or
    the engine's event objects): one per node a backward call ran and one per call's end,
    counted as the viewer counts them (web/src/trace-model.ts)."""
    started: set[Any] = set()
    steps = 0
    for event in events:
        get = _field_reader(event)
        kind = get("type", None)
        if kind == "backward_started":
            started.add(get("index", None))
        elif (kind == "node_executed" and get("backward", None) in started) or (
            kind == "backward_finished" and get("index", None) in started
        ):
            steps += 1
    return steps


def _field_reader(event: Any) -> Callable[[str, Any], Any]:
    """``get(name, default)`` for an event as a dict (a trace's JSON) or an engine event object."""
    return event.get if isinstance(event, dict) else functools.partial(getattr, event)


def check_step_in(events: Iterable[Any], step: int | None) -> None:
    """Raise ``ValueError`` when ``step`` (checked by :func:`check_choices`) is past the end of
    the backward walk of ``events`` (see :func:`backward_steps`). For steps an author types
    (``gradwalk export --step``, a notebook's ``step=``): a page opened past the end shows the
    last step without a word, which reads as the step asked for. ``None`` passes."""
    if step is None:
        return
    steps = backward_steps(events)
    if not steps:
        raise ValueError(f"this run called no backward(): there is no step {step} to open")
    if step >= steps:
        raise ValueError(
            f"step {step} is past the end: this run has {steps} backward step{'s' if steps > 1 else ''} (0 to {steps - 1})"
        )


def render_export(
    trace_json: str | bytes,
    *,
    title: str | None = None,
    view: str | None = None,
    step: int | None = None,
    controls: bool = True,
    theme: Literal["light", "dark"] | None = None,
    yscale: YScale | None = None,
    per_parameter: bool = False,
    compare: tuple[str, str | bytes] | None = None,
    hide: Sequence[str] = (),
    call: CallChoice | None = None,
    sel: str | None = None,
    elk: bool = True,
    dist: Path = DIST,
) -> str:
    """Return one HTML page showing ``trace_json`` (a trace as stored or recorded) offline.

    ``view`` is the tab it opens on (``graph``, ``stepper``, ``tape``, ``inspector``,
    ``code``, ``charts``; default: the stepper when the trace called ``backward()``), ``step`` the
    backward step (0-based, as in the app's links), ``theme`` forces light or dark (default:
    the reader's system setting). ``yscale`` is the charts' y axes (default ``auto``: log for
    a chart whose positive values span three decades), ``per_parameter`` draws gradient and
    update norms per parameter. ``compare`` is another run, ``(its id, its trace)``, drawn
    dashed under this one on the charts (the page carries it too). ``hide`` lists the charts
    hidden, by id (``loss``, ``calls``, ``grad``, ``update``, ``lr``, ``memory``, ``cuda`` or
    ``metric:NAME``; at most 32). ``call`` draws the graph of that backward() call only
    (counted from 1, as the app's ``call=`` links), ``"all"`` every call's together (default:
    the run's own, as in the app: its first call where a loop's calls copy one big graph). ``sel``
    is the node (``n12``) or tensor (``t3``) picked, as the app's links write it: the inspector
    (``view="inspector"``) shows it and the graph rings it. Raises :class:`BundleMissing` before ``make web`` and
    ``ValueError`` when ``trace_json`` (or ``compare``'s trace) is not a trace object with an
    ``events`` list, or when a choice is not one (a ``hide`` id included).
    """
    text, trace = _parse_trace(trace_json)
    compared = ""
    if compare is not None:
        compare_id, compare_json = compare
        if not _COMPARE_ID.fullmatch(compare_id):
            raise ValueError(f"compare must be a run id (letters, digits, - and _), not {compare_id!r}")
        compare_text, _ = _parse_trace(compare_json, "the compared run")
        compared = (
            f'<script type="application/json" id="gradwalk-compare">{_inline_json(compare_text)}</script>\n'
        )
    hidden = check_choices(view=view, step=step, theme=theme, yscale=yscale, hide=hide, call=call, sel=sel)

    script = _inline_script(_read(dist, "viewer.js"))
    style = _inline_style(_read(dist, "viewer.css"))
    worker = ""
    if elk and (dist / "elk-worker.js").is_file():
        code = _inline_script(_read(dist, "elk-worker.js"))
        worker = f'<script type="text/plain" id="gradwalk-elk-worker">{code}</script>\n'
    title = title or _title_of(trace)
    options = {
        "view": view,
        "step": step,
        "controls": controls,
        "theme": theme,
        "title": title,
        "yscale": yscale,
        "perParam": per_parameter,
        "compare": compare[0] if compare is not None else None,
        "hide": hidden,
        "call": call - 1 if isinstance(call, int) else call,  # the viewer's is the call's index
        "selection": selection_option(sel),
    }
    return (
        "<!doctype html>\n"
        '<html lang="en" data-theme="light" data-presenter="off">\n<head>\n'
        '<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        f'<meta name="generator" content="gradwalk {html.escape(VERSION)}">\n'
        f"<title>{html.escape(title)} · gradwalk</title>\n"
        f"<style>{style}</style>\n</head>\n"
        '<body class="gw-viewer-page">\n'
        '<div id="gradwalk-viewer"><noscript>This page needs JavaScript to show the graph.</noscript></div>\n'
        f'<script type="application/json" id="gradwalk-options">{_inline_json(json.dumps(options))}</script>\n'
        f'<script type="application/json" id="gradwalk-trace">{_inline_json(text)}</script>\n'
        f"{compared}"
        f"{worker}"
        f'<script type="module">{script}</script>\n'
        f"{_notices(dist)}"
        "</body>\n</html>\n"
    )


# --- what gradwalk export (export_command.py) and notebooks check, and ids ---------------------


def check_call_in(events: Iterable[Any], call: CallChoice | None) -> None:
    """Raise ``ValueError`` when ``call`` (checked by :func:`check_choices`; counted from 1)
    is no backward() call recorded in full in ``events``: the page would draw the run's
    default graph without a word. For calls an author types (``gradwalk export --call``, a
    notebook's ``call=``). ``None`` and ``"all"`` pass."""
    if call is None or call == "all":
        return
    ran: set[int] = set()
    for event in events:
        get = _field_reader(event)
        if get("type", None) == "node_executed":
            ran.add(int(get("backward", 0)))
    if call - 1 not in ran:
        full = ", ".join(str(i + 1) for i in sorted(ran)[:12]) + (", …" if len(ran) > 12 else "")
        said = f"the calls recorded in full are {full}" if ran else "this run walked no graph in full"
        raise ValueError(f"call {call} is no backward() call whose graph was recorded: {said}")


def check_selection_in(events: Iterable[Any], sel: str | None) -> None:
    """Raise ``ValueError`` when ``sel`` (checked by :func:`check_choices`) names a node or
    tensor ``events`` never made: the page would open on "not in this trace". For a choice an
    author types (``gradwalk export --sel``). ``None`` passes."""
    if sel is None:
        return
    kind = "node" if sel[0] == "n" else "tensor"
    ident = int(sel[1:])
    for event in events:
        get = _field_reader(event)
        if get("type", None) == kind and get("id", None) == ident:
            return
    raise ValueError(f"sel {sel}: this run made no {kind} {ident} (the app's link to it says which)")


def selection_option(sel: str | None) -> dict[str, Any] | None:
    """``sel`` (checked by :func:`check_choices`) as the viewer's option: ``{"kind", "id"}``."""
    if sel is None:
        return None
    return {"kind": "node" if sel[0] == "n" else "tensor", "id": int(sel[1:])}


def first_problem(exc: Any) -> str:
    """The first error of a pydantic ``ValidationError``, with where it is when it is
    somewhere (a file that is not JSON at all has no place to name)."""
    first = exc.errors()[0]
    where = ".".join(map(str, first["loc"]))
    return f"{first['msg']} at {where}" if where else str(first["msg"])


def safe_id(name: str, fallback: str) -> str:
    """``name`` kept to what a run id and a file name may hold (ASCII letters, digits, - and
    _; at most 64), or ``fallback`` when nothing is left."""
    return "".join(c for c in name if c.isascii() and (c.isalnum() or c in "-_"))[:64] or fallback
