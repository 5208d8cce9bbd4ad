"""Optimizer steps are noticed without changing the snippet, with their metrics (issue 6)."""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import math
import warnings
from typing import Any

import pytest
import torch

from engine import queries as q
from engine import record
from engine.events import Limits
from engine.norms import norms_of
from tests.conftest import case_source
from tests.engine.snippets import gan_loop


def test_rent_regression_reports_400_steps_and_converges() -> None:
    trace = record(case_source("rent_regression.py"))
    steps = q.optimizer_steps(trace)
    assert len(steps) == 400
    assert [s.step for s in steps] == list(range(1, 401))
    assert steps[0].optimizer == "opt (SGD)" and steps[0].lr == [0.05]
    assert steps[-1].loss < steps[0].loss / 10
    finals = q.final_values(trace)
    assert finals["model.weight"] == pytest.approx([3.001], abs=0.01)
    assert finals["model.bias"] == pytest.approx([1.998], abs=0.01)


def test_only_the_first_steps_are_recorded_in_full_by_default() -> None:
    trace = record(case_source("rent_regression.py"))
    steps = q.optimizer_steps(trace)
    assert [s.detail for s in steps[:4]] == [True, True, True, False]
    assert sum(s.detail for s in steps) == 3
    assert len({e.backward for e in q.events_of(trace, "node_executed")}) == 3


def test_every_kth_step_can_be_recorded_in_full() -> None:
    trace = record(case_source("rent_regression.py"), limits=Limits(detail_steps=1, detail_every=100))
    detailed = [s.step for s in q.optimizer_steps(trace) if s.detail]
    assert detailed == [1, 100, 200, 300, 400]


def test_gradwalk_detail_next_step_marks_a_step() -> None:
    src = case_source("rent_regression.py").replace(
        "    opt.zero_grad()",
        "    if epoch == 250:\n        gradwalk.detail_next_step()\n    opt.zero_grad()",
    )
    trace = record("import gradwalk\n" + src)
    assert [s.step for s in q.optimizer_steps(trace) if s.detail] == [1, 2, 3, 250]


def test_clean_training_has_per_parameter_norms_for_every_parameter() -> None:
    trace = record(case_source("clean_training.py"))
    steps = q.optimizer_steps(trace)
    assert len(steps) == 30
    names = {"net.0.weight", "net.0.bias", "net.3.weight", "net.3.bias"}
    for s in steps:
        assert {p.name for p in s.params} == names
        assert all(p.grad_norm is not None and p.grad_norm > 0 and p.update_norm > 0 for p in s.params)
        assert s.grad_norm == pytest.approx(math.sqrt(sum(p.grad_norm**2 for p in s.params)))
    assert steps[0].optimizer == "opt (AdamW)"


def test_parameter_labels_hold_for_an_unhashable_optimizer_and_after_a_recorded_inplace_op() -> None:
    """Labels are kept per optimizer between steps (by id: this one defines __eq__ and so
    has no hash), and looked up again once an op has been recorded (the in-place update
    recorded in full detail gives w a new tensor id)."""
    trace = record(
        """
import torch, torch.nn as nn
class Opt(torch.optim.SGD):
    def __eq__(self, other):
        return self is other
net = nn.Linear(3, 1)
w = torch.ones(3, requires_grad=True)
opt = Opt([*net.parameters(), w], lr=0.1)
for _ in range(6):
    opt.zero_grad()
    (net(torch.ones(2, 3)).sum() + (w * 2).sum()).backward()
    opt.step()
    with torch.no_grad():
        w.mul_(0.5)
""",
        limits=Limits(detail_steps=2),
    )
    steps = q.optimizer_steps(trace)
    assert len(steps) == 6 and [s.detail for s in steps] == [True, True, False, False, False, False]
    for s in steps:
        assert [p.name for p in s.params] == ["weight", "bias", "w"]
        assert all(p.grad_norm is not None for p in s.params)
    w_ids = [s.params[2].tensor for s in steps]
    assert w_ids[0] != w_ids[1]  # the recorded w.mul_ made a new version of w
    named = {e.id for e in q.events_of(trace, "tensor") if e.name == "w"} | {
        e.id for e in q.events_of(trace, "tensor_named") if e.name == "w"
    }
    assert set(w_ids) <= named


