"""Explain the errors PyTorch raises in words a learner can act on."""

from __future__ import annotations

import re
import sys
from types import FrameType
from typing import TYPE_CHECKING

import torch

from .explain_autograd import autograd_rule_hint
from .explain_calls import call_hint
from .explain_carried import carried_graph_hint, carried_through_step_hint
from .explain_complex import complex_hint
from .explain_counts import count_hint
from .explain_ctc import ctc_hint
from .explain_discarded import discarded_conversion
from .explain_dtype_writes import dtype_write_hint
from .explain_einsum_terms import einsum_terms_hint
from .explain_environment import environment_hint
from .explain_factories import factory_hint
from .explain_flatten import view_sized_wrong
from .explain_func_inputs import func_input_hint
from .explain_function_returns import function_return_hint
from .explain_functions import custom_function_hint
from .explain_grad import none_grad_hint
from .explain_hooks import hook_hint
from .explain_indexing import indexing_hint
from .explain_inference import inference_tensor_hint
from .explain_init import init_hint
from .explain_inplace import (
    changed_saved_tensor,
    element_set_on_leaf,
    indexed_write_on_leaf,
    view_changed_in_place,
)
from .explain_integer_ops import integer_op_hint
from .explain_layer_settings import layer_setting_hint
from .explain_layout import layout_hint
from .explain_linalg import linalg_hint
from .explain_loaders import loader_hint
from .explain_lookup_shapes import lookup_shape_hint
from .explain_matmul import matmul_hint
from .explain_modules import model_definition_hint
from .explain_names import class_called_with_data, misspelt_attribute, tensor_called
from .explain_ops import devices_of_failed_op, dtype_hint, inplace_leaf_hint, loss_target_hint, scalar_hint
from .explain_optim_args import optimizer_argument_hint
from .explain_packed import packed_hint
from .explain_paired_inputs import paired_input_hint
from .explain_practice import practice_hint
from .explain_recurrent import recurrent_hint
from .explain_saving import saving_hint
from .explain_sequences import sequence_hint
from .explain_setup import setup_hint
from .explain_shaping import shaping_hint
from .explain_spatial import spatial_hint
from .explain_step_args import step_argument_hint
from .explain_targets import cross_entropy_hint, spatial_target_hint
from .explain_tools import tools_hint
from .explain_train_steps import leaf_view_write_hint, train_step_hint
from .explain_transforms import transform_hint
from .explain_undefined import undefined_name_hint
from .explain_values import module_class_hint, returned_pair_hint, value_kind_hint
from .explain_vmap_args import vmap_argument_hint
from .memory import saved_by
from .source import quoted_code
from .text import exception_text

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["error_node", "explain_error", "metrics_only_after", "metrics_only_calls"]


def error_node(exc: BaseException, rec: Recorder) -> int | None:
    """The id of the graph node an error is about, where the recorder knows it: the node
    whose saved tensor backward found changed in place, or the node whose gradient anomaly
    mode found NaN."""
    text = exception_text(exc)
    if "modified by an inplace operation" in text and rec.memory.changed is not None:
        by = saved_by(rec.memory.changed)
        return by.node_id if by is not None else None
    nan = _NAN_IN_BACKWARD.search(text)
    ran = rec.backward.last_ran
    if nan and ran is not None and ran[1] == nan.group(1):
        return ran[0]
    return None


def _changed_tensor(text: str) -> str | None:
    """The sizes of the tensor an in-place error names (``[8, 8]`` of ``[torch.FloatTensor
    [8, 8]]``), if it names one."""
    named = re.search(r"\[torch\.\w+ (\[[\d, ]*\])\]", text)
    return named.group(1) if named else None


def _code_at(rec: Recorder, line: int | None, longest: int = 60) -> str | None:
    """The snippet's code at ``line``, when it is short enough to quote."""
    return quoted_code(rec.statement_lines, line, longest)


