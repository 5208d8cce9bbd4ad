"""Hints for errors about the kind of value an op got: a NumPy array or a Python number
where a tensor goes, a tensor of several elements where Python wants one True/False, the
mean of integers or booleans, and a dimension the tensor does not have."""

from __future__ import annotations

import re

__all__ = ["value_kind_hint"]

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


def value_kind_hint(text: str, code: str | None) -> str | None:
    """The hint for error message ``text`` raised at a line reading ``code``; ``None`` for
    any other error."""
    found = _NOT_TENSOR.search(text)
    if found:
        return _not_a_tensor(*found.groups())
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
        return (
            "An index tensor must hold integers (or booleans, as a mask), and this one holds floats: "
            "torch.tensor([0.0, 2.0]) makes float32, torch.tensor([0, 2]) int64. Convert it, idx.long(), "
            "or make it of whole numbers."
        )
    model = _NOT_ITERABLE.search(text)
    if model and re.search(r"\boptim\.\w+\(", code or ""):
        return (
            f"An optimizer takes the tensors it updates, not the model (a {model.group(1)}): pass its "
            "parameters, torch.optim.SGD(model.parameters(), lr=…)."
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