def _graph_bytes(file: str, replace: tuple[str, str] | None = None) -> list[int]:
    src = case_source(file).replace(
        "    total += loss", "    total += loss\n    gradwalk.log('graph_bytes', 0)"
    )
    if replace:
        src = src.replace(*replace)
    trace = record("import gradwalk\n" + src)
    marks = [e.seq for e in q.events_of(trace, "metric")]
    mem = q.events_of(trace, "memory")
    held = []
    for seq in marks:
        before = [m.saved_bytes for m in mem if m.seq < seq]
        held.append(before[-1] if before else 0)
    return held


def test_graph_memory_climbs_with_a_tensor_total_and_stays_flat_with_item() -> None:
    climbing = _graph_bytes("pitfall_loss_tensor_total.py")
    flat = _graph_bytes("pitfall_loss_tensor_total.py", ("total += loss", "total += loss.item()"))
    assert climbing[-1] > 5 * climbing[1] > 0
    assert len(climbing) == len(flat) == 20
    assert all(b >= a for a, b in itertools.pairwise(climbing))
    assert max(flat) <= 2 * max(flat[:2]) and max(flat) < climbing[-1] / 5


def test_the_graph_memory_charts_last_point_is_the_runs_final_memory() -> None:
    # memory events are thinned as the total grows; the last one is the run's final figure,
    # the one the running-total detector reports (the chart ended ~10% short of it)
    trace = record(case_source("pitfall_loss_tensor_total.py"))
    last = q.events_of(trace, "memory")[-1].saved_bytes
    (found,) = [p for p in q.pitfalls(trace) if p.kind == "loss-tensor-accumulated"]
    assert f"to {last:,} bytes" in found.message


def test_user_metrics_show_up_with_their_step() -> None:
    src = case_source("rent_regression.py").replace(
        "    opt.step()",
        "    opt.step()\n    if epoch % 100 == 0:\n        gradwalk.log('loss', loss.item(), step=epoch)",
    )
    metrics = q.events_of(record("import gradwalk\n" + src), "metric")
    assert [m.step for m in metrics] == [100, 200, 300, 400]


MOVED_SNIPPET = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, {width}), nn.Tanh(), nn.Linear({width}, 1))
model[2].bias.requires_grad_(False)  # a parameter that never moves
opt = {make}
X, y = torch.randn(16, 4), torch.randn(16, 1)
moved = []
for _ in range(4):
    before = [p.detach().clone() for p in model.parameters()]
    opt.zero_grad()
    ((model(X) - y) ** 2).mean().backward()
    opt.step()
    moved.append([(p.detach() - b).norm().item() for p, b in zip(model.parameters(), before)])
print(moved)
"""


_OPTIMIZERS = [
    "torch.optim.SGD(model.parameters(), lr=0.1)",
    "torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)",
    "torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01, dampening=0.1)",
    "torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)",
    "torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.01, maximize=True)",
    "torch.optim.Adam(model.parameters(), lr=0.01)",
]


@pytest.mark.parametrize(
    ("make", "width"),
    # a 4096-wide model has its norms taken through NumPy (engine.norms.norms_of)
    [
        *((make, 8) for make in _OPTIMIZERS),
        (_OPTIMIZERS[0], 4096),
        (_OPTIMIZERS[1], 4096),
        (_OPTIMIZERS[5], 4096),
    ],
)
def test_update_norms_are_how_far_each_parameter_moved(make: str, width: int) -> None:
    """Whether read off the step (SGD) or measured against a copy, an update norm is the
    distance each parameter really moved, as the snippet itself measures it."""
    trace = record(MOVED_SNIPPET.format(make=make, width=width), limits=Limits(detail_steps=1))
    assert not q.events_of(trace, "error")
    moved = ast.literal_eval(q.stdout(trace).strip())
    steps = q.optimizer_steps(trace)
    assert len(steps) == 4
    for step, truth in zip(steps, moved, strict=True):
        assert [p.update_norm for p in step.params] == pytest.approx(truth, rel=1e-4, abs=1e-7)
        assert step.update_norm == pytest.approx(math.sqrt(sum(m * m for m in truth)), rel=1e-4)
    assert all(step.params[-1].update_norm == 0.0 for step in steps)


def test_a_model_first_called_in_a_metrics_only_step_is_named() -> None:
    """Metrics-only steps run without the global module hooks (NOTE [Light module
    tracking]); a model met there for the first time still gets parameter names, and its
    dropout is still watched. (``detail_steps=1``: each optimizer's first steps are
    recorded in full, and opt2's would be from its second on. One loop: the code after a
    loop is recorded in full again, NOTE [Code after the loop].)"""
    trace = record(
        """
