"""What the tape keeps of how an op was called: transposes and a complex tensor's parts read
as attributes (``w.T``, ``z.real``) are ops of their own, the numbers passed by keyword
(``dim=1``) are kept with the op, and so is the text of other arguments (``torch.float64``,
``'ij,jk->ik'``, ``reduction='sum'``)."""

from __future__ import annotations

import math

import pytest
import torch

from engine import queries as q
from engine import record
from tests.engine.snippets import plain_grads

TRANSPOSES = (
    "import torch\ntorch.manual_seed(0)\n"
    "X = torch.randn(4, 3)\nw = torch.randn(2, 3, requires_grad=True)\n"
    "m = torch.randn(2, 3, 5, requires_grad=True)\n"
    "y = (X @ w.T).sum()\n"  # line 6
    "z = (m.mT ** 2).sum() + (w.H * 3).sum() + m.mH.sum()\n"  # line 7
    "with torch.no_grad():\n    u = w.T\n"  # line 9
    "s = w.shape; g = w.grad; d = w.data\n"
    "(y + z).backward()\n"
)


def _ops(trace: q.Trace) -> list[object]:
    return q.events_of(trace, "op")


def test_a_transpose_read_as_an_attribute_is_an_op_with_its_own_node() -> None:
    trace = record(TRANSPOSES)
    assert trace.events[-1].status == "ok"
    ops = _ops(trace)
    nodes = q.node_names(trace)
    by_name = {(op.name, op.line): op for op in ops}
    # w.T: an op of line 6 that made the PermuteBackward0 node, not matmul
    t = by_name[("T", 6)]
    assert t.api == "Tensor.T" and not t.inplace
    assert [nodes[n] for n in t.nodes if nodes[n] != "AccumulateGrad"] == ["PermuteBackward0"]
    matmul = by_name[("matmul", 6)]
    assert t.outputs[0] in matmul.inputs
    assert "PermuteBackward0" not in [nodes[n] for n in matmul.nodes]
    # mT, H, mH likewise, each with its transpose node
    for name in ("mT", "H", "mH"):
        op = by_name[(name, 7)]
        assert op.api == f"Tensor.{name}"
        assert [nodes[n] for n in op.nodes if nodes[n] != "AccumulateGrad"] == ["TransposeBackward0"], name
    # under no_grad: an op with no node
    assert by_name[("T", 9)].grad_mode == "no_grad" and by_name[("T", 9)].nodes == []
    # other attributes are not ops
    assert not {op.name for op in ops} & {"shape", "grad", "data", "get"}


def test_recording_transposes_leaves_the_gradients_as_pytorch_computes_them() -> None:
    trace = record(TRANSPOSES)
    want = plain_grads(TRANSPOSES, ["w", "m"])
    got = q.final_grads(trace)
    for name in ("w", "m"):
        assert torch.equal(torch.tensor(got[name]).reshape(-1), torch.tensor(want[name])), name


def test_numbers_passed_by_keyword_are_kept_with_the_op_in_order() -> None:
    src = (
        "import torch, torch.nn.functional as F\n"
        "x = torch.arange(6.0, requires_grad=True).view(2, 3)\n"
        "a = x.sum(dim=1, keepdim=True)\n"
        "b = F.dropout(x, p=0.25, training=False)\n"
        "c = x.sum(dim=(0, 1), dtype=torch.float64)\n"
        "d = x.clamp(min=0.5)\n"
        "e = x * 2\n"
        "f = torch.nn.Softmax(dim=1)(x)\n"
    )
    recorded = _ops(record(src))
    ops = {op.line: op for op in recorded}  # the last op of each line
    keywords = {line: [(k.name, k.value) for k in op.keywords] for line, op in ops.items()}
    assert keywords[3] == [("dim", 1), ("keepdim", True)]
    assert keywords[4] == [("p", 0.25), ("training", False)]
    assert keywords[5] == []  # a tuple and a dtype are not numbers
    assert keywords[6] == [("min", 0.5)]
    assert keywords[8] == [("dim", 1)]  # not nn.Softmax's _stacklevel=5
    assert keywords[7] == [] and [(c.position, c.value) for c in ops[7].constants] == [(1, 2)]
    arange = next(op for op in recorded if op.name == "arange")
    assert [(k.name, k.value) for k in arange.keywords] == [("requires_grad", True)]


