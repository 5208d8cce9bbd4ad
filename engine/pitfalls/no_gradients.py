"""What step-without-gradients says: why a step found no gradient, and the fix.

A step none of whose parameters has a ``.grad`` changes nothing: no backward() ran before it
(or ``loss.backward`` was named without its parentheses), or one ran and a ``zero_grad()``
between it and the step cleared what it computed. That ``zero_grad()`` is found in the
snippet's source, between the backward() line and the step's.

Or backward() ran from a leaf: ``loss = torch.tensor(err, requires_grad=True)`` or
``loss.requires_grad = True``, the "fix" often given for "element 0 of tensors does not
require grad", makes the loss a new tensor with no history, so backward() fills only
``loss.grad``. The line that made it so is found in the source, above the backward() line.

Or backward() ran and reached only parameters another optimizer steps: a GAN whose generator
step computes its loss from ``fake = G(z).detach()``, the copy made for the discriminator's
step, so ``opt_g.step()`` finds G's parameters without gradients while D's have them. The
``.detach()`` (or ``torch.no_grad()``) line above the step is named where the source has one.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from ..explain_cut import cut_before
from ..source import line_matching, quoted_code

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["no_gradients_explained", "no_gradients_said", "previews_a_schedule"]

_ZERO_GRAD_CALL = re.compile(r"\bzero_grad\(")
_CUT = re.compile(r"\.detach\(\)|\bno_grad\(\)")
_BACKWARD_OF = re.compile(r"([^\W\d][\w.]*)\.backward\(")


def no_gradients_said(
    rec: Recorder,
    opt: torch.optim.Optimizer,
    step_line: int | None,
    uncalled_backward: list[tuple[int, str]],
    from_leaf: bool,
    copies: Mapping[int, str],
) -> tuple[str, str, str] | None:
    """``(title, why, fix)`` for a step of ``opt`` at ``step_line`` none of whose parameters
    had a gradient (the arguments as :func:`no_gradients_explained` takes them); ``None``
    where the backward reached parameters no optimizer steps (an optimizer built over another
    model): parameter-not-optimized says that, naming them, at the end."""
    backward = rec.backward
    others = (
        _gradients_elsewhere(rec.modules.all_params(), rec.training.stepped_params) if backward.calls else []
    )
    if others is None:
        return None
    if others:  # reached only parameters other optimizers step (a GAN's fake.detach())
        label = (rec.training.label_of(opt) or "opt").split(" ", 1)[0]
        return _reached_others(others, label, step_line, rec.statement_lines)
    why, fix = no_gradients_explained(
        backward.calls,
        backward.first_backward_line,
        step_line,
        rec.statement_lines,
        uncalled_backward,
        from_leaf,
        copies,
    )
    return "step() found no gradients: nothing was updated", why, fix


def _gradients_elsewhere(params: Sequence[tuple[Any, str]], stepped: set[int]) -> list[str] | None:
    """The names of the parameters of ``params`` (``(parameter, name)`` pairs, the run's) that
    hold a gradient, where each is one an optimizer has stepped (ids in ``stepped``): the
    backward() reached only other optimizers' parameters. ``None`` where one with a gradient
    is held by no optimizer that steps (parameter-not-optimized says that, at the end)."""
    graded = [(p, name) for p, name in params if p.grad is not None]
    if any(id(p) not in stepped for p, _ in graded):
        return None
    return [name for _, name in graded]


def _reached_others(
    others: Sequence[str], label: str, step_line: int | None, source_lines: Sequence[str]
) -> tuple[str, str, str]:
    """``(title, why, fix)`` for a step of optimizer ``label`` (its variable) at ``step_line``
    whose parameters had no gradient while ``others``, parameters other optimizers step, had:
    the loss backward() started from does not depend on this optimizer's parameters."""
    shown = ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
    cut = None
    for at in range((step_line or len(source_lines)) - 1, 0, -1):
        code = quoted_code(source_lines, at, sys.maxsize)
        if code and _CUT.search(code):
            cut = (at, code)
            break
    why = (
        f"None of {label}'s parameters had a gradient at this step, so step() skipped them all and they "
        f"kept their values. backward() did run, but it reached only parameters another optimizer steps "
        f"({shown}): the loss it started from does not depend on {label}'s parameters."
    )
    if cut is not None:
        why += (
            f" Line {cut[0]} ({cut[1]}) cuts them off: what .detach() (or torch.no_grad()) returns has no "
            "history, so backward() stops there."
        )
        fix = (
            f"Compute the loss {label} steps from an output that is not detached (in a GAN's generator step, "
            "fake = G(z) itself; detach it only where the discriminator trains: D(fake.detach()))."
        )
    else:
        fix = f"Compute the loss {label} steps from the output of the model whose parameters {label} holds."
    return f"{label}.step() found no gradients: its loss does not reach its parameters", why, fix


def no_gradients_explained(
    backward_calls: int,
    backward_line: int | None,
    step_line: int | None,
    source_lines: list[str],
    uncalled_backward: list[tuple[int, str]],
    from_leaf: bool = False,
    copies: Mapping[int, str] | None = None,
) -> tuple[str, str]:
    """``(why, fix)`` for a step at ``step_line`` that found no gradients, after
    ``backward_calls`` backward() calls (the first at ``backward_line``);
    ``uncalled_backward``: the lines that name a ``backward`` without calling it, with the
    name as written; ``from_leaf``: the last backward() started from a leaf (a tensor with no
    history); ``copies``: the lines seen copying tensors off the graph."""
    clearing = None
    if from_leaf and backward_calls and not uncalled_backward:
        return _from_leaf(backward_line, source_lines, copies or {})
    late = _backward_after(step_line, source_lines) if backward_calls == 0 and not uncalled_backward else None
    if late:
        at, code = late
        step_code = quoted_code(source_lines, step_line) if step_line else None
        step = f"{step_code} (line {step_line})" if step_code else "the step"
        return (
            f"This step ran before any backward(): {code} at line {at} comes after {step}, so every step "
            "finds no gradient (the next iteration's zero_grad() clears the ones backward() leaves), and "
            "step() skips every parameter whose .grad is None: the parameters keep their initial values, "
            "and the loss never falls.",
            f"Swap the two lines: {code} before {step_code or 'the step'}, every iteration: zero_grad → "
            "forward → loss → backward → step.",
        )
    if backward_calls == 0:
        why = (
            "No backward() ran before this step, so none of the optimizer's parameters has a "
            "gradient, and step() skips every parameter whose .grad is None: the parameters keep "
            "their initial values, and the loss never falls."
        )
    else:
        where = f" (line {backward_line})" if backward_line else ""
        clearing = _zero_grad_between(backward_line, step_line, source_lines)
        rewrapped = None if clearing else _new_leaf_on_the_way(backward_line, source_lines)
        if rewrapped is not None:
            at, code, name = rewrapped
            return (
                "None of the optimizer's parameters had a gradient at this step, so step() skipped them "
                f"all and they kept their values. backward() did run{where}, but the loss does not reach "
                f"them: line {at} ({code}) made {name} a new tensor from the model's numbers, a leaf with "
                f"no history, so backward() stops at {name}.",
                f"Compute {name} from the model's output with tensor operations only (no .tolist(), "
                ".item(), .detach() or torch.tensor(...) on the way), and drop "
                "requires_grad=True: it makes a new leaf, which only hides the error backward() raises "
                'without it ("element 0 of tensors does not require grad").',
            )
        cleared = (
            f"line {clearing[0]} ({clearing[1]}) cleared the gradients between it and this step "
            "(zero_grad() sets .grad to None)"
            if clearing
            else "the gradients were cleared between it and this step (zero_grad() sets .grad to "
            "None), or the loss it started from does not depend on these parameters"
        )
        why = (
            "None of the optimizer's parameters had a gradient at this step, so step() skipped them "
            f"all and they kept their values. backward() did run{where}: {cleared}."
        )
    if uncalled_backward:
        at, name = uncalled_backward[0]
        fix = f"Line {at} names {name} without calling it, which does nothing: add the parentheses, {name}()."
    elif clearing:
        fix = (
            f"Move {clearing[1]} (line {clearing[0]}) to the start of the iteration, before the forward "
            "pass: zero_grad → forward → loss → backward → step."
        )
    else:
        fix = (
            "Call loss.backward() after opt.zero_grad() and before opt.step(), every iteration: "
            "zero_grad → forward → loss → backward → step."
        )
    return why, fix


_NEW_LEAF = re.compile(
    r"^\s*([^\W\d]\w*)\s*=\s*torch\.(?:tensor|as_tensor|Tensor)\(.*\brequires_grad\s*=\s*True"
)


def _new_leaf_on_the_way(backward_line: int | None, source_lines: list[str]) -> tuple[int, str, str] | None:
    """The last line above ``backward_line``, in its block, that makes a tensor that requires
    grad from numbers (``out = torch.tensor(model(x).tolist(), requires_grad=True)``), whose
    name a later line up to the backward() uses: ``(line, code, name)``."""
    if backward_line is None:
        return None
    for at in range(backward_line - 1, 0, -1):
        code = quoted_code(source_lines, at, sys.maxsize) or ""
        if re.match(r"(for|while|def|class)\b", code):
            return None  # the top of the loop (or function) the backward() is in
        found = _NEW_LEAF.match(code)
        if found is None:
            continue
        name = found.group(1)
        later = " ".join(source_lines[at:backward_line])
        if re.search(rf"(?<![\w.]){re.escape(name)}\b", later):
            return at, code if len(code) <= 80 else f"{name} = torch.tensor(…, requires_grad=True)", name
    return None


def _from_leaf(
    backward_line: int | None, source_lines: list[str], copies: Mapping[int, str]
) -> tuple[str, str]:
    """``(why, fix)`` for a backward() at ``backward_line`` that started from a leaf;
    ``copies``: the lines seen copying tensors off the graph (NOTE in copied_out.py)."""
    code = quoted_code(source_lines, backward_line, sys.maxsize) if backward_line else None
    called = _BACKWARD_OF.search(code or "")
    name = called.group(1) if called else "the loss"
    made = _made_a_leaf(name, backward_line, source_lines) if called else None
    where = f" (line {backward_line})" if backward_line else ""
    if made is None:
        how = ", a tensor with no history (no grad_fn)"
    elif made[1].startswith(f"{name}."):
        how = f": line {made[0]} ({made[1]}) lets it require grad, but it has no history (no grad_fn)"
    else:
        how = f": line {made[0]} ({made[1]}) made it a new tensor with no history"
    cut = cut_before(name, made[0] + 1 if made else backward_line, source_lines, copies) if called else None
    return (
        f"backward(){where} started from {name}, a leaf{how}, so it filled {name}.grad and reached "
        "no parameter. None of the optimizer's parameters had a gradient at this step, so step() "
        f"skipped them all and they kept their values.{' ' + cut if cut else ''}",
        f"Compute {name} from the model's output with tensor operations only (no .item(), .detach(), "
        ".data or torch.tensor(...) on the way), and drop requires_grad=True: it makes a new leaf, which "
        'only hides the error backward() raises without it ("element 0 of tensors does not require '
        'grad").',
    )


def _made_a_leaf(name: str, backward_line: int | None, source_lines: list[str]) -> tuple[int, str] | None:
    """The last line above ``backward_line`` that makes ``name`` a leaf that requires grad
    (``name = torch.tensor(..., requires_grad=True)``, ``name.requires_grad = True``,
    ``name.requires_grad_()``), and its code."""
    if backward_line is None:
        return None
    escaped = re.escape(name)
    leaf = re.compile(
        rf"^{escaped}\s*=.*requires_grad\s*=\s*True|^{escaped}\.requires_grad\s*=\s*True|"
        rf"^{escaped}\s*=.*\.requires_grad_\(|^{escaped}\.requires_grad_\("
    )
    return line_matching(source_lines, leaf, range(backward_line - 1, 0, -1))


def _zero_grad_between(
    backward_line: int | None, step_line: int | None, source_lines: list[str]
) -> tuple[int, str] | None:
    """The first line strictly between a backward() and the step after it that calls
    ``zero_grad()``, and its code; ``None`` when none does (or the lines are unknown)."""
    if backward_line is None or step_line is None:
        return None
    return line_matching(source_lines, _ZERO_GRAD_CALL, range(backward_line + 1, step_line))


def _backward_after(step_line: int | None, source_lines: list[str]) -> tuple[int, str] | None:
    """The first ``….backward(`` line below ``step_line`` in the step's own block (no line
    between them less indented than the step), with its code."""
    if step_line is None or step_line > len(source_lines):
        return None
    indent = len(source_lines[step_line - 1]) - len(source_lines[step_line - 1].lstrip())
    for at in range(step_line + 1, len(source_lines) + 1):
        text = source_lines[at - 1]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if len(text) - len(text.lstrip()) < indent:
            return None
        code = quoted_code(source_lines, at)
        if code and _BACKWARD_OF.search(code):
            return at, code
    return None


def previews_a_schedule(opt: Any, params: Sequence[Any], name_of: Callable[[Any], str | None]) -> bool:
    """Whether ``opt`` only drives a learning-rate schedule: a scheduler wraps its ``step``
    (PyTorch marks the wrapper), and none of its ``params`` has a name in the snippet
    (``torch.optim.SGD([torch.zeros(1, requires_grad=True)])``, made to plot OneCycleLR's
    rates: its steps find no gradient on purpose). ``name_of``: a tensor's name, or None."""
    wrapped = getattr(getattr(opt, "step", None), "_wrapped_by_lr_sched", False)
    return bool(wrapped) and all(name_of(p) is None for p in params)
