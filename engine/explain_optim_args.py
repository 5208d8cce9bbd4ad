"""Hints for the arguments an optimizer is built with, and for its load_state_dict:

- ``lr=torch.tensor([0.1, 0.2])``: one learning rate per param group, not one per layer;
- a negative ``lr``, ``momentum``, ``weight_decay`` or ``eps`` (``Invalid learning rate``):
  the optimizer already steps against the gradient (``maximize=True`` climbs);
- ``betas=0.9`` for Adam: two numbers, ``betas=(0.9, 0.999)``;
- one tensor as params, ``SGD(w, …)``: a list of them, ``SGD([w], …)``;
- a dict of parameters (its keys are names) or ``named_parameters()`` (pairs) as params;
- ``opt2.load_state_dict(opt.state_dict())`` across optimizers whose groups hold other
  numbers of parameters (it matches parameters by position).

Each names the snippet's own call and rewrites it; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from types import FrameType

import torch

from .explain_reading import call_name, calls, literal
from .source import bound_to

__all__ = ["optimizer_argument_hint"]

_INVALID = re.compile(r"Invalid (learning rate|momentum value|weight_decay value|epsilon value): (\S+)")
_ARGUMENT_OF = {
    "learning rate": "lr",
    "momentum value": "momentum",
    "weight_decay value": "weight_decay",
    "epsilon value": "eps",
}
_NOT_ITERABLE = re.compile(
    r"params argument given to the optimizer should be an iterable of Tensors or dicts, but got (\S+)"
)
_NOT_TENSOR = re.compile(r"optimizer can only optimize Tensors, but one of the params is (str|tuple)")
_GROUP_SIZES = "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
_GROUP_COUNT = "loaded state dict has a different number of parameter groups"


def optimizer_argument_hint(exc: BaseException, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` at a line reading ``code`` (run in ``frame``) that the
    module's docstring lists, else ``None``."""
    text = str(exc)
    built = next((c for c in calls(code) if _optimizer_class(c)), None)
    if "Tensor lr must be 1-element" in text and built is not None:
        return _tensor_lr(built)
    invalid = _INVALID.search(text)
    if invalid and built is not None:
        return _negative(_ARGUMENT_OF[invalid.group(1)], invalid.group(2), built)
    if isinstance(exc, TypeError) and "not subscriptable" in text and built is not None:
        betas = next((k.value for k in built.keywords if k.arg == "betas"), None)
        if betas is not None and isinstance(_value(betas, frame), int | float):
            name = call_name(built)
            return (
                f"betas takes two numbers, (beta1, beta2): how fast {name}'s running average of the gradients "
                f"and of their squares forget, and betas={ast.unparse(betas)} is one. Pass both: betas=(0.9, 0.999) "
                "are the usual ones (beta1 alone is the first of them)."
            )
    if _NOT_ITERABLE.search(text) and built is not None and built.args:
        given = ast.unparse(built.args[0])
        return (
            f"{call_name(built)} takes the tensors it updates as a list (or a model's .parameters()), and was "
            f"given one tensor, {given}. Put it in a list: {_with_params(built, f'[{given}]')}."
        )
    not_tensor = _NOT_TENSOR.search(text)
    if not_tensor and built is not None and built.args:
        return _names_given(not_tensor.group(1), built)
    if _GROUP_SIZES in text or _GROUP_COUNT in text:
        return _state_of_other_optimizer(code, frame)
    return None


def _optimizer_class(call: ast.Call) -> bool:
    """Whether ``call`` builds an optimizer: ``torch.optim.SGD(…)``, ``optim.Adam(…)``, ``AdamW(…)``."""
    cls = getattr(torch.optim, call_name(call), None)
    return isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)


def _value(node: ast.expr, frame: FrameType | None) -> object:
    """The value ``node`` writes, a literal or a name bound in ``frame``."""
    return literal(ast.unparse(node), frame)


def _with_params(call: ast.Call, params: str) -> str:
    """``call`` written again with ``params`` as its first argument."""
    changed = ast.Call(call.func, [ast.parse(params, mode="eval").body, *call.args[1:]], call.keywords)
    return ast.unparse(changed)


