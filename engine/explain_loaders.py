"""A DataLoader used wrong, or its batches taken apart wrong: what ``for`` gives in a training loop.

``for xb, yb in enumerate(loader)`` binds ``xb`` to the batch's index and ``yb`` to the batch,
and ``for i, (x, y) in loader`` (no ``enumerate``) unpacks the batch as the counter and its parts;
``for xb, yb in loader`` over samples that are dicts binds the dict's keys, strings;
``for batch in loader`` over pairs binds ``batch`` to the list ``[inputs, targets]`` (which has
no ``.to`` and is no layer's input); ``for xb, yb in loader`` over ``TensorDataset(X)`` finds one
tensor to unpack; string labels come out of the default collate as a tuple, not a tensor; a
batch viewed with a fixed batch size fails at the last, smaller batch. ``DataLoader((X, y))``
is a dataset of two items, and ``DataLoader(X, y)`` gives ``y`` as the batch size; samples of
different lengths cannot be stacked into a batch; a DataLoader is neither an iterator
(``next(loader)``) nor indexed (``loader[0]``). The errors name none of it. A Dataset written
wrong is explain_datasets.py's.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from .explain_datasets import data_frames, dataset_hint, loader_in_sight, read_dataset, snippet_class
from .explain_layout import FIXED_BATCH_VIEW
from .explain_reading import call_name, calls
from .source import find_name, is_a, visible_names

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["loader_hint"]

_NOT_TENSOR = re.compile(r"must be Tensor, not (int|list)\b")
_ENUMERATED = re.compile(
    r"^\s*for\s+\(?\s*([^\W\d]\w*)\s*,\s*([^\W\d]\w*)\s*\)?\s+in\s+enumerate\((\w[\w.]*)\)\s*:"
)
_LOOP = re.compile(r"^\s*for\s+(.+?)\s+in\s+(.+?)\s*:\s*$")
_PAIR_AS_DATASET = re.compile(r"\bDataLoader\(\s*[(\[]\s*([^\W\d]\w*)\s*,\s*([^\W\d]\w*)\s*[)\]]")
_EXTRA_POSITIONAL = re.compile(
    r"DataLoader\.__init__\(\) got multiple values for argument '(\w+)'"
    r"|^batch_size should be a positive integer value, but got batch_size=tensor"
)
# `for i, (x, y) in loader:`: a counter and the batch's parts, without enumerate
_COUNTED = re.compile(r"^\s*for\s+([^\W\d]\w*)\s*,\s*(\([^()]*\)|\[[^\[\]]*\])\s+in\s+(.+?)\s*:\s*$")
_UNPACKING = re.compile(r"^(?:too many|not enough) values to unpack|^cannot unpack non-iterable")
_TOO_FEW = re.compile(r"^not enough values to unpack \(expected (\d+), got (\d+)\)$")
_STRINGS = re.compile(
    r"^(cross_entropy_loss|nll_loss\w*)\(\): argument '(\w+)' \(position \d+\) must be Tensor, not (tuple|list)$"
)
_LIST_ATTRIBUTE = re.compile(r"^'list' object has no attribute '(\w+)'$")
_VIEW_INVALID = re.compile(r"^shape '\[(\d+), -1\]' is invalid for input of size (\d+)$")


def loader_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``) where the
    snippet uses a DataLoader, its dataset or its batches wrong (see the module's docstring);
    ``None`` otherwise."""
    text, source_lines = str(exc), rec.statement_lines
    if "stack expects each tensor to be equal size" in text:
        return _pair_as_dataset(source_lines) or _ragged_samples(exc, text, rec, frame)
    written = dataset_hint(exc, rec, code, frame)
    if written or not code or not loader_in_sight(source_lines, frame):
        return written
    scope = visible_names(frame)
    return (
        _extra_positional(text, code, scope)
        or _unpacked_wrong(text, code, scope, frame)
        or _counter_without_enumerate(text, code, scope)
        or _dict_batch_unpacked(text, code, scope, source_lines)
        or _not_an_iterator(text, code, scope)
        or _subscripted(text, code, scope, frame)
        or _strings_collated(text, code, scope, source_lines, frame)
        or _not_a_tensor(text, code, scope, source_lines)
        or _list_attribute(text, code, scope, source_lines)
        or _fixed_batch_view(text, code, scope, source_lines)
    )


def _loops(source_lines: Sequence[str]) -> Iterator[tuple[list[str], str]]:
    """Each ``for`` loop of the snippet: the names it binds, and the source of what it iterates."""
    for line in source_lines:
        loop = _LOOP.match(line)
        if loop:
            yield re.findall(r"[^\W\d]\w*", loop.group(1)), loop.group(2)


