"""Gradient clipping of one model's parameters right before another's optimizer steps
(clip-on-other-parameters).

``clip_grad_norm_(D.parameters(), 1.0)`` followed by ``optG.step()``, in a GAN's generator
update: the clip changes D's gradients in place, which no step uses (optD stepped earlier in
the iteration, and zero_grad() clears them before its next step), while G's step runs on
gradients as backward() left them. The clipping meant for that update never happens, and
nothing says so.

Told by the parameters: each clip call's, kept until the next backward(), and each step's.
A clip "is for" a step when it holds at least half of the step's parameters that have a
gradient, or at least half of its own parameters are the step's (a clip of one layer on
purpose). Said at the clip line once a backward() ran since (seen at the next clip or step,
or the run's end), for a clip that no step was for, after which an optimizer stepped that no
clip was for; the report gives that step's gradient norm (or largest value, for
``clip_grad_value_``) against the clip's bound.

Left alone: a clip that covers the step (a superset too: the whole model before an
optimizer of its head, one clip of both models before two steps), a clip followed by no step
before the next backward() (norms clipped or measured to be logged), the clip of a model
whose optimizer steps later before the next backward() (``clip(G); clip(D); optD.step();
optG.step()``), a bound of ``inf`` (a norm measured to be logged), and a clip given an iterable
other than a tensor, list, tuple or generator (read once; only the clip may read it).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from ..source import find_name, is_a, is_module, quoted_code, snippet_frame, visible_names
from .hook_calls import guarded

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..recorder import Recorder

__all__ = ["ClipTargets"]


@dataclass
class _Step:
    """A step no clip was for, as measured right after it."""

    opt: str  # the snippet's name of its optimizer (``optG``)
    line: int | None
    size: float  # its gradients' norm (or largest value, for clip_grad_value_)
    model: str | None  # the snippet's model whose parameters it holds, all of them (``G``)


@dataclass
class _Clip:
    function: str
    line: int | None
    ids: frozenset[int]
    bound: float
    norm_type: float
    backwards: int  # backward() calls by then
    owner: str | None = None  # the snippet's optimizer that holds most of its parameters (``optD``)
    used: bool = False
    after: list[_Step] = field(default_factory=list)


class ClipTargets:
    """The clips since the last backward(), and the steps after them; what it finds goes to
    ``say`` (``PitfallWatch._say``)."""

    def __init__(self, rec: Recorder, say: Callable[..., None]) -> None:
        self._rec = rec
        self._say = say
        self._clips: list[_Clip] = []

    @guarded
    def clipped(self, function: str, parameters: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Note a call of ``function`` with ``parameters`` (listed, where a generator) and the
        rest of its arguments, as it starts."""
        if isinstance(parameters, torch.Tensor):
            parameters = [parameters]
        if not isinstance(parameters, list | tuple) or not parameters:
            return
        setting = "max_norm" if function == "clip_grad_norm_" else "clip_value"
        bound = args[0] if args else kwargs.get(setting)
        norm_type = args[1] if len(args) > 1 else kwargs.get("norm_type", 2.0)
        if not isinstance(bound, int | float) or not math.isfinite(bound) or bound <= 0:
            return  # a norm measured (max_norm=inf) to be logged
        if not isinstance(norm_type, int | float):
            return
        self.judge(since=self._rec.backward.calls)
        ids = frozenset(id(p) for p in parameters)
        line = snippet_frame()[1]
        calls = self._rec.backward.calls
        self._clips.append(_Clip(function, line, ids, float(bound), float(norm_type), calls))

    @guarded
    def stepped(self, opt: torch.optim.Optimizer, params: list[torch.Tensor], line: int | None) -> None:
        """Look at ``opt`` right after its step (from snippet ``line``) over ``params``."""
        self.judge(since=self._rec.backward.calls)
        if not self._clips:
            return
        graded = [p for p in params if p.grad is not None]
        own = {id(p) for p in graded}
        if not own:
            return
        fits = [c for c in self._clips if _is_for(c.ids, own)]
        for clip in fits:
            clip.used = True
        waiting = [c for c in self._clips if not c.used and not c.after]
        if fits or not waiting:
            return
        frame = snippet_frame()[0]
        names = visible_names(frame)
        opt_name = find_name(opt, frame) or "the optimizer"
        model = next(
            (n for n, v in names.items() if is_module(v) and {id(p) for p in v.parameters()} == own), None
        )
        for clip in waiting:
            clip.owner = _holder(clip.ids, frame)
            grads = [p.grad for p in graded if p.grad is not None]
            with torch.no_grad():
                if clip.function == "clip_grad_norm_":
                    norms = torch.stack([torch.linalg.vector_norm(g, clip.norm_type) for g in grads])
                    size = float(torch.linalg.vector_norm(norms, clip.norm_type))
                else:
                    size = max(float(g.abs().max()) for g in grads if g.numel())
            clip.after.append(_Step(opt_name, line, size, model))

    @guarded
    def judge(self, since: int | None = None) -> None:
        """Say each clip no step was for, after which a step ran, of those made before the
        count of backward() calls reached ``since`` (a backward() since then ends its turn), or
        of all (at the end of the run); forget them."""
        ended = [c for c in self._clips if since is None or c.backwards != since]
        if not ended:
            return
        self._clips = [c for c in self._clips if c not in ended]
        for clip in ended:
            if not clip.used and clip.after:
                code = (quoted_code(self._rec.statement_lines, clip.line, 10_000) or "").strip()
                said = _report(clip, clip.after[0], code, _argument(clip.function, code) or "its parameters")
                self._say("clip-on-other-parameters", clip.line, *said)


