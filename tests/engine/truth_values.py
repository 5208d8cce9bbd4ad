"""Whether a value as a trace holds it describes a tensor (tests/engine/truth.py).

A whole value must be the tensor bitwise (NaN for NaN, the sign of a zero too); a summary's
shape and counts exactly, its min, max and norm to 1e-5 of themselves and its mean and std
to 1e-5 of the elements' root mean square (float32 sums), all measured in float64.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from engine.events import FullValue, SummaryValue

__all__ = ["value_differs"]


def value_differs(value: FullValue | SummaryValue | None, t: torch.Tensor | None) -> str | None:
    """Why ``value`` (as a trace holds it) does not describe tensor ``t``; None if it does."""
    if value is None or t is None:
        return None if value is None and t is None else f"{_kind(value)} vs {_kind(t)}"
    if t.layout is not torch.strided:
        t = t.to_dense()
    if list(value.shape) != list(t.shape):
        return f"shape {value.shape} vs {list(t.shape)}"
    if isinstance(value, FullValue):
        if t.is_complex():
            return "a complex tensor sent whole"
        got = torch.tensor(value.flat, dtype=t.dtype).reshape(t.shape)
        same = (got == t) | (got.isnan() & t.isnan()) if t.is_floating_point() else got == t
        if t.is_floating_point():
            same &= got.signbit() == t.signbit()
        return None if bool(same.all()) else f"whole {value.flat[:6]}… vs {t.reshape(-1)[:6].tolist()}…"
    return _summary_differs(value, t)


def _kind(v: Any) -> str:
    return "None" if v is None else type(v).__name__


def _summary_differs(s: SummaryValue, t: torch.Tensor) -> str | None:
    if s.numel != t.numel():
        return f"numel {s.numel} vs {t.numel()}"
    f = (t.abs() if t.is_complex() else t).double().reshape(-1)
    nan, inf = int(f.isnan().sum()), int(f.isinf().sum())
    if (s.nan, s.inf) != (nan, inf):
        return f"nan/inf {(s.nan, s.inf)} vs {(nan, inf)}"
    fin = f[f.isfinite()]
    if fin.numel() == 0:
        return None if s.min is None else "statistics of no finite element"
    want = {
        "min": fin.min().item(),
        "max": fin.max().item(),
        "mean": fin.mean().item(),
        "std": fin.std().item() if fin.numel() > 1 else 0.0,
        "norm": fin.norm().item(),
    }
    scale = want["norm"] / math.sqrt(fin.numel())  # the elements' root mean square
    for key, w in want.items():
        got = getattr(s, key)
        # float32 sums: a relative error of ~1e-6 of the elements' size, never of a tiny difference
        tol = 1e-5 * scale if key in ("mean", "std") else 1e-5 * abs(w) + 1e-30
        if got is None or not abs(got - w) <= tol:
            return f"{key} {got} vs {w}"
    return None
