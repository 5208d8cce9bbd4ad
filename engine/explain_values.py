"""Hints for errors about the kind of value an op got: a NumPy array or a Python number
where a tensor goes (or backward() asked of one), a tensor of several elements where Python
wants one True/False, the mean of integers or booleans, a dimension the tensor does not
have, an ``nn.Module`` class called with tensors where an instance of it goes, and a pair a
layer or op returns used as a tensor (torch.max's (values, indices), an RNN's (output, h),
nn.MultiheadAttention's (output, weights))."""

from __future__ import annotations

import ast
import inspect
import re
from types import FrameType
from typing import Any

import torch

from .explain_reading import parsed
from .explain_seed import name_before
from .source import is_a, visible_names

__all__ = ["module_class_hint", "returned_pair_hint", "value_kind_hint"]

_NOT_TENSOR = re.compile(
    r"(\w+)\(\): argument '(\w+)' \(position (\d+)\) must be Tensor, not (\w+(?:\.\w+)?)"
)
_DIM_RANGE = re.compile(
    r"Dimension out of range \(expected to be in range of \[(-?\d+), (-?\d+)\], but got (-?\d+)\)"
)
_NUMBERS = {"int": "2", "float": "0.5", "bool": "True"}  # an example of each, for the fix
_NO_DIM = re.compile(r"\b((?:log_)?softmax)\(\) missing 1 required positional arguments?: \"dim\"")
_NOT_ITERABLE = re.compile(r"'(\w+)' object is not iterable")
_MEAN_DTYPE = re.compile(r"(mean|var|std)\(\): could not infer output dtype\. .*Got: (\w+)")
_NOT_A_SEQUENCE = re.compile(
    r"(\w+)\(\): argument 'tensors' \(position 1\) must be tuple of Tensors, not (\w+)"
)
_WRONG_KIND_ATTRIBUTE = re.compile(
    r"'(tuple|builtin_function_or_method|method)' object has no attribute '(\w+)'"
)
_FORWARD_ARGUMENTS = re.compile(
    r"(\w+)\.forward\(\) (?:takes (\d+) positional arguments? but (\d+) (?:was|were) given"
    r"|missing (\d+) required positional arguments?: (.+))"
)
# the constructor arguments of PyTorch's modules that do take a tensor (class weights)
_TENSOR_SETTINGS = frozenset({"weight", "pos_weight"})
_NOT_A_TENSOR_BACKWARD = re.compile(
    r"'(float|int|numpy\.\w+)' object has no attribute '(backward|grad|grad_fn)'"
)


