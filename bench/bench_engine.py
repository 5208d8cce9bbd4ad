"""Recording overhead of the engine, as ratios to plain PyTorch measured in the same process.

Each workload runs plain and recorded alternately (interleaved, so drift hits both). Two
ratios are printed: "ratio", the median of the per-rep ratios, and "best", the fastest
recorded run over the fastest plain one. On a shared machine other tenants slow runs down in
phases that last seconds (the same plain loop has measured 1.25-1.94 s here); the median
moves with them by +-20%, the best-of ratio much less. "Full" records the tape, the graph, the backward walk and values;
"metrics" is a long training loop in which every step after the first only reports its
optimizer metrics (the figure the 1.2x target is about); "script" is the same loop recorded
with the default limits, whose first 3 steps are recorded in full; "bare hooks" is a
reference, not gradwalk: the hooks a metrics-only step cannot do without (loss, norms,
graph memory), and nothing else (:func:`bare_metrics_hooks`); "minimal recorder", under each
full row, is the reference the overhead targets were set against, also not gradwalk: a
tape mode and a hook on every node, no values, names or events (:func:`minimal_recorder`);
"minimal recorder + values" adds only the values a trace must hold, taken as gradwalk takes
them: what full recording cannot go below as long as values are read while the run goes on.

Run: ``make bench`` (all benchmarks) or ``.venv/bin/python bench/bench_engine.py``.
"""

from __future__ import annotations

import contextlib
import gc
import io
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import torch

from engine.events import Limits
from engine.recorder import Recorder
from engine.source import SNIPPET_FILENAME

WORKLOADS: dict[str, tuple[str, str, float]] = {
    # name: (setup, step, target ratio)
    "cubic scalar": (
        "import torch",
        "x = torch.tensor(2.5, requires_grad=True)\ny = x**3 - 4*x\ny.backward()",
        3.0,
    ),
    "MLP 784-256-10 step": (
        "import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
        "X, Y = torch.randn(64, 784), torch.randint(0, 10, (64,))",
        "opt.zero_grad()\nloss = F.cross_entropy(model(X), Y)\nloss.backward()\nopt.step()",
        1.5,
    ),
    "TransformerEncoder fwd+bwd": (
        "import torch, torch.nn as nn\ntorch.manual_seed(0)\n"
        "layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True, dropout=0.0)\n"
        "enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)\n"
        "src = torch.randn(8, 32, 128)",
        "enc.zero_grad()\nout = enc(src)\nout.sum().backward()",
        1.5,
    ),
    "2,000-step tanh chain": (
        "import torch\nx = torch.randn(16, requires_grad=True)",
        "h = x\nfor _ in range(2000):\n    h = torch.tanh(h * 1.01 + 0.1)\nh.sum().backward()",
        3.0,
    ),
}


_on_gpu = False


