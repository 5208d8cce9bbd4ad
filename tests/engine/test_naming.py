"""Tensors and parameters get the names the snippet knows them by: a name its module level
binds wins over a function's parameter (NOTE [Outer names win] in engine/source.py), and a
layer called on its own is named inside the module that holds it (NOTE [Names under a
container] in engine/modules.py). The grads under those names are PyTorch's own."""

from __future__ import annotations

from typing import Any

import pytest

from engine import queries as q
from engine import record
from engine.summary import summarize
from tests.engine.snippets import plain_grads


def _names_of(trace: Any) -> set[str]:
    return set(q.tensor_names(trace).values())


# a leaf the module level binds, first used inside a function under another name
MODULE_LEVEL_NAME_WINS = {
    "a function's parameter": """
import torch
def f(t):
    return (t * 2).sum()
x = torch.tensor([1.0, 2.0], requires_grad=True)
f(x).backward()
""",
    "a reentrant checkpoint": """
import torch
from torch.utils.checkpoint import checkpoint
def f(t):
    return (t * 2).sum()
x = torch.tensor([1.0, 2.0], requires_grad=True)
checkpoint(f, x, use_reentrant=True).backward()
""",
    "a recursive helper": """
import torch
def f(t, n):
    return (t * 2).sum() if n == 0 else f(t, n - 1)
x = torch.tensor([1.0, 2.0], requires_grad=True)
f(x, 3).backward()
""",
    "a monkeypatched Tensor.__mul__": """
import torch
orig = torch.Tensor.__mul__
def mul(self, other):
    return orig(self, other)
torch.Tensor.__mul__ = mul
x = torch.tensor([1.0, 2.0], requires_grad=True)
(x * 2).sum().backward()
torch.Tensor.__mul__ = orig
""",
}


@pytest.mark.parametrize("case", sorted(MODULE_LEVEL_NAME_WINS))
def test_a_leaf_is_named_by_the_module_level_not_by_the_function_that_uses_it(case: str) -> None:
    source = MODULE_LEVEL_NAME_WINS[case]
    trace = record(source)
    assert q.final_grads(trace) == {"x": [2.0, 2.0]} == plain_grads(source, ["x"])
    assert not {"t", "self"} & _names_of(trace)


def test_the_command_lines_summary_shows_the_final_name() -> None:
    trace = record(MODULE_LEVEL_NAME_WINS["a function's parameter"])
    assert "  x.grad = [2, 2]" in summarize(trace).splitlines()


def test_the_command_lines_summary_writes_a_small_matrix_in_rows() -> None:
    # a [2, 3] gradient read as six numbers in one flat list, its shape lost
    trace = record(
        "import torch\nw = torch.ones(2, 3, requires_grad=True)\n(w * torch.arange(6.0).view(2, 3)).sum().backward()\n"
    )
    assert "  w.grad = [[0, 1, 2], [3, 4, 5]]" in summarize(trace).splitlines()


def test_a_leaf_made_in_a_function_takes_the_module_levels_name_at_the_end() -> None:
    # named `t` where it was first used; by the end of the run the module level binds it as x
    source = """
import torch
def make():
    t = torch.ones(2, requires_grad=True)
    print((t * 1).sum().item())
    return t
x = make()
(x * 3).sum().backward()
"""
    trace = record(source)
    assert q.final_grads(trace) == {"x": [3.0, 3.0]}
    assert [e.name for e in q.events_of(trace, "tensor_final")] == ["x"]


@pytest.mark.parametrize(
    "loop",
    ["for W in Ws:\n    h = torch.tanh(W @ h)", "for i, W in enumerate(Ws):\n    h = torch.tanh(W @ h)"],
    ids=["for", "enumerate"],
)
def test_tensors_a_module_level_loop_visits_are_named_by_their_place_not_the_loop_variable(loop: str) -> None:
    # `for W in Ws` binds W to each tensor in turn: all three were `W` (W.grad three times)
    source = f"""
import torch
torch.manual_seed(0)
Ws = [torch.randn(3, 3, requires_grad=True) for _ in range(3)]
h = torch.ones(3)
{loop}
h.sum().backward()
"""
    trace = record(source)
    names = ["Ws[0]", "Ws[1]", "Ws[2]"]
    assert [e.name for e in q.events_of(trace, "tensor_final")] == names
    assert q.final_grads(trace) == plain_grads(source, names)