def value_kind_hint(text: str, code: str | None, frame: FrameType | None = None) -> str | None:
    """The hint for error message ``text`` raised at a line reading ``code`` (in ``frame``);
    ``None`` for any other error."""
    found = _NOT_TENSOR.search(text)
    if found and found.group(4) == "tuple" and frame is not None and not _has_rnn(visible_names(frame)):
        function, argument, position, _ = found.groups()
        return (
            f"{function}() takes a tensor as its {argument} (argument {position}) and got a tuple: take the "
            "tensor out of it (a model with several outputs returns them together: out, aux = model(x)); "
            "for a tuple of numbers, torch.tensor(values)."
        )
    if found:
        return _not_a_tensor(*found.groups())
    joined = _NOT_A_SEQUENCE.search(text)
    if joined:
        return _joined_one_by_one(joined.group(1), joined.group(2), code)
    if "'torch.Size' object is not callable" in text:
        return (
            "shape is an attribute, not a method: write x.shape (no parentheses), or call x.size(), "
            "which gives the same torch.Size; x.shape[0] or x.size(0) for one dimension."
        )
    forward = _FORWARD_ARGUMENTS.search(text)
    if forward and not _autograd_function(visible_names(frame).get(forward.group(1))):
        return _forward_inputs(*forward.groups())  # (a Function's forward: explain_functions.py)
    wrong = _WRONG_KIND_ATTRIBUTE.search(text)
    if wrong and hasattr(torch.Tensor, wrong.group(2)):
        return _not_a_tensor_but(wrong.group(1), wrong.group(2), code)
    plain = _NOT_A_TENSOR_BACKWARD.search(text)
    if plain:
        return _no_graph_in(plain.group(1), code)
    if "Boolean value of Tensor with more than one value is ambiguous" in text:
        asked = f" ({code})" if code and re.match(r"(if|while|elif|assert)\b", code) else ""
        return (
            f"Python asked this tensor for one True or False{asked}, and it holds one per element. "
            "Decide element by element with a mask or torch.where(cond, a, b) (which also keeps the graph "
            "whole), or reduce it first: (x > 0).all(), (x > 0).any(), or x.item() for a single element. "
            "`and`/`or` between tensors are the same question: use & and |."
        )
    dims = _DIM_RANGE.search(text)
    if dims:
        low, high, dim = (int(g) for g in dims.groups())
        if code and re.search(r"\bunsqueeze\(|\bstack\(", code):
            # (unsqueeze and stack add a dimension: their range is one wider than the tensor)
            return (
                f"unsqueeze and torch.stack put the new dimension at 0 to {high} here (or {low} to -1), for a "
                f"tensor of {high} dimension{'s' if high != 1 else ''}, and this call asked for {dim}. dim=-1 "
                "puts it last, whatever the tensor's dimensions."
            )
        count = high + 1
        return (
            f"The tensor has {count} dimension{'s' if count != 1 else ''} (dims {low} to {high}), and this "
            f"call asked for dim {dim}. A batch of one sample often loses its batch dimension on the way "
            "(add it back with x.unsqueeze(0)); dim=-1, the last, works with and without it."
        )
    mean = _MEAN_DTYPE.search(text)
    if mean:
        op, dtype = mean.groups()
        example = "(pred == y).float().mean() for an accuracy" if dtype == "Bool" else "x.float().mean()"
        return (
            f"{op}() of a {dtype.lower()} tensor is refused: its result is a fraction, which a "
            f"{dtype.lower()} tensor cannot hold. Convert first: {example}."
        )
    if "tensors used as indices must be long, int, byte or bool tensors" in text:
        return _float_index(code, frame)
    model = _NOT_ITERABLE.search(text)
    if model and re.search(r"\boptim\.\w+\(", code or ""):
        return (
            f"An optimizer takes the tensors it updates, not the model (a {model.group(1)}): pass its "
            "parameters, torch.optim.SGD(model.parameters(), lr=…)."
        )
    if "received an invalid combination of arguments" in text and "requires_grad" in text:
        made = re.search(r"\btorch\.(\w*Tensor)\(", code or "")
        if made:
            return (
                f"torch.{made.group(1)} is a tensor class, and its constructor takes no requires_grad. Make the "
                "tensor with the function, lowercase: torch.tensor([...], requires_grad=True), which also keeps "
                "the dtype of what you pass (or torch.zeros(3, requires_grad=True) and the like)."
            )
    if "list indices must be integers or slices, not str" in text and "param_groups[" in (code or ""):
        return (
            "param_groups is a list, one dict per parameter group (most optimizers have one): set the rate in "
            "each, for g in opt.param_groups: g['lr'] *= 0.5, or opt.param_groups[0]['lr'] for the only one. "
            "A scheduler (torch.optim.lr_scheduler.StepLR) does it for you, once per epoch."
        )
    floats = re.search(r"expected Tensor as element (\d+) in argument 0, but got (float|int)", text)
    if floats and re.search(r"\btorch\.(?:stack|cat)\(", code or ""):
        return (
            f"torch.stack and torch.cat join tensors, and element {floats.group(1)} of this list is a Python "
            f"{floats.group(2)}: a value taken out with .item() (or float()), which also took it out of the graph, "
            "so no backward() could reach it. Keep the tensors in the list, losses.append(loss), and call .item() "
            "only to print; torch.tensor(values) makes a tensor of plain numbers, without gradients."
        )
    if "invalid index of a 0-dim tensor" in text:
        indexed = re.search(r"([^\W\d][\w.]*?)(?:\.data)?\[0\]", code or "")
        name = indexed.group(1) if indexed else "loss"
        return (
            f"{name} is a 0-dim tensor, one number with no dimension to index, so [0] has nothing to pick "
            f"({name}.data[0] is how PyTorch before 0.4 read a loss). Read its value with {name}.item()."
        )
    softmax = _NO_DIM.search(text)
    if softmax:
        op = softmax.group(1)
        sums = " then sums to 1" if op == "softmax" else "'s exp then sums to 1"
        return (
            f"{op} normalises along one dimension, and must be told which: dim=1 for scores of shape "
            f"(N, C), one row per sample (each row{sums}), or dim=-1, the last, in general: "
            f"torch.{op}(x, dim=-1). Not dim=0 for a batch: that would mix the samples."
        )
    return None