ARGUMENTS = (
    "import torch, torch.nn.functional as F\n"
    "x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)\n"
    "a = x.to(torch.float64)\n"  # line 3
    "b = torch.einsum('ij,jk->ik', x, x)\n"
    "c = x.sum(dim=(0, 1))\n"
    "d = F.mse_loss(x, x.detach() * 0, reduction='sum')\n"  # line 6
    "e = x[:, 0] + x[0:1, ::2].sum() + x[..., 1].sum()\n"
    "f = F.pad(x, (1, 1)).reshape((2, 4))\n"  # line 8
    "g = F.cross_entropy(x, torch.tensor([0, 1]), reduction='mean')\n"
    "h = torch.cat((x, x), dim=0).sum() + torch.stack([x, x])[0].repeat(1, 1)\n"  # line 10
    "k = x.to('cpu', non_blocking=False).masked_fill(x > 2, float('nan'))\n"
    "s = x.new_full((2,), 7.0).unsqueeze(-1) * x.flatten(start_dim=0).sum()\n"  # line 12
    "m = x.div(2, rounding_mode='floor') + x.sum(dim=-1, dtype=torch.float32).unsqueeze(1)\n"
    "(a.sum() + b.sum() + c + d + e.sum() + f.sum() + g + h.sum() + m.sum()).backward()\n"
)


def test_arguments_that_are_not_numbers_or_tensors_are_kept_as_text_a_call_could_write() -> None:
    trace = record(ARGUMENTS)
    assert trace.events[-1].status == "ok"
    texts: dict[tuple[int, str], list[tuple[int | str | None, str]]] = {}
    for op in _ops(trace):
        texts.setdefault((op.line, op.name), []).extend(
            (a.position if a.name is None else a.name, a.text) for a in op.arguments
        )
    assert texts[(2, "tensor")] == [(0, "[[1.0, 2.0], [3.0, 4.0]]")]
    assert texts[(3, "to")] == [(1, "torch.float64")]
    assert texts[(4, "einsum")] == [(0, "'ij,jk->ik'")]
    # torch.einsum as the snippet called it (it lives in torch.functional: it read functional.einsum)
    assert {op.api for op in _ops(trace) if op.name == "einsum"} == {"torch.einsum"}
    assert texts[(5, "sum")] == [("dim", "(0, 1)")]
    assert texts[(6, "mse_loss")] == [("reduction", "'sum'")]
    # slices read as in a subscript, a tuple of them too
    assert texts[(7, "getitem")] == [(1, "(:, 0)"), (1, "(0:1, ::2)"), (1, "(..., 1)")]
    assert texts[(8, "pad")] == [(1, "(1, 1)")]
    assert texts[(8, "reshape")] == [(1, "(2, 4)")]
    # a keyword at its default is left out, as the call most likely left it out
    assert texts[(9, "cross_entropy")] == []
    assert texts[(9, "tensor")] == [(0, "[0, 1]")]
    # tensors in a tuple or list are the op's inputs: no text
    assert texts[(10, "cat")] == [] and texts[(10, "stack")] == []
    assert texts[(11, "to")] == [(1, "'cpu'")]  # non_blocking=False: a number, among keywords
    assert texts[(12, "new_full")] == [(1, "(2,)")]
    assert texts[(13, "div")] == [("rounding_mode", "'floor'")]
    assert texts[(13, "sum")] == [("dtype", "torch.float32")]  # dim=-1 is a number, below
    numbers = {(op.line, op.name): [(k.name, k.value) for k in op.keywords] for op in _ops(trace)}
    assert numbers[(13, "sum")] == [("dim", -1)]
    # dtype came after dim in the call: the text says one number keyword is before it
    assert [
        (a.name, a.after) for op in _ops(trace) if (op.line, op.name) == (13, "sum") for a in op.arguments
    ] == [("dtype", 1)]
    # the gradients are PyTorch's own
    _assert_x_grad_is_pytorchs(trace, ARGUMENTS)


