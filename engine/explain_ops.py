"""Explain the errors one op raises about its operands: their devices, dtypes, and the
targets a loss function was given (and their shapes, for a loss that compares element by element). Each hint names the snippet's tensors where the recorder
knows them (``rec.failed_op``, set by the tape when a recorded op raises)."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_flatten import rows_made_by_view
from .explain_recurrent import per_step_prediction, unbatched_sequence_hint
from .source import find_name

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["devices_of_failed_op", "dtype_hint", "inplace_leaf_hint", "loss_target_hint", "scalar_hint"]


def _failed_operands(
    rec: Recorder, frame: FrameType | None, describe: Callable[[torch.Tensor], str], op: str | None = None
) -> tuple[str, list[str]] | None:
    """The op that raised and a phrase per tensor operand, ``x (made at line 3) is on cpu``
    with ``describe`` giving ``is on cpu``; ``None`` when the tape saw no op fail, or (with
    ``op``) the op that failed last is not ``op`` (an error from code the tape does not see
    leaves an older failure behind)."""
    if rec.failed_op is None or (op is not None and rec.failed_op[0].strip("_") != op):
        return None
    name, tensors = rec.failed_op
    roles = _ROLES.get(name.strip("_"), ())
    parts = []
    for i, t in enumerate(tensors):
        tid = rec.tensors.known(t)
        role = roles[i] if i < len(roles) else "a tensor"
        label = _snippet_name(rec, t, frame) or role
        born = rec.tensors.lines.get(tid) if tid is not None else None
        parts.append(f"{label}" + (f" (made at line {born})" if born else "") + f" {describe(t)}")
    return name.strip("_"), parts


def _snippet_name(rec: Recorder, t: torch.Tensor, frame: FrameType | None) -> str | None:
    """``t``'s name: the one the run gave it, else a variable of ``frame`` that holds it."""
    tid = rec.tensors.known(t)
    return (rec.tensors.names.get(tid) if tid is not None else None) or find_name(t, frame)


def devices_of_failed_op(rec: Recorder, frame: FrameType | None) -> str:
    """Describe the tensors of the op that raised: `` (add: x (made at line 3) is on cpu, w is on cuda:0)``,
    or ``""`` when the tape saw no op fail."""
    found = _failed_operands(rec, frame, lambda t: f"is on {t.device}")
    if found is None or not found[1]:
        return ""
    return f" ({found[0]}: " + ", ".join(found[1]) + ")"


def dtype_hint(rec: Recorder, frame: FrameType | None) -> str:
    """Two operands of different dtypes (a NumPy float64 or an integer tensor into a float32
    layer): which is which, where the tape saw the op, and how to convert."""
    found = _failed_operands(rec, frame, lambda t: f"is {str(t.dtype).removeprefix('torch.')}")
    dtypes = {t.dtype for t in rec.failed_op[1]} if found is not None and rec.failed_op else set()
    # operands of one dtype are an older failure's (the op that raised here was not recorded)
    operands = f" ({found[0]}: " + ", ".join(found[1]) + ")" if found and len(dtypes) > 1 else ""
    hint = f"The operands of one operation have different dtypes{operands}. "
    if torch.uint8 in dtypes:
        return hint + (
            "uint8 is how images are loaded (pixel values 0 to 255), and a layer's weights are float32: "
            "convert and scale the batch, x = x.float() / 255 (torchvision's ToTensor() does both)."
        )
    if any(not (d.is_floating_point or d.is_complex) for d in dtypes):
        return hint + (
            "An integer tensor (torch.tensor of whole numbers like [[1, 2, 3]], torch.arange, "
            f"class labels) cannot meet float weights: convert it with {_integer_operand(rec, frame)}.float()."
        )
    halved = dtypes & {torch.float16, torch.bfloat16}
    if halved and torch.float32 in dtypes and len(dtypes) == 2:  # model.half() meeting float32 data
        low = str(next(iter(halved))).removeprefix("torch.")
        full = [t for t in (rec.failed_op[1] if rec.failed_op else ()) if t.dtype == torch.float32]
        named = _snippet_name(rec, full[0], frame) if full else None
        x = named if named and re.fullmatch(r"[^\W\d][\w.]*", named) else "x"
        if any("autocast(" in line for line in rec.statement_lines):
            lows = [t for t in (rec.failed_op[1] if rec.failed_op else ()) if t.dtype in halved]
            made = _snippet_name(rec, lows[0], frame) if lows else None
            h = made if made and re.fullmatch(r"[^\W\d][\w.]*", made) else "the result"
            return hint + (
                f"Under torch.autocast, layers and matmuls give {low} results and autocast converts their "
                f"inputs to match; outside the autocast block (or in an op it does not cover) nothing is "
                f"converted, so {h}, {low} from the block, meets float32 here. Do this op inside the block too, "
                f"or convert the autocast result back: {h}.float()."
            )
        return hint + (
            f"Half precision is one dtype the whole computation must share: some operands are {low} (a "
            f"model.half() or .to(torch.{low})) and some float32, as data is made. Convert the input too, "
            f"{x}.to(torch.{low}), or keep the model float32; for mixed precision on a GPU use torch.autocast, "
            "which picks the dtype op by op."
        )
    hint += (
        "torch.tensor of Python floats and torch.randn make float32, NumPy arrays (and "
        "torch.from_numpy of them) float64. "
    )
    return hint + "Convert one to the other's dtype: x.float() for a layer's input, or x.to(w.dtype)."


