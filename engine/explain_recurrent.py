"""Hints for the inputs and states of sequence models: an RNN's initial state of the wrong
size (its batch stays in dim 1 even with ``batch_first=True``; dim 0 counts layers ×
directions), a batch of samples given as a 2-D input (read as one sequence without a batch), a
prediction made at every step against one target per sequence,
an LSTM given ``h0`` alone where it takes ``(h0, c0)``, and token ids fed
straight to an RNN or a Transformer, which read vectors of features (an ``nn.Embedding``
goes first)."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType
from typing import Any

import torch

from .explain_reading import calls
from .source import bound_to, find_name, is_a, quoted_code

__all__ = ["per_step_prediction", "recurrent_hint", "unbatched_sequence_hint"]

# "Expected hidden[0] size (1, 3, 20), got [1, 5, 20]" (an LSTM's h0), "Expected hidden size …" (GRU, RNN)
_STATE_SIZE = re.compile(
    r"Expected hidden(\[[01]\])? size \((\d+), (\d+), (\d+)\), got \[(\d+), (\d+), (\d+)\]"
)
_INTEGER_INPUT = re.compile(r"RNN input dtype \(torch\.(u?int\d+)\) does not match weight dtype")
_WIDTH = re.compile(r"was expecting embedding dimension of (\d+), but got (\d+)")
_OUT_OF_BOUNDS = re.compile(r"index 1 is out of bounds for dimension 0 with size 1")


def recurrent_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``) that
    runs a sequence model (see the module docstring); ``None`` for any other error."""
    state = _STATE_SIZE.search(text)
    if state:
        return _state_size(*state.groups())
    integer = _INTEGER_INPUT.search(text)
    if integer:
        return (
            f"This input holds integers ({integer.group(1)}), token ids most likely, and a recurrent layer reads "
            "each step as a vector of float features. Put an nn.Embedding(vocab_size, dim) before it and build "
            "the layer with input_size=dim; if the numbers are measurements, not ids, convert them, x.float(). "
            "(Converting the model to integers, as the message offers, would leave nothing to train.)"
        )
    width = _WIDTH.search(text)
    if width:
        return _width(int(width.group(1)), int(width.group(2)), code, frame)
    if _OUT_OF_BOUNDS.search(text):
        return _lstm_given_h0_alone(code, frame)
    return None


def _state_size(
    which: str | None, want_layers: str, want_batch: str, want_hidden: str, *got: str
) -> str | None:
    got_layers, got_batch, got_hidden = got
    name = "c0" if which == "[1]" else "h0"
    if got_batch != want_batch:
        return (
            f"{name} is (num_layers × directions, batch, hidden_size) even with batch_first=True, which changes "
            f"only the input and the output: this batch has {want_batch} sequences, and {name} has {got_batch} "
            f"in dim 1. Make it torch.zeros({want_layers}, x.size(0), {want_hidden}), or leave the state out: "
            "zeros is the default."
        )
    if got_layers != want_layers:
        return (
            f"Dim 0 of {name} counts layers × directions: this layer has {want_layers} (num_layers, times 2 "
            f"when bidirectional), and {name} has {got_layers}. Make it torch.zeros({want_layers}, "
            f"{want_batch}, {want_hidden})."
        )
    if got_hidden != want_hidden:
        return (
            f"{name} holds hidden_size numbers per sequence: this layer has hidden_size={want_hidden}, and "
            f"{name} has {got_hidden} in its last dimension. Make it torch.zeros({want_layers}, {want_batch}, "
            f"{want_hidden})."
        )
    return None


def _called(code: str | None, frame: FrameType | None) -> list[tuple[Any, list[Any]]]:
    """The calls on the line whose callee is a module in sight, with their arguments' values."""
    if frame is None:
        return []
    found = []
    for call in calls(code):
        callee = bound_to(ast.unparse(call.func), frame)
        if isinstance(callee, torch.nn.Module):
            found.append((callee, [bound_to(ast.unparse(arg), frame) for arg in call.args]))
    return found


def _lstm_given_h0_alone(code: str | None, frame: FrameType | None) -> str | None:
    for module, args in _called(code, frame):
        if isinstance(module, torch.nn.LSTM) and len(args) == 2 and is_a(args[1], torch.Tensor):
            return (
                "An nn.LSTM's state is a pair, (h0, c0): the hidden state and the cell state, each (num_layers × "
                "directions, batch, hidden_size), and it was given one tensor, whose first row it took for h0 "
                "and found no second for c0. Pass both, lstm(x, (h0, c0)) with c0 = torch.zeros_like(h0), or "
                "leave the state out: zeros is the default."
            )
    return None