def test_an_arguments_text_is_short_and_never_a_tensors() -> None:
    from engine.op_arguments import argument_text

    long = argument_text("x" * 10_000)
    assert long is not None and len(long) <= 40 and long.startswith("'x") and long.endswith("…'")
    assert argument_text(list(range(1000))) == "[0, 1, 2, 3, 4, 5, 6, 7, …]"
    assert argument_text((torch.zeros(1), 1)) is None
    assert argument_text(slice(torch.tensor(1), None)) is None
    assert argument_text([[1, [2]]]) is None  # three levels deep
    assert argument_text(torch.Size([2, 3])) == "(2, 3)"
    assert argument_text(torch.device("cpu")) == "'cpu'"
    assert argument_text(torch.channels_last) == "torch.channels_last"
    assert argument_text(print) is None
    assert argument_text(range(5)) == "range(5)" and argument_text(range(1, 7, 2)) == "range(1, 7, 2)"
    made = _ops(record("import torch\nt = torch.tensor(range(3), dtype=torch.float32)\n"))
    assert [(a.position, a.text) for a in made[0].arguments] == [(0, "range(3)"), (None, "torch.float32")]

    class Hostile(tuple):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            raise RuntimeError("no")

    assert argument_text(Hostile((1, 2))) is None
    assert argument_text((10**5000,)) is None  # past what int -> str converts


NAMED = (
    "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"
    "x = torch.randn(1, 2, 5, 5, requires_grad=True)\n"
    "a = nn.Conv2d(2, 4, 3, padding=1)(x)\n"  # line 5
    "b = nn.Conv2d(2, 4, 3, stride=2, groups=2, bias=False)(x)\n"
    "c = x.narrow(3, 1, 2).unfold(2, 2, 1)\n"  # line 7
    "d = torch.diagonal(x, 0, 2, 3)\n"
    "e = x.transpose(2, 3) + torch.clamp(x, 0, 1)\n"  # line 9
    "f = x.view(2, 5, 5).expand(3, 2, 5, 5)\n"
    "g = x.to('cpu', torch.float64, False, False)\n"  # line 11
    "h = nn.LSTM(5, 3)(x[0, 0])[0] + torch.randint(0, 9, (5, 3)) + torch.arange(0, 3, 1)\n"
    "h = h + torch.randn(1, 1, 1, 1, 1, 1, 1, 1, 1, 1).sum()\n"
    "(a.sum() + b.sum() + c.sum() + d.sum() + e.sum() + f.sum() + g.sum() + h.sum()).backward()\n"
)


def _assert_x_grad_is_pytorchs(trace: q.Trace, source: str) -> None:
    """The gradient of the snippet's ``x`` in the trace is the one plain PyTorch computes."""
    want = plain_grads(source, ["x"])
    assert torch.equal(torch.tensor(q.final_grads(trace)["x"]).reshape(-1), torch.tensor(want["x"]))


def _calls_by_line(trace: q.Trace) -> dict[tuple[int, str], list[tuple[str | int, object]]]:
    """What each op of each line was passed, by (line, op name): its positional numbers as
    (position, value), its number keywords as (name, value), then its texts as (position or
    name, text)."""
    calls: dict[tuple[int, str], list[tuple[str | int, object]]] = {}
    for op in _ops(trace):
        calls.setdefault((op.line, op.name), []).extend(
            [(c.position, c.value) for c in op.constants]
            + [(k.name, k.value) for k in op.keywords]
            + [(a.position if a.name is None else a.name, a.text) for a in op.arguments]
        )
    return calls


def _recorded_calls(source: str) -> tuple[q.Trace, dict[tuple[int, str], list[tuple[str | int, object]]]]:
    """Record ``source``, which must run to the end, and read what each op was passed (see
    :func:`_calls_by_line`)."""
    trace = record(source)
    assert trace.events[-1].status == "ok"
    return trace, _calls_by_line(trace)


