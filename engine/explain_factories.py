"""Hints for making a tensor and changing its shape, each naming the snippet's tensors and
shapes (read from the line's code, the frame and the failed op's operands) with the line that
fixes it: ``x.size[0]`` (``x.size(0)``, ``x.shape[0]``); ``torch.tensor`` of rows of different
lengths (pad them, ``pad_sequence``); ``torch.Tensor(0.5)`` (``torch.tensor``); ``from_numpy`` of
a list (``torch.tensor(data)``); ``torch.randint(0, 10, 5)`` (``(5,)``); ``torch.randn(…,
dtype=torch.long)`` (``torch.randint``); ``x.to('float')`` (``x.float()``); ``math.exp`` of a
tensor (``torch.exp``); ``reshape``/``view`` to another count (``reshape(8, -1)``); ``permute``
that leaves dimensions out; ``unsqueeze``/``torch.stack`` past the end (0 to ``x.dim()``: the
dim-out-of-range hint would count one dimension too many); ``torch.cat`` of 2-D and 1-D tensors
(``extra.unsqueeze(1)``); ``einsum`` with a letter count other than an operand's dimensions
(``'...'``); an in-place op whose result is bigger than its target (``total = total + …``)."""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from .explain_reading import (
    find_call,
    literal,
    meta_shape,
    number,
    parsed,
    shape,
    with_arg,
    wrapped,
)
from .source import bound_to

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["factory_hint"]

