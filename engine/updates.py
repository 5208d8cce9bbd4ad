"""How far an optimizer step moved each parameter: read off an SGD step, or measured
against a copy taken before it (NOTE [Update norms]). Used by training.py's step hooks."""

from __future__ import annotations

import torch

__all__ = ["GRAD", "copy_before", "copy_dtype", "sgd_readable", "sgd_update_terms"]


def copy_before(buffers: list[torch.Tensor], params: list[torch.Tensor]) -> list[torch.Tensor]:
    """A copy of ``params``, taken before a step to measure its update against, in
    ``buffers`` (the last step's) where they still fit, else in new ones; the caller keeps
    the list returned for the next step. float16 and bfloat16 parameters are copied in
    float32 (:func:`copy_dtype`)."""
    if not params:
        return []
    # NOTE [Update norms]: an update that cannot be read off the step is measured as the
    # difference from a copy taken here, into buffers kept from step to step (allocating a
    # fresh copy of a large model every step cost more than the copy itself).
    if len(buffers) != len(params) or any(
        b.shape != p.shape or b.dtype != copy_dtype(p.dtype) or b.device != p.device
        for b, p in zip(buffers, params, strict=True)
    ):
        # (made outside inference mode: a step under it must not leave every later step
        # copying into inference tensors, which raises outside it)
        with torch.inference_mode(False):
            buffers = [
                torch.empty_like(p, dtype=copy_dtype(p.dtype), memory_format=torch.preserve_format)
                for p in params
            ]
    torch._foreach_copy_(buffers, params)
    return buffers


def copy_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a parameter is copied in before a step: float32 for float16 and bfloat16,
    whose own 11 or 8 bits would round the difference ``before - after`` (by up to 0.2% of
    an element that changes sign or halves), so that the update is how far the parameter
    really moved; a parameter's own dtype otherwise."""
    return torch.float32 if dtype in _HALF_DTYPES else dtype


_HALF_DTYPES = (torch.float16, torch.bfloat16)
# parameters whose SGD update is read off lr * grad (rounding makes others move otherwise)
_READ_OFF_DTYPES = (torch.float32, torch.float64)
GRAD = "grad"  # marks an SGD update that is lr * the parameter's own gradient


def sgd_update_terms(opt: torch.optim.Optimizer) -> list[tuple[torch.Tensor | str | None, float]]:
    """For ``torch.optim.SGD``, what each parameter's step applied, and the lr scaling it.

    Only for an optimizer :func:`sgd_readable` accepts (other optimizers, Nesterov, weight
    decay without momentum, a tensor learning rate or half-precision parameters have their
    update measured from a copy). A plain SGD step moves ``p`` by ``lr * grad``
    (:data:`GRAD`); with momentum by ``lr * momentum_buffer``, whatever the weight decay;
    ``None`` where ``p`` had no gradient and did not move. Read right after the step.
    """
    terms: list[tuple[torch.Tensor | str | None, float]] = []
    for group in opt.param_groups:
        momentum, scale = group.get("momentum", 0), abs(float(group["lr"]))
        for p in group["params"]:
            if p.grad is None:
                terms.append((None, scale))
            elif momentum == 0:
                terms.append((GRAD, scale))
            else:
                terms.append((opt.state.get(p, {}).get("momentum_buffer"), scale))
    return terms


def sgd_readable(opt: torch.optim.Optimizer, params: list[torch.Tensor]) -> bool:
    """Whether :func:`sgd_update_terms` can read this optimizer's updates off its step.

    NOTE [Update norms]: ``p - lr * term`` is rounded to ``p``'s dtype. In float32 and
    float64 the read-off is the distance moved to within that rounding (about 6e-8 of
    ``|p|`` per element); in bfloat16 and float16 rounding swallows all or much of a small
    update, which is what the update chart must show, so there the update is measured. A
    parameter listed twice is measured too: PyTorch (with a deprecation warning) steps it twice.
    So is a step of an optimizer with post-hooks of its own: they run before gradwalk's and
    may change ``.grad`` (a ``zero_grad()`` there read as an update of 0). And so is a
    fused step: its kernel skips the update when a GradScaler found an inf or NaN
    (``found_inf``), which a read-off would show as ``lr * grad``, NaN, or as the momentum
    buffer's last move.
    """
    if type(opt) is not torch.optim.SGD or getattr(opt, "_optimizer_step_post_hooks", None):
        return False
    for group in opt.param_groups:
        lr = group.get("lr")
        if (
            not isinstance(lr, float | int)
            or group.get("nesterov")
            or group.get("differentiable")
            or group.get("fused")
        ):
            return False
        if group.get("momentum", 0) == 0 and group.get("weight_decay", 0) != 0:
            return False
    return all(p.dtype in _READ_OFF_DTYPES for p in params) and len(set(map(id, params))) == len(params)
