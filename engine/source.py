"""Find where in the snippet the current operation comes from, and what names it uses.

The snippet is compiled with the file name :data:`SNIPPET_FILENAME`, so its frames can be
told apart from PyTorch's own while walking the Python stack.
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from types import FrameType, UnionType
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar, overload

if TYPE_CHECKING:
    import torch

_T = TypeVar("_T")

__all__ = [
    "SNIPPET_FILENAME",
    "StatementLines",
    "assigned_name",
    "bound_name",
    "bound_to",
    "caller_name",
    "find_name",
    "frame_scopes",
    "is_a",
    "is_argument",
    "line_matching",
    "loops_around",
    "name_in",
    "nameless",
    "outer_name",
    "outer_scopes",
    "quoted_code",
    "snippet_frame",
    "snippet_frames",
    "source_lines",
    "statement_lines",
    "visible_names",
    "without_comment",
]

SNIPPET_FILENAME = "<gradwalk-snippet>"
_SETUP_FUNCTIONS = frozenset({"__init__", "reset_parameters", "_reset_parameters", "reset_running_stats"})
_COMMENT = re.compile(r"\s+#.*$")


# the line ends Python's tokenizer knows; str.splitlines() also splits on \x0b, \x0c,
# \x1c-\x1e, \x85, U+2028 and U+2029, which Python reads as part of a line
_LINE_END = re.compile(r"\r\n|\r|\n")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of a snippet's ``text`` as Python numbers them: split at ``\\n``, ``\\r\\n``
    and a lone ``\\r`` only (``str.splitlines()`` splits at a form feed or U+2028 too, and
    every line after one was quoted one off). With ``keepends``, each line but an unended
    last one ends in ``\\n``, as Python reads a file (for ``linecache``: a ``\\r`` kept at a
    line's end put every caret of a traceback one column off). Use it wherever snippet
    source is split into lines."""
    lines = []
    start = 0
    for end in _LINE_END.finditer(text):
        lines.append(text[start : end.start()] + ("\n" if keepends else ""))
        start = end.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def without_comment(text: str) -> str:
    """A line of code without its trailing comment (``x = 1  # one`` -> ``x = 1``)."""
    return _COMMENT.sub("", text)


_ASSIGNS = re.compile(r"\s*([^\W\d]\w*)\s*=[^=]")


def assigned_name(code: str) -> str | None:
    """The name a line of ``code`` assigns (``x`` in ``x = imgs.view(…)``), if one."""
    found = _ASSIGNS.match(code)
    return found.group(1) if found else None


def indentation(text: str) -> int:
    """How many characters of white space ``text`` (a line of code) starts with."""
    return len(text) - len(text.lstrip())


_OPENED = re.compile(r"([(\[{])\s+")
_CLOSED = re.compile(r",?\s+([)\]}]|\.(?=[^\W\d]))")


class StatementLines(list[str]):
    """A snippet's lines as :func:`statement_lines` gives them; :meth:`first` maps a line to
    the first line of its statement."""

    def __init__(self, lines: Sequence[str], firsts: Sequence[int]) -> None:
        super().__init__(lines)
        self._firsts = list(firsts)

    def first(self, line: int) -> int:
        """The first line of the statement snippet line ``line`` belongs to."""
        return self._firsts[line - 1] if 0 < line <= len(self._firsts) else line


def statement_lines(source_lines: Sequence[str]) -> StatementLines:
    """``source_lines`` with each statement that spans several lines (a call's arguments one
    to a line, a bracketed or backslash-continued expression) written on every one of its
    lines, whole: its first line's indentation, then its lines joined, comments left out
    (``w = (w -`` / ``     lr * w.grad)`` both read ``w = (w - lr * w.grad)``). A compound
    statement's header (``for``/``with``/``def`` up to its colon) counts as one statement,
    its body does not. So a hint that reads the line an error or an op names sees the
    whole statement; :func:`line_matching` answers a statement's first line. Snippets
    Python cannot tokenize come back as they are."""
    lines = list(source_lines)
    firsts = list(range(1, len(lines) + 1))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return StatementLines(lines, firsts)
    first: int | None = None
    for token in tokens:
        if token.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            continue
        if first is None:
            first = token.start[0]
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            last = min(token.start[0], len(lines))
            if first < last:
                parts = (
                    without_comment(text).strip().rstrip("\\").strip() for text in lines[first - 1 : last]
                )
                joined = _CLOSED.sub(r"\1", _OPENED.sub(r"\1", " ".join(p for p in parts if p)))
                whole = lines[first - 1][: indentation(lines[first - 1])] + joined
                lines[first - 1 : last] = [whole] * (last - first + 1)
                firsts[first - 1 : last] = [first] * (last - first + 1)
            first = None
    return StatementLines(lines, firsts)