_RAGGED = re.compile(r"expected sequence of length (\d+) at dim (\d+) \(got (\d+)\)")
_RESHAPE = re.compile(r"shape '\[([\d, ]*)\]' is invalid for input of size (\d+)")
_CAT_DIMS = re.compile(r"Tensors must have same number of dimensions: got \d+ and \d+")
_DEVICE = re.compile(r"device type at start of device string: ([\w.]+)|Invalid device string: '([\w.]+)'")
_NOT_SEQUENCE = re.compile(r"new\(\): data must be a sequence \(got (float|bool)\)")
_NOT_ARRAY = re.compile(r"expected np\.ndarray \(got (list|tuple|float|int|Tensor)\)")
_RANDINT = re.compile(
    r"randint\(\) received an invalid combination of arguments - got \(int, int(?:, int)?\)"
    r"|randint\(\): argument 'size' \(position 2\) must be tuple of ints, not int"
)
_REALS = re.compile(
    r"\"(?:normal_kernel_\w+|check_uniform_bounds)\" not implemented for '(?:Long|Int|Short|Char|Byte)'"
)
_PERMUTE = re.compile(r"input\.dim\(\) = \d+ is not equal to len\(dims\) = \d+")
_DIM_RANGE = re.compile(
    r"Dimension out of range \(expected to be in range of \[(-?\d+), (-?\d+)\], but got (-?\d+)\)"
)
_EINSUM = re.compile(
    r"einsum\(\): the number of subscripts in the equation \(\d+\) does not match the number of "
    r"dimensions \(\d+\) for operand (\d+) and no ellipsis was given"
)
# "einsum(): subscript d has size 5 for operand 1 which does not broadcast with previously seen size 8"
_EINSUM_SIZE = re.compile(
    r"einsum\(\): subscript (\w) has size \d+ for operand (\d+) which does not broadcast"
)
_GROWN = re.compile(r"output with shape \[[\d, ]*\] doesn't match the broadcast shape \[([\d, ]*)\]")
_SIZE_INDEXED = re.compile(r"'builtin_function_or_method' object is not subscriptable")
_ONE_NUMBER = re.compile(r"only one element tensors can be converted to Python scalars")
_DTYPES = {  # a dtype's name written as a string: (the dtype, the method that converts to it)
    "float": ("float32", "float"), "float32": ("float32", "float"), "double": ("float64", "double"),
    "float64": ("float64", "double"), "half": ("float16", "half"), "float16": ("float16", "half"),
    "long": ("int64", "long"), "int64": ("int64", "long"), "int": ("int32", "int"),
    "int32": ("int32", "int"), "bool": ("bool", "bool"),
}  # fmt: skip
_CLASS_DTYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "LongTensor": "int64", "IntTensor": "int32"}  # fmt: skip
# math's functions whose torch namesake does another thing, or takes a tensor for each argument
_MATH_ONLY = frozenset({"gamma", "factorial", "fsum", "prod", "dist", "hypot", "comb", "perm", "ldexp", "atan2"})  # fmt: skip
_SIGNS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def factory_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``), or ``None``."""
    text = str(exc)
    op, ts = rec.failed_op if rec.failed_op is not None else ("", [])
    checks = (
        (_RAGGED, lambda m: _ragged(int(m[1]), int(m[2]), int(m[3]), code, frame)),
        (_RESHAPE, lambda m: _reshape(op, ts, m[1], code)),
        (_CAT_DIMS, lambda m: _cat(op, ts, code, frame)),
        (_DEVICE, lambda m: _to_string(m[1] or m[2], code)),
        (_NOT_SEQUENCE, lambda m: _tensor_class(m[1], code)),
        (_NOT_ARRAY, lambda m: _from_numpy(m[1], code)),
        (_RANDINT, lambda m: _randint(code)),
        (_REALS, lambda m: _random_integers(code)),
        (_PERMUTE, lambda m: _permute(op, ts, code)),
        (_DIM_RANGE, lambda m: _unsqueeze(op, ts, int(m[2]), int(m[3]), code)),
        (_EINSUM, lambda m: _einsum(op, ts, int(m[1]), code)),
        (_EINSUM_SIZE, lambda m: _einsum_sizes(op, ts, m[1], int(m[2]), code)),
        (_GROWN, lambda m: _grown(ts, m[1], code)),
        (_SIZE_INDEXED, lambda m: _size_indexed(code, frame)),
        (_ONE_NUMBER, lambda m: _math_of_tensor(op, ts, code, frame)),
    )
    for pattern, hint in checks:
        found = pattern.search(text)
        if found:
            return hint(found)
    return None


def _size_indexed(code: str | None, frame: FrameType | None) -> str | None:
    """``x.size[0]``: the method indexed, not called."""
    for node in ast.walk(parsed(code) or ast.Module([], [])):
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)):
            continue
        x, index = ast.unparse(node.value.value), ast.unparse(node.slice)
        if node.value.attr == "size" and isinstance(bound_to(x, frame), torch.Tensor):
            called = f"{x}.size({index}) or " if not isinstance(node.slice, ast.Slice | ast.Tuple) else ""
            return (
                f"{x}.size is a method, and [{index}] indexes the method instead of the sizes it gives: call it, "
                f"{called}{x}.size()[{index}], or use the attribute, {x}.shape[{index}]."
            )
    return None


def _ragged(wanted: int, depth: int, got: int, code: str | None, frame: FrameType | None) -> str | None:
    """``torch.tensor(rows)`` of rows of different lengths."""
    call = find_call(code, ("tensor", "as_tensor", "Tensor", *_CLASS_DTYPES), ("dtype",))
    if call is None or "self" not in call:
        return None
    rows, data = call["self"], literal(call["self"], frame)
    start = (
        f"torch.{call['name']} makes a rectangular tensor, so the lists at one depth must all be one length"
    )
    if depth != 1 or not isinstance(data, list) or not all(isinstance(r, list | tuple) for r in data):
        return f"{start}: at depth {depth} the first has {wanted} elements and another {got}. Pad the short ones."
    short = next(i for i, r in enumerate(data) if len(r) != wanted)
    padded = ""
    if all(type(v) in (int, float) for r in data for v in r):
        padded = (
            f", or make each row a tensor and pad them together: torch.nn.utils.rnn.pad_sequence([torch.tensor(r) "
            f"for r in {rows}], batch_first=True) fills the ends of the short rows with 0"
        )
    return (
        f"{start}: row 0 of {rows} has {wanted} elements and row {short} has {len(data[short])}. Pad the short "
        f"rows to one length first (with 0, or a value kept for padding){padded}."
    )


def _reshape(op: str, ts: Sequence[torch.Tensor], sizes: str, code: str | None) -> str | None:
    """``images.reshape(8, 3 * 28 * 28)`` of 8 × 3 × 32 × 32: sizes that multiply to another count."""
    call = find_call(code, ("reshape", "view"), ())
    wanted = [int(n) for n in sizes.split(", ") if n]
    if call is None or op not in ("reshape", "view") or op != call["name"] or not ts or "self" not in call:
        return None
    x, given, count = call["self"], ts[0], ts[0].numel()
    written = ", ".join(ast.unparse(a) for a in call["rest"])
    start = (
        f"{x} holds {count} numbers ({' × '.join(map(str, given.shape))}), and {op}({written}) asks for "
        f"{' × '.join(map(str, wanted))} = {math.prod(wanted)}: a {op} keeps every number, so the sizes must "
        "multiply to the same count."
    )
    if given.dim() >= 2 and wanted[0] == given.shape[0] and (op == "reshape" or given.is_contiguous()):
        n = given.shape[0]
        return (
            f"{start} To keep the {n} samples and flatten the rest, let -1 work it out: "
            f"{wrapped(x)}.{op}({n}, -1), which gives ({n}, {count // n})."
        )
    return f"{start} Check them against {x}.shape (-1 in one place lets PyTorch work that size out)."


def _cat(op: str, ts: Sequence[torch.Tensor], code: str | None, frame: FrameType | None) -> str | None:
    """torch.cat of tensors of 2 and 1 dimensions: the 1-D one lacks the dimension to join along."""
    call = find_call(code, ("cat", "concat", "concatenate"), ("dim",))
    listed = call["call"].args[0] if call and call["call"].args else None
    if (
        call is None
        or op != call["name"]
        or not isinstance(listed, ast.List | ast.Tuple)
        or len(listed.elts) != len(ts)
    ):
        return None
    names, top, dim = (
        [ast.unparse(e) for e in listed.elts],
        max(t.dim() for t in ts),
        number(call.get("dim", "0"), frame),
    )
    if dim is None or not -top <= dim < top or any(t.dim() < top - 1 for t in ts):
        return None
    d = dim % top
    fixed = [f"{wrapped(n)}.unsqueeze({d})" if t.dim() < top else n for n, t in zip(names, ts, strict=True)]
    grown = [t.unsqueeze(d) if t.dim() < top else t for t in ts]
    result = meta_shape(lambda *m: torch.cat(m, dim=d), *grown)
    short, full = (next(i for i, t in enumerate(ts) if (t.dim() == top) == want) for want in (False, True))
    if result is None:
        return None
    return (
        f"torch.cat joins tensors along a dimension they all have, and {names[short]} is {shape(ts[short].shape)} "
        f"where {names[full]} is {shape(ts[full].shape)}: give it a dimension of 1 at dim {d}, {fixed[short]}, "
        f"which makes it {shape(grown[short].shape)}: {with_arg(call, 'self', '[' + ', '.join(fixed) + ']')}, "
        f"which gives {shape(result)}."
    )


def _to_string(written: str, code: str | None) -> str | None:
    """``x.to('float')``: a dtype's name, read as a device."""
    call = find_call(code, ("to",), ("dtype",))
    known = _DTYPES.get(written.removeprefix("torch."))
    if call is None or known is None or "self" not in call or call.get("dtype", "").strip("'\"") != written:
        return None
    x, (dtype, method) = call["self"], known
    return (
        f"{x}.to('{written}') reads a string as a device ('cpu', 'cuda'), and '{written}' is the name of a dtype: "
        f"pass the dtype itself, {x}.to(torch.{dtype}), or call {x}.{method}()."
    )


