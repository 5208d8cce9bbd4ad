"""``gradwalk export``: its flags, and the run or trace file it reads and writes as one page.

The page itself is :func:`server.export.render_export`'s; this module adds the command line
around it: the flags (:func:`add_export_parser`, registered by ``server.commands``), the
checks of what an author typed against the run, a run id looked up in the SQLite store or a
trace file read and validated, and the page written to disk (:func:`run_export`). Like
export.py it imports no FastAPI.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .chart_choices import HIDE_IDS_TEXT, Y_SCALES, CallChoice, parse_hide
from .export import (
    THEMES,
    VIEWS,
    BundleMissing,
    check_call_in,
    check_chart_names,
    check_choices,
    check_selection_in,
    check_step_in,
    first_problem,
    render_export,
    safe_id,
)

__all__ = ["add_export_parser", "run_export"]


def _call_arg(text: str) -> CallChoice:
    """``--call``'s value: a whole number (checked from 1 by :func:`check_choices`) or ``all``."""
    if text == "all":
        return "all"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a backward() call counted from 1, or 'all' (every call's graph), not {text!r}"
        ) from None


def add_export_parser(sub: Any) -> None:
    """Add ``export`` and its flags to ``sub`` (the ``gradwalk`` command's subparsers)."""
    from .settings import Settings

    p = sub.add_parser(
        "export",
        help="write a run or a trace file as one self-contained HTML page",
        description="Write ONE html file that shows a run (graph, backward stepper, tape, code) "
        "with no server and no network: open it from disk, or upload it to any static host or LMS.",
    )
    p.add_argument("run", metavar="RUN_ID_OR_TRACE_JSON", help="a run id in the store, or a trace file")
    p.add_argument("-o", "--output", type=Path, default=None, help="page to write (default: NAME.html)")
    p.add_argument(
        "--db",
        type=Path,
        default=Settings.env_defaults().get("db", Settings().db),
        help="SQLite store to read a run id from (%(default)s; GRADWALK_DB)",
    )
    p.add_argument("--title", default=None, help="the page's title (default: the run's)")
    p.add_argument("--view", choices=VIEWS, default=None, help="the tab it opens on (default: stepper)")
    p.add_argument(
        "--step",
        type=int,
        default=None,
        help="the backward step it opens at (0-based; a step past the end is refused)",
    )
    p.add_argument(
        "--call",
        type=_call_arg,
        default=None,
        help="draw the graph of this backward() call only (counted from 1), or 'all': every call's "
        "(default: the run's own, its first call where a loop's calls copy one big graph)",
    )
    p.add_argument(
        "--sel",
        metavar="n12|t3",
        default=None,
        help="the node or tensor picked, as the app's links write it (sel=t3): "
        "with --view inspector the page opens on it; the graph rings it",
    )
    p.add_argument("--theme", choices=THEMES, default=None, help="default: the reader's")
    p.add_argument("--hide-controls", action="store_true", help="no tabs or buttons: a picture of one step")
    p.add_argument("--yscale", choices=Y_SCALES, default=None, help="the charts' y axes (default: auto)")
    p.add_argument(
        "--per-parameter", action="store_true", help="the charts draw gradient and update norms per parameter"
    )
    p.add_argument(
        "--compare",
        metavar="RUN_ID_OR_TRACE_JSON",
        default=None,
        help="another run (an id in the store, or a trace file) drawn dashed under this one on the charts",
    )
    p.add_argument(
        "--hide",
        metavar="IDS",
        default=None,
        help=f"charts to hide, comma-separated: {HIDE_IDS_TEXT} (e.g. --hide grad,update)",
    )
    p.add_argument(
        "--no-elk", action="store_true", help="leave out the layered layout (1.6 MB smaller, breadth-first)"
    )


def run_export(args: Any) -> int:
    """Write the page for ``args.run``; return the exit status (2: bad input or no bundle)."""
    import sys

    def fail(message: str) -> int:
        print(f"gradwalk export: {message}", file=sys.stderr)
        return 2

    try:  # the flags first: a bad one is said before any trace is read
        hide = parse_hide(args.hide)
        check_chart_names(hide)
    except ValueError as exc:
        return fail(f"--{exc}")
    loaded = _load(str(args.run), Path(args.db))
    if isinstance(loaded, str):
        return fail(loaded)
    data, name, title = loaded
    title = args.title or title
    try:
        check_choices(step=args.step, call=args.call, sel=args.sel)
        events = json.loads(data)["events"]
        check_step_in(events, args.step)
        check_call_in(events, args.call)
        check_selection_in(events, args.sel)
    except ValueError as exc:
        return fail(f"--{exc}")
    compare = None
    if args.compare is not None:
        other = _load(str(args.compare), Path(args.db))
        if isinstance(other, str):
            return fail(f"--compare: {other}")
        compare = (safe_id(other[1], "compared"), other[0])
    try:
        page = render_export(
            data,
            title=title,
            view=args.view,
            step=args.step,
            controls=not args.hide_controls,
            theme=args.theme,
            yscale=args.yscale,
            per_parameter=args.per_parameter,
            compare=compare,
            hide=hide,
            call=args.call,
            sel=args.sel,
            elk=not args.no_elk,
        )
    except (BundleMissing, ValueError) as exc:
        return fail(str(exc))
    out = Path(args.output or f"{name}.html")
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:  # no such folder, a folder, no permission, a full disk
        return fail(f"cannot write {out}: {exc.strerror or exc}")
    print(f"wrote {out} ({len(page.encode()) / 2**20:.1f} MB): open it in any browser, no server needed")
    return 0


def _load(arg: str, db: Path) -> tuple[bytes, str, str | None] | str:
    """``(trace, name, title)`` of a trace file or a finished run in ``db``; a message when neither."""
    from pydantic import ValidationError

    from engine.events import trace_adapter

    title = None
    if Path(arg).is_file() and Path(arg).suffix == ".py":
        return f"{arg} is a snippet, not a trace: record it first (`gradwalk record {arg}`), then export its trace"
    if Path(arg).is_file():
        data = Path(arg).read_bytes()
        name = Path(arg).name.removesuffix(".json").removesuffix(".trace")
    else:
        if not db.is_file():
            return f"{arg!r} is not a file, and there is no run store at {db} (pass --db)"
        from .storage import SqliteRunStore

        store = SqliteRunStore(db)
        try:
            record, stored = store.get(arg), store.trace(arg)
        finally:
            store.close()
        if record is None or stored is None:
            return f"no finished run {arg!r} in {db}"
        data, name, title = stored, f"gradwalk-{arg}", record.title
    try:
        trace_adapter.validate_json(data)
    except ValidationError as exc:
        return f"{arg} is not a gradwalk trace: {first_problem(exc)}"
    return data, name, title
