"""Record in full again once the training loop whose steps went metrics-only has ended.

# NOTE [Code after the loop]
A long run records its first steps in full and the rest as metrics (training.py,
hand_loops.py). The tape mode is then off PyTorch's stack, so nothing per op says when the
loop is over, and the code after it (a final evaluation, ``print(model(x_test))``) was left
off the tape too. The snippet is therefore compiled with the outermost loop statements of
each scope (the module, each function and class body) wrapped so that leaving one calls
back (and each ``except`` clause, below)::

    try:
        for ...:            # the snippet's loop, its lines unchanged
            ...
    except BaseException:
        __gradwalk_loop_raised__(n)
        raise
    finally:
        __gradwalk_loop_end__(n)

which costs nothing per iteration (a ``try`` is free in Python 3.11) and one call per loop
left. A wrapper nests two blocks more, of the 20 Python allows a scope: code the wrapped
tree would not compile is compiled as written, unwrapped. When recording turns
metrics-only, the loop that ends it is chosen from the stack:
the outermost loop of the outermost snippet frame whose current line is inside one (an
epoch loop around a batch loop, not the batch loop; a loop inside ``train()`` when the
module level calls ``train()`` from no loop). Leaving that loop normally (its end, a
``break``, a ``return`` from within it) records in full again; leaving it by an exception
does not, so an error keeps its "recorded metrics-only" hint, until a handler of the
snippet's catches it (each ``except`` clause begins with a call,
``__gradwalk_loop_caught__()``: ``except KeyboardInterrupt:`` around a training loop, then
the evaluation). A later step turns recording metrics-only again as its schedule says. Loops of code gradwalk does not compile (a
function ``gradwalk.watch_call`` records, a library's) are not wrapped.
"""

from __future__ import annotations

import ast
import sys
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

from .source import SNIPPET_FILENAME

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["LOOP_CAUGHT", "LOOP_END", "LOOP_RAISED", "LoopEnds", "compile_with_loop_ends"]

LOOP_END = "__gradwalk_loop_end__"
LOOP_RAISED = "__gradwalk_loop_raised__"
LOOP_CAUGHT = "__gradwalk_loop_caught__"
_ANY_EXCEPTION = "__gradwalk_any_exception__"  # BaseException, under a name a snippet cannot shadow

# a code object's scope: (co_name, co_firstlineno)
ScopeKey = tuple[str, int]
# a loop: (first line, last line, number), per scope, outermost first
Loop = tuple[int, int, int]


def compile_with_loop_ends(source: str) -> tuple[CodeType, dict[ScopeKey, list[Loop]]]:
    """Compile ``source`` as the snippet, its loops wrapped (NOTE [Code after the loop]);
    return the code and the loops :meth:`LoopEnds.names` takes.

    Raises ``SyntaxError`` as ``compile`` does. Code the wrapping would not compile (blocks
    nested past Python's limit, an expression too deep to walk) is compiled as written, with
    no loop wrapped. Compiled here, so it inherits run.py's ``__future__`` flags as before.
    """
    tree = ast.parse(source, SNIPPET_FILENAME)
    try:
        loops = _LoopWrapper().wrap(tree)
        return compile(tree, SNIPPET_FILENAME, "exec"), loops
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return compile(source, SNIPPET_FILENAME, "exec"), {}


