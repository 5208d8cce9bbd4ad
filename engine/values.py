"""Turn tensors into trace values: whole when small, a summary when large.

A value is a JSON-ready dict shaped like :class:`engine.events.FullValue` or
:class:`engine.events.SummaryValue`. A summary never copies the tensor's elements into the
trace: a few reductions run on the tensor's own device and a few numbers move to the host.

# NOTE [Summaries through NumPy]
A summary runs for most activations and gradients of a recorded step (135 per step of the
benchmark's transformer), so its fixed cost matters more than its cost per element: each
PyTorch call costs 3-15 us here before it touches an element, a NumPy call about 1 us. A
float32/float64 tensor in CPU memory is therefore summarised through a NumPy view of its
own memory (``Tensor.numpy()`` copies nothing): min and max, the sum of squares (a BLAS
dot) and the histogram's bin counts; only the sum of a tensor past 65,536 elements stays with
PyTorch, whose float32 sum is vectorised where NumPy's is not (below that, a switch into
PyTorch and back costs more than the sum: 76 -> 67 us a summary, averaged over a recorded
step of the benchmark's transformer and MLP). Measured with ``bench/bench_engine.py``'s
values: 78 -> 30 us for 640 elements, 60 -> 29 us for 16k. Other dtypes and devices take the
PyTorch path.

# NOTE [Spread of elements far from zero]
The standard deviation comes from the sum and the sum of squares (``sumsq - n * mean**2``),
float32 sums, each off by about one part in ten million of itself. Where the elements sit
far from zero compared to their spread (a LayerNorm weight near 1.0 after a few steps; a
constant gradient such as MeanBackward0's), that difference is mostly rounding: 1,000
weights of 1000.0 +- 0.001 showed a std of 0.25 (PyTorch: 0.001), a gradient of 800 equal
elements a std of 4e-7 (PyTorch: 0). When the difference is under a sixteenth of the sum of
squares, the spread is summed again in float64 as the squared distances from the mean, as
``Tensor.std`` does; the usual tensor (mean near zero) pays nothing more. Found by hunt 55's
checker (tests/engine/truth.py).

# NOTE [Complex values]
A complex tensor travels as statistics of its elements' magnitudes ``|z|``, however small,
marked ``of="abs"``: a trace's whole values are real numbers, and the views that read them
(the chain rule's arithmetic, the charts) have no complex numbers.

# NOTE [Sparse values]
A sparse tensor (the gradient of ``nn.Embedding(sparse=True)``) is described as the dense
tensor it stands for: a small one travels whole, densified; a large one's statistics (min,
max, mean, std, norm) are over all its elements, the stored values and the implicit zeros,
so they read as the dense tensor's would, without densifying it. Its histogram is over
(a sample of) the stored values only, drawn over ``[min, max]``: the implicit zeros would
be nearly every element of a large sparse tensor and flatten the rest.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

__all__ = [
    "HIST_BINS",
    "HIST_SAMPLE",
    "dispatches_to_python",
    "has_storage",
    "holds_non_finite",
    "same_elements_key",
    "same_view",
    "shape_list",
    "to_value",
]

HIST_BINS = 16
HIST_SAMPLE = 256
_FLOAT_OK = (torch.float32, torch.float64)
# a sum of squares below this stays finite in float32 (whose largest value is 3.4e38)
_SAFE_SUM = 1e38
# each square below float32's smallest normal number (1.2e-38) keeps only an absolute
# 1.4e-45 of itself: a sum of squares under n * this is read in float64 (a vanishing
# gradient of 1e-24 elements had a norm and std of 0)
_TINY_SUM = 1e-36
# below this share of the sum of squares, what is left of it after taking off n * mean**2 is
# mostly float32 rounding (NOTE [Spread of elements far from zero])
_SPREAD_KEPT = 1 / 16
# up to this many float elements NumPy's sum is the faster (NOTE [Summaries through NumPy])
_NUMPY_SUM_MAX = 65_536
_STRIDED = torch.strided
_SPARSE = frozenset(
    {torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc}
)
# dtypes whose elements read back as JSON numbers (complex and quantized ones do not)
_READABLE = frozenset(
    {
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
        *(getattr(torch, name) for name in ("uint16", "uint32", "uint64") if hasattr(torch, name)),
    }
)


def to_value(t: torch.Tensor, max_elements: int) -> dict[str, Any]:
    """Describe ``t``: every element when ``t.numel() <= max_elements``, else statistics.

    >>> to_value(torch.tensor([1.0, 2.0]), 64)
    {'kind': 'full', 'shape': [2], 'flat': [1.0, 2.0]}
    """
    try:
        if type(t) not in _PLAIN_TYPES and dispatches_to_python(t):
            return _empty_summary(shape_list(t), t.numel())
        n = t.numel()
        # the common case first, with as few calls into PyTorch as possible (this runs for
        # most tensors and gradients of a recording)
        if n <= max_elements and t.dtype in _READABLE and t.layout is _STRIDED and not t.is_meta:
            shape = t.shape
            dims = len(shape)
            if dims == 1:
                return {"kind": "full", "shape": [n], "flat": t.tolist()}
            if dims == 0:
                return {"kind": "full", "shape": [], "flat": [t.item()]}
            return {"kind": "full", "shape": list(shape), "flat": t.reshape(-1).tolist()}
        layout = t.layout
        value = (
            _sparse_value(t, n, max_elements)
            if layout is not _STRIDED and layout in _SPARSE
            else _summarize(t, n)
        )
        if t.is_complex() and value["kind"] == "summary":
            value["of"] = "abs"  # statistics of |z| (NOTE [Complex values])
        return value
    except (RuntimeError, TypeError, ValueError, NotImplementedError):
        # quantized, nested, fake or otherwise unreadable tensors: describe, never fail the run
        try:
            return _empty_summary(shape_list(t), t.numel())
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            return _empty_summary([], 0)  # a nested tensor has neither one shape nor a size


def holds_non_finite(value: dict[str, Any] | None) -> bool:
    """Whether a value from :func:`to_value` has a NaN or infinite element (``None``: no).

    >>> holds_non_finite(to_value(torch.tensor([1.0, float("nan")]), 64))
    True
    """
    if value is None:
        return False
    if value["kind"] == "full":
        # one C-speed sum first: NaN or inf anywhere makes it non-finite (so may an overflow
        # of finite elements, which the element-wise look then clears)
        return not math.isfinite(sum(value["flat"])) and _first_non_finite(value) is not None
    return bool(value.get("nan") or value.get("inf"))


def _first_non_finite(value: dict[str, Any]) -> int | None:
    """The flat index of a whole value's first NaN or infinite element; ``None`` when there
    is none or the value is a summary (whose elements are not kept)."""
    if value["kind"] != "full":
        return None
    for i, x in enumerate(value["flat"]):
        if isinstance(x, float) and not math.isfinite(x):
            return i
    return None


def _empty_summary(shape: list[int], n: int, nan: int = 0, inf: int = 0) -> dict[str, Any]:
    return {
        "kind": "summary",
        "shape": shape,
        "numel": n,
        "min": None,
        "max": None,
        "mean": None,
        "std": None,
        "norm": None,
        "nan": nan,
        "inf": inf,
        "hist": [],
    }


def _summarize(t: torch.Tensor, n: int) -> dict[str, Any]:
    shape = shape_list(t)
    if t.layout is not _STRIDED or t.is_meta or n == 0:
        return _empty_summary(shape, n)
    # a detached alias: the reductions below build no graph, so no grad-mode switch is needed
    d = t.detach()
    f = d.view(-1) if d.is_contiguous() else _flat_view(d)
    if f.dtype in _FLOAT_OK and f.device.type == "cpu" and f.is_contiguous():
        value = _summarize_numpy(f, shape, n)
        if value is not None:
            return value
    if f.dtype not in _FLOAT_OK:
        if f.is_complex():
            f = f.abs()
        if f.dtype not in _FLOAT_OK:
            f = f.to(torch.float32)
    lo, hi = torch.aminmax(f)
    mn, mx, total, sumsq = torch.stack([lo, hi, f.sum(), torch.dot(f, f)]).tolist()
    if not (math.isfinite(mn) and math.isfinite(mx)):
        return _summarize_non_finite(f, shape, n)
    big = max(-mn, mx)
    if not (math.isfinite(total) and math.isfinite(sumsq)) or (
        f.dtype != torch.float64 and _squares_lost(big, n)
    ):
        # finite elements whose float32 sum or sum of squares overflows (an exploding run),
        # or whose squares are too small for float32 (a vanishing one)
        wide = f.double()
        total, sumsq = torch.stack([wide.sum(), torch.dot(wide, wide)]).tolist()
    centred = None
    if _spread_lost(n, total, sumsq):  # (NOTE [Spread of elements far from zero])
        wide = f.double()
        total = wide.sum().item()
        apart = wide - total / n
        centred = torch.dot(apart, apart).item()
    return _finite_summary(shape, n, mn, mx, total, sumsq, _histogram(f, n, mn, mx), centred)


def _squares_lost(big: float, n: int) -> bool:
    """Whether a float32 sum of the squares of ``n`` elements, the largest ``big`` in size,
    would lose its digits to float32's smallest numbers (an all-zero tensor loses none)."""
    return 0.0 < big * big < n * _TINY_SUM


