"""CUDA runs: recorded on the GPU, grads equal PyTorch's, devices per tensor. Run only where CUDA exists
(``bench/gpu_check.py`` runs them on a GPU machine)."""

from __future__ import annotations

import pytest
import torch

from engine import queries as q
from engine import record
from tests.conftest import case_source

pytestmark = pytest.mark.cuda


def test_cases_record_on_cuda_with_the_same_grads() -> None:
    for file in ("product.py", "control_flow.py", "small_net.py"):
        cpu = record(case_source(file))
        src = case_source(file).replace("requires_grad=True)", "requires_grad=True, device='cuda')")
        gpu = record(src, device="cuda")
        assert gpu.events[-1].status == "ok", gpu.events[-1].message
        for name, value in q.final_grads(cpu).items():
            assert q.final_grads(gpu)[name] == pytest.approx(value, rel=1e-5)


def test_tensors_report_their_device_and_memory_is_tracked() -> None:
    trace = record(
        "import torch\nimport torch.nn as nn\nnet = nn.Linear(256, 256).to(device)\n"
        "x = torch.randn(512, 256, device=device)\nloss = net(x).pow(2).mean()\nloss.backward()\n",
        device="cuda",
    )
    assert trace.events[-1].status == "ok"
    devices = {e.device for e in trace.events if e.type == "tensor"}
    assert any(d.startswith("cuda") for d in devices)
    assert any(e.type == "memory" and e.cuda_allocated for e in trace.events)


def test_device_mismatch_is_explained() -> None:
    trace = record(
        "import torch\na = torch.ones(3)\nb = torch.ones(3, device='cuda')\nc = a + b\n", device="cuda"
    )
    err = q.errors(trace)[0]
    assert err.line == 4 and err.hint and "cuda" in err.hint


def test_training_metrics_on_cuda() -> None:
    trace = record(case_source("clean_training.py"), device="cuda")
    steps = q.optimizer_steps(trace)
    assert len(steps) == 30 and all(s.cuda_allocated for s in steps)
    assert torch.cuda.is_available()


def test_a_model_moved_to_the_gpu_reads_its_parameters_on_the_gpu() -> None:
    trace = record(
        "import torch\nimport torch.nn as nn\nnet = nn.Linear(4, 2)\nnet.to(device)\n"
        "loss = net(torch.randn(3, 4, device=device)).sum()\nloss.backward()\n",
        device="cuda",
    )
    assert trace.events[-1].status == "ok"
    (move,) = [op for op in q.events_of(trace, "op") if op.line == 4]
    devices = {e.id: e.device for e in q.events_of(trace, "tensor")}
    assert [devices[t] for t in move.inputs] == ["cpu", "cpu"]
    assert all(devices[t].startswith("cuda") for t in move.outputs)
    linear = next(op for op in q.events_of(trace, "op") if op.name == "linear")
    assert linear.inputs[1:] == move.outputs
