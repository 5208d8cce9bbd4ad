"""The end-of-run reports about a model's parameters: those that get gradients and no
optimizer (parameter-not-optimized), tensors meant as parameters and held as plain
attributes (tensor-attribute-not-parameter), those an optimizer steps that never get a gradient
(parameter-without-gradient, ungraded.py), layers whose units stay identical
(symmetric-weights, symmetry.py), and snapshots of them that are the live tensors
(snapshot-shares-weights, snapshots.py). Each is said at the line that assigns the layer (or, for
symmetric weights, sets them to a constant; for a snapshot, takes it).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch import nn

from ..source import is_a, is_module, line_matching, parsed_source, quoted_code, submodules
from .cleared_grads import clears_gradients
from .kinds import Said
from .module_flags import module_flag_reports
from .snapshots import shared_snapshots
from .symmetry import symmetric_layers, symmetric_report
from .ungraded import UngradedParams, differentiated_biases, ungraded_report
from .unoptimized_on_purpose import unoptimized_on_purpose

if TYPE_CHECKING:
    from ..recorder import Recorder

__all__ = ["parameter_reports"]


def parameter_reports(rec: Recorder, scope: dict[str, Any], ungraded: UngradedParams) -> list[Said]:
    """What the run's end shows about the parameters of the modules ``rec`` saw; ``scope``:
    the snippet's globals; ``ungraded``: what the optimizer steps showed."""
    names = {id(p): name for p, name in rec.modules.all_params()}
    flagged, frozen = module_flag_reports(rec, _modules_held(scope), scope)
    return [
        *_unoptimized(rec, names, scope, ungraded, frozen),
        *_plain_tensors(rec, scope),
        *flagged,
        *_ungraded(rec, names, ungraded),
        *_symmetric(rec, scope, names),
        *shared_snapshots(
            scope,
            rec.training.stepped_params,
            rec.training.total_steps,
            rec.source_lines,
            rec.statement_lines,
        ),
    ]


def _tensor_ids(rec: Recorder, params: list[torch.Tensor]) -> list[int]:
    return [tid for p in params if (tid := rec.tensors.known(p)) is not None]


class _Built(NamedTuple):
    """An optimizer the snippet holds that stepped: its name, the line that builds it, and the
    models (the first part of its parameters' names) it was built from."""

    name: str
    line: int | None
    models: frozenset[str]


def _unoptimized(
    rec: Recorder,
    names: dict[int, str],
    scope: dict[str, Any],
    ungraded: UngradedParams,
    frozen: set[int],
) -> list[Said]:
    """parameter-not-optimized: parameters with gradients that no optimizer holds. One an
    optimizer holds and never stepped is optimizer-never-stepped's (never_stepped.py), or was
    on its way to a step when the run stopped; ``frozen``: those requires-grad-set-on-module
    said (module_flags.py)."""
    training = rec.training
    if training.total_steps == 0:
        return []
    optimizers = _optimizers_held(scope)
    held = {id(p) for _, opt in optimizers for group in opt.param_groups for p in group["params"]}
    left_alone = training.stepped_params | held | frozen
    found = [
        (p, name) for p, name in rec.modules.all_params() if p.grad is not None and id(p) not in left_alone
    ]
    spared = unoptimized_on_purpose(
        found, scope, training.stepped_params, ungraded.had_gradient, rec.source_lines
    )
    missed = [p for p, _ in found if id(p) not in spared]
    if not missed:
        return []
    qualified = [names[id(p)] for p in missed]
    stepped = [name for i, name in names.items() if i in training.stepped_params]
    built = [
        _Built(
            name,
            _built_at(name, rec.source_lines),
            frozenset(
                names[id(p)].split(".")[0] for g in opt.param_groups for p in g["params"] if id(p) in names
            ),
        )
        for name, opt in optimizers
        if name is not None and training.label_of(opt) is not None
    ]
    cleared = clears_gradients(missed, scope, "\n".join(rec.source_lines))
    line, title, message, fix = _why_unoptimized(
        qualified, stepped, rec.statement_lines, cleared, built, len(optimizers) > 1
    )
    return [Said("parameter-not-optimized", line, title, message, fix, _tensor_ids(rec, missed))]