def _spread_lost(n: int, total: float, sumsq: float) -> bool:
    """Whether ``sumsq - n * mean**2`` cannot give the variance: the elements sit far from zero
    compared to how far apart they are (NOTE [Spread of elements far from zero])."""
    return n > 1 and sumsq - total * total / n < sumsq * _SPREAD_KEPT


def _finite_summary(
    shape: list[int],
    n: int,
    mn: float,
    mx: float,
    total: float,
    sumsq: float,
    counts: list[int],
    centred: float | None = None,
) -> dict[str, Any]:
    """The summary of ``n`` finite elements, from their min, max, sum and sum of squares, and
    the sum of their squared distances from the mean where :func:`_spread_lost` asked for it."""
    mean = total / n
    spread = sumsq - n * mean * mean if centred is None else centred
    var = max(spread, 0.0) / (n - 1) if n > 1 else 0.0
    return {
        "kind": "summary",
        "shape": shape,
        "numel": n,
        "min": mn,
        "max": mx,
        "mean": mean,
        "std": math.sqrt(var),
        "norm": math.sqrt(sumsq),
        "nan": 0,
        "inf": 0,
        "hist": counts,
    }


def _summarize_numpy(f: torch.Tensor, shape: list[int], n: int) -> dict[str, Any] | None:
    """The summary of a flat float tensor in CPU memory (NOTE [Summaries through NumPy]);
    ``None`` when it holds NaN or infinity (the PyTorch path counts them) or NumPy cannot
    view it."""
    try:
        a = f.numpy()
    except (RuntimeError, TypeError):  # a negative or conjugate bit: the PyTorch path reads it
        return None
    mn, mx = float(a.min()), float(a.max())
    if not (math.isfinite(mn) and math.isfinite(mx)):
        return None
    big = max(-mn, mx)
    if a.dtype == np.float32 and (big * max(big, 1.0) * n > _SAFE_SUM or _squares_lost(big, n)):
        # the float32 sum or sum of squares could overflow (and NumPy would warn on the
        # snippet's stderr) or lose its tiny squares: both in float64 instead
        wide = a.astype(np.float64)
        total, sumsq = float(wide.sum()), float(np.dot(wide, wide))
    else:
        # NumPy's sum where it is as fast (no switch into PyTorch and back), PyTorch's past that
        total = float(a.sum() if n <= _NUMPY_SUM_MAX else f.sum())
        sumsq = float(np.dot(a, a))
    centred = None
    if _spread_lost(n, total, sumsq):  # (NOTE [Spread of elements far from zero])
        wide = a.astype(np.float64)
        total = float(wide.sum())
        apart = wide - total / n
        centred = float(np.dot(apart, apart))
    return _finite_summary(shape, n, mn, mx, total, sumsq, _bins(a, n, mn, mx), centred)