def test_a_loop_variable_still_names_a_tensor_nothing_else_holds() -> None:
    source = """
import torch
for w in [torch.ones(2, requires_grad=True)]:
    (w * 3).sum().backward()
"""
    trace = record(source)
    assert q.final_grads(trace) == {"w": [3.0, 3.0]}


def test_the_outermost_functions_name_wins_where_the_module_level_binds_none() -> None:
    source = """
import torch
def loss_of(t):
    return (t * 2).sum()
def main():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    loss_of(w).backward()
    print(w.grad.tolist())
main()
"""
    trace = record(source)
    assert q.stdout(trace) == "[2.0, 2.0]\n"
    acc = q.events_of(trace, "grad_accumulated")[0]
    assert q.tensor_names(trace)[acc.tensor] == "w"


def test_a_functions_own_name_stays_when_nothing_outer_binds_the_tensor() -> None:
    source = """
import torch
def run():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w * 2).sum().backward()
    return w.grad.tolist()
print(run())
"""
    trace = record(source)
    acc = q.events_of(trace, "grad_accumulated")[0]
    assert q.tensor_names(trace)[acc.tensor] == "w"


SHADOWING_LOCALS = {
    "the module level's x": """
import torch
def f(x):
    return (x ** 2).sum()
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = f(x * 2)
y.backward()
""",
    "an outer function's x": """
import torch
def f(x):
    return (x ** 2).sum()
def main():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = f(x * 2)
    y.backward()
main()
""",
}


@pytest.mark.parametrize("case", SHADOWING_LOCALS)
def test_a_functions_local_that_an_outer_scope_binds_to_another_tensor_names_nothing(case: str) -> None:
    """NOTE [A local name that hides another tensor]: ``x * 2`` was named ``x`` (f's
    parameter) beside the snippet's own ``x``: the graph read ``mul x -> x``."""
    trace = record(SHADOWING_LOCALS[case])
    names = q.tensor_names(trace)
    (mul,) = [e for e in q.events_of(trace, "op") if e.name == "mul"]
    assert names.get(mul.inputs[0]) == "x"
    assert names.get(mul.outputs[0]) is None  # the app reads it as the expression, x * 2
    assert list(names.values()).count("x") == 1


def test_a_tensor_a_helper_changed_in_place_is_named_by_the_module_level_in_every_version() -> None:
    source = """
import torch
a = torch.tensor([1.0, 2.0], requires_grad=True)
def bump(t):
    t.add_(1)
    return t
b = a.clone()
bump(b)
(b * b).sum().backward()
"""
    trace = record(source)
    names = q.tensor_names(trace)
    ops = {e.name: e for e in q.events_of(trace, "op")}
    # as `b = a.clone(); b.add_(1)` reads: clone a -> b, add_ b -> b (was clone a -> t, add_ t -> b)
    assert names[ops["clone"].outputs[0]] == "b"
    assert [names[i] for i in ops["add"].inputs] == ["b"] and names[ops["add"].outputs[0]] == "b"


def test_a_functions_local_that_the_module_level_binds_later_to_another_tensor_is_taken_back() -> None:
    # f ran before the module level had an `x`: its local named `t * 2` then, and the
    # module-level `x = y * 3` made a second `x` (the app numbered them x1, x2 as one chain)
    source = """
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
def f(t):
    x = t * 2
    return x + 1
y = f(w)
x = y * 3
x.sum().backward()
"""
    trace = record(source)
    names = q.tensor_names(trace)
    first, second = [e for e in q.events_of(trace, "op") if e.name == "mul"]
    assert names.get(first.outputs[0]) is None  # was "x"
    assert names[second.outputs[0]] == "x"
    taken_back = [e for e in q.events_of(trace, "tensor_named") if e.name is None]
    assert [e.id for e in taken_back] == [first.outputs[0]]


def test_a_functions_local_names_a_tensor_where_the_outer_name_is_no_tensor() -> None:
    source = """
import torch
x = 3
def f(w):
    x = w * 2
    return (x ** 2).sum()
w = torch.tensor([1.0, 2.0], requires_grad=True)
f(w).backward()
"""
    trace = record(source)
    (mul,) = [e for e in q.events_of(trace, "op") if e.name == "mul"]
    assert q.tensor_names(trace).get(mul.outputs[0]) == "x"