def _integer_operand(rec: Recorder, frame: FrameType | None) -> str:
    """The snippet's name of the failed op's first integer operand (``t`` of a timestep fed to
    a Linear), or ``x`` where it has none to write code with."""
    for t in rec.failed_op[1] if rec.failed_op else ():
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            name = _snippet_name(rec, t, frame)
            return name if name and re.fullmatch(r"[^\W\d][\w.]*", name) else "x"
    return "x"


def scalar_hint(code: str | None) -> str:
    """``.item()`` (or ``float()``) of a tensor with more than one element: name it from the
    line's code where it reads ``name.item()``."""
    found = _ITEM_OF.search(code or "")
    name = (found.group(1) or found.group(2)) if found else "t"
    return (
        f".item() and float() read a tensor holding exactly one number, and {name} holds several. "
        f"Reduce it first ({name}.mean().item(), {name}.sum().item()), or read all its values "
        f"with {name}.tolist()."
    )


def loss_target_hint(exc: BaseException, rec: Recorder, frame: FrameType | None) -> str | None:
    """Targets a loss function cannot take: a class index out of range for cross_entropy, a
    batch of targets of another length, probabilities outside [0, 1] for binary_cross_entropy,
    integer targets where a float result must go; ``None`` for any other error."""
    text = str(exc)
    out_of_range = _TARGET_OUT_OF_BOUNDS.search(text)
    if out_of_range:
        return _class_out_of_range(int(out_of_range.group(1)), rec, frame)
    sizes = _BATCH_SIZES.search(text)
    if sizes:
        flattened = rows_made_by_view(int(sizes.group(1)), int(sizes.group(2)), rec.source_lines, None)
        if flattened:
            return flattened
        layers_first = _hidden_state_scores(int(sizes.group(2)), rec) or unbatched_sequence_hint(
            int(sizes.group(1)), int(sizes.group(2)), rec.statement_lines, frame
        )
        if layers_first:
            return layers_first
        return (
            f"The loss got {sizes.group(1)} predictions but {sizes.group(2)} targets: the first "
            "dimension of both is the batch, and it must be the same. Check the shapes of the "
            "model's output and of the targets (print both .shape): a target of one batch paired "
            "with the output of another, or logits flattened or reshaped wrongly."
        )
    if "all elements of input should be between 0 and 1" in text:
        return (
            "binary_cross_entropy (nn.BCELoss) takes probabilities, numbers between 0 and 1, and "
            "this input has others: raw scores (logits) from a linear layer. Pass the logits to "
            "F.binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss), which applies the "
            "sigmoid itself and is numerically safer, or apply torch.sigmoid first."
        )
    if "all elements of target should be between 0 and 1" in text:
        return _target_outside_unit(rec)
    if "probability tensor contains either `inf`, `nan` or element < 0" in text:
        return _sampled_from_scores(rec, frame)
    if "can't be cast to the desired output type" in text:
        return _float_into_integer(rec, frame)
    if "must match the size of tensor" in text:
        return _elementwise_loss_shapes(rec, frame)
    return None


def _hidden_state_scores(targets: int, rec: Recorder) -> str | None:
    """Scores of shape (L, N, C) for N targets: a linear layer applied to an RNN's h_n, which
    is (num_layers, batch, hidden) whatever batch_first says."""
    operands = rec.failed_op[1] if rec.failed_op else []
    scores = operands[0] if operands else None
    if scores is None or scores.dim() != 3 or scores.shape[1] != targets or not 0 < scores.shape[0] <= 8:
        return None  # (more than a few layers is no hidden state)
    layers = scores.shape[0]
    return (
        f"The scores have shape {tuple(scores.shape)}, and the loss reads dim 0 as the batch ({layers}) and "
        f"dim 1 as the classes, against {targets} targets. Scores computed from an RNN's final hidden state "
        "keep its first dimension: h_n is (num_layers, batch, hidden), even with batch_first=True. Take the "
        "last layer's, h[-1] (shape (batch, hidden)), or the output's last step, out[:, -1], before the "
        "linear layer."
    )