def _not_a_tensor(function: str, argument: str, position: str, given: str) -> str:
    """A tensor argument given a NumPy array, a Python number or a list."""
    if given == "numpy.ndarray":
        fix = (
            "convert the array first: torch.from_numpy(x).float() (NumPy's default float64 would meet "
            "float32 weights), or torch.as_tensor(x, dtype=torch.float32)"
        )
    elif given in _NUMBERS and argument in ("weight", "pos_weight") and "loss" in function:
        # F.cross_entropy(logits, y, 0.1): the third place is weight (one per class), not label_smoothing
        fix = (
            f"its {argument} is one number per class, and settings such as label_smoothing are passed by name: "
            "F.cross_entropy(logits, y, label_smoothing=0.1)"
        )
    elif given in _NUMBERS:
        fix = f"wrap the number: torch.tensor([{_NUMBERS[given]}]) (a target is one per sample, so a list)"
    elif given == "tuple":
        fix = (
            "nn.LSTM, nn.GRU and nn.RNN return a pair, (output, hidden state), as do models with several "
            "outputs: unpack it first (out, h = rnn(x)) and pass out; for a tuple of numbers, "
            "torch.tensor(values)"
        )
    elif given == "list":
        fix = "make it a tensor first: torch.tensor(values) (or torch.stack for a list of tensors)"
    else:
        fix = "pass a tensor"
    article = "an" if given[0] in "aeiou" else "a"
    return f"{function}() takes a tensor as its {argument} (argument {position}) and got {article} {given}: {fix}."


def _joined_one_by_one(op: str, given: str, code: str | None) -> str:
    """torch.cat or torch.stack given the tensors one by one (``torch.cat(a, b)``)."""
    listed = re.search(rf"\b{op}\(([^()\[\]]+?)(?:,\s*(dim\s*=.*))?\)", code or "")
    parts = listed.group(1) if listed and given == "Tensor" else "a, b"
    along = f", {listed.group(2)}" if listed and listed.group(2) else ""
    return (
        f"torch.{op} takes the tensors to join as one list (or tuple), and got a {given} where it goes: "
        f"torch.{op}([{parts}]{along}). The dimension comes after the list (dim=0 by default)."
    )


def _float_index(code: str | None, frame: FrameType | None) -> str:
    """``x[idx]`` with ``idx`` a tensor of floats: named, with its dtype, where the line shows it."""
    scope = visible_names(frame)
    for node in ast.walk(parsed(code) or ast.Module([], [])):
        if not isinstance(node, ast.Subscript):
            continue
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for part in parts:
            held = scope.get(ast.unparse(part)) if isinstance(part, ast.Name) else None
            if isinstance(held, torch.Tensor) and held.is_floating_point():
                idx, dtype = ast.unparse(part), str(held.dtype).removeprefix("torch.")
                return (
                    f"An index tensor must hold integers (or booleans, as a mask), and {idx} holds {dtype} numbers "
                    f"(a / division, or torch.tensor of numbers written with a point, makes floats). Convert it, "
                    f"{idx}.long(), or make it of whole numbers (// divides to a whole number)."
                )
    return (
        "An index tensor must hold integers (or booleans, as a mask), and this one holds floats: "
        "torch.tensor([0.0, 2.0]) makes float32, torch.tensor([0, 2]) int64. Convert it, idx.long(), "
        "or make it of whole numbers."
    )


def _autograd_function(found: object) -> bool:
    return isinstance(found, type) and issubclass(found, torch.autograd.Function)


def _forward_inputs(
    module: str, takes: str | None, given: str | None, missing: str | None, names: str | None
) -> str:
    """A module called with more or fewer inputs than its forward() takes (counts include self)."""
    if takes is not None and given is not None:
        inputs, got = int(takes) - 1, int(given) - 1
        return (
            f"{module} takes {inputs} input{'s' if inputs != 1 else ''} when called, and got {got}: the "
            f"arguments of a module call are its forward()'s. Call it on one tensor at a time, or join "
            "them first (torch.cat([a, b], dim=1) for features side by side); a model that takes several "
            "inputs needs a forward(self, a, b) of its own. Settings such as sizes go to the constructor, "
            f"{module}(…), not to the call."
        )
    return (
        f"{module}'s forward() also needs {names}: call it with every input its forward takes "
        f"(the call passes them in order, after self)."
    )