def test_several_settings_a_builtin_was_passed_by_position_are_named_as_keywords() -> None:
    trace, calls = _recorded_calls(NAMED)
    # what nn.Conv2d passes by position, named, and those at their defaults left out
    assert calls[(5, "conv2d")] == [("padding", "(1, 1)")]
    assert calls[(6, "conv2d")] == [("groups", 2), ("stride", "(2, 2)")]
    # each text says how many number keywords came before it, so a row keeps the call's order
    after = {(op.line, op.name): [(a.name, a.after) for a in op.arguments] for op in _ops(trace)}
    assert after[(6, "conv2d")] == [("stride", 0)] and after[(5, "conv2d")] == [("padding", 0)]
    assert calls[(7, "narrow")] == [("dim", 3), ("start", 1), ("length", 2)]
    assert calls[(7, "unfold")] == [("dimension", 2), ("size", 2), ("step", 1)]
    assert calls[(8, "diagonal")] == [("dim1", 2), ("dim2", 3)]  # offset=0 is its default
    # two numbers read well by position; sizes passed one by one have no names
    assert calls[(9, "transpose")] == [(1, 2), (2, 3)]
    assert calls[(9, "clamp")] == [(1, 0), (2, 1)]
    assert calls[(10, "view")] == [(1, 2), (2, 5), (3, 5)]
    assert calls[(10, "expand")] == [(1, 3), (2, 2), (3, 5), (4, 5)]
    # Tensor.to's second argument is a device in one schema, a dtype in another: as passed
    assert calls[(11, "to")] == [(3, False), (4, False), (1, "'cpu'"), (2, "torch.float64")]
    # the overload that takes a list of tensors second (lstm.data takes one tensor there)
    assert calls[(12, "lstm")] == [
        ("has_biases", True),
        ("num_layers", 1),
        ("dropout", 0.0),
        ("train", True),
        ("bidirectional", False),
        ("batch_first", False),  # the ninth argument: the first eight were all a row kept
    ]

    # a factory's numbers read as written, all ten sizes of a ten-dimensional one
    assert calls[(12, "randint")] == [(0, 0), (1, 9), (2, "(5, 3)")]
    assert calls[(12, "arange")] == [(0, 0), (1, 3), (2, 1)]
    assert calls[(13, "randn")] == [(i, 1) for i in range(10)]
    _assert_x_grad_is_pytorchs(trace, NAMED)


FUNCTIONS_NAMED = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"
    "x = torch.randn(1, 4, 8, requires_grad=True)\n"
    "out, w = nn.MultiheadAttention(8, 2, batch_first=True)(x, x, x)\n"  # line 6
    "e = nn.Embedding(5, 8)(torch.tensor([1, 2]))\n"
    "p = nn.Embedding(5, 8, padding_idx=0, max_norm=1.0)(torch.tensor([1, 2]))\n"  # line 8
    "d = F.dropout(x, 0.2, True, False)\n"
    "(out.sum() + e.sum() + p.sum() + d.sum()).backward()\n"
)


def test_several_settings_a_python_function_was_passed_by_position_are_named_by_its_signature() -> None:
    trace, calls = _recorded_calls(FUNCTIONS_NAMED)
    # nn.MultiheadAttention passes four settings between its tensors: named, none at a default
    assert calls[(6, "multi_head_attention_forward")] == [
        ("embed_dim_to_check", 8),
        ("num_heads", 2),
        ("add_zero_attn", False),
        ("dropout_p", 0.0),
    ]
    # nn.Embedding passes norm_type, scale_grad_by_freq and sparse at their defaults: left out
    assert calls[(7, "embedding")] == []
    assert calls[(8, "embedding")] == [("padding_idx", 0), ("max_norm", 1.0)]
    # three settings to F.dropout, its p and training apart from their defaults
    assert calls[(9, "dropout")] == [("p", 0.2)]
    _assert_x_grad_is_pytorchs(trace, FUNCTIONS_NAMED)


NUMPY_NUMBERS = (
    "import numpy as np\nimport torch\nimport torch.nn.functional as F\n"
    "x = torch.tensor(np.arange(4.0), requires_grad=True)\n"
    "a = x * np.float64(2.0) / np.sqrt(np.float32(4.0))\n"  # line 5
    "b = x.sum(np.int64(0)) + x.sum(dim=np.int64(0), keepdim=True).sum()\n"
    "c = torch.clamp(x, np.float64(0.5), np.float64(2.5)).reshape((np.int64(2), np.int64(2)))\n"  # line 7
    "d = F.dropout(x, p=np.float64(0.5), training=False)\n"
    "(a.sum() + b + c.sum() + d.sum()).backward()\n"
)


def test_numpy_scalars_are_kept_as_the_numbers_they_stand_for() -> None:
    trace, calls = _recorded_calls(NUMPY_NUMBERS)
    # `x * np.float64(2.0)` read `mul x`: the number was not a Python float by type
    assert calls[(5, "mul")] == [(1, 2.0)] and calls[(5, "div")] == [(1, 2.0)]
    assert calls[(6, "sum")] == [(1, 0), ("dim", 0), ("keepdim", True)]
    assert calls[(7, "clamp")] == [(1, 0.5), (2, 2.5)]
    assert calls[(7, "reshape")] == [(1, "(2, 2)")]
    assert calls[(8, "dropout")] == [("training", False)]  # p at its default, a NumPy 0.5 too
    for op in _ops(trace):
        for c in [*op.constants, *op.keywords]:
            assert type(c.value) in (int, float, bool), (op.name, c)
    _assert_x_grad_is_pytorchs(trace, NUMPY_NUMBERS)