def quoted_code(source_lines: Sequence[str], line: int | None, longest: int = 60) -> str | None:
    """The code at snippet line ``line``, without its comment, when it is short enough to
    quote in a hint (any length with ``longest=sys.maxsize``); ``None`` otherwise."""
    if line is None or not 0 < line <= len(source_lines):
        return None
    code = without_comment(source_lines[line - 1]).strip()
    return code if 0 < len(code) <= longest else None


def line_matching(
    source_lines: Sequence[str], pattern: re.Pattern[str], lines: Iterable[int] | None = None
) -> tuple[int, str] | None:
    """The first of ``lines`` (snippet line numbers, in the order to look; all of them, top
    down, by default) whose code, without its comment, ``pattern`` finds; with that code.
    In :class:`StatementLines` the line answered is the first of its statement."""
    for at in lines if lines is not None else range(1, len(source_lines) + 1):
        code = quoted_code(source_lines, at, sys.maxsize)
        if code is not None and pattern.search(code):
            return (source_lines.first(at) if isinstance(source_lines, StatementLines) else at), code
    return None


def snippet_frames() -> tuple[FrameType | None, int | None, int | None, bool]:
    """Return ``(innermost snippet frame, its line, the outermost snippet line, in_setup)``.

    ``in_setup`` tells that PyTorch is constructing a library module (``nn.Linear.__init__``
    and the like) on the way from the caller to the snippet: such ops initialise parameters,
    are not the snippet's computation, and are left off the tape. The frames are ``None``
    when no snippet code is on the stack.
    """
    f: FrameType | None = sys._getframe(1)
    inner: FrameType | None = None
    outer_line: int | None = None
    in_setup = False
    while f is not None:
        code = f.f_code
        if code.co_filename == SNIPPET_FILENAME:
            if inner is None:
                inner = f
            outer_line = f.f_lineno
        elif inner is None and code.co_name in _SETUP_FUNCTIONS and "torch" in code.co_filename:
            in_setup = True
        f = f.f_back
    if inner is None:
        return None, None, None, in_setup
    return inner, inner.f_lineno, outer_line, in_setup


def snippet_frame() -> tuple[FrameType | None, int | None]:
    """Return ``(innermost snippet frame, its line)``, or ``(None, None)`` outside the snippet.

    The cheap form of :func:`snippet_frames` for callers that need only the innermost
    frame: it stops walking the stack there (optimizer steps and backward calls use it on
    every training step).
    """
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == SNIPPET_FILENAME:
            return f, f.f_lineno
        f = f.f_back
    return None, None


def find_name(obj: Any, frame: FrameType | None) -> str | None:
    """Return a variable name bound to ``obj`` in ``frame`` (locals, then globals), if any."""
    return bound_name(obj, frame)[0]


def bound_name(obj: Any, frame: FrameType | None) -> tuple[str | None, bool]:
    """Return ``(name, local)``: the name :func:`find_name` finds, and whether it is a local
    of a function (``t`` in ``def f(t)``) rather than a name the snippet's module level binds.

    A function's local is the weaker name (see NOTE [Outer names win]).
    """
    if frame is None:
        return None, False
    module_level = frame.f_locals is frame.f_globals
    name = name_in(obj, frame.f_locals)
    if name is not None:
        return name, not module_level
    if not module_level:
        name = name_in(obj, frame.f_globals)
    return name, False


# NOTE [Outer names win]
# A tensor or module is named when the snippet first uses it, from the variables of the
# frame that uses it. Inside a function that is the function's parameter: `def f(t)` called
# as `f(x)` named x `t`, so the app showed `t.grad` and x never appeared. A name an outer
# frame binds is the one the snippet knows the object by, so it wins: the module level's
# first, then the outermost function's (`main()` calling `train(model)`). The search is
# done when a local name is found for a leaf (parameters and inputs, few), for a tensor
# that is a function's argument (`nll(pred, yb)`'s `input`: each iteration of a loop read
# `input` until the end of the run renamed the last one) and for a module called outside
# any other, never per op; what keeps a local name is renamed at the end of
# the run if the module level still binds it (Recorder.finish).