def _not_a_tensor_but(kind: str, attribute: str, code: str | None) -> str:
    """A tensor's attribute asked of a tuple, or of a method left uncalled."""
    what = name_before(f".{attribute}", code) or "This value"
    if kind == "tuple":
        return (
            f"{what} is a tuple, not a tensor: torch.autograd.grad returns one gradient per input in a "
            f"tuple, even for a single input (take {what}[0], or unpack it: (g,) = torch.autograd.grad(…)), "
            "and so do an RNN layer, (output, hidden), and a model with several outputs (out, h = rnn(x))."
        )
    return (
        f"{what} is a method, not the tensor it would give: it was taken without its parentheses "
        "(x.sum rather than x.sum()), so nothing was computed. Add the parentheses where it was made."
    )


def _no_graph_in(given: str, code: str | None) -> str:
    """backward() (or .grad) asked of a Python number or a NumPy value."""
    what = name_before(".backward(", code) or name_before(".grad", code) or "This value"
    if given.startswith("numpy."):
        return (
            f"{what} is a NumPy value ({given}), not a tensor: NumPy computed it from .numpy() values, "
            "and autograd sees nothing NumPy does. Compute it with torch operations on the tensors "
            "(torch.sum(w ** 2), not np.sum(w.detach().numpy() ** 2)), so backward() can go back through them."
        )
    if what != "This value" and what.isidentifier():
        # "call loss.backward()" was the line that had just failed (hunt 64)
        return (
            f"{what} is a Python {given}, not a tensor: .item() (or float()) turned a tensor into a plain "
            f"number, which keeps no graph. Keep the tensor in {what} and put the number in a name of its "
            f"own ({what}_value = {what}.item(), to print or log), so {what}.backward() has a graph to go back through."
        )
    return (
        f"{what} is a Python {given}, not a tensor: .item() (or float()) turned a tensor into a plain "
        "number, which keeps no graph. Call backward() on the tensor itself (loss.backward()), and "
        "use loss.item() only to print or log the value."
    )


def returned_pair_hint(code: str | None, frame: FrameType | None, text: str = "") -> str | None:
    """A name on the line holds what ``torch.max(x, dim=1)`` (sort, topk, min, median, …)
    returns, a pair of values and indices, where a tensor was meant: ``pred == y`` then
    compares a tuple with a tensor and gives False, and ``.float()`` of it fails. Or, for an
    error ``text`` of a tuple indexed or asked for an attribute, what an RNN layer returns:
    (output, hidden state)."""
    scope = visible_names(frame)
    for name in dict.fromkeys(re.findall(r"(?<![\w.])[^\W\d]\w*(?![\w(])", code or "")):
        held = scope.get(name)
        # ("must be Tensor, not tuple", a layer given the pair, has its hint: _not_a_tensor)
        if ("tuple indices" in text or "'tuple' object" in text) and _rnn_pair(held) and _has_rnn(scope):
            return (
                f"{name} is a pair, (output, hidden state), not a tensor: nn.LSTM, nn.GRU and nn.RNN return both "
                f"(an LSTM's hidden state is itself a pair, (h, c)). Unpack it where the layer is called, "
                f"{name}, _ = layer(x) (an LSTM's: {name}, (h, c) = layer(x)), and use {name}, the output at "
                "every step."
            )
        if "tuple" in text and _attention_pair(held) and _has_layer(scope, torch.nn.MultiheadAttention):
            layer = next((n for n, v in scope.items() if isinstance(v, torch.nn.MultiheadAttention)), "attn")
            return (
                f"{name} is a pair, (attn_output, attn_weights), not a tensor: nn.MultiheadAttention returns the "
                "output and the attention weights (averaged over the heads; None with need_weights=False). Unpack it "
                f"where the layer is called, {name}, _ = {layer}(q, k, v), and use {name}, the output."
            )
        if type(held).__module__ != "torch.return_types" or not hasattr(held, "indices"):
            continue
        op = type(held).__name__
        return (
            f"{name} is what torch.{op} returns when given a dim: a pair (values, indices), not a tensor, so "
            f"what this line does with {name} is done to the pair (== with a tensor gives a plain False). Take "
            f"the part you need, {name}.indices (for class predictions: x.argmax(dim=1) gives them directly) or "
            f"{name}.values, or unpack it: values, indices = torch.{op}(x, dim=1)."
        )
    return None