def _tensor_class(kind: str, code: str | None) -> str | None:
    """``torch.Tensor(0.5)``: the class takes a list, or sizes, never one float."""
    call = find_call(code, ("Tensor", *_CLASS_DTYPES), ())
    if call is None or "self" not in call or len(call["call"].args) != 1 or call["call"].keywords:
        return None
    value, cls = call["self"], call["name"]
    dtype = f", dtype=torch.{_CLASS_DTYPES[cls]}" if cls in _CLASS_DTYPES else ""
    return (
        f"torch.{cls}(…) (a class, capital T) takes a list of values, or sizes (torch.{cls}(3) is an "
        f"uninitialised tensor of 3 numbers), and got the {kind} {value}, which is neither. To make a tensor "
        f"holding {value}, use the function, lowercase: torch.tensor({value}{dtype})."
    )


def _from_numpy(kind: str, code: str | None) -> str | None:
    call = find_call(code, ("from_numpy",), ())
    if call is None or "self" not in call:
        return None
    data = call["self"]
    if kind == "Tensor":
        return f"{data} is a tensor already, and torch.from_numpy is for NumPy arrays: use {data} as it is."
    return (
        f"torch.from_numpy takes a NumPy array (and shares its memory), and {data} is a Python {kind}: make the "
        f"tensor from it with torch.tensor({data}) (or np.array({data}) first, for from_numpy)."
    )