LAYER_BY_LAYER = {
    "a loop over a Sequential": """
import torch
seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
h = torch.randn(5, 3)
for layer in seq:
    h = layer(h)
h.sum().backward()
""",
    "checkpoint_sequential": """
import torch
from torch.utils.checkpoint import checkpoint_sequential
seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
x = torch.randn(5, 3)
checkpoint_sequential(seq, 2, x, use_reentrant=False).sum().backward()
""",
    "a function given the container": """
import torch
def forward(layers, h):
    for layer in layers:
        h = layer(h)
    return h
seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
forward(seq, torch.randn(5, 3)).sum().backward()
""",
}


@pytest.mark.parametrize("case", sorted(LAYER_BY_LAYER))
def test_layers_called_one_by_one_are_named_inside_their_container(case: str) -> None:
    source = LAYER_BY_LAYER[case]
    trace = record(source)
    names = ["seq.0.weight", "seq.0.bias", "seq.2.weight", "seq.2.bias"]
    assert [e.name for e in q.events_of(trace, "tensor_final")] == names
    plain = plain_grads(source, ["seq[0].weight", "seq[0].bias", "seq[2].weight", "seq[2].bias"])
    got = q.final_grads(trace)
    for name, want in zip(names, plain.values(), strict=True):
        assert got[name] == pytest.approx(want, abs=1e-6)


PLAIN_CONTAINERS = {
    "a list": ("layers = [torch.nn.Linear(3, 3), torch.nn.Linear(3, 1)]", "layers", ["[0]", "[1]"]),
    "a tuple": ("layers = (torch.nn.Linear(3, 3), torch.nn.Linear(3, 1))", "layers", ["[0]", "[1]"]),
    "a dict": (
        "blocks = {'enc': torch.nn.Linear(3, 3), 'dec': torch.nn.Linear(3, 1)}\nlayers = blocks.values()",
        "blocks",
        ["['enc']", "['dec']"],
    ),
}


@pytest.mark.parametrize("case", sorted(PLAIN_CONTAINERS))
def test_layers_in_a_plain_list_are_named_by_their_place_in_it(case: str) -> None:
    # both were `layer.weight` (the loop variable), the first one's name wrong by the end
    made, holder, places = PLAIN_CONTAINERS[case]
    source = f"import torch\n{made}\nh = torch.randn(2, 3)\nfor layer in layers:\n    h = layer(h)\nh.sum().backward()\n"
    trace = record(source)
    names = [f"{holder}{place}.{p}" for place in places for p in ("weight", "bias")]
    assert [e.name for e in q.events_of(trace, "tensor_final")] == names
    plain = plain_grads(source, names)
    got = q.final_grads(trace)
    for name, want in plain.items():
        assert got[name] == pytest.approx(want, abs=1e-6)


def test_a_model_a_list_also_holds_keeps_its_own_name() -> None:
    # a variable's own name comes before a place in a list; only a loop variable gives way
    source = """
import torch
net_a, net_b = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
nets = [net_a, net_b]
x = torch.ones(3, 2)
(net_a(x) + net_b(x)).sum().backward()
"""
    trace = record(source)
    assert sorted(e.name for e in q.events_of(trace, "tensor_final")) == [
        "net_a.bias",
        "net_a.weight",
        "net_b.bias",
        "net_b.weight",
    ]


def test_a_model_given_to_a_function_keeps_its_module_level_name() -> None:
    source = """
import torch
def loss_of(m, x):
    return m(x).sum()
net = torch.nn.Linear(2, 1)
loss_of(net, torch.ones(3, 2)).backward()
"""
    trace = record(source)
    assert q.final_grads(trace) == {"net.weight": [3.0, 3.0], "net.bias": [3.0]}


def test_a_parametrization_run_while_its_module_is_built_is_named_inside_it() -> None:
    source = """
import torch
from torch.nn.utils import parametrizations as P
sn = P.spectral_norm(torch.nn.Linear(3, 3))
sn(torch.randn(4, 3)).sum().backward()
"""
    trace = record(source)
    names = [e.name for e in q.events_of(trace, "tensor_final")]
    assert sorted(names) == ["sn.bias", "sn.parametrizations.weight.original"]