def _made_at(rec: Recorder, t: torch.Tensor) -> int | None:
    """The snippet line that made tensor ``t``, where the run saw it made."""
    tid = rec.tensors.known(t)
    return rec.tensors.lines.get(tid) if tid is not None else None


def metrics_only_after(rec: Recorder) -> int | None:
    """The optimizer steps done when an error came while only metrics were recorded (after
    the first ``Limits.detail_steps`` steps), else ``None``: the failing iteration then has
    no tape, graph or walk in the trace, and ``detail_every`` one more records it in full."""
    if rec.detail or not rec.training.total_steps:
        return None
    return rec.training.steps_done


def metrics_only_calls(rec: Recorder) -> int | None:
    """The backward() calls done when an error came in a loop that steps by hand while only
    metrics were recorded (past its first ``Limits.detail_calls`` calls: NOTE [Loops that step
    by hand] in hand_loops.py), else ``None``; ``detail_every`` one more records the failing
    iteration in full."""
    if rec.detail or not rec.hand_loop.counting:  # counting ends when an optimizer steps
        return None
    return rec.backward.calls


def _raised_by_failed_op(exc: BaseException, rec: Recorder) -> bool:
    """Whether ``exc`` is what the last op that failed raised, or was raised from it.

    # NOTE [The op an error came from]
    # The tape keeps the last op that raised (``rec.failed_op``: its name and tensors) so a
    # hint can name its operands. A snippet may catch that error and go on; a later error
    # that is not an op's (a ``raise`` of its own, a failure inside backward) would then be
    # explained with the operands of an op that failed long before. The tape also keeps the
    # id and text of the op's exception, and a hint reads the op only for that exception or
    # one raised while handling it (its ``__cause__`` or ``__context__``).
    """
    if rec.failed_op_error is None:
        return False
    seen: BaseException | None = exc
    for _ in range(8):  # a chain of re-raises is short; a cycle must not loop
        if seen is None:
            return False
        if (id(seen), str(seen)) == rec.failed_op_error:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _thrown_away(rec: Recorder, line: int | None, frame: FrameType | None) -> str | None:
    """:func:`discarded_conversion` of the failed op's operands (``x.float()`` kept nowhere)."""
    return discarded_conversion(rec.statement_lines, line, frame, rec.failed_op[1] if rec.failed_op else ())