def _elementwise_loss_shapes(rec: Recorder, frame: FrameType | None) -> str | None:
    """A loss that compares element by element (mse_loss, l1_loss, ...) given a prediction and
    a target that do not broadcast: class indices for scores of several classes, above all."""
    if rec.failed_op is None or rec.failed_op[0].strip("_") not in _ELEMENTWISE_LOSSES:
        return None
    op, tensors = rec.failed_op[0].strip("_"), rec.failed_op[1]
    if len(tensors) < 2:
        return None
    pred, target = tensors[0], tensors[1]
    shapes = f"the prediction has shape {tuple(pred.shape)} and the target {tuple(target.shape)}"
    if pred.dim() == 2 and target.dim() == 1 and not target.is_floating_point():
        return (
            f"{op} compares prediction and target element by element, and {shapes}: one score per "
            f"class against one class index per sample ({target.dtype}). For classification use "
            "F.cross_entropy(scores, target) (nn.CrossEntropyLoss), which takes the indices as they are; "
            "for regression make the model's output and the target the same shape."
        )
    per_step = per_step_prediction(op, pred, target, rec.statement_lines, frame)
    if per_step:
        return per_step
    fix = (
        "They hold as many values: reshape the target to the prediction's shape (target.view_as(pred))."
        if pred.numel() == target.numel()
        else "Check that the model's last layer has as many outputs as the target has values per sample."
    )
    return (
        f"{op} compares prediction and target element by element, so they must have the same "
        f"shape, and {shapes}. {fix}"
    )


def _class_out_of_range(target: int, rec: Recorder, frame: FrameType | None) -> str:
    """cross_entropy's ``Target 3 is out of bounds``: the classes the logits have, and the
    usual causes (labels counted from 1, a layer with too few outputs, -1 for "no label")."""
    found = _failed_operands(rec, frame, lambda t: f"has shape {tuple(t.shape)}", "cross_entropy")
    logits = rec.failed_op[1][0] if found is not None and rec.failed_op else None
    classes = logits.shape[1] if logits is not None and logits.dim() >= 2 else None
    where = f" ({', '.join(found[1])})" if found is not None else ""
    if classes is not None:
        span = f"the input has {classes} columns, so the classes are 0 to {classes - 1}"
    else:
        span = "the classes run from 0 to the number of the input's columns minus 1"
    hint = (
        f"cross_entropy (nn.CrossEntropyLoss) takes each target as a class index, and {target} is "
        f"not one{where}: {span}. "
    )
    if target < 0:
        return hint + "To skip a sample, pass ignore_index=-1 (the default skips -100)."
    return hint + (
        "Labels counted from 1 need target - 1; more classes than the model has outputs need "
        "a last layer with one output per class (nn.Linear(…, number_of_classes))."
    )


def _float_into_integer(rec: Recorder, frame: FrameType | None) -> str:
    """``result type Float can't be cast to the desired output type Long``: a float result
    written into an integer tensor, by an in-place op or by a loss given integer targets."""
    op = rec.failed_op[0].strip("_") if rec.failed_op is not None else ""
    if "binary_cross_entropy" in op or op.endswith("loss"):
        # the loss's target, its second operand, by the snippet's name where it has one
        operands = rec.failed_op[1] if rec.failed_op is not None else []
        target = operands[1] if len(operands) > 1 and not operands[1].is_floating_point() else None
        name = _snippet_name(rec, target, frame) if target is not None else None
        fix = f"{name}.float()" if name else "target.float()"
        return (
            f"{op} computes in floating point, and the targets are integers (torch.tensor([0, 1]) "
            f"makes int64): pass {fix}. Only cross_entropy takes integer class indices."
        )
    return (
        "The op's result is a float, and it would be written into an integer tensor (an "
        "in-place op such as x += 0.5 or x.mul_(0.5) on a tensor of whole numbers, which "
        "torch.tensor([1, 2]) and torch.arange make). Make the tensor a float first "
        "(x = x.float(), or torch.arange(3.0)), or use the out-of-place form (y = x + 0.5)."
    )


