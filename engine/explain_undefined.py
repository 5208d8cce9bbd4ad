"""Hints for a name Python does not know (``NameError``) and a function's own name read
before it has a value (``UnboundLocalError``): a name first given its value further down, or
inside a function; a module used without its import (``nn``, ``F``, ``np``); a name misspelt
(Python's own terminal says "Did you mean" after the message, which the message itself lacks);
a PyTorch function or layer written without its module (``relu``, ``Linear``); and
Jupyter's own names (``display``).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import re
from dataclasses import dataclass
from types import FrameType, ModuleType

import torch

from .explain_syntax import cell_label_hint
from .source import SNIPPET_FILENAME, visible_names

__all__ = ["undefined_name_hint"]

# a name people use as an import makes, and the import that makes it
_IMPORTS = {
    "torch": "import torch",
    "nn": "import torch.nn as nn",
    "F": "import torch.nn.functional as F",
    "optim": "import torch.optim as optim",
    "np": "import numpy as np",
    "numpy": "import numpy",
    "math": "import math",
    "random": "import random",
    "time": "import time",
    "os": "import os",
    "sys": "import sys",
    "DataLoader": "from torch.utils.data import DataLoader",
    "TensorDataset": "from torch.utils.data import TensorDataset",
    "Dataset": "from torch.utils.data import Dataset",
    "Function": "from torch.autograd import Function",
}

# UnboundLocalError's message (its ``name`` is None)
_LOCAL = re.compile(r"local variable '(\w+)'")

# names a notebook has without an import, that a script has not
_NOTEBOOK = frozenset({"display", "get_ipython", "In", "Out"})


@dataclass(frozen=True)
class _Binding:
    """A place the snippet gives ``name`` a value: ``line``, in function ``scope`` (``None``: the
    module level; a class body counts as its own scope)."""

    line: int
    scope: str | None


def undefined_name_hint(
    exc: BaseException, source_lines: list[str], line: int | None, frame: FrameType | None
) -> str | None:
    """The hint for ``exc``, a ``NameError`` raised at snippet ``line`` in ``frame``; ``None``
    for any other error, or where nothing better than Python's message is known."""
    name = getattr(exc, "name", None)
    if isinstance(exc, UnboundLocalError) and name is None:
        found = _LOCAL.search(str(exc))
        name = found.group(1) if found else None
    if not isinstance(exc, NameError) or not isinstance(name, str) or line is None:
        return None
    bindings = _bindings(source_lines).get(name, [])
    scope = _scope_of(frame)
    if isinstance(exc, UnboundLocalError):
        return _unbound_local(name, bindings, scope, line, frame)
    return (
        _given_later(name, bindings, scope, _module_line(frame) if scope is not None else line, line, frame)
        or _not_imported(name)
        or _misspelt(name, source_lines, frame)
        or _without_module(name, frame)
        or _notebook_only(name, source_lines[line - 1] if 0 < line <= len(source_lines) else "")
    )


def _given_later(
    name: str,
    bindings: list[_Binding],
    scope: str | None,
    ran: int | None,
    line: int,
    frame: FrameType | None,
) -> str | None:
    """``name`` is given a value in the snippet, but below the module-level line ``ran`` that
    ran the code at ``line`` (the line itself, at the module level), or inside a function."""
    here = [b for b in bindings if b.scope == scope or b.scope is None]
    later = [b for b in here if b.scope is None and ran is not None and b.line > ran]
    if ran is not None and later and not [b for b in here if b.line < (ran if b.scope is None else line)]:
        via = f" (which called the code at line {line})" if ran != line else ""
        return (
            f"'{name}' gets its first value at line {later[0].line}, below line {ran}{via}, and a "
            f"script runs from the top: move line {later[0].line} (and what it needs) above line {ran}."
        )
    inside = [b for b in bindings if b.scope is not None and b.scope != scope]
    if inside and not here:
        owner = str(inside[0].scope)
        code = getattr(visible_names(frame).get(owner), "__code__", None)
        arguments = "…" if code is None or code.co_argcount else ""
        return (
            f"'{name}' is a name inside {owner}() (line {inside[0].line}), and a function's names are "
            f"its own, gone when it returns: end {owner}() with `return {name}` and call it as "
            f"`{name} = {owner}({arguments})`."
        )
    return None


def _not_imported(name: str) -> str | None:
    """``name`` is what a common import makes, and the snippet does not make it."""
    if name not in _IMPORTS:
        return None
    return (
        f"'{name}' comes from an import the snippet does not have: add `{_IMPORTS[name]}` at the "
        "top. gradwalk runs the snippet as Python runs a script, with nothing imported for it."
    )


def _misspelt(name: str, source_lines: list[str], frame: FrameType | None) -> str | None:
    """A name close to ``name`` that code at the error sees (Python's terminal's "Did you mean")."""
    bindings = _bindings(source_lines)
    known = set(visible_names(frame)) | set(dir(builtins)) | set(bindings)
    known.discard(name)
    same = [k for k in known if k.lower() == name.lower()]
    close = same or difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    if not close or close[0].startswith("__"):
        return None
    where = bindings.get(close[0])
    at = f" (line {where[0].line})" if where else ""
    return f"Did you mean '{close[0]}'{at}? '{name}' is not defined anywhere the code at this line can see."