PLACED = (
    "import torch\nimport torch.nn as nn\n"
    "x = torch.randn(3, 4, requires_grad=True)\nidx = torch.tensor([[0, 1], [2, 3], [1, 1]])\n"
    "g = x.gather(1, idx).sum() + torch.index_select(x, 0, idx[0]).sum()\n"  # line 5
    "m = nn.LayerNorm(4)(x)\n"
    "c = torch.cat([x, x], 0) + torch.matmul(x, other=x.T).sum()\n"  # line 7
    "(g.sum() + m.sum() + c.sum()).backward()\n"
)


def test_where_an_input_was_passed_is_kept_where_the_inputs_first_would_misread_the_call() -> None:
    trace = record(PLACED)
    assert trace.events[-1].status == "ok"
    placed = {(op.line, op.name): op.input_positions for op in _ops(trace)}
    # a number before the index tensor: gather(x, 1, idx) is not gather(x, idx, 1)
    assert placed[(5, "gather")] == [0, 2] and placed[(5, "index_select")] == [0, 2]
    # nn.LayerNorm passes its weight and bias by keyword, after the normalized shape
    assert placed[(6, "layer_norm")] == [0, "weight", "bias"]
    assert placed[(7, "matmul")] == [0, "other"]
    # the inputs first, in order, already reads these as called: nothing kept
    assert placed[(7, "cat")] is None and placed[(8, "sum")] is None
    _assert_x_grad_is_pytorchs(trace, PLACED)


SUBSCRIPTS = (
    "import torch\ntorch.manual_seed(0)\n"
    "x = torch.randn(4, 5, requires_grad=True)\nY = torch.tensor([1, 0, 4, 2])\n"
    "a = x[range(4), Y] + x[torch.arange(4), Y] + x[0, Y] + x[Y % 4][:, 0]\n"  # line 5
    "m = x[x > 0.5].sum() + x[Y % 4, 1:3].sum() + x[:, 1:3].sum() + x[Y[0]].sum()\n"
    "z = torch.zeros(4, 5)\nz[range(4), Y] = 1.0\n"  # line 8
    "(a.sum() + m + (z * x).sum()).backward()\n"
)


def test_a_subscripts_key_holding_tensors_is_kept_with_a_mark_for_each() -> None:
    from engine.op_arguments import KEY_TENSOR as T
    from engine.op_arguments import subscript_key_text

    trace = record(SUBSCRIPTS)
    assert trace.events[-1].status == "ok"
    keys = {
        (op.line, op.name): [a.text for a in op.arguments if a.position == 1]
        for op in _ops(trace)
        if "item" in op.name
    }
    ops = [op for op in _ops(trace) if op.name == "getitem"]
    by_line = [(op.line, [a.text for a in op.arguments if a.position == 1], len(op.inputs)) for op in ops]
    # each mark is one of the op's inputs after the subscripted tensor, in order
    assert by_line == [
        (5, [f"(range(4), {T})"], 2),
        (5, [f"({T}, {T})"], 3),
        (5, [f"(0, {T})"], 2),
        (5, [T], 2),
        (5, ["(:, 0)"], 1),
        (6, [T], 2),
        (6, [f"({T}, 1:3)"], 2),
        (6, ["(:, 1:3)"], 1),
        (6, [], 1),  # Y[0]: a number key, kept as a number
        (6, [T], 2),
    ], by_line
    assert keys[(8, "setitem")] == [f"(range(4), {T})"]
    # a key with no tensor has the text it had; anything without text, none
    assert subscript_key_text((0, slice(1, 3))) is None and subscript_key_text(3) is None
    assert subscript_key_text((print, torch.zeros(1))) is None
    assert subscript_key_text([[[torch.zeros(1)]]]) is None  # three levels deep
    _assert_x_grad_is_pytorchs(trace, SUBSCRIPTS)


