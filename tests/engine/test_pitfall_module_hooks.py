"""hook-registered-in-loop for module hooks: ``model.fc.register_forward_hook(save_activation)``
(or a forward pre-hook, a full backward hook or pre-hook) inside the training loop adds one
more hook each iteration, and every forward (or backward) runs them all: activations saved k
times, outputs scaled k times, nothing raised. Said at the registering line, once; a hook
registered once, removed in its iteration (by hand or by a ``with`` helper), put on a module
the loop builds afresh, or registered by library code stays silent. The run prints what it
prints without gradwalk, the handle included."""

from __future__ import annotations

from typing import Any

import pytest

from engine import queries as q
from engine import record
from engine.events import Limits
from engine.run import record_stream
from tests.engine.snippets import plain_stdout, recorded_silently, the_pitfall

# the loop starts at line 13, {hook} at line 14; _loop's setup goes above the loop, {after} after the step
_LOOP = """import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, y = torch.randn(8, 3), torch.randn(8, 1)
acts = []
def save_activation(module, inputs, output):
    acts.append(output.detach())
def log_grad(module, grad_input, grad_output):
    acts.append(grad_output[0].norm().item())
for step in range(5):
{hook}    opt.zero_grad()
    loss = ((model(X) - y) ** 2).mean()
    loss.backward()
    opt.step()
{after}print(len(acts), round(loss.item(), 6), model[0].weight.sum().item())
"""


def _loop(hook: str, after: str = "", setup: str = "") -> str:
    source = _LOOP.format(hook=hook, after="")
    if after:
        source = source.replace("    opt.step()\n", "    opt.step()\n" + after)
    if setup:
        source = source.replace("for step in range(5):\n", setup + "for step in range(5):\n")
    return source


@pytest.mark.parametrize("detail_steps", [3, 1])
def test_a_forward_hook_registered_in_the_loop_says_the_hooks_pile_up(detail_steps: int) -> None:
    source = _loop("    model[0].register_forward_hook(save_activation)\n")
    # as in plain PyTorch: 1 + 2 + 3 + 4 + 5 activations saved over five iterations
    assert plain_stdout(source).startswith("15 ")
    p = the_pitfall(source, "hook-registered-in-loop", 14, Limits(detail_steps=detail_steps))
    assert p.title == "register_forward_hook runs on every iteration: the hooks on model[0] pile up"
    assert p.message.startswith(
        "model[0].register_forward_hook(save_activation) adds a hook that stays until its handle's "
        "remove(), and model[0] outlives the loop: each pass through line 14 adds one more"
    )
    assert "model[0] holds 2 of them and runs save_activation 2 times per forward" in p.message
    assert "a hook that saves the activation saves it k times" in p.message
    assert p.fix == (
        "Register the hook once, above the loop: move model[0].register_forward_hook(save_activation) "
        "before line 13. Or keep its handle, h = model[0].register_forward_hook(save_activation), and "
        "call h.remove() at the end of each iteration, once the forward that needs it has run."
    )


def test_a_forward_pre_hook_that_scales_the_input_is_said_per_forward() -> None:
    source = _loop("    model.register_forward_pre_hook(lambda m, inp: (inp[0] * 0.5,))\n")
    p = the_pitfall(source, "hook-registered-in-loop", 14)
    assert p.title == "register_forward_pre_hook runs on every iteration: the hooks on model pile up"
    assert "model holds 2 of them and runs the hook 2 times per forward" in p.message  # a lambda
    assert "a hook that changes the input changes it k times" in p.message
    assert p.fix.startswith("Register the hook once, above the loop: move model.register_forward_pre_hook(")


@pytest.mark.parametrize(
    ("hook", "phrase"),
    [
        ("    model[2].register_full_backward_hook(log_grad)\n", "runs log_grad 2 times per backward"),
        (
            "    model[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 0.5,))\n",
            "runs the hook 2 times per backward",
        ),
    ],
    ids=["full backward hook", "full backward pre-hook"],
)
def test_a_backward_hook_registered_in_the_loop_is_said_per_backward(hook: str, phrase: str) -> None:
    p = the_pitfall(_loop(hook), "hook-registered-in-loop", 14)
    assert "the hooks on model[2] pile up" in p.title
    assert phrase in p.message
    assert "in each backward(), each on the" in p.message
    assert p.fix.endswith("once the backward that needs it has run.")


def test_a_kept_handle_never_removed_is_told_to_remove_it() -> None:
    source = _loop("    h = model[0].register_forward_hook(save_activation)\n")
    p = the_pitfall(source, "hook-registered-in-loop", 14)
    assert p.fix == (
        "Register the hook once, above the loop: move h = model[0].register_forward_hook(save_activation) "
        "before line 13. Or call h.remove() at the end of each iteration, once the forward that needs it "
        "has run."
    )


