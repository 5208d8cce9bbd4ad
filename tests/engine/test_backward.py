"""What the backward walk records at a leaf's AccumulateGrad: the gradient the node received
and ``.grad`` before and after, also when a post-accumulate hook changes ``.grad`` in place
(NOTE [Read what AccumulateGrad receives before it runs] in engine/backward.py)."""

from __future__ import annotations

from typing import Any

import torch

from engine import queries as q
from engine import record


def _accumulate_grad_inputs(trace: Any) -> list[Any]:
    names = q.node_names(trace)
    return [
        [q.value_of(v) for v in e.grad_in]
        for e in q.events_of(trace, "node_executed")
        if names[e.node] == "AccumulateGrad"
    ]


def test_a_post_accumulate_hook_that_clips_grad_does_not_change_what_was_added() -> None:
    # .grad is None, so PyTorch adopts the incoming gradient as .grad and the hook clips it
    source = """
import torch
w = torch.tensor([3.0, 4.0], requires_grad=True)
def clip(p):
    torch.nn.utils.clip_grad_norm_([p], 1.0)
w.register_post_accumulate_grad_hook(clip)
(w * w).sum().backward()
"""
    trace = record(source)
    fresh = torch.tensor([3.0, 4.0], requires_grad=True)
    incoming = torch.autograd.grad((fresh * fresh).sum(), fresh)[0].tolist()
    scope: dict[str, Any] = {}
    exec(source, scope)
    hooked = scope["w"].grad.tolist()
    [(before, added, after)] = q.accumulations(trace, "w")
    assert (before, added) == (None, incoming)  # [6, 8]
    assert after == hooked == q.final_grads(trace)["w"]  # [0.6, 0.8]
    assert _accumulate_grad_inputs(trace) == [[incoming]]


def test_a_post_accumulate_hook_on_an_existing_grad_shows_what_it_left() -> None:
    source = """
import torch
w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
def halve(p):
    p.grad.mul_(0.5)
w.register_post_accumulate_grad_hook(halve)
(w * w).sum().backward()
(w * 3).sum().backward()
"""
    trace = record(source)
    assert q.accumulations(trace, "w") == [
        (None, [2.0, -4.0], [1.0, -2.0]),
        ([1.0, -2.0], [3.0, 3.0], [2.0, 0.5]),
    ]
    assert _accumulate_grad_inputs(trace) == [[[2.0, -4.0]], [[3.0, 3.0]]]


def test_a_leafs_own_hook_changes_what_its_accumulate_grad_receives() -> None:
    source = """
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
x.register_hook(lambda g: g * 10)
(x * 3).sum().backward()
"""
    trace = record(source)
    assert q.accumulations(trace, "x") == [(None, [30.0, 30.0], [30.0, 30.0])]
    assert _accumulate_grad_inputs(trace) == [[[30.0, 30.0]]]
