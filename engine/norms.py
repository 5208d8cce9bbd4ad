"""Norms of many tensors at once, read to the host as cheaply as each allows.

An optimizer step reports the norm of every parameter, gradient and update; this is where
they are taken (NOTE [Norms on the host]). The gradients' norms are started before the step
(some steps change ``.grad`` in place) and finished with the others after it, in one
transfer from the device.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = [
    "GradNorms",
    "Started",
    "grad_norms_started",
    "grads_of",
    "norms_finished",
    "norms_of",
    "norms_started",
]

_NUMPY_DTYPES = (torch.float32, torch.float64)
_HALF_DTYPES = (torch.float16, torch.bfloat16)
# tensors up to this many elements are read into Python floats (NOTE [Norms on the host])
_SMALL = 64
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)
_STRIDED = torch.strided


class Started:
    """Norms being taken (NOTE [Norms on the host]): ``values`` holds those read on the host
    already, ``device`` the rest, still on their devices, bound for ``positions``."""

    __slots__ = ("device", "positions", "values")

    def __init__(self, values: list[float], positions: list[int], device: list[torch.Tensor]) -> None:
        self.values = values
        self.positions = positions
        self.device = device


# the positions of the parameters that have a gradient, and its norms
GradNorms = tuple[list[int], Started]


def grads_of(params: list[torch.Tensor]) -> tuple[list[int], list[torch.Tensor]]:
    """The positions of the parameters that have a ``.grad``, and those gradients."""
    with_grad: list[int] = []
    grads: list[torch.Tensor] = []
    for i, p in enumerate(params):
        g = p.grad
        if g is not None:
            grads.append(g)
            with_grad.append(i)
    return with_grad, grads


def grad_norms_started(params: list[torch.Tensor]) -> GradNorms:
    with_grad, grads = grads_of(params)
    return with_grad, norms_started(grads)


def _norm_of_one(t: torch.Tensor) -> float:
    if t.layout is torch.sparse_coo:
        t = t.coalesce().values()  # an embedding's sparse gradient repeats indices until coalesced
    elif t.layout is not _STRIDED:
        t = t.to_dense()
    return float(torch.linalg.vector_norm(t))


def norms_of(tensors: list[torch.Tensor]) -> list[float]:
    """The 2-norm of each tensor (call under no_grad: the reads below must build no graph).

    NOTE [Norms on the host]: each PyTorch or NumPy call costs a few microseconds within a
    training step (caches cold, the step's own work in between), more than the arithmetic
    on a small tensor, so the cheapest reading is taken per tensor. A float tensor in CPU
    memory of at most :data:`_SMALL` elements is read into Python floats with one call;
    a larger contiguous one through a NumPy view of its memory and its BLAS dot (a quarter
    faster than PyTorch's norm kernel on a 784-256-10 MLP's parameters). Anything else
    (other dtypes and devices, strided views) takes PyTorch's norm, in one
    ``torch._foreach_norm`` call (float16 and bfloat16 ones in float32, rather than rounded
    to their own three or four digits) and one transfer to the host; a sparse gradient is
    read on its own. An optimizer step starts its gradients' norms before the step and
    finishes them with the others after it (:func:`norms_started`, :func:`norms_finished`),
    still in one transfer. Measured in the rent regression's metrics-only steps: 41 -> 21-25
    us for its two parameters and gradients.
    """
    return norms_finished(norms_started(tensors))[0]


def norms_started(tensors: list[torch.Tensor]) -> Started:
    """Take the norms of ``tensors`` that are read on the host, and start the others on
    their devices (NOTE [Norms on the host])."""
    values: list[float] = []
    positions: list[int] = []
    rest: list[torch.Tensor] = []
    errstate = None
    try:
        for t in tensors:
            if t.dtype in _NUMPY_DTYPES and t.layout is _STRIDED and t.is_cpu:
                if t.numel() <= _SMALL:
                    values.append(_norm_of_floats(_floats_of(t), t.dtype))
                    continue
                if t.is_contiguous():
                    if errstate is None:
                        # a float32 sum of squares past 3.4e38 is inf, as torch's own norm
                        # says; NumPy would also warn about it on the snippet's stderr
                        errstate = np.errstate(over="ignore", invalid="ignore")
                        errstate.__enter__()
                    try:
                        a = t.detach().numpy().reshape(-1)
                    except (RuntimeError, TypeError):
                        pass  # a tensor NumPy cannot view (a negative or conjugate bit): PyTorch below
                    else:
                        values.append(math.sqrt(float(a.dot(a))))
                        continue
            elif t.layout is not _STRIDED:  # sparse gradients (nn.Embedding(sparse=True))
                values.append(_norm_of_one(t))
                continue
            positions.append(len(values))
            values.append(0.0)
            rest.append(t)
    finally:
        if errstate is not None:
            errstate.__exit__(None, None, None)
    return Started(values, positions, _device_norms(rest) if rest else [])


def _device_norms(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """``torch._foreach_norm`` of ``tensors``, those of half precision taken in float32."""
    half = [t.dtype in _HALF_DTYPES for t in tensors]
    if not any(half):
        return list(torch._foreach_norm(tensors))
    low = iter(
        torch._foreach_norm([t for t, h in zip(tensors, half, strict=True) if h], 2, dtype=torch.float32)
    )
    others = [t for t, h in zip(tensors, half, strict=True) if not h]
    high = iter(torch._foreach_norm(others) if others else [])
    return [next(low) if h else next(high) for h in half]


def norms_finished(*started: Started) -> list[list[float]]:
    """The norms of each :class:`Started`, those still on a device moved in one transfer."""
    device = [v for s in started for v in s.device]
    if device:
        try:
            host = torch.stack(device).tolist()  # promotes mixed dtypes
        except RuntimeError:  # norms on several devices
            host = torch.stack([v.float().cpu() for v in device]).tolist()
        it = iter(host)
        for s in started:
            for i in s.positions:
                s.values[i] = next(it)
    return [s.values for s in started]


def _floats_of(t: torch.Tensor) -> list[float]:
    """A small CPU tensor's elements as Python floats, in one call to PyTorch: a matrix's
    rows are joined here, as ``reshape(-1)`` is one more PyTorch op (~5 us within a step)."""
    dims = t.dim()
    if dims == 1:
        return t.tolist()
    if dims == 0:
        return [t.item()]
    if dims == 2:
        return [v for row in t.tolist() for v in row]
    return t.reshape(-1).tolist()


def _norm_of_floats(values: list[float], dtype: torch.dtype) -> float:
    """The 2-norm of a small tensor's elements, as PyTorch's own norm gives it: one element
    is its absolute value; otherwise a sum of squares past what ``dtype`` holds is inf, and
    NaN wins over inf."""
    if len(values) == 1:
        return abs(values[0])
    total = sum(v * v for v in values)
    if dtype is torch.float32 and total > _FLOAT32_MAX:
        total = math.inf
    return math.sqrt(total)