def _tensor_lr(call: ast.Call) -> str:
    """``lr=torch.tensor([0.1, 0.2])``: several rates for one group."""
    lr = next((ast.unparse(k.value) for k in call.keywords if k.arg == "lr"), "lr")
    name = call_name(call)
    return (
        f"An optimizer's lr is one learning rate for each group of parameters, and lr={lr} holds several. "
        f"Pass one number, lr=0.1; for a rate of its own per layer give {name} param groups, one dict each: "
        f"torch.optim.{name}([{{'params': model[0].parameters(), 'lr': 0.1}}, "
        f"{{'params': model[2].parameters(), 'lr': 0.01}}])."
    )


def _negative(argument: str, value: str, call: ast.Call) -> str:
    """A negative ``lr``, ``momentum``, ``weight_decay`` or ``eps``."""
    positive = value.lstrip("-")
    written = next((ast.unparse(k.value) for k in call.keywords if k.arg == argument), value)
    fix = ast.unparse(
        ast.Call(
            call.func,
            call.args,
            [
                ast.keyword(k.arg, ast.parse(positive, mode="eval").body) if k.arg == argument else k
                for k in call.keywords
            ],
        )
    )
    why = {
        "lr": (
            "it is the size of each step, and the optimizer already steps against the gradient (p -= lr * grad), "
            "so the sign is built in. To climb an objective instead, pass maximize=True (or minimise its negative)"
        ),
        "momentum": "it is the fraction of the last step carried into the next, from 0 (none) to below 1 (0.9 is usual)",
        "weight_decay": "it pulls each weight toward 0 every step, and a negative one would push the weights to grow",
        "eps": "it is added to a denominator to keep it from 0 (1e-8 is usual)",
    }[argument]
    return (
        f"{argument}={written} is negative, and {call_name(call)} takes it 0 or above: {why}. "
        f"Write it positive: {fix}."
    )


def _names_given(kind: str, call: ast.Call) -> str:
    """Names (a dict's keys) or (name, tensor) pairs given as params."""
    given = ast.unparse(call.args[0])
    if kind == "tuple":
        model = given.rsplit(".named_parameters(", 1)[0] if ".named_parameters(" in given else "model"
        return (
            f"{given} gives (name, parameter) pairs, and {call_name(call)} takes the parameters alone. Pass "
            f"{_with_params(call, f'{model}.parameters()')}."
        )
    values = f"{given[len('dict(') : -1]}" if given.startswith("dict(") and given.endswith(")") else None
    owner = values.rsplit(".named_parameters(", 1)[0] if values and ".named_parameters(" in values else None
    fix = f"{owner}.parameters()" if owner else f"{given}.values()"
    return (
        f"{given} is a dict, and going through a dict gives its keys, the parameters' names (strings), "
        f"so {call_name(call)} got names where it takes tensors. Pass the parameters: {_with_params(call, fix)}."
    )


def _state_of_other_optimizer(code: str | None, frame: FrameType | None) -> str | None:
    """``opt2.load_state_dict(opt.state_dict())`` where the two hold other parameters."""
    loaded = next((c for c in calls(code) if call_name(c) == "load_state_dict" and c.args), None)
    if loaded is None or not isinstance(loaded.func, ast.Attribute):
        return None
    into = ast.unparse(loaded.func.value)
    source = loaded.args[0]
    saved_from = (
        ast.unparse(source.func.value)
        if isinstance(source, ast.Call)
        and isinstance(source.func, ast.Attribute)
        and call_name(source) == "state_dict"
        else None
    )
    sizes = []
    for name in (saved_from, into):
        opt = bound_to(name, frame)
        groups = getattr(opt, "param_groups", None) if isinstance(opt, torch.optim.Optimizer) else None
        sizes.append(", ".join(str(len(g["params"])) for g in groups) if groups else None)
    counts = (
        f" ({saved_from}'s groups hold {sizes[0]} parameters, {into}'s {sizes[1]})"
        if saved_from and sizes[0] and sizes[1]
        else ""
    )
    return (
        f"An optimizer's state_dict names its parameters by position in its param groups, so it loads only into an "
        f"optimizer built over the same parameters the same way, and this one was saved from another{counts}. "
        f"Build {into} as the saved one was, over a model of the same architecture (torch.optim.SGD(model.parameters(), "
        "…)), before loading; to start over with a new model, leave the optimizer's state out."
    )