import torch, torch.nn as nn
body = nn.Linear(4, 4)
opt = torch.optim.SGD(body.parameters(), lr=0.1)
for i in range(8):
    if i < 5:
        opt.zero_grad()
        body(torch.randn(2, 4)).pow(2).mean().backward()
        opt.step()
        continue
    if i == 5:
        head = nn.Sequential(nn.Linear(4, 1), nn.Dropout(0.5))
        opt2 = torch.optim.SGD(head.parameters(), lr=0.1)
    opt2.zero_grad()
    head(torch.randn(2, 4)).pow(2).mean().backward()
    opt2.step()
    with torch.no_grad():
        head(torch.randn(2, 4))
""",
        limits=Limits(detail_steps=1),
    )
    steps = [s for s in q.optimizer_steps(trace) if s.optimizer == "opt2 (SGD)"]
    assert len(steps) == 3 and not any(s.detail for s in steps)
    assert {p.name for p in steps[0].params} == {"0.weight", "0.bias"}
    assert [(p.kind, p.line) for p in q.pitfalls(trace)] == [("train-mode-in-evaluation", 18)]


HALF = (torch.float16, torch.bfloat16)


@pytest.mark.parametrize(
    "tensors",
    [
        [torch.randn(3), torch.randn(2, 2, dtype=torch.float64)],  # few elements: Python floats
        [torch.randn(1, 1, requires_grad=True), torch.tensor(-2.5), torch.randn(64)],  # a parameter, 0-d
        [torch.tensor([1e20]), torch.tensor([1e20, 1.0]), torch.tensor([3e19, 4e19])],  # float32 overflow
        [torch.tensor([1e200, 1.0], dtype=torch.float64), torch.tensor([float("nan"), float("inf")])],
        [torch.tensor([1, 2], dtype=torch.int64).float().t(), torch.randn(3, dtype=torch.float16)],
        [torch.randn(200, 100), torch.randn(100), torch.randn(50, dtype=torch.float64)],  # NumPy
        [torch.randn(200, 100).t(), torch.randn(100)],  # large, not contiguous: foreach_norm
        [torch.randn(200, 100, dtype=torch.float16), torch.randn(100)],  # half: foreach_norm
        [torch.randn(200, 100, requires_grad=True), torch.randn(100)],  # a parameter
        [torch.full((200, 100), 1e20), torch.randn(100)],  # float32 overflow: inf, as torch says
        [torch._neg_view(torch.randn(200, 100)), torch.randn(100)],  # NumPy cannot view it
        [
            torch.randn(300, dtype=torch.bfloat16),
            torch.randn(300, 2, dtype=torch.float64).t(),
        ],  # both foreach_norm
    ],
)
def test_norms_of_equal_torchs_norms(tensors: list[torch.Tensor]) -> None:
    """Half-precision norms are taken in float32, not rounded to float16's or bfloat16's digits."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may reach the snippet's stderr
        expected = [
            torch.linalg.vector_norm(t, dtype=torch.float32 if t.dtype in HALF else None).item()
            for t in tensors
        ]
        assert norms_of(tensors) == pytest.approx(expected, rel=1e-5, nan_ok=True)


@pytest.mark.parametrize("zero_grad", ["opt.zero_grad()", "pass  # forgotten"])
def test_sparse_gradients_are_measured_and_the_run_goes_on(zero_grad: str) -> None:
    """nn.Embedding(sparse=True) hands SGD sparse gradients (with repeated rows until they
    are coalesced): their norms are the dense gradient's, and nothing gradwalk does fails."""
    trace = record(
        f"""
import torch, torch.nn as nn
emb = nn.Embedding(10, 3, sparse=True)
opt = torch.optim.SGD(emb.parameters(), lr=0.1)
truth = []
for _ in range(3):
    {zero_grad}
    emb(torch.tensor([1, 2, 2])).sum().backward()
    truth.append(emb.weight.grad.to_dense().norm().item())
    opt.step()
print(truth)
"""
    )
    assert not q.events_of(trace, "error")
    truth = ast.literal_eval(q.stdout(trace).strip())
    steps = q.optimizer_steps(trace)
    assert [s.grad_norm for s in steps] == pytest.approx(truth)
    assert [s.update_norm for s in steps] == pytest.approx([0.1 * g for g in truth])
    expected = [] if zero_grad == "opt.zero_grad()" else ["missing-zero-grad"]
    assert [p.kind for p in q.pitfalls(trace)] == expected