def _is_for(clipped: frozenset[int], own: set[int]) -> bool:
    """Whether a clip of ``clipped`` is for a step of ``own``: it holds half of those, or
    half of its own are the step's."""
    shared = len(clipped & own)
    return 2 * shared >= len(own) or 2 * shared >= len(clipped)


def _holder(ids: frozenset[int], frame: FrameType | None) -> str | None:
    """The name of the snippet's optimizer (seen from ``frame``) that holds most of ``ids``."""
    best, most = None, 0
    for name, value in visible_names(frame).items():
        if name.startswith("_") or not is_a(value, torch.optim.Optimizer):
            continue
        held = sum(id(p) in ids for group in value.param_groups for p in group["params"])
        if held > most:
            best, most = name, held
    return best


def _argument(function: str, code: str) -> str | None:
    """The parameters the call of ``function`` in ``code`` is given, as written."""
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called == function:
                given = node.args[0] if node.args else next((k.value for k in node.keywords), None)
                return ast.unparse(given) if given is not None else None
    return None


def _report(clip: _Clip, step: _Step, code: str, argument: str) -> tuple[str, str, str]:
    """``(title, message, fix)`` for ``clip`` (its line ``code``, its parameters written
    ``argument``), after which ``step`` ran unclipped."""
    function, bound = clip.function, f"{clip.bound:g}"
    setting = "max_norm" if function == "clip_grad_norm_" else "clip_value"
    owner = f" ({clip.owner}'s)" if clip.owner and clip.owner != step.opt else ""
    at = f" (line {step.line})" if step.line else ""
    over = "over" if step.size > clip.bound else "under"
    size = (
        f"a norm of {step.size:.4g}"
        if function == "clip_grad_norm_"
        else f"values up to {step.size:.4g} in size"
    )
    size += f", {over} {setting}={bound}" + (
        "" if over == "over" else " at that step, with nothing to hold them if they grow"
    )
    theirs = (
        f"{step.model}.parameters()"
        if step.model
        else f"[p for g in {step.opt}.param_groups for p in g['params']]"
    )
    fixed = f"{function}({theirs}, {bound})"
    if argument in code:
        fixed = f"line {clip.line} as {code.replace(argument, theirs, 1)}"
    return (
        f"{function} clips {argument}, but {step.opt}.step() comes next: its update is unclipped",
        f"{function}({argument}, …) changes the gradients of those parameters{owner} in place, and only a "
        f"step over them uses what it left. The step that follows it is {step.opt}.step(){at}, over other "
        f"parameters{f' ({step.model})' if step.model else ''}, and no step over {argument} comes before "
        f"the next backward(): the clipped gradients are never used, while {step.opt} updated with its own "
        f"gradients as backward() left them, {size}. The clipping meant for that update never happens. "
        "Nothing raises.",
        f"Clip what {step.opt} steps, between its backward() and {step.opt}.step(){at}: {fixed}.",
    )
