"""Hints for looking values up by index where the shapes or sizes do not fit (explain_indexing.py
and explain_practice_index.py have gather's and index_select's own):

- ``torch.take_along_dim(x, idx, dim=1)`` with ``idx`` from ``argmax(dim=1)``, one dimension
  short: ``keepdim=True`` (or ``idx.unsqueeze(1)``);
- ``scatter_``/``scatter_add_`` with an index larger than ``src`` (one value of ``src`` is read
  per index), or than the tensor written into outside ``dim``;
- ``nn.Embedding(n, d, padding_idx=n)``: the padding row is one of the ``n`` rows;
- ``nn.Embedding.from_pretrained`` of a 1-D tensor: it takes the (rows, dim) matrix.

Each quotes the snippet's sizes; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from types import FrameType

from .explain_reading import call_name, calls, find_call, first_argument, with_arg

__all__ = ["lookup_shape_hint"]

_TAKE_ALONG = re.compile(
    r"take_along_dim\(\): input and indices should have the same number of dimensions, but got (\d+) dimensions "
    r"for input, and (\d+) dimensions for indices"
)
_SCATTER_SIZES = re.compile(
    r"Expected index \[([\d, ]*)\] to be no larger than self \[([\d, ]*)\] apart from dimension (\d+) and to be "
    r"no larger size than src \[([\d, ]*)\]"
)
_PADDING = "Padding_idx must be within num_embeddings"
_PRETRAINED = "Embeddings parameter is expected to be 2-dimensional"


def lookup_shape_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``text`` at a line reading ``code`` (run in ``frame``) that the
    module's docstring lists, else ``None``."""
    along = _TAKE_ALONG.search(text)
    if along and int(along.group(1)) == int(along.group(2)) + 1:
        return _take_along(code)
    sizes = _SCATTER_SIZES.search(text)
    if sizes:
        index, into, src = (_sizes(sizes.group(g)) for g in (1, 2, 4))
        return _scatter_sizes(index, into, src, int(sizes.group(3)), code)
    if _PADDING in text:
        built = next((c for c in calls(code) if call_name(c) == "Embedding"), None)
        given = {k.arg: ast.unparse(k.value) for k in (built.keywords if built else [])}
        rows = ast.unparse(built.args[0]) if built and built.args else given.get("num_embeddings")
        if rows is None or "padding_idx" not in given:
            return None
        last, more = (int(rows) - 1, int(rows) + 1) if rows.isdigit() else (f"{rows} - 1", f"{rows} + 1")
        return (
            f"padding_idx names one of the embedding's own rows, 0 to {last}, and padding_idx={given['padding_idx']} "
            f"is past them: nn.Embedding({rows}, …) has {rows} rows. Count the padding token in the vocabulary: "
            f"nn.Embedding({more}, …, padding_idx={given['padding_idx']}), or keep row 0 for it, padding_idx=0."
        )
    if _PRETRAINED in text:
        made = first_argument(code, "from_pretrained", frame)
        if made is None:
            return None
        name, held = made
        return (
            f"Embedding.from_pretrained takes the whole table, one row of numbers per token: a matrix of "
            f"(num_embeddings, embedding_dim){held}. For one number per token pass it as a column, "
            f"{name}.unsqueeze(1); for vectors saved flat, reshape them to (tokens, dim)."
        )
    return None


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split(",") if d.strip())


def _take_along(code: str | None) -> str | None:
    """``take_along_dim(x, idx, dim=1)`` with an index one dimension short."""
    call = find_call(code, ("take_along_dim",), ("indices", "dim"))
    if call is None or "indices" not in call or "dim" not in call:
        return None
    idx, dim = call["indices"], call["dim"]
    return (
        f"take_along_dim picks along dim {dim} at the positions {idx} holds, and {idx} must have as many dimensions as "
        f"the tensor, with size 1 along dim {dim} for one pick per row; it has one dimension fewer, as argmax(dim={dim}) "
        f"gives. Keep that dimension: {with_arg(call, 'indices', f'{idx}.unsqueeze({dim})')} (or make {idx} with "
        f"argmax(dim={dim}, keepdim=True))."
    )


def _scatter_sizes(
    index: tuple[int, ...], into: tuple[int, ...], src: tuple[int, ...], dim: int, code: str | None
) -> str | None:
    """scatter_ (scatter_add_) with an index larger than its src, or than the tensor outside ``dim``."""
    call = find_call(code, ("scatter", "scatter_", "scatter_add", "scatter_add_"), ("dim", "index", "src"))
    if call is None or "index" not in call or "src" not in call:
        return None
    name, idx, values = call["name"], call["index"], call["src"]
    target = call.get("self", "the tensor")
    if len(src) == len(index) and any(i > s for i, s in zip(index, src, strict=True)):
        return (
            f"{name} reads one value of {values} for each entry of {idx}, at the same position, so {values} must be at "
            f"least as large as {idx} in every dimension: {idx} is {index} and {values} {src}. Give {values} the "
            f"shape of {idx} (adding ones, counts: torch.ones_like({idx}, dtype={target}.dtype)), or check how they "
            "were made."
        )
    wide = [d for d in range(min(len(index), len(into))) if d != dim and index[d] > into[d]]
    if wide:
        return (
            f"{name} along dim {dim} writes each row of {idx} into the same row of {target}, so outside dim {dim} {idx} "
            f"may be no larger than {target}: {idx} is {index}, {target} {into} (dim {wide[0]}). Check which dim the "
            f"indices run along: they pick positions in dim {dim}."
        )
    return None