def explain_error(
    exc: BaseException, rec: Recorder, line: int | None, frame: FrameType | None = None
) -> str | None:
    """Return a short explanation and fix for a known PyTorch error, or ``None``."""
    text = str(exc)
    if rec.failed_op is None:  # a handler of the snippet's caught it, and raised it again
        rec.failed_op = rec.loop_ends.failed_op_again()  # NOTE [A caught error's operands are freed]
    if not _raised_by_failed_op(exc, rec):
        rec.failed_op = None  # NOTE [The op an error came from]
    if "backward through the graph a second time" in text:
        carried = carried_graph_hint(rec.statement_lines, line, frame)
        if carried:
            return carried
        first = rec.backward.first_backward_line
        where = f" (the first one ran at line {first})" if first else ""
        return (
            "The first backward() freed the graph's saved tensors" + where + ". Recompute the forward "
            "pass before calling backward() again, or pass retain_graph=True to the first call if you "
            "really need two passes through the same graph."
        )
    if "same device" in text or "is not on the expected device" in text:
        thrown = _thrown_away(rec, line, frame)
        if thrown:
            return f"{thrown} The operands of one operation live on different devices{devices_of_failed_op(rec, frame)}."
        return (
            "The operands of one operation live on different devices"
            + devices_of_failed_op(rec, frame)
            + ". Move them together with .to(device) (for a model: model.to(device); for data: "
            "xb.to(device))."
        )
    if "modified by an inplace operation" in text:
        # which node saved what, and the step that changed it, where the recorder saw it
        known = changed_saved_tensor(rec, step_only=True)
        through_step = rec.training.total_steps > 0 and carried_through_step_hint(
            rec.statement_lines, line, frame, None if known else _changed_tensor(text)
        )
        if through_step:
            return through_step + (f" Here {known}." if known else "")
        changed = changed_saved_tensor(rec)
        if changed:
            return changed
        after = metrics_only_after(rec)
        calls = metrics_only_calls(rec)
        if after is not None or calls is not None:
            when = f"optimizer step {after}" if after is not None else f"backward() call {calls}"
            return (
                f"{_INPLACE_HINT} Which node saved it and which line changed it show when this "
                f"iteration (after {when}, recorded metrics-only) is recorded in full."
            )
    if isinstance(exc, NameError):
        return undefined_name_hint(exc, rec.source_lines, line, frame)
    code = _code_at(rec, line, 200)
    called = (
        spatial_target_hint(text, rec, frame)
        or module_class_hint(code, frame)
        or model_definition_hint(text, rec.statement_lines, line, frame)
        # (before the returned pair's: an LSTM's (h0, c0) given to a GRU is a pair too)
        or setup_hint(text, code, rec.statement_lines)
        or returned_pair_hint(code, frame, text)
        or function_return_hint(text, code, frame, rec.statement_lines)
        or custom_function_hint(text, code, frame)
        or hook_hint(text, code, rec.statement_lines, frame)
        or loader_hint(exc, rec, code, frame)
        or saving_hint(exc, rec, code, frame)
        or call_hint(exc, rec, code, frame)
        or transform_hint(exc, code, frame)
        or linalg_hint(exc, code, frame, rec.statement_lines)
        or packed_hint(exc, rec, code, frame)
        or optimizer_argument_hint(exc, code, frame)
        or complex_hint(exc, code, frame)
        or einsum_terms_hint(text, code)
        or vmap_argument_hint(text, code, frame, rec.statement_lines)
        or func_input_hint(exc, code, frame)
        or layer_setting_hint(text, code, frame)
        or ctc_hint(text, code, frame)
        or init_hint(exc, code, frame)
        or dtype_write_hint(text, code, frame)
        or lookup_shape_hint(text, code, frame)
        or train_step_hint(text, code, frame)
        or sequence_hint(text, code, frame, rec.failed_op)
        or count_hint(text, code, frame, rec.failed_op)
        or paired_input_hint(text, frame, rec.failed_op)
        or step_argument_hint(text, code, frame)
    )
    if called:
        return called
    if "NoneType" in text and ".grad" in (code or ""):
        only_grad = (
            rec.backward.first_backward_line if rec.backward.calls and rec.backward.grad_only else None
        )
        why = none_grad_hint(
            code,
            frame,
            lambda t: _made_at(rec, t),
            lambda at: _code_at(rec, at, 200),
            rec.backward.calls,
            only_grad,
        )
        return why or (
            "A .grad on this line is None: it stays None until a backward() call reaches the "
            "tensor (call loss.backward() first), for a tensor that does not require grad, and for "
            "one that is not a leaf unless you call .retain_grad() on it before backward()."
        )
    autograd = autograd_rule_hint(text, code, frame, rec, line)
    if autograd:
        return autograd
    if _DIFFERENT_DTYPES.search(text):
        hint = dtype_hint(rec, frame)
        thrown = _thrown_away(rec, line, frame)
        return f"{thrown} {hint.split('. ', 1)[0]}." if thrown else hint
    if "cannot be converted to Scalar" in text:
        return scalar_hint(code)
    inference = inference_tensor_hint(text, code, frame, lambda t: _made_at(rec, t))
    if inference:
        return inference
    environment = environment_hint(exc, text, rec.source_lines)
    if environment:
        return environment
    loss = loss_target_hint(exc, rec, frame) or cross_entropy_hint(text, rec, frame)
    if loss:
        return loss
    product = matmul_hint(exc, rec, frame, code)
    if product:
        return product
    layout = (
        spatial_hint(text, rec.failed_op, frame, lambda t: _code_at(rec, _made_at(rec, t), 200))
        or indexing_hint(exc, rec, code, frame)
        # (after indexing's narrower hints; before layout's generic ones, which read some of the
        # same errors, a linear layer's input or torch.cat's sizes, without their cause)
        or practice_hint(exc, rec, code, frame)
        # (after practice's distribution hints, which name a log-scale or raw scores)
        or tools_hint(exc, code, frame, rec.statement_lines, rec.failed_op)
        or factory_hint(exc, rec, code, frame)
        or layout_hint(exc, rec, code, frame)
        or integer_op_hint(text, code, frame, rec.failed_op)
        or value_kind_hint(text, code, frame)
        or view_sized_wrong(text, rec.failed_op[1] if rec.failed_op else (), code)
    )
    if layout:
        return layout
    if _UNINITIALISED_MODULE.search(text):
        return _MODULE_INIT_HINT
    if "leaf Variable that requires grad is being used in an in-place" in text:
        activation = (
            inplace_leaf_hint(rec, frame)
            or leaf_view_write_hint(code, frame)
            or _bare_no_grad_hint(rec.statement_lines, line)
            or element_set_on_leaf(code)
            or indexed_write_on_leaf(code)
        )
        if activation:
            return activation
    viewed = view_changed_in_place(text, code)
    if viewed:
        return viewed
    named = (
        shaping_hint(text, code, rec.failed_op)
        or recurrent_hint(text, code, frame)
        or class_called_with_data(text, code, frame)
        or misspelt_attribute(text, code, frame)
        or tensor_called(text, code, rec.statement_lines, frame, line)
    )
    if named:
        return named
    for phrase, hint in _PLAIN_HINTS:
        if phrase in text:
            return hint
    nan = _NAN_IN_BACKWARD.search(text)
    if nan:
        return (
            f"Anomaly detection stopped backward at the first node whose gradient came out NaN: "
            f"{nan.group(1)}. Its derivative is infinite or undefined where it was taken (sqrt or log "
            "at 0, a division by 0), and inf times 0 is NaN. The warning above names the forward line "
            "that made the node: keep its input off the edge (torch.sqrt(x + 1e-8)) or mask it first."
        )
    shapes = _MATMUL_SHAPES.search(text)
    if shapes:
        cols, rows = shapes.groups()
        return (
            f"In a matrix product the left operand's columns must match the right one's rows: here "
            f"{cols} and {rows}. For nn.Linear(in_features, out_features) the input's last dimension "
            f"must be in_features ({rows} here; the weight enters transposed): check the input's "
            "shape, or the layer's in_features."
        )
    return None


