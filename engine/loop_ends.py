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
    except __import__("builtins").BaseException:
        __import__("engine.loop_ends").loop_ends.raised(run, n)
        raise
    finally:
        __import__("engine.loop_ends").loop_ends.ended(run, n)

(``run``: the number of the run's :class:`LoopEnds`; the calls reach it through the module,
so the snippet's globals hold no names of gradwalk's: ``dir()`` and ``globals()`` read as
in a plain script, and only a snippet that names ``__import__`` itself is compiled as
written, unwrapped), which costs nothing per iteration (a ``try`` is free in Python 3.11) and one call per loop
left. A wrapper nests two blocks more, of the 20 Python allows a scope: code the wrapped
tree would not compile is compiled as written, unwrapped. When recording turns
metrics-only, the loop that ends it is chosen from the stack:
the outermost loop of the outermost snippet frame whose current line is inside one (an
epoch loop around a batch loop, not the batch loop; a loop inside ``train()`` when the
module level calls ``train()`` from no loop). Leaving that loop normally (its end, a
``break``, a ``return`` from within it) records in full again; leaving it by an exception
does not, so an error keeps its "recorded metrics-only" hint, until a handler of the
snippet's catches it (each ``except`` clause begins with a call, ``caught(run)`` through
the module as above: ``except KeyboardInterrupt:`` around a training loop, then the
evaluation). A later step turns recording metrics-only again as its schedule says. Loops of code gradwalk does not compile (a
function ``gradwalk.watch_call`` records, a library's) are not wrapped.
"""

from __future__ import annotations

import ast
import itertools
import sys
import weakref
from types import CodeType, FrameType
from typing import TYPE_CHECKING

from .source import SNIPPET_FILENAME

if TYPE_CHECKING:
    import torch

    from .recorder import Recorder

__all__ = ["LoopEnds", "caught", "compile_with_loop_ends", "ended", "raised"]

# the module the wrapped code calls (ended, raised, caught below)
_THIS_MODULE = __name__  # "engine.loop_ends"
_numbers = itertools.count(1)
# each LoopEnds by its number, while its recorder lives
_running: weakref.WeakValueDictionary[int, LoopEnds] = weakref.WeakValueDictionary()

# a code object's scope: (co_name, co_firstlineno)
ScopeKey = tuple[str, int]
# a loop: (first line, last line, number), per scope, outermost first
Loop = tuple[int, int, int]


def compile_with_loop_ends(source: str, run: int) -> tuple[CodeType, dict[ScopeKey, list[Loop]]]:
    """Compile ``source`` as the snippet, its loops wrapped to call the :class:`LoopEnds`
    numbered ``run`` (NOTE [Code after the loop]); return the code and the loops
    :meth:`LoopEnds.take` takes.

    Raises ``SyntaxError`` as ``compile`` does. Code the wrapping would not compile (blocks
    nested past Python's limit, an expression too deep to walk), and a snippet that names
    ``__import__`` (which the wrappers call), are compiled as written, with no loop wrapped.
    Compiled with ``dont_inherit=True``: this module's own ``from __future__ import
    annotations`` must not reach the snippet (its annotations would all be strings, as
    ``python file.py`` leaves them only where the snippet says so itself).
    """
    if "__import__" in source:
        return compile(source, SNIPPET_FILENAME, "exec", dont_inherit=True), {}
    tree = ast.parse(source, SNIPPET_FILENAME)
    try:
        loops = _LoopWrapper(run).wrap(tree)
        return compile(tree, SNIPPET_FILENAME, "exec", dont_inherit=True), loops
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return compile(source, SNIPPET_FILENAME, "exec", dont_inherit=True), {}


def _imported(dotted: str) -> ast.expr:
    """``__import__(dotted)`` followed down to the module it names (``__import__`` hands back
    the top package)."""
    expr: ast.expr = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant(dotted)], [])
    for part in dotted.split(".")[1:]:
        expr = ast.Attribute(expr, part, ast.Load())
    return expr


def _call(function: str, *numbers: int) -> ast.stmt:
    """``__import__("engine.loop_ends").loop_ends.<function>(*numbers)`` as a statement."""
    target = ast.Attribute(_imported(_THIS_MODULE), function, ast.Load())
    return ast.Expr(ast.Call(target, [ast.Constant(n) for n in numbers], []))


class _LoopWrapper:
    """Wraps the outermost loop statements of each scope (a module, a function, a class body):
    only those can be the loop :meth:`LoopEnds.remember` chooses, and each wrapper adds two
    of the 20 blocks Python lets a scope nest. Walks statements only, never into expressions
    (``x = 1 + 1 + …`` nests as deep as it is long)."""

    def __init__(self, run: int) -> None:
        self.loops: dict[ScopeKey, list[Loop]] = {}
        self._run = run
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
                    caught = _call("caught", self._run)
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

        # BaseException as the builtins module has it, whatever the snippet calls BaseException
        any_exception = ast.Attribute(_imported("builtins"), "BaseException", ast.Load())
        raised = ast.ExceptHandler(any_exception, None, [_call("raised", self._run, number), ast.Raise()])
        wrapped = ast.Try(
            body=[loop], handlers=[raised], orelse=[], finalbody=[_call("ended", self._run, number)]
        )
        return ast.copy_location(wrapped, loop)


def ended(run: int, number: int) -> None:
    """Loop ``number`` of run ``run`` was left (the wrapped code calls this)."""
    ends = _running.get(run)
    if ends is not None:
        ends._ended(number, sys._getframe(1))


def raised(run: int, number: int) -> None:
    """Loop ``number`` of run ``run`` is being left by an exception (the wrapped code calls this)."""
    ends = _running.get(run)
    if ends is not None:
        ends._raised(number, sys._getframe(1))


def caught(run: int) -> None:
    """An ``except`` clause of run ``run``'s snippet caught an exception (the wrapped code calls this)."""
    ends = _running.get(run)
    if ends is not None:
        ends._caught()


class LoopEnds:
    """Turns full recording back on when the loop that turned it off is left
    (NOTE [Code after the loop])."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        # what the wrapped code passes to reach this (compile_with_loop_ends)
        self.number = next(_numbers)
        _running[self.number] = self
        self._loops: dict[ScopeKey, list[Loop]] = {}
        # the frame running the loop whose end records in full again, and that loop's number
        self._target: tuple[FrameType, int] | None = None
        # that loop was left by an exception no snippet handler has caught yet
        self._uncaught = False
        # the failed op a snippet's handler caught the error of, its operands held weakly
        # (NOTE [A caught error's operands are freed])
        self._caught_op: tuple[str, list[weakref.ref[torch.Tensor]]] | None = None

    def take(self, loops: dict[ScopeKey, list[Loop]]) -> None:
        """Take the loops :func:`compile_with_loop_ends` found, numbered for this."""
        self._loops = loops

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

    def _raised(self, number: int, frame: FrameType) -> None:
        if self._is_target(number, frame):
            self._target = None  # the loop failed: an error after it keeps its hint,
            self._uncaught = True  # unless the snippet catches it and goes on

    def _ended(self, number: int, frame: FrameType) -> None:
        if self._is_target(number, frame):
            self._target = None
            self._record_in_full()

    def _caught(self) -> None:
        # NOTE [A caught error's operands are freed]
        # The tape keeps the operands of the last op that raised for the error's hint
        # (``rec.failed_op``), strongly: a hint is written once the error has left the
        # snippet, when temporaries (`model(torch.ones(2, 5))`'s input) live nowhere else. Once
        # a handler of the snippet's catches an error, that kept a `del`-ed tensor alive (its
        # memory not freed, a weakref to it not cleared), unlike a run without gradwalk. The
        # operands are then held weakly: an error the handler raises again
        # (``raise``, ``raise ... from e``) gets them back for its hint while they all live
        # (:meth:`failed_op_again`).
        failed = self._rec.failed_op
        if failed is not None:
            self._caught_op = (failed[0], [weakref.ref(t) for t in failed[1]])
            self._rec.failed_op = None
        if self._uncaught:
            self._uncaught = False
            self._record_in_full()

    def failed_op_again(self) -> tuple[str, list[torch.Tensor]] | None:
        """The failed op whose error a handler caught, if all its operands still live (NOTE
        [A caught error's operands are freed])."""
        if self._caught_op is None:
            return None
        name, refs = self._caught_op
        operands = [ref() for ref in refs]
        alive = [t for t in operands if t is not None]
        return (name, alive) if len(alive) == len(refs) else None

    def _record_in_full(self) -> None:
        try:
            self._rec.set_detail(True)
        except Exception:  # never fail the snippet's loop
            self._rec.observation_failed()

    def _is_target(self, number: int, frame: FrameType) -> bool:
        target = self._target
        return target is not None and target[1] == number and target[0] is frame
