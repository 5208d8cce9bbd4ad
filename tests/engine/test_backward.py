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


NODE_HOOKS = {
    "a node's post-hook": """
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
z = y.exp()
y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 0 + 7, None))
z.sum().backward()
""",
    "a module's full backward hook": """
import torch, torch.nn as nn
lin = nn.Linear(2, 2)
act = nn.Tanh()
act.register_full_backward_hook(lambda m, grad_input, grad_output: (grad_input[0] * 0.5,))
loss = act(lin(torch.ones(1, 2))).sum()
loss.backward()
""",
}


def test_a_hook_the_snippet_puts_on_a_node_after_gradwalk_shows_in_what_the_node_sends() -> None:
    # gradwalk hooked every node first and read what it sent before the snippet's own hook
    # changed it: the walk had MulBackward0 send [120.5, 2420.6] and AccumulateGrad receive
    # [7, 7] (NOTE [gradwalk's node hooks run last])
    for case, source in NODE_HOOKS.items():
        trace = record(source)
        names = q.node_names(trace)
        nodes = {e.id: e for e in q.events_of(trace, "node")}
        walk = q.events_of(trace, "node_executed")
        received = {e.node: q.value_of(e.grad_in[0]) for e in walk}
        checked = 0
        for e in walk:
            for edge, sent in zip(nodes[e.node].edges, e.grad_out, strict=True):
                target = edge.node
                if (
                    target is None
                    or sent is None
                    or sum(1 for n in nodes.values() for d in n.edges if d.node == target) > 1
                ):
                    continue  # one sender per receiver: what it sent is all the next node gets
                assert q.value_of(sent) == received[target], (case, names[e.node], names[target])
                checked += 1
        assert checked >= 3, case
    hooked = record(NODE_HOOKS["a node's post-hook"])
    assert q.final_grads(hooked)["x"] == [7.0, 7.0]