_BARE_NO_GRAD = re.compile(r"^torch\.(?:no_grad|inference_mode)\(\)$")


def _bare_no_grad_hint(source_lines: list[str], line: int | None) -> str | None:
    """A leaf changed in place below a ``torch.no_grad()`` written as a statement of its own,
    which makes the context manager and drops it: nothing was switched off."""
    for at in range(line - 1 if line else 0, 0, -1):
        code = quoted_code(source_lines, at, sys.maxsize) or ""
        if _BARE_NO_GRAD.match(code):
            return (
                f"Line {at} ({code}) makes a no_grad context and drops it: on its own it switches nothing off, "
                "so this in-place update of a leaf that requires grad is recorded, and refused. Use it as a "
                "block, with the update indented under it: with torch.no_grad(): then w -= lr * w.grad."
            )
    return None


_INPLACE_HINT = (
    "A tensor that autograd saved for backward was changed in place afterwards. Use the "
    "out-of-place form (x = x + 1 instead of x += 1 / x.add_(1)), or .clone() the tensor first."
)
# (a phrase of PyTorch's message, what to tell the learner), for errors whose fix needs no
# detail of the run
_MODULE_INIT_HINT = (
    "nn.Module keeps a model's layers and parameters in tables its own __init__ makes, and this model's "
    "__init__ never ran it (or used them before it ran). Call super().__init__() first thing in the "
    "model's __init__, before any self.layer = …."
)
# what a model whose __init__ never called super().__init__() lacks when it is used
_UNINITIALISED_MODULE = re.compile(
    r"'\w+' object has no attribute '_(?:parameters|modules|buffers|backward_hooks|backward_pre_hooks|"
    r"forward_hooks|forward_pre_hooks|state_dict_hooks|non_persistent_buffers_set)'"
)
_PLAIN_HINTS = (
    ("modified by an inplace operation", _INPLACE_HINT),
    (
        "a leaf Variable that requires grad is being used in an in-place operation",
        "A leaf that requires grad (a parameter, or a tensor made with requires_grad=True) cannot be "
        "changed in place while autograd records. Update it inside `with torch.no_grad():` "
        "(w -= lr * w.grad), as an optimizer's step() does.",
    ),
    (
        "appears to not have been used in the graph",
        "torch.autograd.grad was asked for the gradient of an input the output does not depend on. "
        "Leave that input out, or pass allow_unused=True (its gradient then comes back as None; "
        "materialize_grads=True gives zeros).",
    ),
    (
        "you can only change requires_grad flags of leaf variables",
        "Only a leaf (a tensor you made, not one computed from others) has a requires_grad of its "
        "own; a computed tensor requires grad when its inputs do. For its values outside the graph "
        "take y.detach(); for a new leaf to optimise, y.detach().requires_grad_().",
    ),
    (
        "EOF when reading a line",
        "input() has nothing to read: a recorded snippet has no keyboard (its standard input is "
        "empty). Put the value in the code instead: name = 'Ada'.",
    ),
    (
        "expected target dtype to be Long",
        "The loss takes its targets as class indices, integers of dtype torch.long: pass the "
        "targets as .long() (cross_entropy also takes class probabilities, floats of the input's "
        "shape; nll_loss takes indices only).",
    ),
    (
        # the same, in the words of older PyTorch (2.11), which other ops use too
        "expected scalar type Long but found",
        "This op takes integers of dtype torch.long here (class indices for cross_entropy or "
        "nll_loss, indices for embedding or gather) and got another dtype: pass target.long().",
    ),
    ("before Module.__init__() call", _MODULE_INIT_HINT),
    (
        "Expected more than 1 value per channel when training",
        "BatchNorm in training mode normalises each channel over the batch, so it needs at least 2 "
        "samples, and this batch has 1. Use batches of 2 or more (DataLoader(..., drop_last=True) "
        "drops a last batch of one), or call model.eval() first to run one sample on the running "
        "statistics.",
    ),
    (
        "must match the size of tensor b",
        "Broadcasting lines the shapes up from the right: each dimension must be equal, or 1 in one "
        "of the two. Print both .shape; reshape, unsqueeze or transpose one operand.",
    ),
)

# "expected m1 and m2 to have the same dtype", "mat1 and mat2 must have the same dtype",
# "Found dtype Double but expected Float" (a loss's backward, older PyTorch)
# ... and a convolution's "Input type (unsigned char) and bias type (float) should be the same"
_DIFFERENT_DTYPES = re.compile(
    r"(to|must) have the same dtype|Found dtype \w+ but expected \w+"
    r"|Input type \([a-z ]+\) and (?:bias|weight) type \([a-z ]+\) should be the same"
    r"|expected scalar type (?!Long\b)\w+ but found \w+"  # bmm, einsum: "… type Half but found Float"
)

# "mat1 and mat2 shapes cannot be multiplied (64x10 and 784x256)"
_MATMUL_SHAPES = re.compile(r"shapes cannot be multiplied \(\d+x(\d+) and (\d+)x\d+\)")
# "Function 'SqrtBackward0' returned nan values in its 0th output." (anomaly mode)
_NAN_IN_BACKWARD = re.compile(r"Function '(\w+)' returned nan values")