def test_parameters_used_without_calling_their_module_are_named_under_it() -> None:
    source = """
import torch
import torch.nn.functional as F
lin = torch.nn.Linear(2, 1)
F.linear(torch.ones(3, 2), lin.weight, lin.bias).sum().backward()
"""
    trace = record(source)
    assert q.final_grads(trace) == {"lin.weight": [3.0, 3.0], "lin.bias": [3.0]}


def test_a_modules_buffers_are_named_by_their_paths_and_stay_no_parameters() -> None:
    source = """
import torch
net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
net(torch.randn(5, 3)).sum().backward()
"""
    trace = record(source)
    names = q.tensor_names(trace)
    norm = next(op for op in q.events_of(trace, "op") if op.name == "batch_norm")
    assert [names.get(t) for t in norm.inputs[1:3]] == ["net.1.running_mean", "net.1.running_var"]
    counted = next(op for op in q.events_of(trace, "op") if op.name == "add" and op.inplace)
    assert names[counted.inputs[0]] == names[counted.outputs[0]] == "net.1.num_batches_tracked"
    buffers = [e for e in q.events_of(trace, "tensor") if names.get(e.id, "").startswith("net.1.running")]
    assert buffers and not any(e.is_param for e in buffers)
    # the final state lists parameters and leaves only, as before
    assert [e.name for e in q.events_of(trace, "tensor_final")] == [
        "net.0.weight",
        "net.0.bias",
        "net.1.weight",
        "net.1.bias",
    ]


def test_a_parameters_grad_is_named_also_after_an_init_changed_it_before_its_module_ran() -> None:
    # the init's in-place op made a new version of the weight before the module named it: the
    # weight's .grad read as t11 (in clip_grad_norm_'s gradients, in a hand-written step)
    source = """
import torch
model = torch.nn.Linear(2, 1)
torch.nn.init.xavier_uniform_(model.weight)
model(torch.ones(1, 2)).sum().backward()
with torch.no_grad():
    model.weight -= 0.1 * model.weight.grad
"""
    trace = record(source)
    names = q.tensor_names(trace)
    step = next(op for op in q.events_of(trace, "op") if op.line == 7 and op.name == "rmul")
    assert [names.get(t) for t in step.inputs] == ["model.weight.grad"]


def test_a_model_called_as_a_whole_still_names_its_layers_by_their_paths() -> None:
    source = """
import torch
seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
layer = seq[2]
seq(torch.randn(5, 3)).sum().backward()
"""
    trace = record(source)
    names = [e.name for e in q.events_of(trace, "tensor_final")]
    assert names == ["seq.0.weight", "seq.0.bias", "seq.2.weight", "seq.2.bias"]


def test_a_model_first_called_inside_the_function_that_built_it_takes_the_module_levels_name() -> None:
    source = """
import torch
def make():
    m = torch.nn.Linear(2, 1)
    m(torch.ones(1, 2))
    return m
net = make()
net(torch.ones(3, 2)).sum().backward()
"""
    trace = record(source)
    assert q.final_grads(trace) == {"net.weight": [3.0, 3.0], "net.bias": [3.0]}


def test_models_called_in_a_generator_expression_keep_one_dot_in_their_names() -> None:
    # a model named provisionally after the generator's own local is its own holder: its
    # parameters are `m.weight`, not `m..weight`
    source = """
import torch
pair = [torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)]
x = torch.randn(2, 3)
sum(m(x) for m in pair).sum().backward()
"""
    trace = record(source)
    names = [e.name for e in q.events_of(trace, "tensor_final")]
    assert names and all(".." not in name for name in names), names


MANUAL_SGD = """
import torch
import torch.nn as nn
torch.manual_seed(0)
w = torch.tensor([1.0, 2.0], requires_grad=True)
lin = nn.Linear(2, 1)
for step in range(2):
    loss = (w * 3).sum() + lin(w.detach()).sum()
    loss.backward()
    w.data -= 0.1 * w.grad
    w.grad.zero_()
    for p in lin.parameters():
        p.data.add_(p.grad, alpha=-0.1)
        p.grad.data.zero_()
y = w.data * 2
z = w.detach() * 2
"""


