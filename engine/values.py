"""Turn tensors into trace values: whole when small, a summary when large.

A summary never copies the tensor's elements into the trace; it is computed on the
tensor's own device with a handful of reductions and moved to the host as a few numbers.
"""

from __future__ import annotations

import math

import torch

from .events import FullValue, SummaryValue

__all__ = ["HIST_BINS", "to_value"]

HIST_BINS = 16


def to_value(t: torch.Tensor, max_elements: int) -> FullValue | SummaryValue:
    """Describe ``t``: every element when ``t.numel() <= max_elements``, else statistics.

    >>> to_value(torch.tensor([1.0, 2.0]), 64).flat
    [1.0, 2.0]
    """
    with torch.no_grad():
        d = t.detach()
        if d.is_complex():
            d = d.abs()
        if d.layout != torch.strided or d.is_meta:
            return SummaryValue.model_construct(shape=list(d.shape), numel=d.numel(), min=None, max=None,
                                                mean=None, std=None, norm=None, nan=0, inf=0, hist=[])
        n = d.numel()
        if n <= max_elements:
            flat = d.reshape(-1).tolist()
            return FullValue.model_construct(kind="full", shape=list(d.shape), flat=flat)
        return _summarize(d, n)


def _summarize(d: torch.Tensor, n: int) -> SummaryValue:
    f = d.reshape(-1)
    if not f.is_floating_point():
        f = f.to(torch.float32)
    elif f.dtype in (torch.float16, torch.bfloat16):
        f = f.float()
    lo, hi = torch.aminmax(f)
    s = f.sum()
    sq = f.pow(2).sum() if f.dtype == torch.float64 else torch.linalg.vector_norm(f).pow(2)
    mn, mx, total, sumsq = torch.stack([lo, hi, s, sq.to(lo.dtype)]).tolist()
    nan = inf = 0
    if not all(math.isfinite(v) for v in (mn, mx, total, sumsq)):
        finite = torch.isfinite(f)
        nan = int(torch.isnan(f).sum())
        inf = int(n - nan - int(finite.sum()))
        f = f[finite]
        if f.numel() == 0:
            return SummaryValue.model_construct(kind="summary", shape=list(d.shape), numel=n, min=None, max=None,
                                                mean=None, std=None, norm=None, nan=nan, inf=inf, hist=[])
        lo, hi = torch.aminmax(f)
        mn, mx, total, sumsq = torch.stack([lo, hi, f.sum(), f.double().pow(2).sum().to(lo.dtype)]).tolist()
    m = f.numel()
    mean = total / m
    var = max(sumsq / m - mean * mean, 0.0) * (m / (m - 1) if m > 1 else 0.0)
    hist = torch.histc(f, bins=HIST_BINS, min=mn, max=mx).to(torch.int64).tolist() if mx > mn else [m]
    return SummaryValue.model_construct(kind="summary", shape=list(d.shape), numel=n, min=mn, max=mx, mean=mean,
                                        std=math.sqrt(var), norm=math.sqrt(sumsq), nan=nan, inf=inf, hist=hist)