def _attention_pair(held: object) -> bool:
    """Whether ``held`` is what nn.MultiheadAttention returns: (output, weights or None)."""
    return (
        isinstance(held, tuple)
        and len(held) == 2
        and is_a(held[0], torch.Tensor)
        and (held[1] is None or is_a(held[1], torch.Tensor))
    )


def _has_rnn(scope: dict[str, object]) -> bool:
    """Whether a model the snippet's frame sees holds an nn.LSTM, nn.GRU or nn.RNN (or is one)."""
    return _has_layer(scope, torch.nn.RNNBase)


def _has_layer(scope: dict[str, object], kind: type[torch.nn.Module]) -> bool:
    """Whether a model the snippet's frame sees holds a layer of ``kind`` (or is one)."""
    return any(
        isinstance(m, kind)
        for value in scope.values()
        if isinstance(value, torch.nn.Module)
        for m in value.modules()
    )


def _rnn_pair(held: object) -> bool:
    """Whether ``held`` is what a recurrent layer returns: (output, h) or (output, (h, c))."""
    if not (isinstance(held, tuple) and len(held) == 2 and is_a(held[0], torch.Tensor)):
        return False
    state = held[1]
    return is_a(state, torch.Tensor) or (
        isinstance(state, tuple) and len(state) == 2 and all(is_a(t, torch.Tensor) for t in state)
    )


def module_class_hint(code: str | None, frame: FrameType | None) -> str | None:
    """The line calls an ``nn.Module`` class with tensors, where an instance of it goes:
    ``nn.MSELoss(pred, y)``, or ``crit(pred, y)`` after ``crit = nn.MSELoss`` (no
    parentheses). The tensors become the new module's settings, and whatever fails, fails
    for that reason. ``None`` for any other line."""
    if not code or frame is None:
        return None
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:  # a compound statement's header (for …:)
        return None
    scope = visible_names(frame)
    for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
        cls = _torch_module_class(_resolved(call.func, scope))
        if cls is None:
            continue
        settings = _settings(cls)
        taken = [
            name
            for arg, name in zip(call.args, settings, strict=False)
            if isinstance(_resolved(arg, scope), torch.Tensor)
        ]
        if any(name not in _TENSOR_SETTINGS for name in taken):
            return _class_called(
                ast.unparse(call.func), cls, [ast.unparse(arg) for arg in call.args], settings
            )
    return None


def _torch_module_class(value: object) -> type | None:
    """``value`` where it is one of PyTorch's own layer or loss classes (``nn.MSELoss``); a
    snippet's own module class may well take tensors, and is left alone."""
    if isinstance(value, type) and issubclass(value, torch.nn.Module):
        return value if getattr(torch.nn, value.__name__, None) is value else None
    return None


def _settings(cls: type) -> list[str]:
    """The names of a module class's constructor arguments, in order."""
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return []
    return [name for name in parameters if name not in ("args", "kwargs")]


def _class_called(written: str, cls: type, args: list[str], settings: list[str]) -> str:
    shown = f"nn.{cls.__name__}"
    kind = "loss" if issubclass(cls, torch.nn.modules.loss._Loss) else "layer"
    taken = f" ({', '.join(settings[: len(args)])})" if settings else ""
    inputs = ", ".join(args)
    call = f"{written}({inputs})"
    made = f"{shown}()" if kind == "loss" else f"{shown}(…) with its sizes"
    instead = "computing a loss" if kind == "loss" else "running the layer"
    if written != shown and "." not in written:
        return (
            f"{written} is the class {shown} itself, not a {kind} made from it (it was bound without "
            f"parentheses): {call} makes a new {cls.__name__} with {' and '.join(args)} as its "
            f"settings{taken}, instead of {instead}. Make one first, {written} = {made}, then call it: {call}."
        )
    variable = "criterion" if kind == "loss" else "layer"
    return (
        f"{call} makes a new {kind}, with {' and '.join(args)} as its settings{taken}, instead of "
        f"{instead}: an {shown} is made first, then called. Make it once, {variable} = {made}, then "
        f"call it: {variable}({inputs})."
    )


def _resolved(node: ast.expr, scope: dict[str, Any]) -> Any:
    """What a name or a dotted name in the line is bound to (``None`` for anything else)."""
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _resolved(node.value, scope)
        if owner is None or isinstance(owner, torch.Tensor):
            return None
        try:
            return inspect.getattr_static(owner, node.attr, None)
        except Exception:  # an object whose attribute lookup itself fails
            return None
    return None
