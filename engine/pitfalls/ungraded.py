"""Parameters an optimizer steps that never get a gradient (parameter-without-gradient).

A layer defined in ``__init__`` and never called in ``forward()`` (or called on a path the
loss does not depend on) has parameters that get no ``.grad`` at any step: the optimizer
passes over a parameter whose ``.grad`` is None, the layer keeps its initial values, and
nothing raises. Told at the end of the run, per optimizer: the parameters that requires grad
yet had no ``.grad`` at every one of its steps, while others of its parameters had one
(a step with none at all is step-without-gradients). Whether the layer ran at all is known
from the module calls of the steps recorded in full.

Silent: the bias of a layer whose weight had gradients, in a snippet whose loss is made of a
derivative (``create_graph=True``: denoising score matching with an energy, a PINN that fits
only ``du/dx``): the derivative of an output by its input drops the bias added last, so no
gradient can reach it, and the layer itself trains.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from typing import NamedTuple

import torch
from torch import nn

__all__ = ["Ungraded", "UngradedParams", "differentiated_biases", "ungraded_report"]

_FEWEST_STEPS = 2  # one step is too little to tell a layer never used from one used now and then
_CREATE_GRAPH = re.compile(r"create_graph\s*=\s*True")


class _Stepped:
    """What one optimizer's steps showed: how many, the parameters without a gradient at every
    one of them (held weakly, by id), and whether any parameter had one."""

    __slots__ = ("graded", "steps", "ungraded")

    def __init__(self) -> None:
        self.steps = 0
        self.graded = False
        self.ungraded: dict[int, weakref.ref[torch.Tensor]] = {}


class Ungraded(NamedTuple):
    """Parameters of one optimizer that never had a gradient, after ``steps`` steps."""

    params: list[torch.Tensor]
    steps: int
    optimizer: torch.optim.Optimizer | None


class UngradedParams:
    """Follows each optimizer's steps and the modules that ran, and says which parameters
    never had a gradient."""

    def __init__(self) -> None:
        self._by_optimizer: dict[int, tuple[weakref.ref[torch.optim.Optimizer], _Stepped]] = {}
        self._ran: set[int] = set()  # ids of parameters of modules seen running
        self.saw_modules = False  # whether module calls were seen (steps recorded in full)

    def on_module_call(self, module: nn.Module) -> None:
        """Note that ``module`` runs (its own parameters, not its children's)."""
        self.saw_modules = True
        for p in module.parameters(recurse=False):
            self._ran.add(id(p))

    def ran(self, p: torch.Tensor) -> bool:
        """Whether a module that owns ``p`` was seen running."""
        return id(p) in self._ran

    def on_step(self, opt: torch.optim.Optimizer, params: list[torch.Tensor]) -> None:
        """Look at ``params``, the parameters of ``opt``, right after one of its steps."""
        entry = self._by_optimizer.get(id(opt))
        if entry is None or entry[0]() is not opt:
            stepped = _Stepped()
            stepped.ungraded = {id(p): weakref.ref(p) for p in params if p.requires_grad and p.grad is None}
            stepped.graded = any(p.grad is not None for p in params)
            stepped.steps = 1
            self._by_optimizer[id(opt)] = (weakref.ref(opt), stepped)
            return
        stepped = entry[1]
        stepped.steps += 1
        if not stepped.ungraded:
            return  # the common case: every parameter has had a gradient
        had = [key for key, ref in stepped.ungraded.items() if (p := ref()) is None or p.grad is not None]
        for key in had:
            del stepped.ungraded[key]
        stepped.graded = stepped.graded or any(p.grad is not None for p in params)

    def had_gradient(self, p: torch.Tensor) -> bool:
        """Whether ``p``, which an optimizer stepped, had a gradient right after some step of
        each optimizer that stepped it (its ``.grad`` may be None again by the run's end: a
        ``zero_grad()`` after the step)."""
        for _, stepped in self._by_optimizer.values():
            ref = stepped.ungraded.get(id(p))
            if ref is not None and ref() is p:
                return False
        return True

    def found(self) -> list[Ungraded]:
        """The parameters without a gradient at every step of an optimizer that stepped at
        least twice and gave others a gradient, in the order the optimizers were met."""
        out = []
        for opt_ref, stepped in self._by_optimizer.values():
            if stepped.steps < _FEWEST_STEPS or not stepped.graded or not stepped.ungraded:
                continue
            params = [p for ref in stepped.ungraded.values() if (p := ref()) is not None]
            if params:
                out.append(Ungraded(params, stepped.steps, opt_ref()))
        return out


def differentiated_biases(found: Ungraded, names: dict[int, str], source_lines: Iterable[str]) -> set[int]:
    """The ids of the biases among ``found.params`` whose own layer's weight (``….weight``
    beside ``….bias`` in ``names``, stepped by the same optimizer) had a gradient, where the
    snippet takes a derivative with ``create_graph=True``: a loss made of the derivative of
    the layer's output by its input cannot reach a bias added last."""
    if found.optimizer is None or not any(_CREATE_GRAPH.search(line) for line in source_lines):
        return set()
    by_name = {
        names[id(p)]: p for group in found.optimizer.param_groups for p in group["params"] if id(p) in names
    }
    out = set()
    for p in found.params:
        name = names.get(id(p), "")
        weight = by_name.get(name.removesuffix(".bias") + ".weight") if name.endswith(".bias") else None
        if weight is not None and weight.grad is not None:
            out.add(id(p))
    return out


def ungraded_report(
    names: list[str], steps: int, optimizer: str, ran: list[bool], saw_modules: bool
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for parameters ``names`` (qualified, ``model.fc2.weight``)
    that had no gradient at any of ``steps`` steps of ``optimizer`` (its label); ``ran``:
    for each, whether its module was seen running; ``saw_modules``: whether module calls
    were seen at all (in steps recorded in full)."""
    modules = list(dict.fromkeys(name.rsplit(".", 1)[0] for name in names if "." in name))
    one = len(modules) == 1
    subject, it = (_listed(modules), "it" if one else "them") if modules else (_listed(names), "them")
    if saw_modules and modules and not any(ran):
        why = f"{subject} never {'runs' if one else 'run'} in the forward pass, so the loss does not depend on {it}"
        attr = modules[0].rsplit(".", 1)[-1]
        fix = (
            f"Call {attr} in forward() where it belongs (self.{attr}(…)); if it is left over, delete it "
            "(or freeze it with requires_grad_(False)), so the model holds what it trains."
        )
    elif saw_modules and modules and all(ran):
        why = (
            f"{subject} {'runs' if one else 'run'}, but nothing the loss is computed from uses "
            f"{'its' if one else 'their'} output (it is computed and dropped, detached, or run under "
            "torch.no_grad())"
        )
        fix = f"Make the loss depend on the output of {subject}, or leave {it} out of the model."
    else:
        why = "the loss does not depend on them"
        fix = "Make the loss depend on these parameters, or leave them out of the optimizer (or freeze them)."
    title = f"{subject} never {'trains' if modules and one else 'train'}: no gradient reaches {it}"
    message = (
        f"{_listed(names)} {'is' if len(names) == 1 else 'are'} stepped by {optimizer} but had no gradient "
        f"at any of its {steps} steps: {why}. step() passes over a parameter whose .grad is None, so "
        f"{'it keeps its' if len(names) == 1 else 'they keep their'} initial values, and nothing raises."
    )
    return title, message, fix


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``, ``a, b, c and 4 more``."""
    if len(names) > 4:
        return ", ".join(names[:3]) + f" and {len(names) - 3} more"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