def _without_module(name: str, frame: FrameType | None) -> str | None:
    """``name`` is one of PyTorch's functions or layers, written without its module."""
    import torch.nn.functional as functional

    if name.startswith("_"):
        return None
    names = visible_names(frame)
    # the snippet's own name for each module where it has one (``nn``, ``F``), else the full one
    aliases = {id(v): k for k, v in names.items() if isinstance(v, ModuleType) and not k.startswith("_")}
    modules = [(torch.nn, "torch.nn"), (functional, "torch.nn.functional"), (torch, "torch")]
    if id(functional) not in aliases:  # torch.relu before torch.nn.functional.relu, unless F is imported
        modules[1:] = reversed(modules[1:])
    for module, full in modules:
        found = getattr(module, name, None)
        if found is None or isinstance(found, ModuleType) or not callable(found):
            continue
        alias = aliases.get(id(module), full)
        return (
            f"'{name}' is PyTorch's `{alias}.{name}`: write it so, or import it by its own name "
            f"(`from {full} import {name}`)."
        )
    return None


def _notebook_only(name: str, code: str) -> str | None:
    """``name`` is one a Jupyter notebook gives its cells (``code``: the line that read it)."""
    if name not in _NOTEBOOK:
        return None
    label = cell_label_hint(code)
    if label:
        return label
    return (
        f"'{name}' is Jupyter's own, which a script does not have: gradwalk runs plain Python (use print())."
    )


def _unbound_local(
    name: str, bindings: list[_Binding], scope: str | None, line: int, frame: FrameType | None
) -> str | None:
    """``name`` is read in function ``scope`` before the function gives it a value."""
    if scope is None:
        return None
    inside = [b for b in bindings if b.scope == scope]
    outside = [b for b in bindings if b.scope is None]
    if frame is not None and name in frame.f_globals and inside:
        return (
            f"'{name}' is given a value inside {scope}() (line {inside[0].line}), which makes it "
            f"{scope}()'s own name everywhere in {scope}(), not the module's '{name}'"
            + (f" (line {outside[0].line})" if outside else "")
            + f", and line {line} reads it before it has one. Pass it in and return it "
            f"(`def {scope}({name}, …)` … `return {name}`), or write `global {name}` as {scope}()'s first line."
        )
    later = [b for b in inside if b.line > line]
    if later:
        return (
            f"'{name}' gets its first value in {scope}() at line {later[0].line}, below line {line}: "
            f"give it a value before line {line} runs."
        )
    return None


def _module_line(frame: FrameType | None) -> int | None:
    """The snippet's module-level line running when ``frame`` ran (a function's caller's, or
    its caller's)."""
    f = frame
    while f is not None:
        if f.f_code.co_filename == SNIPPET_FILENAME and f.f_code.co_name == "<module>":
            return f.f_lineno
        f = f.f_back
    return None


def _scope_of(frame: FrameType | None) -> str | None:
    """The snippet function ``frame`` runs (``None``: the module level or not the snippet)."""
    if frame is None or frame.f_code.co_filename != SNIPPET_FILENAME or frame.f_code.co_name == "<module>":
        return None
    return frame.f_code.co_name


_CACHE: dict[str, dict[str, list[_Binding]]] = {}


def _bindings(source_lines: list[str]) -> dict[str, list[_Binding]]:
    """Each name the snippet gives a value, with where, in source order (empty where the
    source does not parse)."""
    key = "\n".join(source_lines)
    if key not in _CACHE:
        _CACHE.clear()
        try:
            tree = ast.parse(key)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = ast.Module(body=[], type_ignores=[])
        found: dict[str, list[_Binding]] = {}
        _walk(tree, None, found)
        for places in found.values():
            places.sort(key=lambda b: b.line)
        _CACHE[key] = found
    return _CACHE[key]


def _walk(node: ast.AST, scope: str | None, found: dict[str, list[_Binding]]) -> None:
    """Add the names ``node`` binds in ``scope`` (and, for a function or class, in its own)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.setdefault(child.name, []).append(_Binding(child.lineno, scope))
            if not isinstance(child, ast.ClassDef):
                for arg in [*child.args.posonlyargs, *child.args.args, *child.args.kwonlyargs]:
                    found.setdefault(arg.arg, []).append(_Binding(child.lineno, child.name))
            _walk(child, child.name, found)
            continue
        if isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)):
            continue  # their names are their own
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            found.setdefault(child.id, []).append(_Binding(child.lineno, scope))
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            for alias in child.names:
                bound = alias.asname or alias.name.split(".")[0]
                found.setdefault(bound, []).append(_Binding(child.lineno, scope))
        elif isinstance(child, ast.ExceptHandler) and child.name:
            found.setdefault(child.name, []).append(_Binding(child.lineno, scope))
        _walk(child, scope, found)