def _loader_of(iterated: str, scope: dict[str, Any]) -> tuple[bool, Any, str | None]:
    """What a loop's iterable (source ``iterated``) is: whether a DataLoader, its dataset where
    the snippet holds it, and the dataset's class's name or the name it is held by."""
    try:
        node = ast.parse(iterated, mode="eval").body
    except SyntaxError:
        return False, None, None
    if isinstance(node, ast.Name):
        loader = scope.get(node.id)
        if is_a(loader, torch.utils.data.DataLoader):
            return True, loader.dataset, type(loader.dataset).__name__
        return False, None, None
    if not (isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "DataLoader"):
        return False, None, None
    given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dataset"), None)
    if isinstance(given, ast.Name):
        return True, scope.get(given.id), given.id
    if isinstance(given, ast.Call):
        return True, None, ast.unparse(given.func).split(".")[-1]
    return True, None, None


def _loop_over_loader(
    name: str, source_lines: Sequence[str], scope: dict[str, Any]
) -> tuple[list[str], str, Any, str | None] | None:
    """The loop over a DataLoader that binds ``name``: its names, iterable, dataset, dataset's name."""
    for names, iterated in _loops(source_lines):
        if name in names:
            loader, dataset, called = _loader_of(iterated, scope)
            if loader:
                return names, iterated, dataset, called
    return None


def _pair_as_dataset(source_lines: Sequence[str]) -> str | None:
    for number, line in enumerate(source_lines, start=1):
        found = _PAIR_AS_DATASET.search(line)
        if found:
            x, y = found.groups()
            return (
                f"Line {number} gives DataLoader the pair ({x}, {y}) as its dataset: a dataset of two items, "
                f"all of {x} and all of {y}, which it tries to stack into one batch. Pair them up sample by "
                f"sample with TensorDataset: DataLoader(TensorDataset({x}, {y}), …) (from torch.utils.data "
                "import TensorDataset)."
            )
    return None


def _ragged_samples(exc: BaseException, text: str, rec: Recorder, frame: FrameType | None) -> str | None:
    """The default collate stacking samples of different shapes (sequences of other lengths)."""
    collate = data_frames(exc, "_utils/collate.py")
    samples = collate[0].f_locals.get("batch") if collate else None
    sizes = re.search(r"got (\[[\d, ]*\]) at entry (\d+) and (\[[\d, ]*\]) at entry (\d+)", text)
    if (
        not isinstance(samples, list)
        or not samples
        or sizes is None
        or not loader_in_sight(rec.statement_lines, frame)
    ):
        return None
    dataset = read_dataset(exc)
    kind = type(dataset).__name__
    whose = (
        f"{kind}.__getitem__ returns"
        if snippet_class(type(dataset), rec.source_lines)
        else "the dataset holds"
    )
    first, i, second, j = sizes.groups()
    told = (
        f"The DataLoader's default collate stacks a batch's samples into one tensor, so they must all have one "
        f"shape, and {whose} samples of different sizes: in this batch sample {i} is {first} and sample {j} {second}."
    )
    imports = "(from torch.nn.utils.rnn import pad_sequence)"
    if all(_paddable(samples)):
        fix = "lambda b: pad_sequence(b, batch_first=True)"
    elif all(isinstance(s, (tuple, list)) and len(s) == 2 for s in samples):
        parts = list(zip(*samples, strict=True))
        ragged = [k for k, part in enumerate(parts) if len({getattr(t, "shape", None) for t in part}) > 1]
        if len(ragged) != 1 or not all(_paddable(list(parts[ragged[0]]))):
            return (
                f"{told} Make them one size in __getitem__, or give DataLoader a collate_fn that pads them."
            )
        x, y = ("x", "y") if ragged[0] == 0 else ("y", "x")
        fix = f"lambda b: (pad_sequence([{x} for x, y in b], batch_first=True), default_collate([{y} for x, y in b]))"
        if ragged[0] == 1:
            fix = f"lambda b: (default_collate([{y} for x, y in b]), pad_sequence([{x} for x, y in b], batch_first=True))"
        imports = (
            "(from torch.nn.utils.rnn import pad_sequence; from torch.utils.data import default_collate)"
        )
    else:
        return f"{told} Make them one size in __getitem__, or give DataLoader a collate_fn that pads them."
    return (
        f"{told} Pad each batch to its longest sample: DataLoader(…, collate_fn={fix}) {imports}, or have "
        "__getitem__ return every sample padded to one length."
    )


