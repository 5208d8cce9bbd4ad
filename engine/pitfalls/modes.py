"""What the two pitfalls of a model's mode say: train-mode-in-evaluation and eval-mode-in-training.

train-mode-in-evaluation: ``torch.no_grad()`` without ``model.eval()``, so dropout and batch
norm behave as in training while the snippet measures.

eval-mode-in-training: a model left in eval mode after evaluation, and trained on.

``model.eval()`` before a validation pass switches dropout off and makes batch norm use its
running averages; without ``model.train()`` after it, every later training step runs that
way: dropout regularises nothing, batch norm stops following the data, and nothing errors.
Seen as a dropout or batch-norm layer that ran in training mode earlier, running in eval
mode with gradients on, then an optimizer step.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from types import FrameType

from ..source import SNIPPET_FILENAME, parsed_source, quoted_code, source_lines

__all__ = [
    "eval_left_on_report",
    "not_an_evaluation",
    "run_by_library",
    "train_kept_on_purpose",
    "train_mode_in_evaluation_explained",
]

_EVAL_CALL = re.compile(r"\.eval\(\)")


def _eval_call_line(source_lines: list[str], step_line: int | None) -> int | None:
    """The line that calls ``.eval()``: the last above ``step_line``, else (an evaluation at
    the end of the loop's body, before the next iteration's step) the first below it."""
    calls = [
        at
        for at in range(1, len(source_lines) + 1)
        if (code := quoted_code(source_lines, at, sys.maxsize)) is not None and _EVAL_CALL.search(code)
    ]
    above = [at for at in calls if step_line is None or at < step_line]
    return above[-1] if above else calls[0] if calls else None


def _eval_left_on_explained(
    kind: str, step: int, eval_line: int | None, source_lines: list[str]
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for layer class ``kind`` found in eval mode at optimizer
    step ``step``, after ``.eval()`` at ``eval_line`` (where known)."""
    code = quoted_code(source_lines, eval_line) if eval_line else None
    switched = f"{code} at line {eval_line}" if code else "model.eval()"
    effect = (
        "dropout no longer drops anything, and the regularisation it was there for is gone"
        if "Dropout" in kind
        else "batch norm normalises with its running averages instead of each batch's statistics, "
        "and stops updating them"
    )
    return (
        f"Training in eval mode: {kind} is switched off",
        f"{switched} switched {kind} to its evaluation behaviour, and nothing switched it back: at "
        f"optimizer step {step} the model trains in eval mode, so {effect}. Nothing errors, and the "
        "training loss may even look better.",
        "Call model.train() at the start of every training iteration (or right after the evaluation), "
        "as model.eval() is called before evaluating.",
    )


def train_mode_in_evaluation_explained(kind: str) -> tuple[str, str, str]:
    """``(title, message, fix)`` for layer class ``kind`` run in training mode under no_grad."""
    effect = (
        "it randomly zeroes activations while you measure"
        if "Dropout" in kind
        else "it normalises with this batch's statistics and updates its running averages"
    )
    return (
        f"{kind} still in training mode under no_grad()",
        f"torch.no_grad() stops recording the graph, but it does not switch layers to evaluation "
        f"behaviour: this {kind} is in training mode, so {effect}. Your validation numbers are noisy "
        "and lower than the model's real quality.",
        "Call model.eval() before evaluating (and model.train() before training again); keep "
        "torch.no_grad() too, they do different things.",
    )


def eval_left_on_report(
    kind: str, step: int, step_line: int | None, source_lines: list[str]
) -> tuple[int | None, str, str, str]:
    """``(line, title, message, fix)`` for layer class ``kind`` found in eval mode at
    optimizer step ``step`` (at ``step_line``): the line is the ``.eval()`` never undone,
    where the source shows it, else the step's."""
    at = _eval_call_line(source_lines, step_line)
    return (at or step_line, *_eval_left_on_explained(kind, step, at, source_lines))