def time_one(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes. On CPU: CPU time of this thread, robust to other
    processes on a shared machine (the ops run single-threaded and autograd runs backward on
    the calling thread). On a GPU: wall time around a synchronised run, since kernels run
    asynchronously."""
    if _on_gpu:
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return time.perf_counter() - start
    start = time.thread_time()
    fn()
    return time.thread_time() - start


class Timing(NamedTuple):
    """Interleaved timings of a baseline and a variant, in seconds."""

    base: float  # median baseline time
    variant: float  # median variant time
    ratio: float  # median of the per-rep ratios variant / baseline
    best: float  # fastest variant / fastest baseline: what is left once contention is filtered out


def interleave(
    base: Callable[[], Any], variant: Callable[[], Any], reps: int, between: Callable[[], Any] = lambda: None
) -> Timing:
    """Time ``base`` and ``variant`` alternately ``reps`` times (``between`` runs untimed first)."""
    bs, vs = [], []
    for _ in range(reps):
        between()
        bs.append(time_one(base))
        vs.append(time_one(variant))
    return Timing(
        statistics.median(bs),
        statistics.median(vs),
        statistics.median(v / b for b, v in zip(bs, vs, strict=True)),
        min(vs) / min(bs),
    )


def time_step(
    setup: str,
    step: str,
    reps: int,
    around: Callable[[], contextlib.AbstractContextManager[Any]],
    between: Callable[[], Any] = lambda: None,
) -> Timing:
    """Time one step of a workload plain and inside ``around()``, interleaved.

    ``setup`` runs once; the step then runs 3 times each way untimed (caches, first-call
    costs), and the garbage collector's view is frozen for the timed reps.
    """
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(setup, SNIPPET_FILENAME, "exec"), scope)
    code = compile(step, SNIPPET_FILENAME, "exec")

    def plain() -> None:
        exec(code, scope)

    def inside() -> None:
        with around():
            exec(code, scope)

    for _ in range(3):
        plain()
        inside()
    gc.collect()
    gc.freeze()
    try:
        return interleave(plain, inside, reps, between)
    finally:
        gc.unfreeze()


def measure(setup: str, step: str, reps: int, limits: Limits | None = None) -> Timing:
    """Time one step of a workload plain and recorded in full (every node, every value)."""
    # every step in full: an optimizer step would otherwise end full detail after 3 steps, and
    # a workload without one (the scalar, the chain) after Limits.detail_calls backward() calls
    limits = limits or Limits(
        max_events=10_000_000,
        max_ops=1_000_000,
        max_nodes=1_000_000,
        detail_steps=1_000_000_000,
        detail_calls=1_000_000_000,
    )
    # One recorder for the whole run of steps, as when a training run is recorded: it is
    # entered around each recorded step and left for each plain one (tensors it has seen,
    # such as parameters, are introduced once, as in a real recording). The last rep's
    # trace is freed between reps, untimed: what a consumer does with the events (stream
    # them, store them, drop them) is not the recorder's cost.
    events: list[Any] = []
    rec = Recorder(events.append, limits)
    timing = time_step(setup, step, reps, lambda: rec, between=events.clear)
    if not any(e["type"] == "node_executed" for e in events):
        raise RuntimeError("the last recorded step was not recorded in full: the figure would be wrong")
    return timing


@contextlib.contextmanager
def minimal_recorder(values: bool = False) -> Any:
    """The issue's reference recorder for full recording (a reference row, not gradwalk).

    A ``TorchFunctionMode`` that runs each op and hooks every ``grad_fn`` node the op
    created (found as gradwalk finds them: from the outputs, stopping at nodes already
    marked); each hook notes the node's gradient count. No names, lines, modules, saved
    tensors, memory or events. With ``values``, it also takes the values a trace must hold,
    each once, with gradwalk's own :func:`engine.values.to_value` (whole up to 64 elements,
    a summary above): every op output, and every gradient a node sends on.
    """
    from torch.overrides import TorchFunctionMode

    from engine.values import to_value

    seen: list[Any] = []

    def hook(grad_inputs: Any, grad_outputs: Any) -> None:
        if values:
            seen.append([to_value(g, 64) for g in grad_inputs if g is not None])
        else:
            seen.append(len(grad_outputs))

    class Minimal(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            queue: list[Any] = []
            for t in out if isinstance(out, tuple | list) else (out,):
                if isinstance(t, torch.Tensor):
                    if values:
                        with torch._C.DisableTorchFunction():
                            seen.append(to_value(t, 64))
                    if t.grad_fn is not None:
                        queue.append(t.grad_fn)
            while queue:
                node = queue.pop()
                if node is None or "minimal" in node.metadata:
                    continue
                node.metadata["minimal"] = True
                node.register_hook(hook)
                queue.extend(n for n, _ in node.next_functions)
            return out

    with Minimal():
        yield seen


def measure_minimal(setup: str, step: str, reps: int, values: bool = False) -> Timing:
    """Time one step of a workload plain and under :func:`minimal_recorder`."""
    return time_step(setup, step, reps, lambda: minimal_recorder(values))


def _on_device(setup: str, device: str) -> str:
    """Move a workload's models and inputs to ``device``."""
    setup += f"\ndevice = {device!r}\n"
    for name in ("model", "enc", "X", "Y", "src", "x"):
        setup += f"if {name!r} in globals(): {name} = {name}.to(device)\n"
    setup = setup.replace(
        "x = torch.randn(16, requires_grad=True)", "x = torch.randn(16, requires_grad=True, device='cuda')"
    )
    return setup + "opt = torch.optim.SGD(model.parameters(), lr=0.01) if 'model' in globals() else None\n"


METRICS_LOOP = """
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
X, Y = torch.randn(64, 784), torch.randint(0, 10, (64,))
for step in range({steps}):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), Y)
    loss.backward()
    opt.step()
"""


EXAMPLES = Path(__file__).resolve().parent.parent / "server" / "examples"


def training_loops() -> dict[str, str]:
    """The two long training loops of issue #6, by name: the rent regression and the MLP loop."""
    return {
        "rent regression, 400 steps": (EXAMPLES / "rent_regression.py").read_text(),
        "MLP loop, 1,000 steps": METRICS_LOOP.format(steps=1000),
    }


def plain_script(source: str) -> Callable[[], None]:
    """``source`` as a callable that runs it plainly (seeded, its output dropped)."""
    code = compile(source, SNIPPET_FILENAME, "exec")

    def plain() -> None:
        torch.manual_seed(0)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, {"__name__": "__main__"})

    return plain


def measure_loop(source: str, reps: int, limits: Limits | None = None) -> Timing:
    """Whole-script timing of a training loop: plain vs recorded (events built, not validated).

    With the default limits the first steps are recorded in full and the rest metrics-only;
    ``Limits(detail_steps=0)`` leaves only the first step in full, which measures what the
    metrics-only steps cost. Events are built but not validated (``validate=False``):
    validation is the caller's choice and is not part of recording.
    """
    from engine.run import record_stream

    plain = plain_script(source)

    def recorded() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            record_stream(source, lambda event: None, limits=limits, validate=False)

    plain()
    recorded()
    return interleave(plain, recorded, reps)