def _paddable(tensors: list[Any]) -> Iterator[bool]:
    """For each of ``tensors``, whether pad_sequence can pad it with the others (the same
    dimensions after the first, the same dtype)."""
    first = tensors[0]
    for t in tensors:
        yield (
            is_a(t, torch.Tensor)
            and is_a(first, torch.Tensor)
            and t.dim() >= 1
            and t.shape[1:] == first.shape[1:]
            and t.dtype == first.dtype
        )


def _extra_positional(text: str, code: str, scope: dict[str, Any]) -> str | None:
    """``DataLoader(X, y, batch_size=4)``: ``y`` taken as the batch size."""
    found = _EXTRA_POSITIONAL.search(text)
    call = _call(code, "DataLoader") if found is not None else None
    if found is None or call is None or len(call.args) < 2:
        return None
    given = [ast.unparse(a) for a in call.args]
    if not all(isinstance(a, ast.Name) and is_a(scope.get(a.id), torch.Tensor) for a in call.args):
        return None
    settings = list(inspect.signature(torch.utils.data.DataLoader.__init__).parameters)[2 : len(given) + 1]
    rest, taken = given[1:], " and ".join(given[1:])
    keywords = "".join(", " + ast.unparse(k) for k in call.keywords)
    twice = [ast.unparse(k) for k in call.keywords if k.arg == found.group(1)]
    again = f", and {twice[0]} gives it again" if twice else ""
    return (
        f"DataLoader takes one dataset, then {', '.join(settings)}: {ast.unparse(call)} gives {taken} as "
        f"{' and '.join(settings)}{again}. Pair {', '.join(given[:-1])} and {rest[-1]} sample by sample into one "
        f"dataset: DataLoader(TensorDataset({', '.join(given)}){keywords}) (from torch.utils.data import TensorDataset)."
    )


def _call(code: str, function: str) -> ast.Call | None:
    """The call of ``function`` on line ``code``, parsed."""
    return next((n for n in calls(code) if call_name(n) == function), None)


def _unpacked_wrong(text: str, code: str, scope: dict[str, Any], frame: FrameType | None) -> str | None:
    """``for xb, yb in loader`` over ``TensorDataset(X)``: a batch of one tensor."""
    found = _TOO_FEW.match(text)
    loop = _LOOP.match(code)
    if found is None or loop is None:
        return None
    expected, got = int(found.group(1)), int(found.group(2))
    names = re.findall(r"[^\W\d]\w*", loop.group(1))
    loader, dataset, _ = _loader_of(loop.group(2), scope)
    if not loader or len(names) != expected or not is_a(dataset, torch.utils.data.TensorDataset):
        return None
    if len(dataset.tensors) != got:
        return None
    held = [find_name(t, frame) for t in dataset.tensors]
    if None in held:
        return None
    called = find_name(dataset, frame)
    made = f"TensorDataset({', '.join(map(str, held))})"
    left = [
        n
        for n, v in scope.items()
        if is_a(v, torch.Tensor)
        and v.dim() >= 1
        and v.shape[0] == len(dataset)
        and not n.startswith("_")
        and n not in names
        and all(v is not t for t in dataset.tensors)
    ]
    told = (
        f"{called or 'The dataset'} is {made}, a dataset of {got} tensor{'s' if got > 1 else ''}, so each batch is a "
        f"list of {got} tensor{'s' if got > 1 else ''}, and for {', '.join(names)} in … unpacks it into {expected} names."
    )
    if expected - got == 1 and len(left) == 1:
        fixed = f"TensorDataset({', '.join(map(str, held))}, {left[0]})"
        return f"{told} Put the targets in the dataset too: {called + ' = ' if called else ''}{fixed}."
    return f"{told} Give TensorDataset one tensor for each name the loop unpacks (the targets as well as the inputs)."


def _counter_without_enumerate(text: str, code: str, scope: dict[str, Any]) -> str | None:
    """``for i, (x, y) in loader:``: the batch, ``[xb, yb]``, unpacked as the counter and the
    parts, where ``enumerate(loader)`` gives the counter."""
    found = _COUNTED.match(code)
    if found is None or not _UNPACKING.search(text) or found.group(3).startswith("enumerate("):
        return None
    counter, parts, iterated = found.groups()
    loader, _, _ = _loader_of(iterated, scope)
    if not loader:
        return None
    return (
        f"for {counter}, {parts} in {iterated}: unpacks each batch itself, and a batch is [inputs, targets], so "
        f"{counter} took the inputs and {parts} was unpacked from the targets, one value per sample. For a counter "
        f"beside the batch, wrap the loader: for {counter}, {parts} in enumerate({iterated}):."
    )