def _randint(code: str | None) -> str | None:
    """``torch.randint(0, 10, 5)``: the size given as a number."""
    call = find_call(code, ("randint",), ())
    args = call["call"].args if call else []
    if call is None or len(args) not in (2, 3) or isinstance(args[-1], ast.Tuple | ast.List):
        return None
    size = ast.unparse(args[-1])
    fixed = ast.Call(call["call"].func, [*args[:-1], ast.Tuple([args[-1]])], call["call"].keywords)
    return (
        f"torch.randint(low, high, size) takes the size as a tuple, even for one dimension, and got {size}, a "
        f"number: {ast.unparse(fixed)}, with the comma, makes {size} of them."
    )


def _random_integers(code: str | None) -> str | None:
    """``torch.randn(3, 4, dtype=torch.long)``: random reals asked for as integers."""
    call = find_call(code, ("randn", "rand"), ())
    args = call["call"].args if call else []
    if call is None or "dtype" not in call or not args:
        return None
    sizes = [ast.unparse(a) for a in args]
    size = sizes[0] if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List) else shape(sizes)
    made = "from a normal distribution" if call["name"] == "randn" else "uniform in [0, 1)"
    return (
        f"torch.{call['name']} draws real numbers ({made}), so it cannot make a tensor of integers "
        f"(dtype={call['dtype']}). For random integers use torch.randint(low, high, size), such as "
        f"torch.randint(0, 10, {size}) for 0 to 9; for random reals, leave the dtype out."
    )


def _math_of_tensor(
    op: str, ts: Sequence[torch.Tensor], code: str | None, frame: FrameType | None
) -> str | None:
    """``math.exp(x)`` of a tensor of several elements: math asks it for one float."""
    tree = parsed(code)
    for node in ast.walk(tree) if tree is not None and op == "__float__" else ():
        func = node.func if isinstance(node, ast.Call) and not node.keywords else None
        if (
            not isinstance(node, ast.Call)
            or not isinstance(func, ast.Attribute)
            or ast.unparse(func.value) != "math"
        ):
            continue
        name = {"fabs": "abs"}.get(func.attr, func.attr)
        given = [bound_to(ast.unparse(a), frame) for a in node.args]
        at = next((i for i, v in enumerate(given) if any(v is t for t in ts)), None)
        if at is None or name in _MATH_ONLY or not hasattr(torch, name) or (name == "log" and len(given) > 1):
            return None
        x = ast.unparse(node.args[at])
        fixed = ast.unparse(ast.Call(ast.parse(f"torch.{name}", mode="eval").body, node.args, []))
        return (
            f"math.{func.attr} works on one Python number, so it asked {x} for one (as float({x}) does), and {x} "
            f"holds {ts[0].numel()}. Use the torch function, which works element by element (and keeps the "
            f"graph): {fixed}."
        )
    return None