class _LoopWrapper:
    """Wraps the outermost loop statements of each scope (a module, a function, a class body):
    only those can be the loop :meth:`LoopEnds.remember` chooses, and each wrapper adds two
    of the 20 blocks Python lets a scope nest. Walks statements only, never into expressions
    (``x = 1 + 1 + …`` nests as deep as it is long)."""

    def __init__(self) -> None:
        self.loops: dict[ScopeKey, list[Loop]] = {}
        self._count = 0

    def wrap(self, tree: ast.Module) -> dict[ScopeKey, list[Loop]]:
        tree.body = self._body(tree.body, ("<module>", 1), in_loop=False)
        ast.fix_missing_locations(tree)
        for loops in self.loops.values():
            loops.sort(key=lambda loop: (loop[0], -loop[1]))
        return self.loops

    def _body(self, body: list[ast.stmt], scope: ScopeKey, in_loop: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                # a code object's first line is its first decorator's (Python >= 3.8)
                first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
                stmt.body = self._body(stmt.body, (stmt.name, first), in_loop=False)
                out.append(stmt)
                continue
            if isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
                self._inner(stmt, scope, in_loop=True)
                out.append(stmt if in_loop else self._wrapped(stmt, scope))
                continue
            self._inner(stmt, scope, in_loop)
            out.append(stmt)
        return out

    def _inner(self, stmt: ast.stmt, scope: ScopeKey, in_loop: bool) -> None:
        """Walk the statements ``stmt`` holds: its bodies, ``except`` clauses and ``case``s."""
        for field, value in ast.iter_fields(stmt):
            if not isinstance(value, list) or not value:
                continue
            if isinstance(value[0], ast.stmt):
                setattr(stmt, field, self._body(value, scope, in_loop))
            elif isinstance(value[0], ast.ExceptHandler):
                for handler in value:
                    caught = ast.Expr(ast.Call(ast.Name(LOOP_CAUGHT, ast.Load()), [], []))
                    handler.body = [
                        ast.copy_location(caught, handler.body[0]),
                        *self._body(handler.body, scope, in_loop),
                    ]
            elif isinstance(value[0], ast.match_case):
                for case in value:
                    case.body = self._body(case.body, scope, in_loop)

    def _wrapped(self, loop: ast.For | ast.AsyncFor | ast.While, scope: ScopeKey) -> ast.stmt:
        number = self._count
        self._count += 1
        self.loops.setdefault(scope, []).append((loop.lineno, loop.end_lineno or loop.lineno, number))

        def call(name: str) -> ast.stmt:
            return ast.Expr(ast.Call(ast.Name(name, ast.Load()), [ast.Constant(number)], []))

        raised = ast.ExceptHandler(
            ast.Name(_ANY_EXCEPTION, ast.Load()), None, [call(LOOP_RAISED), ast.Raise()]
        )
        wrapped = ast.Try(body=[loop], handlers=[raised], orelse=[], finalbody=[call(LOOP_END)])
        return ast.copy_location(wrapped, loop)


class LoopEnds:
    """Turns full recording back on when the loop that turned it off is left
    (NOTE [Code after the loop])."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._loops: dict[ScopeKey, list[Loop]] = {}
        # the frame running the loop whose end records in full again, and that loop's number
        self._target: tuple[FrameType, int] | None = None
        # that loop was left by an exception no snippet handler has caught yet
        self._uncaught = False

    def names(self, loops: dict[ScopeKey, list[Loop]]) -> dict[str, Any]:
        """Take the loops :func:`compile_with_loop_ends` found; return the names the wrapped code calls,
        for the snippet's globals."""
        self._loops = loops
        return {
            LOOP_END: self._ended,
            LOOP_RAISED: self._raised,
            LOOP_CAUGHT: self._caught,
            _ANY_EXCEPTION: BaseException,
        }

    def remember(self) -> None:
        """Recording is turning metrics-only: choose, from the calling stack, the loop whose
        end turns it back on (none when no snippet loop is running)."""
        self._target = None
        self._uncaught = False
        if not self._loops:
            return
        frames: list[FrameType] = []
        f: FrameType | None = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == SNIPPET_FILENAME:
                frames.append(f)
            f = f.f_back
        for frame in reversed(frames):  # the outermost first
            code = frame.f_code
            line = frame.f_lineno
            for first, last, number in self._loops.get((code.co_name, code.co_firstlineno), ()):
                if first <= line <= last:
                    self._target = (frame, number)
                    return

    def _raised(self, number: int) -> None:
        if self._is_target(number, sys._getframe(1)):
            self._target = None  # the loop failed: an error after it keeps its hint,
            self._uncaught = True  # unless the snippet catches it and goes on

    def _ended(self, number: int) -> None:
        if self._is_target(number, sys._getframe(1)):
            self._target = None
            self._record_in_full()

    def _caught(self) -> None:
        if self._uncaught:
            self._uncaught = False
            self._record_in_full()

    def _record_in_full(self) -> None:
        try:
            self._rec.set_detail(True)
        except Exception:  # never fail the snippet's loop
            self._rec.observation_failed()

    def _is_target(self, number: int, frame: FrameType) -> bool:
        target = self._target
        return target is not None and target[1] == number and target[0] is frame