def _dict_batch_unpacked(
    text: str, code: str, scope: dict[str, Any], source_lines: Sequence[str]
) -> str | None:
    """``for xb, yb in loader:`` where each sample is a dict: the default collate gives a dict
    of batches, and unpacking a dict gives its keys, so ``xb`` is ``'x'``."""
    if not text.startswith("'str' object"):
        return None
    for name in dict.fromkeys(re.findall(r"(?<![\w.])[^\W\d]\w*", code)):
        if not isinstance(scope.get(name), str):
            continue
        loop = _loop_over_loader(name, source_lines, scope)
        if loop is None or len(loop[0]) < 2 or not all(isinstance(scope.get(n), str) for n in loop[0]):
            continue
        names, iterated = loop[0], loop[1]
        keys = [scope[n] for n in names]
        took = ", ".join(f"{n} is {k!r}" for n, k in zip(names, keys, strict=True))
        read = ", ".join(f"batch[{k!r}]" for k in keys)
        return (
            f"Each sample is a dict, so the DataLoader gives each batch as a dict of batches, and for "
            f"{', '.join(names)} in {iterated}: unpacked its keys: {took}. Take the batch whole and read it by key: "
            f"for batch in {iterated}: then {', '.join(names)} = {read}."
        )
    return None


def _not_an_iterator(text: str, code: str, scope: dict[str, Any]) -> str | None:
    """``next(loader)``: a DataLoader is iterable, not an iterator."""
    if text != "'DataLoader' object is not an iterator":
        return None
    for name in re.findall(r"\bnext\(\s*([^\W\d]\w*)\s*[,)]", code):
        if is_a(scope.get(name), torch.utils.data.DataLoader):
            return (
                f"{name} is a DataLoader: a for loop can iterate it (for xb, yb in {name}:), but it is not itself "
                f"an iterator, which next() needs. For one batch, next(iter({name})); to step through the batches "
                f"by hand, make the iterator once, batches = iter({name}), and call next(batches) for each."
            )
    return None


def _subscripted(text: str, code: str, scope: dict[str, Any], frame: FrameType | None) -> str | None:
    """``loader[0]``: a DataLoader gives batches only when iterated."""
    if text != "'DataLoader' object is not subscriptable":
        return None
    for name, index in re.findall(r"(?<![\w.])([^\W\d]\w*)\[([^\[\]]+)\]", code):
        loader = scope.get(name)
        if is_a(loader, torch.utils.data.DataLoader):
            dataset = find_name(loader.dataset, frame) or f"{name}.dataset"
            return (
                f"{name} is a DataLoader: it gives its batches only when iterated (for xb, yb in {name}:), "
                f"and cannot be indexed. For one sample, index its dataset, {dataset}[{index}]; for the first "
                f"batch, next(iter({name}))."
            )
    return None


def _strings_collated(
    text: str, code: str, scope: dict[str, Any], source_lines: Sequence[str], frame: FrameType | None
) -> str | None:
    """Labels that are strings, which the default collate gathers into a tuple, given to a loss."""
    found = _STRINGS.match(text)
    if found is None:
        return None
    for name in dict.fromkeys(re.findall(r"(?<![\w.])[^\W\d]\w*(?![\w(])", code)):
        held = scope.get(name)
        if not (isinstance(held, (tuple, list)) and held and all(isinstance(s, str) for s in held)):
            continue
        loop = _loop_over_loader(name, source_lines, scope)
        if loop is None:
            continue
        _, _, dataset, called = loop
        numbered = "classes = sorted(set(labels)), labels being every label of the dataset"
        for attribute, value in vars(dataset).items() if hasattr(dataset, "__dict__") else ():
            if isinstance(value, (list, tuple)) and value and set(held) <= set(value):
                numbered = f"classes = sorted(set({find_name(dataset, frame) or called}.{attribute}))"
        kind = type(held).__name__
        shown = ", ".join(map(repr, held[:3])) + (", …" if len(held) > 3 else "")
        return (
            f"{name} is a {kind} of strings, ({shown}), not a tensor: {called or 'the dataset'} gives each label as a "
            f"str, and a DataLoader's default collate makes a tensor only of numbers and tensors; strings it gathers "
            f"into a {kind}. {found.group(1)}() needs class indices: number the classes once, {numbered}, "
            f"then in the loop {name} = torch.tensor([classes.index(c) for c in {name}]) "
            f"(or return classes.index(label) from __getitem__)."
        )
    return None


