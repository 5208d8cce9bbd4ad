"""Notice optimizer steps without changing the snippet, and measure each one.

PyTorch's global optimizer step hooks bracket every ``step()`` of every optimizer. Before a
step the parameters are copied (so the update can be measured); after it, the gradient,
update and parameter norms are computed with ``torch._foreach_norm`` and moved to the host
in one transfer. The same hook decides whether the next step is recorded in full detail
(``Limits.detail_steps`` / ``Limits.detail_every``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from .source import find_name, snippet_frames

if TYPE_CHECKING:
    from torch.utils.hooks import RemovableHandle

    from .recorder import Recorder

__all__ = ["TrainingTracker"]


class TrainingTracker:
    """Step counts, labels and metrics of every optimizer a snippet uses."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._handles: list[RemovableHandle] = []
        self._steps: dict[int, int] = {}
        self._labels: dict[int, str] = {}
        self._before: list[torch.Tensor] = []
        self._last_end = time.perf_counter()
        self.total_steps = 0
        self.stepped_params: set[int] = set()

    def install(self) -> None:
        self._handles.append(register_optimizer_step_pre_hook(self._pre))
        self._handles.append(register_optimizer_step_post_hook(self._post))

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def _params(self, opt: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p for group in opt.param_groups for p in group["params"]]

    def _pre(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        rec = self._rec
        rec.in_optimizer = True
        with rec.mute(), torch.no_grad():
            params = self._params(opt)
            self._before = list(torch._foreach_mul(params, 1.0)) if params else []

    def _post(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        rec = self._rec
        rec.in_optimizer = False
        key = id(opt)
        step = self._steps.get(key, 0) + 1
        self._steps[key] = step
        self.total_steps += 1
        frame, line, _, _ = snippet_frames()
        if key not in self._labels:
            var = find_name(opt, frame)
            self._labels[key] = f"{var} ({type(opt).__name__})" if var else type(opt).__name__
        params = self._params(opt)
        self.stepped_params.update(id(p) for p in params)
        with rec.mute(), torch.no_grad():
            stats = self._measure(params)
        now = time.perf_counter()
        detail = rec.detail
        rec.emit(
            dict(
                type="optimizer_step",
                optimizer=self._labels[key],
                step=step,
                loss=rec.backward.last_loss,
                lr=[float(g.get("lr", 0.0)) for g in opt.param_groups],
                graph_bytes=rec.memory.saved_bytes,
                cuda_allocated=torch.cuda.memory_allocated()
                if torch.cuda.is_available() and torch.cuda.is_initialized()
                else None,
                wall_s=now - self._last_end,
                detail=detail,
                line=line,
                **stats,
            )
        )
        self._last_end = now
        self._before = []
        with rec.mute():
            rec.pitfalls.on_optimizer_step(opt, params, step, stats["grad_norm"], line)
        self._schedule()

    def _measure(self, params: list[torch.Tensor]) -> dict[str, Any]:
        rec = self._rec
        if not params:
            return {"grad_norm": None, "update_norm": 0.0, "param_norm": 0.0, "params": []}
        with_grad = [i for i, p in enumerate(params) if p.grad is not None]
        grads = [g for i in with_grad if (g := params[i].grad) is not None]
        torch._foreach_sub_(self._before, params)  # the copy becomes -(update), in place
        norms = list(torch._foreach_norm([*params, *self._before, *grads]))
        if len({(n.dtype, n.device) for n in norms}) > 1:
            norms = [n.float().cpu() for n in norms]
        host = torch.stack(norms).tolist()
        n = len(params)
        pn, un, gn_list = host[:n], host[n : 2 * n], host[2 * n :]
        gn: list[float | None] = [None] * n
        for i, v in zip(with_grad, gn_list, strict=True):
            gn[i] = v
        stats = []
        for i, p in enumerate(params):
            name, pname = rec.modules.param_name(p)
            tid = rec.tensors.known(p)
            if tid is None:
                tid = rec.tensors.ensure(p)
            label = pname or name or rec.tensors.names.get(tid) or f"param{i}"
            stats.append(dict(tensor=tid, name=label, grad_norm=gn[i], update_norm=un[i], param_norm=pn[i]))
        finite_g = [g for g in gn if g is not None]
        return {
            "grad_norm": sum(g * g for g in finite_g) ** 0.5 if finite_g else None,
            "update_norm": sum(u * u for u in un) ** 0.5,
            "param_norm": sum(v * v for v in pn) ** 0.5,
            "params": stats,
        }

    def _schedule(self) -> None:
        limits = self._rec.limits
        done = max(self._steps.values())
        detail = done < limits.detail_steps or (
            limits.detail_every > 0 and (done + 1) % limits.detail_every == 0
        )
        self._rec.set_detail(detail)