def test_handles_kept_in_a_list_and_removed_after_the_loop_still_pile_up() -> None:
    after_loop = "for h in handles:\n    h.remove()\n"
    source = _loop(
        "    handles.append(model[0].register_forward_hook(save_activation))\n", setup="handles = []\n"
    )
    source = source.replace("print(len(acts)", after_loop + "print(len(acts)")
    p = the_pitfall(source, "hook-registered-in-loop", 15)
    assert p.fix == (
        "Register the hook once, above the loop: move "
        "handles.append(model[0].register_forward_hook(save_activation)) before line 14. Or keep its "
        "handle, h = model[0].register_forward_hook(save_activation), and call h.remove() at the end of "
        "each iteration, once the forward that needs it has run."
    )


def test_a_hook_registered_by_a_helper_the_loop_calls_is_said_at_the_helper() -> None:
    setup = "def attach(layer):\n    return layer.register_forward_hook(save_activation)\n"
    source = _loop("    attach(model[0])\n", setup=setup)
    p = the_pitfall(source, "hook-registered-in-loop", 14)
    assert p.title == "register_forward_hook runs on every iteration: the hooks on layer pile up"
    assert p.fix.startswith("Register the hook once, above the loop: move it up before the loop.")


_WITH_HELPER = """import contextlib
@contextlib.contextmanager
def capture(layer):
    h = layer.register_forward_hook(save_activation)
    try:
        yield
    finally:
        h.remove()
"""


@pytest.mark.parametrize(
    ("hook", "after", "setup"),
    [
        ("", "", "model[0].register_forward_hook(save_activation)\n"),
        ("    h = model[0].register_forward_hook(save_activation)\n", "    h.remove()\n", ""),
        (
            "    probe = nn.Linear(3, 4)\n    probe.register_forward_hook(save_activation)\n    probe(X)\n",
            "",
            "",
        ),
        ("    with capture(model[0]):\n        model(X)\n", "", _WITH_HELPER),
        ("", "", "for layer in model:\n    layer.register_forward_hook(save_activation)\n"),
        (
            "",
            "",
            "for fn in (save_activation, lambda m, i, o: None):\n    model[0].register_forward_hook(fn)\n",
        ),
        (
            "    model[0]._forward_hooks.clear()\n    model[0].register_forward_hook(save_activation)\n",
            "",
            "",
        ),
        ("    exec(compile('model[0].register_forward_hook(save_activation)', 'lib.py', 'exec'))\n", "", ""),
    ],
    ids=[
        "once above the loop",
        "removed in the same iteration",
        "on a module built afresh each iteration",
        "a with helper that removes on exit",
        "one line hooking each layer once",
        "one line hooking one module with two functions",
        "the module's hook dict cleared",
        "registered by code that is not the snippet's",
    ],
)
def test_a_module_hook_that_does_not_pile_up_is_not_flagged(hook: str, after: str, setup: str) -> None:
    source = _loop(hook, after, setup)
    trace = recorded_silently(source)
    assert q.stdout(trace) == plain_stdout(source)


def _wrapped_while_recording(source: str, *, pitfalls: bool = True) -> str:
    """What ``source`` printed, recorded (with the detectors on or off)."""
    events: list[Any] = []
    record_stream(source, events.append, validate=False, pitfalls=pitfalls)
    return "".join(e["text"] for e in events if e["type"] == "output" and e["stream"] == "stdout")


_SAYS_WHICH = """import torch
# register_full_backward_hook
wrapped = [
    'library_calls' in getattr(torch.nn.Module, name).__code__.co_filename
    for name in ('register_' + 'forward_hook', 'register_full_backward_hook')  # (the first unnamed)
]
print(wrapped)
"""


def test_only_the_hook_methods_the_source_names_are_wrapped_and_only_with_the_detectors_on() -> None:
    assert _wrapped_while_recording(_SAYS_WHICH) == "[False, True]\n"
    assert _wrapped_while_recording(_SAYS_WHICH, pitfalls=False) == "[False, False]\n"
    assert _wrapped_while_recording("print(1)\n") == "1\n"
    import torch

    # put back once the run ends
    assert "library_calls" not in torch.nn.Module.register_full_backward_hook.__code__.co_filename


def test_the_snippet_gets_the_real_handle() -> None:
    source = (
        "import torch\nm = torch.nn.Linear(2, 2)\nh = m.register_forward_hook(lambda *a: None)\n"
        "print(type(h).__module__, type(h).__name__, h.id in m._forward_hooks)\nh.remove()\n"
        "print(len(m._forward_hooks))\n"
    )
    trace = record(source)
    assert q.stdout(trace) == plain_stdout(source) == "torch.utils.hooks RemovableHandle True\n0\n"
