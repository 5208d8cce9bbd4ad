"""What README.md says of the engine, checked against a real recording: claims a README audit
found the engine did not keep."""

from __future__ import annotations

from engine import queries as q
from engine import record

# a plain tensor stepped by an optimizer: the PyTorch tutorials' first use of torch.optim
STEPPED = """import torch
w = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for i in range(5):
    opt.zero_grad()
    loss = ((w - 3) ** 2).sum()
    loss.backward()
    opt.step()
"""


def test_a_tensor_an_optimizer_stepped_keeps_its_name_in_every_step_recorded_in_full() -> None:
    # README: the forward after `opt.step()` reads the tensor as the step left it, a new
    # version of it, and a tensor the snippet named reads by that name, never a bare id. The
    # new versions of a plain `w` went unnamed: step 2's tape read `sub t4, 3 → t4 − 3`, and
    # its last version was named `w` only when the run ended, after a live page had drawn it.
    trace = record(STEPPED)
    assert trace.events[-1].status == "ok"
    names: dict[int, str] = {}
    read: list[str | None] = []  # the name each step's `w - 3` read w by, as it was recorded
    for event in trace.events:
        if event.type in ("tensor", "tensor_named") and event.name is not None:
            names[event.id] = event.name
        elif event.type == "op" and event.name == "sub":
            read.append(names.get(event.inputs[0]))
    assert read == ["w", "w", "w"]  # the three steps recorded in full (Limits.detail_steps)
    versions = [e for e in q.events_of(trace, "tensor") if e.version_of is not None]
    assert len(versions) >= 2
    assert {q.tensor_names(trace).get(e.id) for e in versions} == {"w"}
    assert q.final_grads(trace).keys() == {"w"}