def _not_a_tensor(text: str, code: str, scope: dict[str, Any], source_lines: Sequence[str]) -> str | None:
    """A layer given the batch's index (``enumerate(loader)``) or the whole batch, a list."""
    given = _NOT_TENSOR.search(text)
    if given is None:
        return None
    used = set(re.findall(r"(?<![\w.])[^\W\d]\w*", code))
    for line in source_lines:
        enumerated = _ENUMERATED.match(line)
        if enumerated and given.group(1) == "int" and enumerated.group(1) in used:
            index, batch, loader = enumerated.groups()
            return (
                f"{index} is a number, the batch's index: enumerate({loader}) gives (index, batch) pairs, so "
                f"{index} gets the index and {batch} the whole batch. Unpack both: for i, ({index}, {batch}) in "
                f"enumerate({loader}):, or drop enumerate: for {index}, {batch} in {loader}:."
            )
    if given.group(1) != "list":
        return None
    for batch in used:
        whole = _whole_batch(batch, source_lines, scope)
        if whole:
            return (
                f"{batch} is the whole batch, a list [inputs, targets]: a DataLoader gives each batch as a list "
                f"with one item per part of a sample (a TensorDataset's tensors, or what __getitem__ returns). "
                f"Unpack it, for xb, yb in {whole}:, and pass xb to the model (yb to the loss)."
            )
    return None


def _whole_batch(name: str, source_lines: Sequence[str], scope: dict[str, Any]) -> str | None:
    """What a ``for name in …`` loop over a DataLoader iterates, where ``name`` is a batch of
    two (or not yet bound); ``None`` otherwise."""
    loop = _loop_over_loader(name, source_lines, scope)
    held = scope.get(name)
    if (
        loop is None
        or loop[0] != [name]
        or (held is not None and not (isinstance(held, list) and len(held) == 2))
    ):
        return None
    return loop[1]


def _list_attribute(text: str, code: str, scope: dict[str, Any], source_lines: Sequence[str]) -> str | None:
    """``batch.to(device)`` where ``batch`` is a DataLoader's batch of two, a list."""
    found = _LIST_ATTRIBUTE.match(text)
    if found is None or not hasattr(torch.Tensor, found.group(1)):
        return None
    attribute = found.group(1)
    for name, args in re.findall(rf"(?<![\w.])([^\W\d]\w*)\.{attribute}\b(\([^()]*\))?", code):
        whole = _whole_batch(name, source_lines, scope)
        if whole and all(is_a(t, torch.Tensor) for t in scope.get(name, ())):
            use = (
                f"xb, yb = xb.{attribute}{args}, yb.{attribute}{args}"
                if args
                else f"xb.{attribute} and yb.{attribute}"
            )
            return (
                f"{name} is the whole batch, a list [inputs, targets], and a list has no .{attribute}: a DataLoader "
                f"gives each batch as a list with one item per part of a sample. Unpack it in the loop, "
                f"for xb, yb in {whole}:, and use each tensor: {use}."
            )
    return None


def _fixed_batch_view(text: str, code: str, scope: dict[str, Any], source_lines: Sequence[str]) -> str | None:
    """``xb.view(batch_size, -1)`` failing at the last batch, which is smaller."""
    found = _VIEW_INVALID.match(text)
    view = FIXED_BATCH_VIEW.search(code)
    if found is None or view is None:
        return None
    viewed, how, size = view.groups()
    batch, written = scope.get(viewed), int(size) if size.isdigit() else scope.get(size)
    loop = _loop_over_loader(viewed, source_lines, scope)
    if loop is None or not is_a(batch, torch.Tensor) or batch.dim() < 1 or type(written) is not int:
        return None
    samples = batch.shape[0]
    if written != int(found.group(1)) or samples >= written:
        return None
    dataset = loop[2]
    total = (
        len(dataset)
        if isinstance(dataset, torch.utils.data.Dataset) and hasattr(dataset, "__len__")
        else None
    )
    split = (
        f": its dataset's {total} samples make {total // written} of {written} and one of {samples}"
        if total is not None and total % written == samples
        else ""
    )
    return (
        f"This batch holds {samples} samples, not {written}: a DataLoader's last batch is smaller when its dataset "
        f"does not divide into batches{split}. So {viewed}.{how}({size}, -1) cannot make {written} rows of its "
        f"{batch.numel()} numbers. Read the size off the batch, {viewed}.{how}({viewed}.size(0), -1) or "
        f"{viewed}.flatten(1), or pass drop_last=True to DataLoader."
    )
