"""The ``gradwalk`` command: ``record`` a snippet, ``serve`` the app, ``export`` a page.

Each subcommand lives with the package that owns it; this module only assembles them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]


def _count(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more: {text!r}")
    return value


def _device(text: str) -> str:
    """An argparse type: ``cpu``, ``cuda`` or ``cuda:N``."""
    from engine.devices import DEVICE_NAME, device_problem

    if not DEVICE_NAME.match(text):
        raise argparse.ArgumentTypeError(str(device_problem(text)))
    return text


def _add_record(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="run a snippet with real PyTorch and write its trace as JSON",
        usage="gradwalk record SNIPPET [options] [-- ARG ...]",
        epilog="Arguments after -- are the snippet's own, its sys.argv[1:] as `python SNIPPET ARG ...` "
        "gives them (for a script's argparse): gradwalk record train.py -o t.json -- --lr 0.01",
    )
    p.add_argument("snippet", type=Path, help="a Python file (- reads it from standard input)")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="trace file to write (default: SNIPPET.trace.json; stdin.trace.json here for -)",
    )
    p.add_argument(
        "--device",
        default="cpu",
        type=_device,
        help="cpu, cuda or cuda:N (offered to the snippet as `device`)",
    )
    p.add_argument("--max-ops", type=_count, default=None, help="ops recorded before the cap")
    p.add_argument(
        "--detail-steps",
        type=_count,
        default=None,
        help="optimizer steps recorded in full at the start (default 3)",
    )
    p.add_argument(
        "--detail-every",
        type=_count,
        default=None,
        help="also record every k-th optimizer step (or backward() call of a loop that steps by hand) in full",
    )
    p.add_argument(
        "--detail-calls",
        type=_count,
        default=None,
        help="backward() calls of a loop that steps by hand (no optimizer) recorded in full (default 10)",
    )
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")


def _record(args: argparse.Namespace, snippet_args: list[str]) -> int:
    from engine.devices import device_problem
    from engine.events import Limits
    from engine.run import record
    from engine.summary import summarize

    snippet: Path = args.snippet
    from_stdin = str(snippet) == "-"  # `cat x.py | gradwalk record - -o t.json`
    if not from_stdin and snippet.is_dir():
        print(f"gradwalk record: {snippet} is a folder, not a Python file", file=sys.stderr)
        return 2
    if not from_stdin and not snippet.exists():
        print(f"gradwalk record: no such file: {snippet}", file=sys.stderr)
        return 2
    given = {
        "max_ops": args.max_ops,
        "detail_steps": args.detail_steps,
        "detail_every": args.detail_every,
        "detail_calls": args.detail_calls,
    }
    limits = Limits(**{k: v for k, v in given.items() if v is not None})
    # a pipe (`-`, /dev/stdin, `<(…)`) has no folder of its own: its trace goes to this one
    regular = not from_stdin and snippet.is_file()
    name = "<stdin>" if from_stdin else snippet.name
    out = args.output or (
        snippet.with_suffix(".trace.json")
        if regular
        else Path(f"{'stdin' if from_stdin else snippet.stem}.trace.json")
    )
    problem = device_problem(args.device)
    if problem:
        print(f"gradwalk record: --device {args.device}: {problem}", file=sys.stderr)
        return 2
    if not out.parent.is_dir() or out.is_dir():  # said before the snippet runs, not after
        print(f"gradwalk record: cannot write {out}: {_unwritable(out)}", file=sys.stderr)
        return 2
    try:
        # as Python reads a script: a coding cookie, a UTF-8 BOM, any newlines
        source = importlib.util.decode_source(sys.stdin.buffer.read() if from_stdin else snippet.read_bytes())
    except (SyntaxError, UnicodeDecodeError, LookupError, OSError) as exc:
        print(f"gradwalk record: cannot read {name}: {exc}", file=sys.stderr)
        return 2
    where = out.resolve()  # a snippet may os.chdir(): the trace goes where it was asked for
    trace = record(
        source,
        device=args.device,
        limits=limits,
        filename=name,
        argv=snippet_args,
        path=None if from_stdin else str(snippet),
    )
    try:
        where.write_text(trace.model_dump_json())
    except OSError as exc:
        print(f"gradwalk record: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        try:
            print(summarize(trace))
            print(f"trace written to {out}", flush=True)
        except BrokenPipeError:
            # the reader went away (`gradwalk record x.py | head`): the trace is written;
            # point stdout at /dev/null so that the interpreter's exit flush stays quiet
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    last = trace.events[-1]
    return 0 if last.type == "run_finished" and last.status == "ok" else 1


def _unwritable(out: Path) -> str:
    """Why no trace file can be made at ``out``: a folder there, or no folder to hold it."""
    return "it is a folder" if out.is_dir() else f"there is no folder {out.parent}"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # `gradwalk record x.py -- ARG …`: what follows -- is the snippet's own sys.argv[1:]
    snippet_args: list[str] = []
    if argv[:1] == ["record"] and "--" in argv:
        cut = argv.index("--")
        argv, snippet_args = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(prog="gradwalk", description="Watch PyTorch's autograd work.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_record(sub)
    extra = _extra_commands()
    for add, _ in extra.values():
        add(sub)
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command == "record":
        given = " ".join(unknown)
        print(
            f"gradwalk record: unrecognized arguments: {given} (the snippet's own arguments go after --: "
            f"gradwalk record {args.snippet} -- {given})",
            file=sys.stderr,
        )
        return 2
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "record":
        return _record(args, snippet_args)
    return int(extra[args.command][1](args) or 0)


def _extra_commands() -> dict[str, Any]:
    """Subcommands owned by the server (``serve``, ``export``): name -> (add_parser, run)."""
    try:
        from server.commands import COMMANDS
    except ImportError:
        return {}
    return dict(COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