def _optimizers_held(scope: dict[str, Any]) -> list[tuple[str | None, torch.optim.Optimizer]]:
    """The optimizers the snippet's variables hold, each once: with the variable's name, or
    None for one held in a list, tuple or dict."""
    found: dict[int, tuple[str | None, torch.optim.Optimizer]] = {}
    for name, value in list(scope.items()):
        if name.startswith("_"):
            continue
        if is_a(value, torch.optim.Optimizer):
            found[id(value)] = (name, value)
            continue
        items = value.values() if is_a(value, dict) else value if is_a(value, list | tuple) else []
        for item in list(items):
            if is_a(item, torch.optim.Optimizer):
                found.setdefault(id(item), (None, item))
    return list(found.values())


def _built_at(name: str, source_lines: Sequence[str]) -> int | None:
    """The first line that assigns variable ``name`` an optimizer (``opt_d = torch.optim.SGD(…)``,
    after a ``;`` too)."""
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return None
    return min(
        (
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and any(
                isinstance(n, ast.Name) and n.id == name for target in node.targets for n in ast.walk(target)
            )
        ),
        default=None,
    )


def _why_unoptimized(
    missed: list[str],
    stepped: list[str],
    source_lines: Sequence[str],
    cleared: bool,
    built: Sequence[_Built] = (),
    several: bool = False,
) -> tuple[int | None, str, str, str]:
    """``(line, title, message, fix)`` for parameters named ``missed`` that got gradients and
    no optimizer step, while the optimizers stepped those named ``stepped``: an optimizer
    built from part of the model (a head trained alone, on purpose or not), a model rebuilt
    after its optimizer was made, or layers in a plain list (or another model's optimizer).
    ``cleared``: the snippet may clear their ``.grad`` itself (cleared_grads.py); where it does
    not, what is said adds that their ``.grad`` only grows. ``built``: the optimizers the snippet
    holds that stepped, by name (where none is known, the lines that build one are read off the
    source); ``several``: whether it holds more than one optimizer, when each is named."""
    shown = ", ".join(missed[:4]) + (f" and {len(missed) - 4} more" if len(missed) > 4 else "")
    got = f"{shown} received gradients in backward(), but no optimizer updates them"
    root = missed[0].split(".")[0]
    made = sorted(b.line for b in built if b.line is not None) or _optimizer_lines(source_lines)
    rebound = [at for at in _assignment_lines(root, source_lines) if made and at > made[0]]
    if "[" not in missed[0] and rebound and any(at < made[0] for at in _assignment_lines(root, source_lines)):
        return (
            rebound[0],
            f"{root} was rebuilt after its optimizer was made",
            f"{got}. Line {rebound[0]} assigns {root} a new model after the optimizer was built at line "
            f"{made[0]} from the parameters of the {root} before it: the optimizer steps the old parameters, "
            f"which nothing uses any more, and the new {root} keeps its initial values for the whole run.",
            f"Build the optimizer after the model it trains (line {made[0]} below line {rebound[0]}), or do not "
            f"assign {root} again.",
        )
    part = _common_prefix([name for name in stepped if name.split(".")[0] == root])
    if "[" not in missed[0] and part and part != root:
        rest = _common_prefix(missed)
        freeze = (
            f"for p in {_as_python(rest)}.parameters(): p.requires_grad_(False)"
            if rest and rest != root and not part.startswith(rest)
            else f"p.requires_grad_(False) for each parameter of {root} outside {part}"
        )
        own = [b.line for b in built if root in b.models and b.line is not None]
        return (
            own[0] if own else made[0] if made else None,
            f"The optimizer trains only {part}",
            f"{got}: the optimizer was built from {part}'s parameters alone, so the rest of {root} keeps its "
            "initial values. backward() still computes their gradients every step"
            + (
                ", which nothing uses."
                if cleared
                else ", and since the optimizer does not hold them, its zero_grad() never clears them: "
                "their .grad only grows."
            ),
            f"To train all of {root}, build the optimizer from {root}.parameters(). To train only {part} "
            f"(a linear probe, a new head), freeze the rest so that backward() skips it: {freeze}.",
        )
    copied = _copy_of(root, {name.split(".")[0] for name in stepped}, source_lines)
    if "[" not in missed[0] and copied is not None:
        at, code, original = copied
        return (
            at,
            f"{root}, a copy of {original} no optimizer steps, gets gradients",
            f"{got}. Line {at} ({code}) made {root} a copy of {original}, which an optimizer trains: a target "
            f"network, by the look of it, meant to give numbers the loss treats as constants. The loss "
            f"reaches {root}'s output with its graph, so every backward() also walks {root} and "
            + (
                "computes its .grad"
                if cleared
                else "adds into its .grad, which grows every step (no optimizer's zero_grad() clears it)"
            )
            + ": time and memory spent for nothing.",
            f"Compute {root}'s output under torch.no_grad() (with torch.no_grad(): target = …), or .detach() "
            f"it; {root}.requires_grad_(False) once after line {at} stops its gradients for good.",
        )
    if "[" not in missed[0] and root.isidentifier():  # a model of its own, given to no optimizer
        trained = sorted({name.split(".")[0] for name in stepped} - {root})
        said, fix = _built_from(root, trained, built, made, several)
        assigned = _assignment_lines(root, source_lines)
        return (
            assigned[0] if assigned else assignment_line(missed[0], list(source_lines)),
            f"{root} is used but no optimizer holds its parameters",
            f"{got}: they keep their initial values for the whole run. {root} is a model of its own, and "
            f"{said}. backward() still computes their gradients every step"
            + (
                ", which nothing uses."
                if cleared
                else ", and since no optimizer holds them, no zero_grad() clears them: their .grad only grows."
            ),
            f"{fix} (or freeze {root} with {root}.requires_grad_(False) if it is meant to stay as it is).",
        )
    return (
        assignment_line(missed[0], list(source_lines)),
        "Parameters get gradients but never train",
        f"{got}: they keep their initial values for the whole run. Layers kept in a plain Python list (or "
        "dict) are not registered with nn.Module, so model.parameters() — and the optimizer built from it — "
        "never sees them.",
        "Keep sub-layers in nn.ModuleList / nn.ModuleDict (or as attributes), and build the optimizer from "
        "the model that is actually trained: torch.optim.SGD(model.parameters(), ...).",
    )