def test_naming_settings_never_raises_and_then_changes_nothing() -> None:
    from engine.op_arguments import op_constants
    from engine.op_keywords import named_positionals

    class Sized(tuple):  # type: ignore[type-arg]
        def __bool__(self) -> bool:
            raise RuntimeError("no truth")

    x, w = torch.ones(1, 1, 4, 4), torch.ones(1, 1, 3, 3)
    args = (x, w, None, Sized((1, 1)), Sized((1, 1)), Sized((1, 1)), 1)
    texts: list[dict[str, object]] = []
    constants = op_constants(args, texts)
    before = (list(constants), list(texts))
    assert len(constants) + len(texts) == 4  # what would be named
    assert named_positionals(torch.conv2d, args, constants, texts) == []
    assert (constants, texts) == before


def test_a_dispatchers_keywords_at_their_defaults_are_left_out() -> None:
    # F.max_pool2d is fn(*args, **kwargs) choosing one of two functions by return_indices:
    # their defaults are its own, and every keyword arrives at the mode
    src = (
        "import torch, torch.nn.functional as F\n"
        "x = torch.randn(1, 1, 4, 4, requires_grad=True)\n"
        "a = F.max_pool2d(x, 2)\n"
        "b = F.max_pool2d(x, 2, padding=1, ceil_mode=True)\n"
        "c = torch.nn.MaxPool2d(2)(x)\n"
    )
    ops = {op.line: op for op in _ops(record(src))}
    keywords = {line: [(k.name, k.value) for k in op.keywords] for line, op in ops.items()}
    assert keywords[3] == []
    assert keywords[5] == [("stride", 2)]  # the module passes its stride, kernel_size by default
    assert keywords[4] == [("padding", 1), ("ceil_mode", True)]


def test_a_saved_negative_integer_reads_negative_not_as_an_unsigned_number() -> None:
    # PyTorch hands a node's saved negative dim back as unsigned: x.sum(-1) saved
    # "(18446744073709551615,)", which the stepper printed as the dim it sums over
    src = (
        "import torch, torch.nn.functional as F\n"
        "x = torch.randn(2, 3, requires_grad=True)\n"
        "a = x.sum(-1)\n"
        "b = torch.softmax(x, dim=-1)\n"
        "c = F.nll_loss(F.log_softmax(x, dim=1), torch.tensor([0, 2]))\n"
    )
    trace = record(src)
    saved = {
        (node.name, s.name): s.scalar
        for node in q.events_of(trace, "node")
        for s in node.saved
        if s.scalar is not None
    }
    assert saved[("SumBackward1", "dim")] == "(-1,)"
    assert saved[("SoftmaxBackward0", "dim")] == "-1"
    assert saved[("NllLossBackward0", "ignore_index")] == "-100"


COMPLEX = (
    "import torch\n"
    "z = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)\n"
    "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
    "l = (z * z.conj()).real.sum() + z.imag.pow(2).sum() + x.real.sum()\n"
    "l.backward()\n"
)


def test_a_complex_tensors_real_and_imag_are_ops_with_their_own_nodes() -> None:
    # .real and .imag are attribute reads, like .T: their ViewAsRealBackward0 and
    # SelectBackward0 were filed under the sum that used them, whose input was an unnamed t3
    trace = record(COMPLEX)
    assert trace.events[-1].status == "ok"
    nodes = q.node_names(trace)
    ops = _ops(trace)
    names = [op.name for op in ops]
    real, imag = ops[names.index("real")], ops[names.index("imag")]
    for op, name in ((real, "real"), (imag, "imag")):
        assert op.api == f"Tensor.{name}" and not op.inplace
        assert sorted(nodes[n] for n in op.nodes) == ["SelectBackward0", "ViewAsRealBackward0"], name
    mul = ops[names.index("mul")]
    assert real.inputs == mul.outputs
    total = ops[names.index("sum")]
    assert total.inputs == real.outputs and [nodes[n] for n in total.nodes] == ["SumBackward0"]
    # a real tensor's .real is the tensor itself: an op with no node
    x_real = [op for op in ops if op.name == "real"][1]
    assert x_real.inputs == x_real.outputs and x_real.nodes == []


def test_a_lazy_conjugate_saved_for_backward_is_named_as_itself() -> None:
    # z * z.conj() saves z and its conjugate view, which share z's storage and shape: the
    # conjugate was named z, so MulBackward0 read as saving z twice
    trace = record(COMPLEX)
    ops = _ops(trace)
    names = [op.name for op in ops]
    conj, mul = ops[names.index("conj")], ops[names.index("mul")]
    node = next(n for n in q.events_of(trace, "node") if n.name == "MulBackward0")
    saved = {s.name: s.tensor for s in node.saved}
    assert saved == {"self": mul.inputs[0], "other": conj.outputs[0]}
    assert mul.inputs == [conj.inputs[0], conj.outputs[0]]


