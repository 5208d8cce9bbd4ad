"""What parameter-never-initialised says of one tensor read before anything filled it (the
detector: uninitialised.py)."""

from __future__ import annotations

import re
from typing import NamedTuple

import torch

from .uninitialised_sites import MakerSite

__all__ = ["Held", "held_values", "never_initialised_said"]

_LEGACY = re.compile(r"^(?:torch\.(?:cuda\.)?)?([A-Za-z0-9]*Tensor)\((.*)\)$", re.DOTALL)


class Held(NamedTuple):
    """What a tensor held when it was read: its values' range (finite ones) and how many
    were NaN or infinite, of ``values``."""

    low: float | None
    high: float | None
    nans: int
    infs: int
    values: int


def held_values(t: torch.Tensor) -> Held | None:
    """What ``t`` holds now (read without recording; ``None`` where it cannot be read)."""
    try:
        with torch.no_grad():
            flat = t.detach().reshape(-1)
            if not flat.is_floating_point():
                flat = flat.double()
            finite = flat[torch.isfinite(flat)]
            nans = int(torch.isnan(flat).sum())
            infs = int(torch.isinf(flat).sum())
            if finite.numel():
                low, high = (float(v) for v in torch.aminmax(finite))
                return Held(low, high, nans, infs, flat.numel())
            return Held(None, None, nans, infs, flat.numel())
    except Exception:  # a tensor with no data to read (meta, a functorch wrapper)
        return None


def _number(v: float) -> str:
    return f"{v:.2g}" if v == 0 or 1e-3 <= abs(v) < 1e4 else f"{v:.1e}"


def _held_words(held: Held | None) -> str:
    """``it held values from -3.2e+38 to 4.1e+37 this run`` (and its NaN and Inf)."""
    if held is None:
        return "it held whatever those bytes were this run"
    parts = []
    if held.low == held.high == 0 and not held.nans and not held.infs:
        return "it held only zeros this run"
    if held.low is not None and held.high is not None:
        if held.low == held.high:
            parts.append(f"every finite value {_number(held.low)}")
        else:
            parts.append(f"values from {_number(held.low)} to {_number(held.high)}")
    if held.nans:
        parts.append(f"{held.nans} NaN")
    if held.infs:
        parts.append(f"{held.infs} Inf")
    of = f" (of {held.values})" if held.nans or held.infs else ""
    return f"it held {' and '.join(parts)}{of} this run"


def _fix(name: str, site: MakerSite, shape: tuple[int, ...], parameter: bool, trained: bool) -> str:
    """What to write instead: initialise it as nn.Linear does, make it with values, or fill it."""
    attribute = site.target if site.target and site.target.startswith("self.") else name
    legacy = _LEGACY.match(site.code)
    sizes = legacy.group(2).strip() if legacy else ", ".join(str(s) for s in shape)
    meant = ""
    if legacy and re.fullmatch(r"\s*-?\d+(?:\s*,\s*-?\d+)*\s*", legacy.group(2)):
        values = [v.strip() for v in legacy.group(2).split(",")]
        meant = (
            f" If you meant the values [{', '.join(values)}], write "
            f"torch.tensor([{', '.join(v + '.' for v in values)}])."
        )
    if parameter and len(shape) >= 2:
        return (
            f"Initialise it right after making it, as nn.Linear does: "
            f"nn.init.kaiming_uniform_({attribute}, a=math.sqrt(5)) (in __init__, or in a "
            f"reset_parameters() that __init__ calls); or make it with values: "
            f"nn.Parameter(torch.randn({sizes}) * 0.01); or use nn.Linear.{meant}"
        )
    if parameter:
        return (
            f"Initialise it right after making it: nn.init.zeros_({attribute}) (or "
            f"nn.init.uniform_({attribute}, -bound, bound), as nn.Linear does for its bias); or make "
            f"it with values: nn.Parameter(torch.zeros({sizes})).{meant}"
        )
    if trained and len(shape) < 2:  # a bias: nn.init's fan-based fills want two dimensions
        return (
            f"Fill it right after making it: with torch.no_grad(): {name}.zero_(); or make it with "
            f"values: {name} = torch.zeros({sizes}, requires_grad=True).{meant}"
        )
    if trained:  # a leaf that requires grad: filled in place only under no_grad
        return (
            f"Fill it right after making it: with torch.no_grad(): {name}.normal_(0, 0.01) (or "
            f"nn.init.kaiming_uniform_({name}, a=math.sqrt(5)), as nn.Linear fills its weight); or make "
            f"it with values: {name} = (torch.randn({sizes}) * 0.01).requires_grad_().{meant}"
        )
    return (
        f"Fill it before reading it ({name}.zero_(), {name}.normal_(), an out= op, or "
        f"{name}[:] = …), or make it with values: torch.zeros({sizes}) or torch.randn({sizes}).{meant}"
    )


def never_initialised_said(
    name: str,
    site: MakerSite,
    used_line: int | None,
    used_code: str | None,
    held: Held | None,
    shape: tuple[int, ...],
    parameter: bool,
    trained: bool,
) -> tuple[str, str, str]:
    """``(title, message, fix)`` for ``name``, made at ``site`` from uninitialised memory and
    first read at ``used_line`` (code ``used_code``) while it ``held`` what the allocator left;
    ``parameter``: it is an ``nn.Parameter``; ``trained``: a leaf that requires grad (a
    parameter, or ``torch.empty(…, requires_grad=True)``), trained from those values."""
    maker = site.code if len(site.code) <= 60 else site.code.split("(", 1)[0] + "(…)"
    callee = site.code.split("(", 1)[0].strip()
    what = f"{callee}(sizes), like torch.empty," if _LEGACY.match(site.code) else callee
    used = f"line {used_line}" + (f" ({used_code})" if used_code else "") if used_line else "an op"
    after = (
        " Training starts from those values: a loss that is NaN, Inf or does not fall, "
        "and a different result on each run."
        if trained
        else " Whatever is computed from it is computed from those bytes, and differs from run to run."
    )
    message = (
        f"{name} is made at line {site.line} ({maker}): {what} allocates memory and does not set it, "
        f"so the tensor holds whatever bytes that memory held before. It is first used at {used}, and "
        f"nothing wrote it before then: {_held_words(held)}; on another run it holds other bytes "
        f"(zeros, 1e+38, NaN).{after}"
    )
    title = f"{name} is used before it is initialised"
    return title, message, _fix(name, site, shape, parameter, trained)