def _permute(op: str, ts: Sequence[torch.Tensor], code: str | None) -> str | None:
    """``imgs.permute(0, 3, 1)`` of a 4-D tensor: permute lists every dimension."""
    call = find_call(code, ("permute",), ())
    if call is None or op != "permute" or not ts or "self" not in call:
        return None
    args = call["rest"]
    if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List):
        args = args[0].elts
    n = ts[0].dim()
    dims = [
        a.value % n
        for a in args
        if isinstance(a, ast.Constant) and type(a.value) is int and -n <= a.value < n
    ]
    if len(dims) != len(args) or len(set(dims)) != len(dims) or len(dims) >= n:
        return None
    full = dims + sorted(set(range(n)) - set(dims))
    x, given, listed = call["self"], ts[0].shape, ", ".join(map(str, full))
    last = full == [0, 3, 1, 2] and given[3] < min(given[1], given[2])  # (N, H, W, C) images, C small
    channels = " (channels last to channels first, (N, H, W, C) to (N, C, H, W))" if last else ""
    return (
        f"permute gives every dimension its new place, so it lists all of them, and {x} has {n}, {shape(given)}, "
        f"where this call lists {len(dims)}. List the missing ones too{channels}: {wrapped(x)}.permute({listed}), "
        f"which gives {shape([given[d] for d in full])}. (To swap two dimensions, transpose(i, j) takes just those.)"
    )


def _unsqueeze(op: str, ts: Sequence[torch.Tensor], high: int, dim: int, code: str | None) -> str | None:
    """``x.unsqueeze(2)`` of a 1-D ``x`` (or ``torch.stack(…, dim=2)`` of 1-D tensors): the new
    dimension can go at 0 to ``x.dim()``, one place more than the tensor has dimensions."""
    call = find_call(code, (op,), ("dim",))
    if op not in ("unsqueeze", "stack") or not ts or {t.dim() for t in ts} != {high} or call is None:
        return None
    sizes, n = list(ts[0].shape), len(ts) if op == "stack" else 1
    x, new = (call["self"], "unsqueeze") if op == "unsqueeze" else ("each tensor", "torch.stack")
    has = f"{high} dimension{'s' if high != 1 else ''}, {shape(sizes)}" if high else "no dimensions, shape ()"
    return (
        f"{x} has {has}, and {new} adds one: it can go at 0 to {high} (before the first, up to after the last; "
        f"-1 is after the last), and this call asked for {dim}. {with_arg(call, 'dim', '-1')} gives "
        f"{shape([*sizes, n])}, {with_arg(call, 'dim', '0')} {shape([n, *sizes])}."
    )


def _einsum_read(
    op: str, ts: Sequence[torch.Tensor], code: str | None
) -> tuple[dict[str, Any], str, list[str], list[str], str, str] | None:
    """``(call, equation, operand names, input terms, arrow, output)`` of the line's
    ``torch.einsum('…', a, b)`` with a literal equation, one term per operand and no '...';
    else None."""
    call = find_call(code, ("einsum",), ())
    args = call["call"].args if call else []
    if call is None or op != "einsum" or not args or not isinstance(args[0], ast.Constant):
        return None
    equation, names = str(args[0].value).replace(" ", ""), [ast.unparse(a) for a in args[1:]]
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ts) or len(names) != len(ts) or "." in equation:
        return None
    return call, equation, names, terms, arrow, output


