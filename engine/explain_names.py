"""Hints for names that are not what the code takes them for: an attribute misspelt on a
tensor, a model, a layer or an optimizer (``backwards``, ``weights``, ``zero_grads``: the
closest name it has), and a tensor called like a function, most often a loss function's
name rebound to the loss it returned (``loss = loss(out, y)``: the next call calls a tensor).
"""

from __future__ import annotations

import ast
import difflib
import re
from types import FrameType
from typing import Any

import torch

from .explain_reading import calls
from .source import is_a, is_module, outer_scopes, visible_names

__all__ = ["class_called_with_data", "misspelt_attribute", "tensor_called"]

_NO_ATTRIBUTE = re.compile(r"'([\w.]+)' object has no attribute '(\w+)'")
_CALLED = re.compile(r"\b([^\W\d]\w*)\s*\(")
_INIT_ARGUMENTS = re.compile(r"(\w+)\.__init__\(\) takes (\d+) positional arguments? but (\d+) were given")
_OBJECTS_LOOKED_AT = 2000


def misspelt_attribute(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for ``'Tensor' object has no attribute 'backwards'`` and its kind, where the
    object has a name close to the one written; ``None`` for any other error."""
    found = _NO_ATTRIBUTE.search(text)
    if not found:
        return None
    kind, wrong = found.groups()
    if wrong.startswith("_"):
        return None
    owner = _an_object_of(kind, frame)
    if owner is None:
        return None
    names = [n for n in dir(owner) if not n.startswith("_")]
    close = difflib.get_close_matches(wrong, names, n=1, cutoff=0.75)
    if not close or re.sub(r"\d", "", wrong) == re.sub(r"\d", "", close[0]):
        # (layer3 beside layer1 and layer2: a layer never made, not a typo)
        return _layer_never_made(kind, wrong, owner)
    right = close[0]
    try:
        member = getattr(type(owner), right, None)
    except Exception:
        member = None
    called = callable(member) and not isinstance(member, property)
    written = f"{right}()" if called else right
    fixed = f", as in {code.replace('.' + wrong, '.' + right, 1)}" if code and f".{wrong}" in code else ""
    return (
        f"This {kind} has no attribute {wrong!r}; the closest name it has is {written}{fixed}. Python "
        "looks attribute names up exactly as written, and a misspelt one finds nothing."
    )


def _layer_never_made(kind: str, wrong: str, owner: Any) -> str | None:
    """A model asked for an attribute its ``__init__`` never set: the layers it did make."""
    if not is_module(owner) or not any(True for _ in owner.children()):
        return None
    made = [name for name, _ in owner.named_children()]
    listed = ", ".join(made[:8]) + (f" and {len(made) - 8} more" if len(made) > 8 else "")
    return (
        f"This {kind} has no attribute {wrong!r}: nothing set self.{wrong} (the layers its __init__ made "
        f"are {listed}). Set it in __init__ (self.{wrong} = …), or use the name you meant."
    )


def _an_object_of(kind: str, frame: FrameType | None) -> Any:
    """An object in sight of ``frame`` whose class is named ``kind`` (a model's layers
    included); a tensor's kind needs none: every tensor has the same attributes."""
    if kind in ("Tensor", "Parameter"):
        return torch.empty(0)
    looked = 0
    for scope in reversed(outer_scopes(frame)):
        for value in list(scope.values()):
            candidates = value.modules() if is_module(value) else (value,)
            for obj in candidates:
                looked += 1
                if looked > _OBJECTS_LOOKED_AT:
                    return None
                if type(obj).__name__ == kind:
                    return obj
    return None


def tensor_called(
    text: str, code: str | None, source_lines: list[str], frame: FrameType | None, line: int | None
) -> str | None:
    """The hint for ``'Tensor' object is not callable`` raised at snippet ``line``: which name
    on the line is a tensor now, and, where the snippet rebinds it to what calling it
    returned, that it names two things; ``None`` for any other error."""
    if "'Tensor' object is not callable" not in text or not code:
        return None
    seen = visible_names(frame)
    name = next(
        (n for n in _CALLED.findall(code) if is_a(seen.get(n), torch.Tensor)),
        None,
    )
    if name is None:
        return None
    rebinding = re.compile(rf"^\s*{name}\s*=\s*{name}\s*\(")
    rebound_at = next((i for i, text in enumerate(source_lines, 1) if rebinding.search(text)), None)
    made = re.compile(rf"^\s*{name}\s*=\s*(?!{name}\b)(.+)$")
    first = next(
        ((i, m.group(1).strip()) for i, text in enumerate(source_lines, 1) if (m := made.search(text))),
        None,
    )
    if rebound_at is not None:
        was = f"what line {first[0]} made it ({first[1]})" if first else "the function it was"
        # the rebinding line run again (a loop's next pass), or a later line calling the name
        calls = (
            "the next pass calls a tensor" if line in (None, rebound_at) else f"line {line} calls a tensor"
        )
        making = f" = {first[1]}" if first else " = …"
        if name == "loss":
            names = f"criterion{making} for the function, and loss = criterion(…) for its value"
        else:
            value = "loss" if "loss" in (first[1] if first else "").lower() or "crit" in name else "out"
            names = f"{name}{making} for the function, and {value} = {name}(…) for its value"
        return (
            f"{name} names two things: {was}, and, after line {rebound_at} ran once, the tensor that "
            f"calling it returned, so {calls}. Give them two names: {names}."
        )
    return (
        f"{name} is a tensor here, and a tensor cannot be called: index it with {name}[…], multiply with "
        f"{name} * (…); if {name} was a model or a function, an assignment since has replaced it."
    )


def class_called_with_data(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The snippet's model class called with the data (``Net(x)``), which passes it to
    ``__init__``, where the model made from it goes (``Net()(x)``)."""
    found = _INIT_ARGUMENTS.search(text)
    if not found or not code:
        return None
    cls = visible_names(frame).get(found.group(1))
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        return None
    name = found.group(1)
    given = next(
        (
            ", ".join(ast.unparse(arg) for arg in node.args)
            for node in calls(code)
            if isinstance(node.func, ast.Name) and node.func.id == name and node.args
        ),
        None,
    )
    if given is None:
        return None
    return (
        f"{name}({given}) makes a new {name} and hands {given} to its __init__, which takes no such argument: "
        f"the class builds the model, and the model takes the data. Make the model once, model = {name}(), "
        f"and call it on the data, model({given})."
    )
