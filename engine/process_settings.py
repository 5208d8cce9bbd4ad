"""The process-wide settings a snippet may change for good, saved before a run and put back
after it: ``torch.set_grad_enabled(False)`` as a statement, anomaly detection switched on,
``torch.set_default_dtype(torch.float64)``, ``torch.set_printoptions(precision=2)``,
``torch.use_deterministic_algorithms(True)``. In a notebook, or a worker that records the next
run, they would otherwise outlive the snippet that set them."""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

__all__ = ["Settings", "restore_settings", "saved_settings"]


class Settings(NamedTuple):
    """What :func:`saved_settings` read."""

    grad: bool
    anomaly: bool
    anomaly_check_nan: bool
    dtype: torch.dtype
    print_options: dict[str, Any]
    deterministic: bool
    deterministic_warn_only: bool


def saved_settings() -> Settings:
    """Grad mode, anomaly detection (and its NaN check), the default dtype, the print options
    and deterministic algorithms (and their warn-only mode), as they are."""
    return Settings(
        torch.is_grad_enabled(),
        torch.is_anomaly_enabled(),
        torch.is_anomaly_check_nan_enabled(),
        torch.get_default_dtype(),
        _print_options(),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )


def restore_settings(settings: Settings) -> None:
    """Put back what :func:`saved_settings` returned. Only what changed is set: a recorder is
    entered and left once per step by the benchmark and ``gradwalk.watch_call``, and setting
    all of them each time cost more than the rest of leaving."""
    torch._C._set_grad_enabled(settings.grad)
    anomaly = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
    if anomaly != (settings.anomaly, settings.anomaly_check_nan):
        torch.autograd.set_detect_anomaly(settings.anomaly, settings.anomaly_check_nan)
    if torch.get_default_dtype() is not settings.dtype:
        torch.set_default_dtype(settings.dtype)
    if _print_options() != settings.print_options:
        torch.set_printoptions(**settings.print_options)
    deterministic = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    if deterministic != (settings.deterministic, settings.deterministic_warn_only):
        torch.use_deterministic_algorithms(settings.deterministic, warn_only=settings.deterministic_warn_only)


def _print_options() -> dict[str, Any]:
    """``torch._tensor_str.get_printoptions()`` without its ``dataclasses.asdict``, which
    deep-copies each field (a third of entering and leaving a recorder)."""
    return dict(vars(torch._tensor_str.PRINT_OPTS))