@pytest.mark.parametrize("call", ["opt.step(closure)", "opt.step(closure=closure)"])
def test_a_closure_optimizers_forward_and_backward_are_recorded(call: str) -> None:
    """LBFGS runs the snippet's closure inside ``step()``: its forward ops are on the tape
    with the closure's lines and its backward walks are recorded, while the optimizer's own
    arithmetic stays off the tape."""
    source = f"""
import torch
x = torch.tensor([1.5, -0.5], requires_grad=True)
opt = torch.optim.LBFGS([x], lr=0.5, max_iter=4)
def closure():
    opt.zero_grad()
    loss = ((x - 2) ** 2).sum()
    loss.backward()
    return loss
for _ in range(2):
    {call}
print(x.tolist())
"""
    trace = record(source)
    assert not q.events_of(trace, "error")
    plain = io.StringIO()
    with contextlib.redirect_stdout(plain):
        exec(compile(source, "plain.py", "exec"), {"__name__": "__main__"})
    assert q.stdout(trace) == plain.getvalue()  # the same numbers as without gradwalk
    assert len(q.optimizer_steps(trace)) == 2
    closure_lines = {7}
    assert {op.line for op in q.events_of(trace, "op") if op.name in ("sub", "pow", "sum")} == closure_lines
    assert q.backward_order(trace, 0)[0] == "SumBackward0"
    assert {op.line for op in q.events_of(trace, "op")} <= {3, 7, 8}  # nothing from inside LBFGS


def test_metrics_only_steps_still_chart_each_steps_graph_memory() -> None:
    """Past full detail no op is watched and a backward sends no memory event, but each
    step reports the graph's bytes at their peak (graph_peak_bytes) and after backward freed
    them (graph_bytes): the memory chart rises and falls every step, from one event a step."""
    trace = record(case_source("rent_regression.py"), limits=Limits(detail_steps=1))
    steps = q.optimizer_steps(trace)
    assert len(steps) == 400 and not any(s.detail for s in steps[1:])
    # the one step recorded in full: its memory events show the graph built and freed
    detailed = [m.saved_bytes for m in q.events_of(trace, "memory") if m.seq < steps[0].seq]
    graph = max(detailed)
    assert graph > 0 and detailed[-1] == 0
    assert steps[0].graph_peak_bytes == graph and steps[0].graph_bytes == 0
    # every later step: the same graph at its peak, nothing held after, no memory events
    assert {(s.graph_peak_bytes, s.graph_bytes) for s in steps[1:]} == {(graph, 0)}
    assert not [m for m in q.events_of(trace, "memory") if steps[1].seq < m.seq < steps[-1].seq]


def test_a_graph_no_step_reports_is_charted_when_the_run_ends() -> None:
    """A backward after the last optimizer step, in a metrics-only stretch: its graph's
    peak is not lost with no step to carry it, but sent when the run ends, then the end."""
    src = case_source("rent_regression.py").replace(
        "print(f", "held = lossfn(model(X), y)\nheld.backward(retain_graph=True)\nprint(f"
    )
    trace = record(src, limits=Limits(detail_steps=1))
    steps = q.optimizer_steps(trace)
    after = [m.saved_bytes for m in q.events_of(trace, "memory") if m.seq > steps[-1].seq]
    # the retained graph is held to the end: its bytes are the run's last word, once
    assert after == [steps[-1].graph_peak_bytes]
    freed = record(src.replace("retain_graph=True", ""), limits=Limits(detail_steps=1))
    steps = q.optimizer_steps(freed)
    after = [m.saved_bytes for m in q.events_of(freed, "memory") if m.seq > steps[-1].seq]
    assert after == [steps[-1].graph_peak_bytes, 0]  # built, then freed by backward