def _built_from(
    root: str, trained: list[str], built: Sequence[_Built], made: list[int], several: bool
) -> tuple[str, str]:
    """``(said, fix)`` for model ``root``, which no optimizer holds, while the models ``trained``
    were stepped: ``said`` names the optimizers that stepped (by name, where the snippet holds
    ``several``) and the models each was built from; ``fix`` gives ``root``'s parameters to one."""
    named = [b for b in built if b.line is not None]
    if len(named) > 1:  # opt_d (line 4) was built from the parameters of D only, and opt_e (line 5) …
        clauses = [
            f"{b.name} (line {b.line}) {'was built from the parameters' if not i else 'from those'} of "
            f"{_listed(sorted(b.models - {root})) or 'other models'}"
            for i, b in enumerate(named)
        ]
        where = " or ".join(f"{b.name} (line {b.line})" for b in named)
        return (
            ", ".join(clauses[:-1]) + f" only, and {clauses[-1]}",
            f"Give {root}'s parameters to an optimizer: add list({root}.parameters()) to what {where} is "
            f"built from, or build one of its own from {root}.parameters() and step it with the others",
        )
    if named:
        label = (
            f"{named[0].name} (line {named[0].line})" if several else f"the optimizer (line {named[0].line})"
        )
        models = sorted(named[0].models - {root}) or trained
    else:
        label = f"the optimizer (line {made[0]})" if len(made) == 1 else "the optimizer"
        models = trained
    whose = f"the parameters of {_listed(models)} only" if models else "other parameters"
    return (
        f"{label} was built from {whose}",
        f"Give the optimizer {root}'s parameters too: add list({root}.parameters()) to what {label} is built from",
    )