def _op_operands(trace: Any, line: int, name: str) -> list[str | int]:
    names = q.tensor_names(trace)
    op = next(e for e in q.events_of(trace, "op") if e.line == line and e.name == name)
    return [names.get(i, i) for i in op.inputs]


def test_a_leafs_grad_and_data_read_as_such_where_no_variable_holds_them() -> None:
    """NOTE [Tensors read off a leaf]: `w.data -= 0.1 * w.grad` read `t5 − 0.1 * t3`."""
    trace = record(MANUAL_SGD)
    assert trace.events[-1].status == "ok"
    assert _op_operands(trace, 10, "rmul") == ["w.grad"]
    assert _op_operands(trace, 10, "sub")[0] == "w.data"
    sub = next(e for e in q.events_of(trace, "op") if e.line == 10 and e.name == "sub")
    assert q.tensor_names(trace)[sub.outputs[0]] == "w.data"  # changed in place, as `w -= …` stays w
    # zeroed in place, the next step's gradient is still w.grad (it read zero(t3))
    rmuls = [e for e in q.events_of(trace, "op") if e.line == 10 and e.name == "rmul"]
    assert len(rmuls) == 2 and all(q.tensor_names(trace)[op.inputs[0]] == "w.grad" for op in rmuls)
    # and the version zero_() made is named as it is made, also the last one, never used again
    zeros = [e for e in q.events_of(trace, "op") if e.line == 11 and e.name == "zero"]
    assert len(zeros) == 2 and all(q.tensor_names(trace).get(op.outputs[0]) == "w.grad" for op in zeros)
    # a parameter's, by its name; the first operand is .data, the second .grad
    assert _op_operands(trace, 13, "add") == ["lin.weight.data", "lin.weight.grad"]
    assert _op_operands(trace, 14, "zero") == ["lin.weight.grad.data"]
    assert _op_operands(trace, 15, "mul") == ["w.data"]
    # w.detach() is an op of its own: its output is not named w.data
    detach = next(e for e in q.events_of(trace, "op") if e.line == 16 and e.name == "detach")
    assert detach.outputs[0] not in q.tensor_names(trace)
    assert q.final_grads(trace)["w"] == plain_grads(MANUAL_SGD, ["w"])["w"]


def test_a_loops_tensor_given_to_a_function_is_named_by_the_loop_in_every_iteration() -> None:
    # "What is torch.nn really?": every recorded iteration's pred read `input`, nll's
    # parameter, and `xb @ weights + bias` read `x`, log_softmax's; only the last iteration's,
    # still bound at the end, was renamed (hunt 65, tutorials)
    source = """
import torch
w = torch.randn(3, 2, requires_grad=True)
def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)
def nll(input, target):
    return -input[range(target.shape[0]), target].mean()
for i in range(3):
    xb = torch.randn(4, 3)
    logits = xb @ w
    pred = log_softmax(logits)
    loss = nll(pred, torch.tensor([0, 1, 1, 0]))
    loss.backward()
"""
    names = list(q.tensor_names(record(source)).values())
    assert names.count("pred") == 3 and names.count("logits") == 3, names
    assert "input" not in names and "x" not in names, names


def test_a_computed_argument_the_caller_gave_no_name_takes_no_name_from_the_parameter() -> None:
    # the Legendre tutorial's P3(c + d * x) read `add c, d * x → input` at a line with no
    # `input` (its Function's forward(ctx, input)); the expression is the label (hunt 65)
    source = """
import torch
class P3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)
    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)
x = torch.linspace(-1, 1, 5)
c = torch.tensor(0.5, requires_grad=True)
d = torch.tensor(-0.3, requires_grad=True)
y_pred = P3.apply(c + d * x)
def double(t):
    return t * 2
z = double(c * 3)
(y_pred.sum() + z).backward()
"""
    trace = record(source)
    names = q.tensor_names(trace)
    assert "input" not in names.values() and "t" not in names.values(), names
    assert {"x", "c", "d", "y_pred", "z"} <= set(names.values()), names
    plain = plain_grads(source, ["c", "d"])
    assert all(q.final_grads(trace)[n] == plain[n][0] for n in ("c", "d")), (q.final_grads(trace), plain)
