"""A DataLoader's batches taken apart wrong: what ``for`` gives in a training loop.

``for xb, yb in enumerate(loader)`` binds ``xb`` to the batch's index and ``yb`` to the batch;
``for batch in loader`` over a ``TensorDataset`` binds ``batch`` to ``[inputs, targets]``; and
``DataLoader((X, y))`` is a dataset of two items, the whole ``X`` and the whole ``y``, which
the loader then tries to stack. The error each raises (a layer given an int or a list, a
stack of unequal sizes) names none of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["loader_hint"]

_NOT_TENSOR = re.compile(r"must be Tensor, not (int|list)\b")
_ENUMERATED = re.compile(
    r"^\s*for\s+\(?\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*\)?\s+in\s+enumerate\((\w[\w.]*)\)\s*:"
)
_WHOLE_BATCH = re.compile(r"^\s*for\s+([A-Za-z_]\w*)\s+in\s+(\w[\w.]*)\s*:")
_PAIR_AS_DATASET = re.compile(r"\bDataLoader\(\s*[(\[]\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*[)\]]")


def loader_hint(text: str, code: str | None, source_lines: Sequence[str]) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` where the snippet takes
    a DataLoader's batches apart wrong (see the module's docstring); ``None`` otherwise."""
    if "stack expects each tensor to be equal size" in text:
        return _pair_as_dataset(source_lines)
    given = _NOT_TENSOR.search(text)
    if given is None or not code:
        return None
    used = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", code))
    for line in source_lines:
        enumerated = _ENUMERATED.match(line)
        if enumerated and given.group(1) == "int" and enumerated.group(1) in used:
            index, batch, loader = enumerated.groups()
            return (
                f"{index} is a number, the batch's index: enumerate({loader}) gives (index, batch) pairs, so "
                f"{index} gets the index and {batch} the whole batch. Unpack both: for i, ({index}, {batch}) in "
                f"enumerate({loader}):, or drop enumerate: for {index}, {batch} in {loader}:."
            )
        whole = _WHOLE_BATCH.match(line)
        if (
            whole
            and given.group(1) == "list"
            and whole.group(1) in used
            and _is_loader(whole.group(2), source_lines)
        ):
            batch, loader = whole.groups()
            return (
                f"{batch} is the whole batch, a list [inputs, targets]: a DataLoader over a TensorDataset gives "
                f"each batch as one item per tensor of the dataset. Unpack it, for xb, yb in {loader}:, and "
                "pass xb to the model (yb to the loss)."
            )
    return None


def _is_loader(name: str, source_lines: Sequence[str]) -> bool:
    made = re.compile(rf"^\s*{re.escape(name)}\s*=\s*(?:\w+\.)*DataLoader\(")
    return any(made.match(line) for line in source_lines)


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