def _einsum(op: str, ts: Sequence[torch.Tensor], which: int, code: str | None) -> str | None:
    """An einsum term with another count of letters than its operand has dimensions."""
    read = _einsum_read(op, ts, code)
    if read is None:
        return None
    call, equation, names, terms, _, output = read
    term, given = terms[which], ts[which]
    start = (
        f"In torch.einsum('{equation}', …) each operand gets one letter per dimension, and '{term}' names "
        f"{len(term)} for {names[which]}, which has {given.dim()}, {shape(given.shape)}: give it {given.dim()} letter{'s' if given.dim() != 1 else ''}"
    )
    dotted = ",".join("..." + t for t in terms) + (f"->...{output}" if "->" in equation else "")
    result = meta_shape(lambda *m: torch.einsum(dotted, *m), *ts) if given.dim() > len(term) else None
    if result is None:
        return f"{start}."
    return (
        f"{start}, or start each term with '...' to carry the dimensions in front along as they are: "
        f"{with_arg(call, 'self', repr(dotted))}, which gives {shape(result)}."
    )


def _einsum_sizes(
    op: str, ts: Sequence[torch.Tensor], letter: str, which: int, code: str | None
) -> str | None:
    """An einsum letter that names dimensions of different sizes in two operands."""
    read = _einsum_read(op, ts, code)
    if read is None or which >= len(ts):
        return None
    call, equation, names, terms, arrow, output = read
    if any(len(t) != x.dim() for t, x in zip(terms, ts, strict=True)):
        return None
    seen = next(i for i, t in enumerate(terms) if letter in t)
    said = [
        f"{t.shape[terms[i].index(letter)]} in {names[i]}, {shape(t.shape)} for '{terms[i]}'"
        for i, t in enumerate(ts)
        if i in (seen, which)
    ]
    start = (
        f"In torch.einsum('{equation}', …) a letter stands for one size in every operand it names, and "
        f"'{letter}' is {' but '.join(said)}."
    )
    known = {k: n for i, t in enumerate(ts) if i != which for k, n in zip(terms[i], t.shape, strict=True)}
    for order in itertools.permutations(terms[which]):
        fits = all(known.get(k, n) == n for k, n in zip(order, ts[which].shape, strict=True))
        fixed = ",".join(("".join(order) if i == which else t) for i, t in enumerate(terms)) + arrow + output
        if fits and meta_shape(lambda *m, eq=fixed: torch.einsum(eq, *m), *ts) is not None:
            return (
                f"{start} einsum pairs dimensions by letter, so give each of {names[which]}'s the letter of what it "
                f"holds: {with_arg(call, 'self', repr(fixed))}."
            )
    return f"{start} Check which dimension of each operand each letter stands for."


def _grown(ts: Sequence[torch.Tensor], broadcast: str, code: str | None) -> str | None:
    """``total += bigger``: an in-place op cannot make its target bigger."""
    tree = parsed(code)
    node = tree.body[0] if isinstance(tree, ast.Module) and len(tree.body) == 1 else None
    if not isinstance(node, ast.AugAssign) or type(node.op) not in _SIGNS or len(ts) != 2:
        return None
    if not isinstance(node.target, ast.Name | ast.Attribute):
        return None
    target, sign, value = ast.unparse(node.target), _SIGNS[type(node.op)], ast.unparse(node.value)
    bigger, (into, other) = shape([int(n) for n in broadcast.split(", ")]), ts
    rows = ""
    if sign == "+" and other.dim() == into.dim() + 1 and other.shape[1:] == into.shape:
        rows = f"; to add up its rows into {target} instead, {target} += {wrapped(value)}.sum(0)"
    return (
        f"{target} {sign}= … writes the result into {target} itself, which is {shape(into.shape)}, and the result "
        f"here is {bigger}: an in-place op cannot make its target bigger. Make a new tensor, {target} = "
        f"{target} {sign} {value}, which is {bigger}{rows}."
    )