@contextlib.contextmanager
def bare_metrics_hooks() -> Any:
    """The least a metrics-only step could cost with PyTorch's Python hooks (a reference row).

    What every metrics-only step needs, and nothing else: the loss read with ``item()`` in
    a wrapped ``torch.autograd.backward``; an optimizer post-hook taking every parameter's
    and gradient's norm in one ``_foreach_norm`` and one transfer; saved-tensor hooks
    counting the bytes a graph holds. No events, names, lines, module hooks or detectors.
    """
    from torch.autograd.graph import saved_tensors_hooks
    from torch.optim.optimizer import register_optimizer_step_post_hook

    held: dict[tuple[int, int], list[int]] = {}
    steps: list[tuple[float | None, list[float]]] = []
    loss: list[float | None] = [None]

    class Held:
        __slots__ = ("key", "tensor")

        def __init__(self, tensor: torch.Tensor, key: tuple[int, int]) -> None:
            self.tensor, self.key = tensor, key

        def __del__(self) -> None:
            entry = held[self.key]
            entry[0] -= 1
            if entry[0] == 0:
                del held[self.key]

    def pack(t: torch.Tensor) -> Held:
        storage = t.untyped_storage()
        key = (storage.data_ptr(), t.get_device())
        held.setdefault(key, [0, storage.nbytes()])[0] += 1
        return Held(t if t.is_leaf else t.detach(), key)

    def post(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        params = [p for group in opt.param_groups for p in group["params"]]
        with torch.no_grad():
            norms = torch._foreach_norm([*params, *(p.grad for p in params if p.grad is not None)])
            steps.append((loss[0], torch.stack(norms).tolist()))

    original = torch.autograd.backward

    def backward(*args: Any, **kwargs: Any) -> Any:
        loss[0] = args[0].item() if args and args[0].numel() == 1 else None
        return original(*args, **kwargs)

    handle = register_optimizer_step_post_hook(post)
    torch.autograd.backward = backward
    try:
        with saved_tensors_hooks(pack, lambda h: h.tensor):
            yield steps  # (loss, norms) of each optimizer step
    finally:
        torch.autograd.backward = original
        handle.remove()


def measure_bare_hooks(source: str, reps: int) -> Timing:
    """Whole-script timing of a training loop: plain vs run under :func:`bare_metrics_hooks`."""
    plain = plain_script(source)

    def hooked() -> None:
        with bare_metrics_hooks():
            plain()

    plain()
    hooked()
    return interleave(plain, hooked, reps)


def measure_detectors(source: str, reps: int) -> Timing:
    """A clean snippet recorded without (baseline) and with the pitfall detectors."""
    from engine.run import record_stream

    def run(detect: bool) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            record_stream(source, lambda e: None, validate=False, pitfalls=detect)

    run(True)
    return interleave(lambda: run(False), lambda: run(True), reps)


def _row(name: str, timing: Timing, target: str = "") -> None:
    digits = 2 if timing.base < 0.1 else 1
    print(
        f"{name:40} {timing.base * 1e3:8.{digits}f}ms {timing.variant * 1e3:8.{digits}f}ms "
        f"{timing.ratio:6.2f}x {timing.best:6.2f}x {target:>7}"
    )


def main(device: str = "cpu") -> None:
    """Print the overhead table; on ``device="cuda"`` the workloads run on the GPU."""
    global _on_gpu
    _on_gpu = device != "cpu"
    torch.set_num_threads(1)
    print(
        f"engine recording overhead on {device} (torch {torch.__version__}, 1 CPU thread, CPU time; "
        "ratio: median of interleaved reps, best: fastest recorded / fastest plain)"
    )
    print(f"{'workload':40} {'plain':>10} {'recorded':>10} {'ratio':>7} {'best':>7} {'target':>7}")
    for name, (setup, step, target) in WORKLOADS.items():
        reps = 9 if "chain" in name else 25
        if device != "cpu":
            setup = _on_device(setup, device)
        _row(f"{name} (full)", measure(setup, step, reps), f"<={target}")
        _row("  minimal recorder (reference)", measure_minimal(setup, step, reps))
        _row("  minimal recorder + values (reference)", measure_minimal(setup, step, reps, values=True))
    for name, source in training_loops().items():
        _row(f"{name} (metrics)", measure_loop(source, 5, Limits(detail_steps=0)), "<=1.2")
        _row(f"{name} (script)", measure_loop(source, 5))
        _row(f"{name} (bare hooks)", measure_bare_hooks(source, 5))
    # a loop that steps by hand (the PyTorch tutorial's sin(x) fit): its metrics-only calls,
    # and the script as it runs, its first Limits.detail_calls calls in full
    by_hand = (EXAMPLES / "fit_by_hand.py").read_text()
    _row("fit by hand, 2,000 calls (metrics)", measure_loop(by_hand, 5, Limits(detail_calls=0)), "<=1.2")
    _row("fit by hand, 2,000 calls (script)", measure_loop(by_hand, 5))
    clean = (EXAMPLES / "clean_training.py").read_text()
    _row("pitfall detectors, clean run", measure_detectors(clean, 5), "~1.0")


if __name__ == "__main__":
    main()