def _bins(a: np.ndarray, n: int, mn: float, mx: float) -> list[int]:
    """Histogram counts of NumPy array ``a`` (``n`` finite elements in ``[mn, mx]``)."""
    if mx <= mn:
        return [min(n, HIST_SAMPLE)]
    # NOTE [Sampled histogram]: bins as torch.histc draws them, over the same sample
    sample = a[:: n // HIST_SAMPLE] if n >= 2 * HIST_SAMPLE else a
    # in float64: a float32 span wider than 3.4e38 would overflow
    bins = ((sample.astype(np.float64) - mn) * (HIST_BINS / (mx - mn))).astype(np.intp)
    np.minimum(bins, HIST_BINS - 1, out=bins)
    return np.bincount(bins, minlength=HIST_BINS).tolist()


def same_elements_key(t: torch.Tensor) -> tuple[Any, ...] | None:
    """A key shared by tensors that hold exactly the same elements, in any order.

    Two dense views of one block of memory (a gradient and its transpose, as ``TBackward0``
    hands them on) have equal keys while neither is modified, so a summary, which ignores
    element order, is computed once for both. ``None`` for tensors that are not one dense
    block (their elements would not be the same set).
    """
    if t.layout is not _STRIDED or t.is_meta or not has_storage(t):
        return None
    if not t.is_contiguous() and _dense_order(t) is None:
        return None
    return (t.data_ptr(), t.numel(), t.dtype, t.device, t._version)


def same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` read the same memory the same way: same address, shape, strides,
    dtype and device (``b`` is ``a.data``, or an alias a node's ``_saved_*`` read hands out).
    False for a sparse or torch.func-wrapped tensor, which has no one block of memory."""
    if a.layout is not _STRIDED or b.layout is not _STRIDED or not (has_storage(a) and has_storage(b)):
        return False
    try:
        return (
            a.data_ptr() == b.data_ptr()
            and a.shape == b.shape
            and a.stride() == b.stride()
            and a.dtype == b.dtype
            and a.device == b.device
        )
    except (RuntimeError, NotImplementedError):
        return False


def shape_list(t: torch.Tensor) -> list[int]:
    """``t``'s shape as a list of ints, as a trace holds it; ``[]`` for a nested tensor, which
    has no one shape (a strided one raises on ``.shape``, a jagged one's ragged dimension is a
    symbol, not a number, and would fail the trace's schema)."""
    if t.is_nested:
        return []
    return list(t.shape)


def has_storage(t: torch.Tensor) -> bool:
    """Whether ``t`` has memory of its own to read by address: torch.func's wrapped tensors
    (inside ``grad``, ``vmap``, ``jacrev``) do not, nor the legacy vmap's batched ones
    (``torch.autograd.functional``'s ``vectorize=True``)."""
    return not (_functorch_wrapped(t) or _legacy_batched(t))


_functorch_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
_legacy_batched = torch._C._functorch.is_legacy_batchedtensor


# NOTE [Tensors that dispatch to Python]
# A tensor subclass with its own ``__torch_dispatch__`` (a wrapper subclass that logs or
# rewrites each aten op it meets) runs Python code of the snippet for every op on it,
# gradwalk's reads too: its value (``tolist``, ``item``), a backward's loss and seed
# (``item``, ``ones_like``), the tensors a node saved. Its log then showed
# ``_local_scalar_dense`` and ``ones_like`` calls the snippet never made. gradwalk does not
# read such a tensor's elements: its value is a summary with its shape alone. (A jagged
# nested tensor is one too, PyTorch's own, whose reads print nothing; it is read as before.)
_PLAIN_TYPES = frozenset({torch.Tensor, torch.nn.Parameter})
_PYTHON_KEY = torch._C.DispatchKey.Python


def dispatches_to_python(t: torch.Tensor) -> bool:
    """Whether the ops run on ``t`` reach a ``__torch_dispatch__`` of the snippet's (NOTE
    [Tensors that dispatch to Python])."""
    return type(t) not in _PLAIN_TYPES and not t.is_nested and torch._C._dispatch_keys(t).has(_PYTHON_KEY)


def _dense_order(t: torch.Tensor) -> list[int] | None:
    """A permutation that makes ``t`` contiguous (its dimensions in memory order), if any."""
    strides = t.stride()
    order = sorted(range(t.dim()), key=lambda i: -strides[i])
    return order if t.permute(order).is_contiguous() else None


def _flat_view(d: torch.Tensor) -> torch.Tensor:
    """Return all elements of ``d`` as a 1-D tensor, without a copy when a permutation allows.

    Statistics ignore element order, so a transposed gradient (``TBackward0``) is read in
    memory order instead of being copied.
    """
    if not d.is_contiguous() and d.dim() > 1:
        order = _dense_order(d)
        if order is not None:
            return d.permute(order).view(-1)
    return d.reshape(-1)


def _histogram(f: torch.Tensor, n: int, mn: float, mx: float) -> list[int]:
    # NOTE [Sampled histogram]: a histogram of every element costs more than the op it
    # describes (histc runs ~25 ns/element on CPU), so it is taken over an evenly strided
    # sample of at most HIST_SAMPLE elements, in one call; min/max/mean/std/norm stay exact.
    if mx <= mn:
        return [min(n, HIST_SAMPLE)]
    sample = f[:: n // HIST_SAMPLE] if n >= 2 * HIST_SAMPLE else f
    return [int(c) for c in torch.histc(sample, HIST_BINS, mn, mx).tolist()]


def _sparse_value(t: torch.Tensor, n: int, max_elements: int) -> dict[str, Any]:
    """Describe sparse ``t`` as the dense tensor it stands for (NOTE [Sparse values])."""
    d = t.detach()
    if n <= max_elements and d.dtype in _READABLE:
        return to_value(d.to_dense(), max_elements)
    stored = d.coalesce().values() if d.layout is torch.sparse_coo else d.values()
    return _summarize_with_zeros(stored.reshape(-1), list(t.shape), n)


def _summarize_with_zeros(stored: torch.Tensor, shape: list[int], n: int) -> dict[str, Any]:
    """The summary of ``n`` elements: the 1-D ``stored`` values and as many zeros as it lacks."""
    f = stored.abs() if stored.is_complex() else stored
    if f.dtype not in _FLOAT_OK:
        f = f.to(torch.float32)
    finite = torch.isfinite(f)
    nan = int(torch.isnan(f).sum())
    inf = f.numel() - nan - int(finite.sum())
    if nan or inf:
        f = f[finite]
    m = f.numel()
    zeros = n - m - nan - inf
    if m == 0:
        if zeros == 0:
            return _empty_summary(shape, n, nan, inf)
        value = _finite_summary(shape, zeros, 0.0, 0.0, 0.0, 0.0, [min(zeros, HIST_SAMPLE)])
    else:
        wide = f.double()
        lo, hi = torch.aminmax(wide)
        mn, mx, total, sumsq = torch.stack([lo, hi, wide.sum(), torch.dot(wide, wide)]).tolist()
        if zeros:
            mn, mx = min(mn, 0.0), max(mx, 0.0)
        value = _finite_summary(shape, m + zeros, mn, mx, total, sumsq, _histogram(f, m, mn, mx))
    value.update(numel=n, nan=nan, inf=inf)
    return value


def _summarize_non_finite(f: torch.Tensor, shape: list[int], n: int) -> dict[str, Any]:
    with torch.no_grad():
        finite = torch.isfinite(f)
        nan = int(torch.isnan(f).sum())
        inf = n - nan - int(finite.sum())
        rest = f[finite]
    if rest.numel() == 0:
        return _empty_summary(shape, n, nan, inf)
    value = _summarize(rest, rest.numel())
    value.update(shape=shape, numel=n, nan=nan, inf=inf)
    return value