def test_recording_complex_ops_leaves_the_gradients_as_pytorch_computes_them() -> None:
    got = q.final_grads(record(COMPLEX))
    want = plain_grads(COMPLEX, ["z", "x"])
    assert torch.equal(torch.tensor(got["x"]), torch.tensor(want["x"]))
    # a complex gradient is kept as the norm of its moduli
    assert got["z"] == pytest.approx(math.sqrt(sum(abs(g) ** 2 for g in want["z"])), rel=1e-12)


REFLECTED = (
    "import torch\n"
    "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
    "a, é = 4, 2.0\n"
    "def f(t, k=3):\n    return k * t + 0.5\n"  # lines 4-5
    "y = (4*x + x*4 + a*x + x*a + -0.5*x\n"  # line 6
    "     + 2*x*3 + x.mul(4) + 3 + x + é*x + f(x) + torch.add(x, 1))\n"  # line 7
    "y.sum().backward()\n"
)


def test_a_number_written_first_is_recorded_as_python_ran_it() -> None:
    """`4*x` reaches the tape mode as mul(x, 4), as `x*4` does; it is recorded as `rmul`
    (NOTE [Reflected products and sums]), so the app writes `4 * x` as the snippet does."""
    trace = record(REFLECTED)
    assert trace.events[-1].status == "ok"
    with_numbers = [
        (op.name, op.api, op.constants[0].value)
        for op in _ops(trace)
        if op.name in ("mul", "rmul", "add", "radd") and op.constants
    ]
    assert with_numbers == [
        ("rmul", "Tensor.__rmul__", 4),  # 4*x
        ("mul", "Tensor.mul", 4),  # x*4
        ("rmul", "Tensor.__rmul__", 4),  # a*x, a bound to 4
        ("mul", "Tensor.mul", 4),  # x*a
        ("rmul", "Tensor.__rmul__", -0.5),  # -0.5*x
        ("rmul", "Tensor.__rmul__", 2),  # 2*x, then (2*x)*3
        ("mul", "Tensor.mul", 3),
        ("mul", "Tensor.mul", 4),  # x.mul(4): a call writes the tensor first
        ("add", "Tensor.add", 3),  # (…) + 3
        ("rmul", "Tensor.__rmul__", 2.0),  # é*x, a non-ASCII name before it on the line
        ("rmul", "Tensor.__rmul__", 3),  # k * t inside f
        ("add", "Tensor.add", 0.5),
        ("add", "torch.add", 1),
    ]
    assert plain_grads(REFLECTED, ["x"])["x"] == q.final_grads(trace)["x"]


REFLECTED_CALLS = (
    "import torch\nimport numpy as np\n"
    "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
    "w, a = torch.tensor(3.0), 4\n"
    "y = (np.float64(2.0) * x + w.item() * x + -a * x + float(w) * x\n"  # line 5
    "     + x * np.float32(0.5) + (x * 2) * 3)\n"
    "y.sum().backward()\n"
)


def test_a_number_from_a_call_written_first_is_recorded_as_python_ran_it() -> None:
    """A left operand that is neither a literal nor a name (`np.float64(2.0) * x`,
    `w.item() * x`) is told by the right one: a name bound to the very tensor the op got."""
    trace = record(REFLECTED_CALLS)
    assert trace.events[-1].status == "ok"
    with_numbers = [
        (op.name, op.constants[0].value) for op in _ops(trace) if op.name in ("mul", "rmul") and op.constants
    ]
    assert with_numbers == [
        ("rmul", 2.0),  # np.float64(2.0) * x
        ("rmul", 3.0),  # w.item() * x
        ("rmul", -4),  # -a * x
        ("rmul", 3.0),  # float(w) * x
        ("mul", 0.5),  # x * np.float32(0.5)
        ("mul", 2),  # x * 2
        ("mul", 3),  # (x * 2) * 3: the right operand is a number, the left an expression
    ]
    assert plain_grads(REFLECTED_CALLS, ["x"])["x"] == q.final_grads(trace)["x"]