def _listed(names: list[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


_OPTIMIZER_MADE = re.compile(r"\boptim\.[A-Z]\w*\(|\b(?:SGD|Adam|AdamW|RMSprop|Adagrad|LBFGS)\(")


def _optimizer_lines(source_lines: Sequence[str]) -> list[int]:
    """The lines that build an optimizer (``torch.optim.SGD(...)``), top down."""
    return _lines_matching(_OPTIMIZER_MADE, source_lines)


_DEEPCOPY = re.compile(r"^([^\W\d]\w*)\s*=\s*(?:copy\.)?deepcopy\(\s*([^\W\d]\w*)\s*\)")


def _copy_of(root: str, trained: set[str], source_lines: Sequence[str]) -> tuple[int, str, str] | None:
    """``(line, code, original)`` where the snippet made model ``root`` a ``copy.deepcopy`` of
    one of the models in ``trained`` (a target network); else None."""
    for at in _assignment_lines(root, source_lines):
        code = quoted_code(source_lines, at, sys.maxsize) or ""
        found = _DEEPCOPY.match(code)
        if found is not None and found.group(1) == root and found.group(2) in trained:
            return at, code, found.group(2)
    return None


def _assignment_lines(name: str, source_lines: Sequence[str]) -> list[int]:
    """The lines that assign variable ``name`` (``model = ...``, or one of several: ``G, D =
    ...``), top down."""
    other = r"[\w.]+\s*,\s*"
    pattern = rf"^(?:{other})*{re.escape(name)}\s*(?:,\s*[\w.]+\s*)*,?\s*=[^=]"
    return _lines_matching(re.compile(pattern), source_lines)


def _lines_matching(pattern: re.Pattern[str], source_lines: Sequence[str]) -> list[int]:
    found = (line_matching(source_lines, pattern, [at]) for at in range(1, len(source_lines) + 1))
    return sorted({hit[0] for hit in found if hit is not None})


def _as_python(path: str) -> str:
    """A module path as Python reaches it: ``model.backbone.0`` is ``model.backbone[0]``."""
    return re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", path)


def _common_prefix(names: list[str]) -> str | None:
    """The dotted path every parameter name in ``names`` starts with (``model.fc`` for
    ``model.fc.weight`` and ``model.fc.bias``); None for no names."""
    if not names:
        return None
    parts = [name.split(".")[:-1] for name in names]
    common = []
    for level in zip(*parts, strict=False):
        if len(set(level)) > 1:
            break
        common.append(level[0])
    return ".".join(common) or None


def _plain_tensors(rec: Recorder, scope: dict[str, Any]) -> list[Said]:
    """Tensors that require grad held as plain attributes of a module (``self.scale =
    torch.ones(1, requires_grad=True)``): not registered, so no optimizer built from
    ``model.parameters()`` sees them, and they get gradients that nothing uses or clears.
    One the snippet assigns outside ``__init__`` (``self.last = x`` in ``forward``, an input
    kept for later) is not meant as a parameter, and is left alone."""
    training = rec.training
    if training.total_steps == 0:
        return []
    said = []
    for module in _modules_held(scope):
        for attr, value in list(vars(module).items()):
            if not (
                is_a(value, torch.Tensor)
                and not isinstance(value, nn.Parameter)
                and value.requires_grad
                and value.is_leaf
                and value.grad is not None
                and id(value) not in training.stepped_params
            ):
                continue
            owner = rec.modules.path_of(module) or type(module).__name__
            name = f"{owner}.{attr}"
            if rec.tensors.names.get(rec.tensors.known(value) or -1) is None:
                rec.tensors.rename(value, name)  # the graph and the card name it as the pitfall does
            line = _attribute_line(attr, rec.source_lines)
            if line is not None and not _in_init(line, rec.source_lines):
                continue
            # (the snippet may clear it by hand: cleared_grads.py)
            grows = (
                "" if clears_gradients([value], scope, "\n".join(rec.source_lines)) else ", which only grows"
            )
            said.append(
                Said(
                    "tensor-attribute-not-parameter",
                    line,
                    f"{name} is a plain tensor, not an nn.Parameter: it never trains",
                    f"{name} requires grad and gets gradients, but it is a plain tensor attribute: nn.Module "
                    f"registers only nn.Parameter (and sub-modules), so {owner}.parameters() leaves it out, no "
                    f"optimizer built from it updates it, and zero_grad() never clears its .grad{grows}. It "
                    f"keeps its initial value for the whole run.",
                    f"Make it a parameter: self.{attr} = nn.Parameter(…) (without requires_grad=True, which a "
                    "Parameter has already).",
                    _tensor_ids(rec, [value]),
                )
            )
    return said


def _modules_held(scope: dict[str, Any]) -> list[nn.Module]:
    """Every module the snippet's variables hold, and their submodules, each once."""
    found: dict[int, nn.Module] = {}
    for held in list(scope.values()):
        if is_module(held):
            for _, module in submodules(held):
                found.setdefault(id(module), module)
    return list(found.values())


def _attribute_line(attr: str, source_lines: list[str]) -> int | None:
    """The first line that assigns ``self.<attr>``."""
    found = line_matching(source_lines, re.compile(rf"\bself\.{re.escape(attr)}\s*=[^=]"))
    return found[0] if found else None


def _in_init(line: int, source_lines: list[str]) -> bool:
    """Whether ``line`` lies in the body of a ``def __init__`` of the snippet."""
    tree = parsed_source("\n".join(source_lines))
    if tree is None:
        return True
    return any(
        isinstance(node, ast.FunctionDef)
        and node.name == "__init__"
        and node.lineno < line <= (node.end_lineno or 0)
        for node in ast.walk(tree)
    )


def _ungraded(rec: Recorder, names: dict[int, str], ungraded: UngradedParams) -> list[Said]:
    said = []
    for found in ungraded.found():
        unreachable = differentiated_biases(found, names, rec.source_lines)
        params = [p for p in found.params if id(p) in names and id(p) not in unreachable]  # a model's
        if not params:
            continue
        label = (rec.training.label_of(found.optimizer) if found.optimizer else None) or "the optimizer"
        qualified = [names[id(p)] for p in params]
        ran = [ungraded.ran(p) for p in params]
        title, message, fix = ungraded_report(qualified, found.steps, label, ran, ungraded.saw_modules)
        line = assignment_line(qualified[0], rec.source_lines)
        said.append(Said("parameter-without-gradient", line, title, message, fix, _tensor_ids(rec, params)))
    return said


def _symmetric(rec: Recorder, scope: dict[str, Any], names: dict[int, str]) -> list[Said]:
    training = rec.training
    if training.total_steps < 2:
        return []
    said = []
    for layer in symmetric_layers(scope, names, training.stepped_params):
        line, title, message, fix = symmetric_report(layer, training.total_steps, rec.source_lines)
        if line is None:
            line = assignment_line(f"{layer.path}.weight", rec.source_lines)
        said.append(Said("symmetric-weights", line, title, message, fix, _tensor_ids(rec, [layer.weight])))
    return said


def assignment_line(qualified: str, source_lines: list[str]) -> int | None:
    """The line that assigned the attribute holding a parameter (``net.layers[0].weight``)."""
    parts = qualified.split(".")
    for attr in reversed(parts[1:-1]):
        attr = attr.split("[")[0]
        pattern = re.compile(rf"\.{re.escape(attr)}\s*=")
        for i, text in enumerate(source_lines, start=1):
            if pattern.search(text):
                return i
    return None
