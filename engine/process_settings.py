"""The process-wide autograd settings a snippet may change for good, saved before a run and
put back after it: ``torch.set_grad_enabled(False)`` as a statement, anomaly detection
switched on, ``torch.set_default_dtype(torch.float64)``. In a notebook, or a worker that
records the next run, they would otherwise outlive the snippet that set them."""

from __future__ import annotations

import torch

__all__ = ["Settings", "restore_settings", "saved_settings"]

Settings = tuple[bool, bool, bool, torch.dtype]


def saved_settings() -> Settings:
    """Grad mode, anomaly detection (and its NaN check) and the default dtype, as they are."""
    return (
        torch.is_grad_enabled(),
        torch.is_anomaly_enabled(),
        torch.is_anomaly_check_nan_enabled(),
        torch.get_default_dtype(),
    )


def restore_settings(settings: Settings) -> None:
    """Put back what :func:`saved_settings` returned."""
    grad, anomaly, check_nan, dtype = settings
    torch._C._set_grad_enabled(grad)
    torch.autograd.set_detect_anomaly(anomaly, check_nan)
    torch.set_default_dtype(dtype)