def train_kept_on_purpose(source_lines: list[str]) -> bool:
    """Whether the snippet code on the stack runs in a ``with torch.no_grad()`` (or
    ``inference_mode()``) block whose statement just before is ``<model>.train()`` and that
    draws samples in a loop (a ``for``, ``while`` or comprehension), or whose comment says why
    (``model.train()  # batch norm on the test batch's own statistics, on purpose``): dropout
    kept on at test time on purpose (Monte-Carlo dropout), batch norm adapted to the test data,
    not a ``model.eval()`` forgotten. A ``model.train()`` at the top of a training loop, with
    the evaluation further down, is not just before its block; a block that runs the model
    once or twice after ``train()`` (the no_grad()-is-not-eval() lesson showing the mistake)
    has no loop and no such comment."""
    blocks = _blocks_after_train("\n".join(source_lines))
    if not blocks:
        return False
    return any(start <= line <= end for line in _snippet_lines() for start, end in blocks)


def not_an_evaluation(source_lines: list[str]) -> bool:
    """Whether the snippet code on the stack runs in a ``with torch.no_grad()`` block that
    runs a model the snippet optimizes (``<name>.parameters()`` is written somewhere) for
    something other than an evaluation: to make a training step's input (a name the block
    assigns flows, through later assignments of the same body, into a ``.backward()`` call
    there: a GAN's ``fake = G(z)`` for the discriminator's loss), or to draw samples from
    noise (``G(fixed_noise)``, ``fixed_noise = torch.randn(…)``, where G is a generator: another
    optimized model takes its output, ``D(fake)``; the DCGAN tutorial's images of progress). Either keeps the model in training mode on purpose; a teacher that is not
    optimized (distillation), or a validation on data whose loss is only printed, is still
    an evaluation."""
    blocks = _blocks_not_evaluating("\n".join(source_lines))
    if not blocks:
        return False
    return any(start <= line <= end for line in _snippet_lines() for start, end in blocks)


_NOISE = re.compile(r"^torch\.(?:randn|rand|randn_like|rand_like|normal)$")