def test_ops_after_a_caught_failing_step_are_recorded() -> None:
    """A step that raises never reaches its post-hook; when the snippet catches the error and
    goes on, its next ops are on the tape again (not muted as the optimizer's own work)."""
    trace = record(
        """
import torch
class Fussy(torch.optim.SGD):
    def step(self, closure=None):
        raise ValueError("not today")
w = torch.ones(2, requires_grad=True)
opt = Fussy([w], lr=0.1)
(w * 2).sum().backward()
try:
    opt.step()
except ValueError:
    pass
y = (w * 5).sum()
y.backward()
"""
    )
    assert not q.errors(trace)
    assert [op.line for op in q.events_of(trace, "op") if op.name == "mul"] == [8, 13]
    assert len(q.events_of(trace, "backward_started")) == 2


_FAILS_AT_STEP_8 = """
import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(10):
    opt.zero_grad()
    h = torch.sigmoid(w)
    if step == 7:
        h.mul_(2)
    loss = h.sum()
    loss.backward()
    opt.step()
"""


def test_an_error_in_a_metrics_only_step_says_so_and_detail_every_records_that_iteration() -> None:
    """Past the first steps only metrics are recorded: an error there says after which
    step it came, and ``detail_every`` one more records the failing iteration in full,
    whose explanation then names the node and the line."""
    metrics_only = record(_FAILS_AT_STEP_8)
    (error,) = q.errors(metrics_only)
    assert error.metrics_only_after == 7 and error.node is None
    assert "after optimizer step 7, recorded metrics-only" in (error.hint or "")
    assert not [op for op in q.events_of(metrics_only, "op") if op.line == 10]  # the failing iteration's

    full = record(_FAILS_AT_STEP_8, limits=Limits(detail_every=error.metrics_only_after + 1))
    (again,) = q.errors(full)
    assert again.metrics_only_after is None and again.line == error.line == 12
    assert again.hint is not None and again.hint.startswith("SigmoidBackward0 saved h for backward (line 8)")
    assert "line 10 (h.mul_(2))" in again.hint
    assert [op.name for op in q.events_of(full, "op") if op.line == 10] == ["mul"]
    assert again.node is not None and q.node_names(full)[again.node] == "SigmoidBackward0"


def test_an_error_in_a_step_recorded_in_full_or_before_any_step_has_no_metrics_only_mark() -> None:
    early = record(_FAILS_AT_STEP_8.replace("step == 7", "step == 1"))
    assert q.errors(early)[0].metrics_only_after is None
    assert "SigmoidBackward0 saved h" in (q.errors(early)[0].hint or "")
    no_steps = record(
        "import torch\nx = torch.ones(2, requires_grad=True)\nx.sum().backward()\nraise ValueError('x')\n"
    )
    assert q.errors(no_steps)[0].metrics_only_after is None


def test_a_model_is_copied_and_saved_after_its_steps_recorded_in_full_as_without_gradwalk() -> None:
    """Past the first steps the detectors watch a model through a hook in the model itself
    (NOTE [Light module tracking]): copying or pickling the model failed from then on,
    following the hook into the recorder (found by fuzzing the engine with snippets)."""
    source = """
import torch, torch.nn as nn, copy, io, pickle
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1), nn.Linear(2, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(5):
    opt.zero_grad()
    m(torch.ones(1, 2)).sum().backward()
    opt.step()
m2 = copy.deepcopy(m)
buf = io.BytesIO(); torch.save(m, buf); buf.seek(0)
m3 = torch.load(buf, weights_only=False)
m4 = pickle.loads(pickle.dumps(m))
for model in (m, m2, m3, m4):
    model.eval()
print([model(torch.ones(1, 2)).item() for model in (m, m2, m3, m4)])
"""
    plain = io.StringIO()
    with contextlib.redirect_stdout(plain):
        exec(compile(source, "plain.py", "exec"), {"__name__": "__main__"})
    trace = record(source)
    assert not q.errors(trace) and q.events_of(trace, "run_finished")[0].counts.unrecorded == 0
    assert q.stdout(trace) == plain.getvalue()
    assert sum(s.detail for s in q.optimizer_steps(trace)) == 3  # the copies came after light tracking began