def outer_name(obj: Any, frame: FrameType) -> str | None:
    """Return the name a scope outside ``frame`` binds ``obj`` to, if any: the module
    level's, else the outermost calling snippet function's (NOTE [Outer names win])."""
    scopes = outer_scopes(frame)
    if frame.f_locals is not frame.f_globals:
        scopes.pop()  # frame's own
    for scope in scopes:
        name = name_in(obj, scope)
        if name is not None:
            return name
    return None


def caller_name(obj: Any, local: str | None, frame: FrameType, leaf: bool) -> str | None:
    """The name a scope outside ``frame`` binds ``obj`` to (:func:`outer_name`), looked for
    where ``obj`` is a ``leaf`` or ``local`` is one of the arguments of the function ``frame``
    runs: a tensor met first as ``def nll(input, target)``'s ``input`` was made outside,
    where the caller may have a name for it (``pred``, in each iteration of a training loop:
    NOTE [Outer names win]). ``None`` otherwise."""
    if leaf or is_argument(local, frame):
        return outer_name(obj, frame)
    return None


def is_argument(name: str | None, frame: FrameType) -> bool:
    """Whether ``name`` is one of the arguments of the function ``frame`` runs."""
    code = frame.f_code
    return name is not None and name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


def nameless(obj: Any, name: str, frame: FrameType) -> bool:
    """Whether function ``frame``'s local ``name`` for ``obj``, a tensor an op made, names
    nothing: where an outer scope binds ``name`` to another tensor (NOTE [A local name that
    hides another tensor]), or ``name`` is an argument the caller gave without a name of its
    own (``P3(c + d * x)``'s ``input`` read ``add c, d * x → input`` at a line with no
    ``input``; the expression is the better label)."""
    return shadowed(obj, name, frame) or is_argument(name, frame)


def shadowed(obj: Any, name: str, frame: FrameType) -> bool:
    """Whether a scope outside function ``frame`` binds ``name`` to another tensor than
    ``obj``: the module level, or a snippet function further out (NOTE [A local name that
    hides another tensor])."""
    scopes = outer_scopes(frame)
    scopes.pop()  # frame's own
    for scope in scopes:
        value = scope.get(name)
        if value is not None and value is not obj and issubclass(type(value), _tensor_class()):
            return True
    return False


# NOTE [A local name that hides another tensor]
# A tensor a function made is named by the function's local when nothing outside binds it:
# `h = torch.tanh(x @ W)` in `forward` reads `h`. But a local that an outer scope also uses
# for another tensor named two tensors alike: `def f(x)` called as `f(x * 2)` showed `x * 2`
# as `x`, beside the snippet's own `x`, so the graph read `mul x → x` and `x` fed `x`. Such
# a local is not taken: the tensor reads as the expression that made it (`x * 2`). A leaf's
# local already gives way to its outer name (NOTE [Outer names win]).


def frame_scopes(frame: FrameType | None) -> list[dict[str, Any]]:
    """The scopes code running in ``frame`` reads names from, in the order it looks: its
    locals, then its globals (one scope at the module level, where they are the same; none
    without a frame)."""
    if frame is None:
        return []
    return [frame.f_locals] if frame.f_locals is frame.f_globals else [frame.f_locals, frame.f_globals]


def visible_names(frame: FrameType | None) -> dict[str, Any]:
    """The names code running in ``frame`` sees: its globals overlaid by its locals (empty
    without a frame)."""
    return {**frame.f_globals, **frame.f_locals} if frame is not None else {}


_DOTTED = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")


def bound_to(expression: str | None, frame: FrameType | None) -> Any:
    """What a (dotted) name, ``model`` or ``self.fc.bias``, is bound to in ``frame``, read
    without running the snippet's code (no property, no ``__getattr__``: a model's layers,
    parameters and buffers from its tables); ``None`` for any other expression, or a name
    not bound."""
    if not expression or not _DOTTED.fullmatch(expression):
        return None
    first, *rest = expression.split(".")
    value = visible_names(frame).get(first)
    for attr in rest:
        if is_module(value):
            tables = [vars(value).get(t, {}) for t in ("_parameters", "_buffers", "_modules")]
            value = next((t[attr] for t in tables if attr in t), vars(value).get(attr))
        else:
            try:
                value = inspect.getattr_static(value, attr, None)
            except Exception:  # an object whose attribute lookup itself fails
                return None
    return value


