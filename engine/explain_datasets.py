"""A Dataset written wrong, found out when a DataLoader (or TensorDataset) reads it.

A map-style ``Dataset`` needs ``__len__`` as well as ``__getitem__``: a DataLoader's sampler
asks for the length, and without it the error is ``object of type 'Points' has no len()``.
A ``__getitem__`` that ends without ``return`` gives None, which the default collate
reports as ``found <class 'NoneType'>``. ``TensorDataset(X, y)`` pairs its tensors row by
row, and tensors of different lengths fail a bare ``Size mismatch between tensors``. None
of those messages names the method or the tensors to fix; nor does ``random_split(ds, [80,
20])``'s of counts that do not add up to the dataset's length. Also the helpers
explain_loaders.py shares: the frames of torch.utils.data an error came through, and the
snippet's class definitions.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from .explain_reading import call_name, calls
from .source import SNIPPET_FILENAME, bound_to, find_name, is_a, outer_scopes

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["data_frames", "dataset_hint", "loader_in_sight", "read_dataset", "snippet_class"]

_DATA = "/torch/utils/data/"


def data_frames(exc: BaseException, module: str = "") -> list[FrameType]:
    """The frames of ``exc``'s traceback in torch.utils.data (in its file ``module``, as
    ``_utils/collate.py``, when given), outermost first."""
    found, tb = [], exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if _DATA in name and name.endswith(module):
            found.append(tb.tb_frame)
        tb = tb.tb_next
    return found


def loader_in_sight(source_lines: Sequence[str], frame: FrameType | None) -> bool:
    """Whether the snippet makes a DataLoader, or a scope around ``frame`` holds one."""
    if any("DataLoader(" in line for line in source_lines):
        return True
    loader = torch.utils.data.DataLoader
    return any(is_a(value, loader) for scope in outer_scopes(frame) for value in scope.values())


def read_dataset(exc: BaseException) -> Any:
    """The dataset a DataLoader was reading when it raised ``exc`` (its fetcher's), or ``None``."""
    for f in data_frames(exc, "_utils/fetch.py"):
        return getattr(f.f_locals.get("self"), "dataset", None)
    return None


def snippet_class(kind: type, source_lines: Sequence[str]) -> ast.ClassDef | None:
    """The ``class`` statement of the snippet's that made ``kind``, parsed; ``None`` for a
    class of a library's, or a snippet Python cannot parse."""
    getitem = getattr(kind, "__getitem__", None)
    if getattr(getattr(getitem, "__code__", None), "co_filename", None) != SNIPPET_FILENAME:
        return None
    try:
        tree = ast.parse("\n".join(source_lines))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == kind.__name__:
            return node
    return None


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def dataset_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised where a DataLoader or TensorDataset reads a dataset
    written wrong (see the module's docstring); ``None`` otherwise."""
    text = str(exc)
    if isinstance(exc, AssertionError) and text == "Size mismatch between tensors":
        return _size_mismatch(exc, code, frame)
    if text == "Sum of input lengths does not equal the length of the input dataset!":
        return _split_sizes(code, frame)
    if not loader_in_sight(rec.statement_lines, frame):
        return None
    if isinstance(exc, TypeError) and text.startswith("object of type '") and text.endswith("' has no len()"):
        return _no_len(exc, text[len("object of type '") : -len("' has no len()")], rec.source_lines)
    if isinstance(exc, TypeError) and text.startswith("default_collate: ") and "<class 'NoneType'>" in text:
        return _returned_none(exc, rec.source_lines)
    return None


def _split_sizes(code: str | None, frame: FrameType | None) -> str | None:
    """``random_split(ds, [80, 20])`` of a dataset of 99 samples: the counts must add up to it."""
    for node in calls(code):
        if call_name(node) != "random_split" or len(node.args) < 2:
            continue
        name, sizes = ast.unparse(node.args[0]), node.args[1]
        dataset = bound_to(name, frame)
        try:
            counts = ast.literal_eval(sizes)
        except ValueError:
            return None
        if not hasattr(dataset, "__len__") or not isinstance(counts, list | tuple) or len(counts) < 2:
            return None
        total = len(dataset)
        first = ", ".join(map(str, counts[:-1]))
        if any(isinstance(c, float) for c in counts):  # fractions: they must add up to 1
            rest = round(1 - sum(counts[:-1]), 6)
            fixed = f"[{first}, {rest:g}]" if rest > 0 else "[0.8, 0.2]"
            return (
                f"random_split reads {ast.unparse(sizes)} as fractions of {name}'s {total} samples, and fractions "
                f"must add up to 1; these add up to {round(sum(counts), 6):g}. Make the last one the rest, {fixed}, "
                "and it rounds them to counts for you."
            )
        return (
            f"random_split deals out {name}'s {total} samples in the counts given, and {ast.unparse(sizes)} adds up to "
            f"{sum(counts)}. Make the last count the rest, [{first}, len({name}) - {' - '.join(map(str, counts[:-1]))}], "
            "or give fractions that add up to 1, [0.8, 0.2], and it rounds them for you."
        )
    return None


def _no_len(exc: BaseException, kind: str, source_lines: Sequence[str]) -> str | None:
    """``len(dataset)`` asked by a DataLoader's sampler of a Dataset with no ``__len__``."""
    frames = data_frames(exc)
    if not any(f.f_code.co_filename.endswith(("sampler.py", "dataloader.py")) for f in frames):
        return None
    sized = next((held for f in frames for held in _datasets_in(f) if type(held).__name__ == kind), None)
    cls = snippet_class(type(sized), source_lines) if sized is not None else None
    if cls is None or _method(cls, "__len__") is not None:
        return None
    indexed = [
        n.value.attr
        for n in ast.walk(_method(cls, "__getitem__") or cls)
        if isinstance(n, ast.Subscript)
        and isinstance(n.value, ast.Attribute)
        and isinstance(n.value.value, ast.Name)
        and n.value.value.id == "self"
    ]
    count = f"len(self.{indexed[0]})" if indexed and hasattr(sized, indexed[0]) else "the number of samples"
    return (
        f"{kind} has no __len__: a DataLoader asks its dataset how many samples it holds, to draw "
        f"their indices, so a map-style Dataset must tell it as well as give them (__getitem__). Add "
        f"to {kind}: def __len__(self): return {count}."
    )


def _datasets_in(frame: FrameType) -> list[Any]:
    """What a frame of torch.utils.data holds as a dataset: its locals, and those locals'
    dataset attributes (a sampler's ``data_source``, a loader's ``dataset``)."""
    held = list(frame.f_locals.values())
    for value in list(held):
        for attribute in ("data_source", "dataset", "_dataset"):
            try:
                held.append(getattr(value, attribute))
            except Exception:  # a property of the snippet's that raises
                continue
    return [v for v in held if is_a(v, torch.utils.data.Dataset)]


def _returned_none(exc: BaseException, source_lines: Sequence[str]) -> str | None:
    """The default collate given None for a sample: ``__getitem__`` ended without ``return``."""
    collate = data_frames(exc, "_utils/collate.py")
    samples = collate[0].f_locals.get("batch") if collate else None
    dataset = read_dataset(exc)
    if not isinstance(samples, list) or None not in samples or dataset is None:
        return None
    cls = snippet_class(type(dataset), source_lines)
    getitem = _method(cls, "__getitem__") if cls is not None else None
    if cls is None or getitem is None:
        return None
    where = f"{cls.name}.__getitem__ (line {getitem.lineno})"
    returns = [n for n in ast.walk(getitem) if isinstance(n, ast.Return) and n.value is not None]
    if returns:
        return (
            f"{where} returned None for a sample, so the DataLoader's default collate found None where it "
            "batches the samples: a path through it ends without a return (or returns None). Make every "
            "path end with return and the sample."
        )
    last = getitem.body[-1]
    if isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name):
        made = last.targets[0].id
        fix = f"End it with return {made} (line {last.lineno} makes {made} and keeps it nowhere)."
    else:
        fix = "End it with a return of the sample it builds."
    return (
        f"{where} has no return statement, so it returns None for every index, and the DataLoader's "
        f"default collate found None where it batches the samples. {fix}"
    )


def _size_mismatch(exc: BaseException, code: str | None, frame: FrameType | None) -> str | None:
    """``TensorDataset(X, y)`` of tensors whose first dimensions differ."""
    made = data_frames(exc, "dataset.py")
    tensors = made[-1].f_locals.get("tensors") if made else None
    if not isinstance(tensors, tuple) or not all(is_a(t, torch.Tensor) and t.dim() for t in tensors):
        return None
    names = _arguments(code, "TensorDataset", len(tensors))
    if names is None:
        names = [find_name(t, frame) or f"tensor {i}" for i, t in enumerate(tensors)]
    parts = [
        f"{n}{' has' if i == 0 else ''} {t.shape[0]} (shape {tuple(t.shape)})"
        for i, (n, t) in enumerate(zip(names, tensors, strict=True))
    ]
    sizes = ", ".join(parts[:-1]) + " and " + parts[-1]
    hint = (
        f"TensorDataset({', '.join(names)}) pairs its tensors row by row, one sample per row, so their first "
        f"dimensions must agree: {sizes}."
    )
    first = tensors[0].shape[0]
    turned = [
        n
        for n, t in zip(names, tensors, strict=True)
        if t.dim() == 2 and t.shape[0] != first and t.shape[1] == first
    ]
    if turned and len(turned) == sum(t.shape[0] != first for t in tensors) and names[0] not in turned:
        fixed = ", ".join(f"{n}.T" if n in turned else n for n in names)
        return f"{hint} {turned[0]} holds a sample per column: transpose it, TensorDataset({fixed})."
    return f"{hint} Give each of them one row per sample, the same number of samples."


def _arguments(code: str | None, function: str, count: int) -> list[str] | None:
    """The source of the positional arguments of the call of ``function`` on line ``code``,
    when it has ``count`` of them."""
    for node in calls(code):
        if (
            call_name(node) == function
            and len(node.args) == count
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            return [ast.unparse(a) for a in node.args]
    return None