def test_the_gradient_norm_is_the_gradient_the_step_was_given() -> None:
    """Multi-tensor Nesterov SGD adds the momentum into ``.grad`` in place during the step;
    the norms are those of ``.grad`` when ``step()`` was called, as the snippet reads them."""
    trace = record(
        """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, foreach=True)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for i in range(4):
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    print([p.grad.norm().item() for p in model.parameters()])
    opt.step()
""",
        limits=Limits(detail_steps=1),
    )
    truth = [ast.literal_eval(line) for line in q.stdout(trace).splitlines()]
    steps = q.optimizer_steps(trace)
    assert len(steps) == len(truth) == 4
    for step, norms in zip(steps, truth, strict=True):
        assert [p.grad_norm for p in step.params] == pytest.approx(norms, rel=1e-5)
        assert step.grad_norm == pytest.approx(math.sqrt(sum(g * g for g in norms)), rel=1e-5)


def test_an_optimizer_given_a_freed_ones_id_is_counted_and_labelled_afresh() -> None:
    """Each optimizer is numbered from 1 with its own class in its label, also when Python
    hands it the id() of one freed before. (Both classes are given one unusual size, so
    that the memory, and with it the id, of each optimizer freed goes to the next.)"""
    trace = record(
        """
import torch, torch.nn as nn
SIZE = tuple(f"slot{i}" for i in range(55))
class SGD(torch.optim.SGD):
    __slots__ = SIZE
class Adam(torch.optim.Adam):
    __slots__ = SIZE
x, y = torch.randn(16, 4), torch.randn(16, 1)
def train(make_opt):
    model = nn.Linear(4, 1)
    optimizer = make_opt(model.parameters(), lr=0.1)
    for i in range(2):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    return type(optimizer).__name__, id(optimizer)
for trial in range(10):
    print([train(SGD), train(Adam)])
"""
    )
    runs = [run for line in q.stdout(trace).splitlines() for run in ast.literal_eval(line)]
    # (how many ids come round again is up to the allocator: one is enough to prove the point)
    assert len({i for _, i in runs}) < len(runs), "no id was reused: the test proves nothing"
    expected = [(f"optimizer ({kind})", step) for kind, _ in runs for step in (1, 2)]
    assert [(s.optimizer, s.step) for s in q.optimizer_steps(trace)] == expected


def test_optimizers_held_as_attributes_are_labelled_by_them() -> None:
    trace = record(
        """
import torch, torch.nn as nn
class GAN:
    def __init__(self):
        self.G = nn.Linear(4, 2)
        self.D = nn.Linear(2, 1)
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=1e-3)
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=1e-3)
    def step(self, real):
        fake = self.G(torch.randn(8, 4))
        self.opt_d.zero_grad()
        (self.D(real).mean() - self.D(fake.detach()).mean()).backward()
        self.opt_d.step()
        self.opt_g.zero_grad()
        (-self.D(fake).mean()).backward()
        self.opt_g.step()
gan = GAN()
for i in range(4):
    gan.step(torch.randn(8, 2))
"""
    )
    series: dict[str, list[int]] = {}
    for s in q.optimizer_steps(trace):
        series.setdefault(s.optimizer, []).append(s.step)
    assert series == {"self.opt_d (Adam)": [1, 2, 3, 4], "self.opt_g (Adam)": [1, 2, 3, 4]}


def test_an_optimizer_over_several_models_names_each_parameters_model() -> None:
    """Parameter labels are unique within an optimizer: with the model's name when it steps
    more than one model, counted when two models go by the same name."""
    trace = record(
        """
import torch, torch.nn as nn
encoder = nn.Sequential(nn.Linear(8, 4), nn.ReLU())
decoder = nn.Sequential(nn.Linear(4, 8))
opt = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
pair = [nn.Linear(8, 1), nn.Linear(8, 1)]
opt2 = torch.optim.SGD([p for m in pair for p in m.parameters()], lr=0.1)
x = torch.randn(16, 8)
for i in range(4):
    opt.zero_grad()
    opt2.zero_grad()
    ((decoder(encoder(x)) - x) ** 2).mean().backward()
    sum(m(x).pow(2).mean() for m in pair).backward()
    opt.step()
    opt2.step()
""",
        limits=Limits(detail_steps=2),
    )
    for s in q.optimizer_steps(trace):
        names = [p.name for p in s.params]
        if s.optimizer == "opt (Adam)":
            assert names == ["encoder.0.weight", "encoder.0.bias", "decoder.0.weight", "decoder.0.bias"]
        else:  # both models of pair go by one name: the second's labels are counted
            kinds = [n.split(" ")[0].rsplit(".", 1)[-1] for n in names]
            assert len(set(names)) == 4 and kinds == ["weight", "bias", "weight", "bias"], names


