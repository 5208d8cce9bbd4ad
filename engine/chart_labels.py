"""How the charts name an optimizer (``opt (Adam)``) and each of its parameters (``0.weight``).

:func:`optimizer_label` names an optimizer after what holds it where the snippet stepped it;
:class:`ParamLabels` names the parameters of each ``optimizer_step`` event's ``params``, each
label its own. The training tracker (training.py) asks at each step and keeps the answers
with the optimizer.
"""

from __future__ import annotations

import ast
import functools
import operator
import weakref
from collections.abc import Sequence
from types import FrameType, ModuleType
from typing import TYPE_CHECKING

import torch

from .source import find_name, frame_scopes, is_a, loops_around, parsed_source

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["KeptLabels", "ParamLabels", "distinct_optimizer_label", "optimizer_label"]

#: what an optimizer keeps of its parameters' labels: (parameters, their labels, the
#: recorded-op count then)
KeptLabels = tuple[list[torch.Tensor], list[tuple[int, str]], int]


class ParamLabels:
    """The parameters' labels of every optimizer of one run; ``rec``: its recorder."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        # parameters whose model was looked for among the snippet's variables (held weakly)
        self._looked_for: dict[int, weakref.ref[torch.Tensor]] = {}

    def labels(
        self, kept: KeptLabels | None, params: list[torch.Tensor], frame: FrameType | None
    ) -> tuple[list[tuple[int, str]], KeptLabels | None]:
        """``(tensor id, label)`` of each of an optimizer's parameters, each label its own,
        and what the optimizer keeps of them for its next step (``kept`` is what it kept at
        its last).

        A parameter's name inside its model (``0.weight``), or with the model's name too
        (``encoder.0.weight``) when the optimizer steps parameters of more than one model;
        a tensor outside any model goes by its variable's name (``w``), else ``param3``.
        Kept with the optimizer for as long as it steps the very same parameters and no op
        has been recorded since (an in-place op recorded in full detail gives a parameter a
        new tensor id); while a label is only a fallback (not a model's parameter), the
        lookup runs again every step, as the name may still be found.
        """
        rec = self._rec
        if (
            kept is not None
            and kept[2] == rec.ops
            and len(kept[0]) == len(params)
            and all(map(operator.is_, kept[0], params))
        ):
            return kept[1], kept
        named = [self._names_of(p, frame) for p in params]
        models = {name.partition(".")[0] for _, name, _ in named if name is not None}
        shorts = [short for _, name, short in named if name is not None]
        # names inside one model never repeat: a repeat is a second model of the same name
        several = len(models) > 1 or len(set(shorts)) < len(shorts)
        labels = [
            (name if several else short) or rec.tensors.names.get(tid) or f"param{i}"
            for i, (tid, name, short) in enumerate(named)
        ]
        found = list(zip([tid for tid, _, _ in named], _distinct(labels), strict=True))
        # final once every parameter is a model's; the entry goes with the optimizer
        keep = (params, found, rec.ops) if all(name for _, name, _ in named) else None
        return found, keep

    def _names_of(self, p: torch.Tensor, frame: FrameType | None) -> tuple[int, str | None, str | None]:
        """``(tensor id, qualified name, name inside its model)`` of a parameter; the names
        are ``None`` for a tensor that is no model's parameter."""
        rec = self._rec
        name, short = rec.modules.param_name(p)
        looked = self._looked_for.get(id(p))
        if name is None and (looked is None or looked() is not p):
            # a model no forward hook has met (first called in a metrics-only step)
            self._looked_for[id(p)] = weakref.ref(p)
            rec.modules.name_roots_in(frame)
            name, short = rec.modules.param_name(p)
        tid = rec.tensors.known(p)
        if tid is None:
            tid = rec.tensors.ensure(p)
        return tid, name, short


def _distinct(labels: list[str]) -> list[str]:
    """``labels`` with a repeat marked by its count (``Linear.weight #2``): two models known
    by the same name (their class's) must still chart as two series."""
    if len(set(labels)) == len(labels):
        return labels
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out


def optimizer_label(
    opt: torch.optim.Optimizer, frame: FrameType | None, source_lines: Sequence[str] = ()
) -> str:
    """``opt (SGD)``, after the variable or attribute (``self.opt_g (Adam)``) that holds
    ``opt`` where the snippet stepped it; the bare class name when none does. A ``for``
    loop's variable (``for o in opts: o.step()``, the snippet's ``source_lines`` tell) names
    every optimizer of the list alike: the element is named instead (``opts[0] (SGD)``)."""
    name = find_name(opt, frame)
    if name is not None and frame is not None and _loop_variable(name, frame.f_lineno, source_lines):
        name = _element_holding(opt, frame) or name
    holder = name or _attribute_holding(opt, frame) or _element_holding(opt, frame)
    kind = type(opt).__name__
    return f"{holder} ({kind})" if holder else kind


def distinct_optimizer_label(
    opt: torch.optim.Optimizer, label: str, taken: set[str], frame: FrameType | None
) -> str:
    """``label`` (what :func:`optimizer_label` said), or, where another optimizer still
    stepping has it, one of ``opt``'s own.

    NOTE [Optimizers of one name]: the charts keep one series per label, and a label's step
    count starting again is a new optimizer (web/src/charts-data.ts). Two optimizers stepped
    in turn as ``for o in opts: o.step()`` were both ``o (SGD)``, and two stepped as
    ``opts["a"].step()`` both ``Adam``: their steps 1, 1, 2, 2 made the second's series
    take the first's values from step 2 on. A loop's variable is passed over for the place in
    the list that holds the optimizer (:func:`optimizer_label`: ``opts[0] (SGD)``,
    ``opts[1] (SGD)``); where a label is still taken, the second is named by its place in the
    list or dict that holds it (``opts['b'] (Adam)``), else numbered (``o (SGD) #2``).
    """
    if label not in taken:
        return label
    element = _element_holding(opt, frame)
    if element is not None:
        own = f"{element} ({type(opt).__name__})"
        if own not in taken:
            return own
    n = 2
    while f"{label} #{n}" in taken:
        n += 1
    return f"{label} #{n}"


def _loop_variable(name: str, line: int | None, source_lines: Sequence[str]) -> bool:
    """Whether ``name`` is the target of a ``for`` loop around snippet line ``line``."""
    tree = _parsed("\n".join(source_lines)) if source_lines else None
    if tree is None:
        return False
    return any(
        isinstance(node, ast.Name) and node.id == name
        for loop in loops_around(tree, line, header=True)
        if isinstance(loop, ast.For | ast.AsyncFor)
        for node in ast.walk(loop.target)
    )


@functools.lru_cache(maxsize=2)
def _parsed(source: str) -> ast.Module | None:
    """The snippet parsed once, however many optimizers it makes (one a step, rebuilt)."""
    return parsed_source(source)


def _element_holding(obj: object, frame: FrameType | None) -> str | None:
    """``opts[1]`` or ``opts['g']``: an element ``obj`` of a list, tuple or dict bound in
    ``frame`` (locals, then globals)."""
    for scope in frame_scopes(frame):
        for key, value in list(scope.items()):
            if key.startswith("_"):
                continue
            if type(value) in (list, tuple):
                for i, held in enumerate(value):
                    if held is obj:
                        return f"{key}[{i}]"
            elif type(value) is dict:
                for k, held in list(value.items()):
                    if held is obj and isinstance(k, str | int):
                        return f"{key}[{k!r}]"
    return None


def _attribute_holding(obj: object, frame: FrameType | None) -> str | None:
    """``self.opt_g``: an attribute holding ``obj`` of an object bound in ``frame`` (locals,
    then globals), as a trainer class or a GAN keeps its optimizers."""
    for scope in frame_scopes(frame):
        for key, value in list(scope.items()):
            if key.startswith("_") or is_a(value, type | ModuleType):
                continue
            try:
                attrs = vars(value)
            except TypeError:  # no __dict__ (a number, a tensor's slots, ...)
                continue
            for attr, held in attrs.items():
                if held is obj and not attr.startswith("__"):
                    return f"{key}.{attr}"
    return None