def _width(wanted: int, got: int, code: str | None, frame: FrameType | None) -> str:
    ids = any(
        is_a(arg, torch.Tensor) and not arg.is_floating_point() and not arg.is_complex()
        for _, args in _called(code, frame)
        for arg in args
    )
    if ids:
        return (
            f"This attention layer takes vectors of d_model={wanted} features per position, (batch, sequence, "
            f"{wanted}), and was given integer token ids, so it read their last dimension ({got}) as the "
            f"features. Embed them first: nn.Embedding(vocab_size, {wanted}) turns (batch, sequence) ids into "
            f"(batch, sequence, {wanted}) vectors."
        )
    return (
        f"This attention layer takes d_model={wanted} features in the input's last dimension, and it has {got}. "
        f"Build the layer with d_model={got} (embed_dim for nn.MultiheadAttention), or project the input "
        f"first, nn.Linear({got}, {wanted}); with batch_first=False the input is (sequence, batch, features)."
    )


def unbatched_sequence_hint(
    predictions: int, targets: int, source_lines: Sequence[str], frame: FrameType | None
) -> str | None:
    """A loss given ``predictions`` scores for ``targets`` targets, where the snippet ran an RNN
    (a line ``rnn(x)``) on a 2-D ``x`` with one row per target: a 2-D input is one sequence
    without a batch, (length, features), so the final state has one row per layer, which is
    where the ``predictions`` (that many) came from; ``None`` where no such call shows."""
    for at in range(1, len(source_lines) + 1):
        for call in calls(quoted_code(source_lines, at, 10_000)):
            rnn, name = bound_to(ast.unparse(call.func), frame), ast.unparse(call.func)
            if not isinstance(rnn, torch.nn.RNNBase) or not call.args:
                continue
            x = ast.unparse(call.args[0])
            given = bound_to(x, frame)
            layers = rnn.num_layers * (2 if rnn.bidirectional else 1)
            if (
                not is_a(given, torch.Tensor)
                or given.dim() != 2
                or given.shape[0] != targets
                or predictions != layers
            ):
                continue
            steps, features = given.shape
            one = "unsqueeze(1)" if rnn.batch_first else "unsqueeze(0)"
            return (
                f"{x} is 2-D, ({steps}, {features}), and {name} (an nn.{type(rnn).__name__}, line {at}) reads a 2-D input "
                f"as one sequence without a batch, (length, features): {steps} steps of one sequence, not {targets} "
                f"samples. So its final state holds one row per layer ({layers}), not one per sample, and the loss got "
                f"{predictions} prediction{'s' if predictions != 1 else ''} for {targets} targets. Give it a batch "
                f"dimension, {name}({x}.{one}) for samples of one step each (a "
                f"{'(batch, length, features)' if rnn.batch_first else '(length, batch, features)'} input), and take the "
                "last layer's state, h[-1], which is (batch, hidden_size)."
            )
    return None


_RECURRENT = re.compile(r"\bnn\.(?:LSTM|GRU|RNN)\(")


def per_step_prediction(
    op: str, pred: torch.Tensor, target: torch.Tensor, source_lines: Sequence[str], frame: FrameType | None
) -> str | None:
    """An elementwise loss ``op`` given a prediction with one more dimension than the target,
    dim 1, where the snippet builds a recurrent layer: a value at every step of each sequence,
    (batch, time, …), against one per sequence; ``None`` otherwise."""
    if (
        pred.dim() != target.dim() + 1
        or pred.dim() < 2
        or pred.shape[0] != target.shape[0]
        or pred.shape[2:] != target.shape[1:]
        or not any(_RECURRENT.search(line) for line in source_lines)
    ):
        return None
    name = find_name(pred, frame) or "the prediction"
    steps = pred.shape[1]
    return (
        f"{op} compares prediction and target element by element, and {name} is {tuple(pred.shape)}, a value at "
        f"each of {steps} steps (a recurrent layer's output at every step, (batch, time, …)), against a target "
        f"{tuple(target.shape)}, one per sequence. Predict from the last step: feed the layer after the RNN its "
        "last output, out[:, -1] (with batch_first=True), or the last layer's final state, h[-1] (h_n is "
        "(num_layers, batch, hidden))."
    )