def test_a_bfloat16_sgd_update_is_how_far_the_parameters_moved() -> None:
    """In bfloat16 rounding swallows most of a small SGD update: the update norm shows what
    is left of it, not lr * ‖grad‖ (the bias does not move at all)."""
    trace = record(
        """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(64, 64).to(torch.bfloat16)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(32, 64, dtype=torch.bfloat16)
for i in range(3):
    before = [p.detach().clone() for p in model.parameters()]
    opt.zero_grad()
    (model(x) ** 2).mean().backward()
    opt.step()
    print([(p.detach().double() - b.double()).norm().item() for p, b in zip(model.parameters(), before)])
""",
        limits=Limits(detail_steps=1),
    )
    moved = [ast.literal_eval(line) for line in q.stdout(trace).splitlines()]
    steps = q.optimizer_steps(trace)
    assert len(steps) == len(moved) == 3
    for step, truth in zip(steps, moved, strict=True):
        assert [p.update_norm for p in step.params] == pytest.approx(truth, rel=1e-5, abs=1e-12)
    assert moved[0][1] == 0.0


GAN_LOOP = gan_loop(12)


def _detailed(trace: Any) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for s in q.optimizer_steps(trace):
        if s.detail:
            found.setdefault(s.optimizer, []).append(s.step)
    return found


def test_each_optimizers_own_steps_are_recorded_in_full() -> None:
    """detail_steps and detail_every count each optimizer's own steps: with a GAN's two,
    the next step is recorded in full when it is a detail step of either (so optG's step 7,
    which comes after optD's step 7, is too). An optimizer's first step can only be recorded
    in full when the step before it was: optG is not known before it steps."""
    assert _detailed(record(GAN_LOOP)) == {"optD (SGD)": [1, 2, 3], "optG (Adam)": [1, 2, 3]}
    every_8 = _detailed(record(GAN_LOOP, limits=Limits(detail_steps=1, detail_every=8)))
    assert every_8 == {"optD (SGD)": [1, 8], "optG (Adam)": [7, 8]}


def test_an_optimizer_that_stopped_stepping_does_not_keep_steps_in_full() -> None:
    """An earlier phase's optimizer, left at step 7 with detail_every=8, counts only until
    it has missed its steps: the next phase is not recorded in full throughout."""
    trace = record(
        """
import torch, torch.nn as nn
model = nn.Linear(3, 1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
warmup = torch.optim.SGD(model.parameters(), lr=0.01)
main = torch.optim.Adam(model.parameters(), lr=0.01)
for opt, n in ((warmup, 7), (main, 20)):
    for i in range(n):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""",
        limits=Limits(detail_steps=1, detail_every=8),
    )
    assert _detailed(trace) == {"warmup (SGD)": [1], "main (Adam)": [1, 2, 8, 16]}


def test_the_summary_says_how_many_steps_and_calls_were_recorded_in_full() -> None:
    from engine.summary import summarize

    steps = "import torch\nw = torch.zeros(1, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
    steps += "for i in range(8):\n    opt.zero_grad()\n    (w - 2).pow(2).sum().backward()\n    opt.step()\n"
    assert "backward calls: 8  optimizer steps: 8 (3 in full)" in summarize(record(steps))
    by_hand = "import torch\nw = torch.zeros(1, requires_grad=True)\nfor i in range(14):\n"
    by_hand += "    (w - 1).pow(2).sum().backward()\n    with torch.no_grad():\n        w -= 0.1 * w.grad\n"
    by_hand += "        w.grad = None\n"
    assert "backward calls: 14 (10 in full)  optimizer steps: 0" in summarize(record(by_hand))
    everything = summarize(record(steps, limits=Limits(detail_steps=10)))
    assert "backward calls: 8  optimizer steps: 8  events" in everything