# what an op's unnamed operands are, in order (a layer's parameters have no name of the snippet's)
_LAYER_ROLES = ("the input", "the layer's weight", "the layer's bias")
_ROLES = {name: _LAYER_ROLES for name in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose2d")}
# losses that compare a prediction with a target of the same shape
_ELEMENTWISE_LOSSES = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"})
# "Target 3 is out of bounds." (nll_loss, under cross_entropy)
_TARGET_OUT_OF_BOUNDS = re.compile(r"Target (-?\d+) is out of bounds")
# "Expected input batch_size (4) to match target batch_size (3)."
_BATCH_SIZES = re.compile(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)")
# "loss.item()", "float(loss)": the tensor a scalar was read from
_ITEM_OF = re.compile(r"([^\W\d][\w.]*?)\.item\(\)|float\(([^\W\d]\w*)\)")


# the functional ops with an inplace=True (nn.ReLU(inplace=True) calls F.relu(x, inplace=True))
_INPLACE_ACTIVATIONS = frozenset(
    {
        *("relu", "relu6", "leaky_relu", "elu", "selu", "celu", "rrelu", "hardtanh", "silu", "mish"),
        *("hardswish", "hardsigmoid", "threshold", "dropout", "alpha_dropout", "dropout1d", "dropout2d"),
    }
)


def inplace_leaf_hint(rec: Recorder, frame: FrameType | None) -> str | None:
    """An activation run in place (``nn.ReLU(inplace=True)``, ``F.relu(x, inplace=True)``) on
    a leaf that requires grad, such as an input whose gradient is asked for (a saliency map):
    the fix is the layer's ``inplace``, not an update under no_grad. ``None`` for any other op."""
    if rec.failed_op is None or rec.failed_op[0].strip("_") not in _INPLACE_ACTIVATIONS:
        return None
    name, tensors = rec.failed_op
    op = name.strip("_")
    leaf = tensors[0] if tensors else None
    label = (_snippet_name(rec, leaf, frame) if leaf is not None else None) or "its input"
    return (
        f"{op} ran in place on {label}, a leaf that requires grad (a tensor made with requires_grad=True, "
        f"whose gradient you asked for): an activation built with inplace=True (nn.ReLU(inplace=True), "
        f"F.{op}(x, inplace=True)) overwrites the tensor it is given, and autograd cannot let a leaf change "
        f"under it. Build that layer without inplace (nn.ReLU()), or give it a copy ({label}.clone()); "
        "inplace=True only saves memory on tensors computed inside the model."
    )


def _target_outside_unit(rec: Recorder) -> str:
    """binary_cross_entropy given targets outside [0, 1]: class indices, or labels -1 and 1."""
    operands = rec.failed_op[1] if rec.failed_op else []
    target = operands[1] if len(operands) > 1 else None
    values: list[float] = []
    if target is not None and target.numel() <= 1_000_000:
        values = sorted(set(target.detach().flatten().tolist()))
    shown = f" ({', '.join(f'{v:g}' for v in values)})" if 0 < len(values) <= 8 else ""
    if values and min(values) == -1 and max(values) == 1:
        fix = "Labels -1 and 1 map to 0 and 1 with (y + 1) / 2."
    elif values and all(float(v).is_integer() for v in values) and max(values) > 1:
        fix = (
            f"Classes numbered 0 to {max(values):g} are more than two: give the model one output per class "
            "and use F.cross_entropy (nn.CrossEntropyLoss) with the integer labels."
        )
    else:
        fix = "Scale the targets into [0, 1], or use a loss for other values (F.mse_loss for regression)."
    return (
        "binary_cross_entropy (nn.BCELoss) compares each prediction with a target that "
        f"is a probability, between 0 and 1 (a label 0 or 1), and this target holds others{shown}. {fix}"
    )


def _sampled_from_scores(rec: Recorder, frame: FrameType | None) -> str | None:
    """torch.multinomial given raw scores (logits, some negative) where it wants weights."""
    if rec.failed_op is None or rec.failed_op[0].strip("_") != "multinomial" or not rec.failed_op[1]:
        return None
    weights = rec.failed_op[1][0]
    if not weights.is_floating_point() or not bool(torch.isfinite(weights).all()):
        return None  # a NaN or inf: a model that diverged, not scores passed as weights
    name = find_name(weights, frame) or "the scores"
    lowest = float(weights.min())
    return (
        f"torch.multinomial draws with the probabilities (or weights, 0 or more) it is given, and {name} "
        f"holds negative numbers (the lowest {lowest:.4g}): raw scores, logits. Turn them into "
        f"probabilities first, torch.multinomial(torch.softmax({name}, dim=-1), …), or sample with "
        f"torch.distributions.Categorical(logits={name}).sample()."
    )