def outer_scopes(frame: FrameType | None) -> list[dict[str, Any]]:
    """Return the variables of the snippet's scopes around ``frame``, outermost first: its
    module level, then each snippet function on the stack from the outermost to ``frame``."""
    if frame is None:
        return []
    functions = []
    f: FrameType | None = frame
    while f is not None:
        if f.f_code.co_filename == SNIPPET_FILENAME and f.f_locals is not f.f_globals:
            functions.append(f.f_locals)
        f = f.f_back
    functions.reverse()
    return [frame.f_globals, *functions]


def name_in(obj: Any, scope: dict[str, Any]) -> str | None:
    """The first name of ``scope`` (not a ``_`` one) bound to ``obj`` itself, or ``None``.
    Walks ``scope`` itself (it runs as tensors are named, on the hot path): pass a copy where
    other threads may bind names meanwhile."""
    for key, value in scope.items():
        if value is obj and not key.startswith("_"):
            return key
    return None


@overload
def is_a(value: object, kind: type[_T]) -> TypeGuard[_T]: ...
@overload
def is_a(value: object, kind: UnionType) -> bool: ...
def is_a(value: object, kind: type | UnionType) -> bool:
    """``isinstance`` by ``value``'s real type, for scans of the snippet's variables: an object
    of the snippet's whose ``__class__`` raises (or lies) can neither break nor fool them."""
    return issubclass(type(value), kind)


def is_module(value: object) -> TypeGuard[torch.nn.Module]:
    """Whether ``value`` is an ``nn.Module`` that can be walked: one whose class's
    ``__init__`` ran ``nn.Module.__init__`` (a model that forgot ``super().__init__()`` has
    none of its tables, and its ``modules()``, ``parameters()`` and ``training`` raise)."""
    return is_a(value, _module_class()) and "_modules" in getattr(value, "__dict__", {})


@functools.lru_cache(maxsize=4)
def parsed_source(source: str) -> ast.Module | None:
    """The snippet's whole ``source`` parsed, once for every detector that reads it at the end
    of a run (or as ops come); ``None`` where it does not parse. Shared: callers must only read
    the tree, never change it."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def loops_around(
    tree: ast.AST, line: int | None, header: bool = False
) -> list[ast.For | ast.AsyncFor | ast.While]:
    """The loops of ``tree`` (the snippet, :func:`parsed_source`) whose body holds snippet line
    ``line``, outermost first, so the innermost is the last; with ``header``, also one whose
    header starts at ``line`` (a one-line ``for x in xs: f(x)``). Empty for no ``line``."""
    if line is None:
        return []
    return sorted(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.For | ast.AsyncFor | ast.While)
            and (node.lineno <= line if header else node.lineno < line)
            and line <= (node.end_lineno or node.lineno)
        ),
        key=lambda node: node.lineno,
    )


@functools.cache
def _tensor_class() -> type[torch.Tensor]:
    import torch  # on first use: the server imports no torch

    return torch.Tensor


@functools.cache
def _module_class() -> type[torch.nn.Module]:
    from torch import nn  # on first use: the server imports no torch

    return nn.Module


def submodules(module: torch.nn.Module) -> Iterator[tuple[str, torch.nn.Module]]:
    """``module.named_modules()`` (itself first, as ``""``; each module once), leaving out
    a submodule that cannot be walked (:func:`is_module`) and what it holds, where
    ``named_modules()`` raises."""
    seen: set[int] = set()
    todo: list[tuple[str, torch.nn.Module]] = [("", module)]
    while todo:
        prefix, current = todo.pop()
        if id(current) in seen or not is_module(current):
            continue
        seen.add(id(current))
        yield prefix, current
        children = vars(current)["_modules"].items()
        todo.extend(reversed([(f"{prefix}.{k}" if prefix else k, m) for k, m in children if m is not None]))


def named_tensors(module: torch.nn.Module, table: str) -> Iterator[tuple[str, torch.Tensor]]:
    """``module.named_parameters()`` (``table`` ``"_parameters"``) or ``named_buffers()``
    (``"_buffers"``), each tensor once, over :func:`submodules`."""
    seen: set[int] = set()
    for prefix, sub in submodules(module):
        for name, t in vars(sub)[table].items():
            if t is not None and id(t) not in seen:
                seen.add(id(t))
                yield (f"{prefix}.{name}" if prefix else name, t)