@functools.lru_cache(maxsize=4)
def _blocks_not_evaluating(source: str) -> tuple[tuple[int, int], ...]:
    tree = parsed_source(source)
    if tree is None:
        return ()
    optimized = {
        _dotted(node.func.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parameters"
    } - {None}
    noise = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_noise(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    generators = _generators(tree, optimized)
    found = []
    for body in _statement_lists(tree):
        for at, stmt in enumerate(body):
            if (
                isinstance(stmt, ast.With)
                and _grad_off(stmt)
                and _calls_any(stmt, optimized)
                and (
                    _flows_into_backward(_assigned(stmt.body), body[at + 1 :])
                    or _calls_on_noise(stmt, generators, noise)
                )
            ):
                found.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
    return tuple(found)


def _dotted(node: ast.expr) -> str | None:
    """``G`` or ``self.gen`` as written; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _calls_any(block: ast.With, names: set[str | None]) -> bool:
    return any(
        isinstance(node, ast.Call) and _dotted(node.func) in names
        for stmt in block.body
        for node in ast.walk(stmt)
    )


def _generators(tree: ast.AST, optimized: set[str | None]) -> set[str | None]:
    """The optimized models whose output another optimized model takes (``D(G(z))``, or
    ``fake = G(z)`` then ``D(fake)``): a GAN's generators, not classifiers, whose outputs go
    to a loss."""
    made_by: dict[str, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            maker = _dotted(node.value.func)
            if maker in optimized:
                made_by.update({t.id: maker for t in node.targets if isinstance(t, ast.Name)})
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func) in optimized:
            for arg in node.args:
                inner = (
                    arg.func.value
                    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute)
                    else arg
                )
                if isinstance(inner, ast.Call) and _dotted(inner.func) in optimized:
                    found.add(_dotted(inner.func))
                elif isinstance(inner, ast.Name) and inner.id in made_by:
                    found.add(made_by[inner.id])
    found.discard(None)
    return found


def _is_noise(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _NOISE.match(_dotted(node.func) or "") is not None


def _calls_on_noise(block: ast.With, models: set[str | None], noise: set[str]) -> bool:
    """Whether ``block`` calls one of ``models`` on noise: a name assigned ``torch.randn(…)``
    (or ``rand``, ``normal``, ``randn_like``) anywhere, or such a call written in place."""
    return any(
        isinstance(node, ast.Call)
        and _dotted(node.func) in models
        and any((isinstance(arg, ast.Name) and arg.id in noise) or _is_noise(arg) for arg in node.args)
        for stmt in block.body
        for node in ast.walk(stmt)
    )


def _assigned(body: list[ast.stmt]) -> set[str]:
    return {
        name
        for stmt in body
        for node in ast.walk(stmt)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for name in _names_in(target)
    }


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _flows_into_backward(made: set[str], after: list[ast.stmt]) -> bool:
    """Whether a name of ``made``, or one assigned from it in ``after`` (in order), is what
    a ``.backward()`` call of ``after`` is called on."""
    tainted = set(made)
    for stmt in after:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value is not None:
                if _names_in(node.value) & tainted:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    tainted |= {name for target in targets for name in _names_in(target)}
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "backward"
                and _names_in(node.func.value) & tainted
            ):
                return True
    return False


def _snippet_lines() -> Iterable[int]:
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == SNIPPET_FILENAME:
            yield f.f_lineno
        f = f.f_back  # type: ignore[assignment]


@functools.lru_cache(maxsize=4)
def _blocks_after_train(source: str) -> tuple[tuple[int, int], ...]:
    """The line spans of the no_grad / inference_mode blocks of ``source`` right after a
    ``.train()`` (or ``.train(True)``) statement that loop (:func:`_samples`), or whose
    ``.train()`` comment says why (:func:`_train_comment_explains`)."""
    tree = parsed_source(source)
    if tree is None:
        return ()
    lines = source_lines(source)
    found = []
    for body in _statement_lists(tree):
        for before, stmt in itertools.pairwise(body):
            if (
                isinstance(stmt, ast.With)
                and _grad_off(stmt)
                and _calls_train(before)
                and (_samples(stmt) or _train_comment_explains(lines, before.lineno))
            ):
                found.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
    return tuple(found)


_TRAIN_REASON = re.compile(
    r"(?i)on purpose|deliberate|test.?time|adapt|(?:batch|its own) stat|monte.?carlo|\bmc\b|uncertaint"
)


def _train_comment_explains(lines: list[str], at: int) -> bool:
    """Whether the comment on line ``at`` (1-based), a ``.train()`` call, or on the comment
    lines right above it says why training mode is kept (on purpose, test-time adaptation of
    batch norm to the test batch's own statistics, Monte-Carlo dropout)."""
    comments = [lines[at - 1].partition("#")[2]]
    above = at - 2
    while above >= 0 and lines[above].lstrip().startswith("#"):
        comments.append(lines[above])
        above -= 1
    return any(_TRAIN_REASON.search(comment) for comment in comments)


def _statement_lists(tree: ast.AST) -> Iterable[list[ast.stmt]]:
    """Every list of statements in ``tree``: bodies, else branches, finally blocks."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                yield body


def _grad_off(stmt: ast.With) -> bool:
    return any(
        isinstance(item.context_expr, ast.Call)
        and isinstance(item.context_expr.func, ast.Attribute | ast.Name)
        and (getattr(item.context_expr.func, "attr", None) or getattr(item.context_expr.func, "id", None))
        in ("no_grad", "inference_mode")
        for item in stmt.items
    )


_LOOPS = (ast.For, ast.While, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)


def _samples(block: ast.With) -> bool:
    """Whether ``block`` runs something in a loop (Monte-Carlo dropout draws many samples)."""
    return any(isinstance(node, _LOOPS) for stmt in block.body for node in ast.walk(stmt))


def _calls_train(stmt: ast.stmt) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "train"
        and all(isinstance(a, ast.Constant) and a.value is True for a in call.args)
    )


_MODULE_FILES = ("torch/nn/modules/", "torch\\nn\\modules\\")
_GRADWALK = str(Path(__file__).resolve().parents[1])


def run_by_library() -> bool:
    """Whether the module now being called runs inside PyTorch's own code (SWA's update_bn
    runs a model in training mode on purpose), not straight from the snippet: between here
    and the innermost snippet frame is a torch file other than ``nn.Module``'s call machinery
    and the layers' own (containers call their layers)."""
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if name == SNIPPET_FILENAME:
            return False
        if (
            not name.startswith(_GRADWALK)
            and not any(part in name for part in _MODULE_FILES)
            and "torch" in name.replace("\\", "/").split("/")
        ):
            return True
        f = f.f_back
    return False
