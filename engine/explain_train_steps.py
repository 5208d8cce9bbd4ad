"""Hints for the pieces of a training step used out of turn or half-written, beyond
explain_tools.py and explain_calls.py:

- ``clip_grad_norm_(m.parameters, …)``, ``for p in m.parameters:``, ``load_state_dict(m.state_dict)``:
  a model's method named without its call;
- ``model.load_state_dict(opt.state_dict())``: an optimizer's state loaded into a model;
- ``model.load_state_dict(torch.load(path))`` of a checkpoint of parts (``{'state_dict': …,
  'epoch': …}``), loaded whole (explain_saving.py tells it where a name holds the checkpoint);
- ``clip_grad_norm_(…, error_if_nonfinite=True)`` of gradients holding inf or NaN;
- ``scaler.step(opt)`` (or ``update()``) after a ``loss.backward()`` that scaler.scale never saw;
- ``OneCycleLR`` stepped past the total it was built for;
- a Dataset sample holding an object the default collate cannot batch;
- ``nn.MaxPool2d(…, return_indices=True)``'s (output, indices) used as one tensor;
- ``v += 1`` for ``v`` a view of a leaf that requires grad (``v = w[:2]``);
- ``checkpoint(m(x))``: the checkpointed function called rather than passed;
- ``MultiStepLR(opt, milestones=10)``: milestones are a list;
- ``x.to('gpu')``: the GPU's device is 'cuda';
- ``StepLR(opt, step_size=0)``, ``CosineAnnealingLR(opt, T_max=0)``: a period of 0 steps;
- ``DataLoader(…, shuffle=True, sampler=…)`` and ``batch_sampler`` with ``batch_size``; a
  ``WeightedRandomSampler`` of negative weights.

Each names the snippet's objects; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from types import FrameType

import torch
from torch import nn

from .explain_reading import parsed
from .source import find_name, visible_names

__all__ = ["leaf_view_write_hint", "train_step_hint"]

_UNCALLED = re.compile(
    r"'method' object is not iterable|Expected state_dict to be dict-like, got <class 'method'>"
)
_MODULE_METHODS = ("parameters", "named_parameters", "state_dict", "buffers", "children", "modules")
_OPTIMIZER_KEYS = 'Unexpected key(s) in state_dict: "state", "param_groups"'
_UNEXPECTED = re.compile(r"Unexpected key\(s\) in state_dict: (.*)")
_WEIGHTS_PARTS = ("state_dict", "model_state_dict", "model_state", "model", "net", "weights")
_NONFINITE = "is non-finite, so it cannot be clipped"
_UNSCALED = re.compile(r"Attempted (step|update) but _scale is None")
_ONE_CYCLE = re.compile(r"Tried to step (\d+) times\. The specified number of total steps is (\d+)")
_GPU_NAME = re.compile(r"device type at start of device string: (gpu|GPU|nvidia|cuda0)$")
_LOADER_CONFLICTS = {
    "sampler option is mutually exclusive with shuffle": (
        "A sampler decides the order the DataLoader takes the samples in, and shuffle=True asks for an order of its "
        "own: leave shuffle out (a RandomSampler or WeightedRandomSampler already draws in a random order)."
    ),
    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last": (
        "A batch_sampler hands the DataLoader whole batches, their size and order with them, so batch_size, shuffle, "
        "sampler and drop_last have nothing left to set: pass it alone, DataLoader(dataset, batch_sampler=…)."
    ),
}
_COLLATE = re.compile(
    r"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <class '([\w.]+)'>"
)


def train_step_hint(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``text`` raised at a line reading ``code`` (in ``frame``) that the
    module's docstring lists; ``None`` for any other."""
    if _UNCALLED.search(text):
        return _uncalled_method(code, frame)
    if _OPTIMIZER_KEYS in text:
        return _optimizer_state_in_model(code)
    parts = _UNEXPECTED.search(text)
    if parts and "Missing key(s)" in text:
        return _checkpoint_parts(re.findall(r'"([^"]+)"', parts.group(1)), code)
    if _NONFINITE in text:
        return _nonfinite_gradients(frame)
    unscaled = _UNSCALED.search(text)
    if unscaled:
        return _unscaled_backward(unscaled.group(1), frame)
    cycle = _ONE_CYCLE.search(text)
    if cycle:
        return _one_cycle_spent(int(cycle.group(1)), int(cycle.group(2)), frame)
    collate = _COLLATE.search(text)
    if collate:
        return _collated_object(collate.group(1).rsplit(".", 1)[-1])
    if "tuple" in text:
        return _pooling_pair(code, frame)
    if "'Tensor' object is not callable" in text:
        return _checkpoint_called(code)
    if "'int' object is not iterable" in text and re.search(
        r"\bMultiStepLR\(.*milestones\s*=\s*\d+\s*[,)]", code or ""
    ):
        return (
            "MultiStepLR lowers the learning rate at each epoch in a list, milestones, and was given one number: "
            "write it as a list, milestones=[…] (milestones=[30, 60] lowers it twice). For every n epochs, use "
            "StepLR(opt, step_size=n)."
        )
    if text in ("integer modulo by zero", "division by zero", "float modulo") and ".step(" in (code or ""):
        return _zero_period(frame)
    if text in _LOADER_CONFLICTS:
        return _LOADER_CONFLICTS[text]
    if "invalid multinomial distribution (encountering probability entry < 0)" in text:
        return _negative_weights(frame)
    device = _GPU_NAME.search(text)
    if device:
        return (
            f"'{device.group(1)}' is not a device name PyTorch knows: it calls an NVIDIA GPU 'cuda' (and 'cuda:0' the "
            "first of several; Apple's is 'mps'). Use the variable device, which gradwalk sets to the device the run "
            "was asked for: .to(device). Outside gradwalk: device = 'cuda' if torch.cuda.is_available() else 'cpu'."
        )
    return None


def _zero_period(frame: FrameType | None) -> str | None:
    """A scheduler built with a period of 0 steps, which its step() divides by."""
    for name, value in visible_names(frame).items():
        for setting in ("step_size", "T_max"):
            if isinstance(value, torch.optim.lr_scheduler.LRScheduler) and getattr(value, setting, None) == 0:
                kind = type(value).__name__
                return (
                    f"{name} ({kind}) was built with {setting}=0, and its step() divides the step count by {setting}: a "
                    f"period of 0 steps. A {setting} computed from the run (epochs // 10) comes out 0 for a short "
                    f"run: keep it 1 or more, {setting}=max(1, epochs // 10)."
                )
    return None


def _negative_weights(frame: FrameType | None) -> str | None:
    """A WeightedRandomSampler given a negative weight."""
    for name, value in visible_names(frame).items():
        if isinstance(value, torch.utils.data.WeightedRandomSampler) and (value.weights < 0).any():
            return (
                f"{name} draws each sample with a chance in proportion to its weight, so the weights must be 0 or "
                f"more, and the lowest is {float(value.weights.min()):g}. Weights for class balance are 1 / count "
                "of each sample's class, never negative; to leave a sample out give it 0."
            )
    return None


def _checkpoint_called(code: str | None) -> str | None:
    """``checkpoint(m(x))``: the function run at once, its tensor passed where the function goes."""
    for node in ast.walk(parsed(code) or ast.Module([], [])):
        if not (
            isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "checkpoint" and node.args
        ):
            continue
        inner = node.args[0]
        if not isinstance(inner, ast.Call):
            return None
        parts = [ast.unparse(inner.func), *map(ast.unparse, inner.args), *map(ast.unparse, node.args[1:])]
        parts += [ast.unparse(k) for k in node.keywords] or ["use_reentrant=False"]
        return (
            f"checkpoint runs the function it is given itself, in the forward pass and again in backward, so it "
            f"takes the function and its inputs apart; {ast.unparse(inner)} runs it at once and hands checkpoint its "
            f"output, a tensor. Pass the function and then its inputs: checkpoint({', '.join(parts)})."
        )
    return None


def _uncalled_method(code: str | None, frame: FrameType | None) -> str | None:
    """``m.parameters`` where ``m.parameters()`` is meant."""
    for node in ast.walk(parsed(code) or ast.Module([], [])):
        if isinstance(node, ast.Call):  # (m.parameters() itself is right: skip what it calls)
            continue
        if not (isinstance(node, ast.Attribute) and node.attr in _MODULE_METHODS):
            continue
        owner = ast.unparse(node.value)
        if isinstance(visible_names(frame).get(owner.split(".")[0]), nn.Module) and not re.search(
            rf"\b{re.escape(owner)}\.{node.attr}\(", code or ""
        ):
            return (
                f"{owner}.{node.attr} is a method, and here it is named without being called, so what is passed on "
                f"is the method itself, not what it gives. Call it: {owner}.{node.attr}()."
            )
    return None


def _optimizer_state_in_model(code: str | None) -> str:
    """A model given an optimizer's state_dict (its keys are 'state' and 'param_groups')."""
    loaded = re.search(r"([\w.]+)\.load_state_dict\((.*)\)", code or "")
    model, given = (loaded.group(1), loaded.group(2)) if loaded else ("the model", "This")
    return (
        f"{given} is an optimizer's state (its keys are 'state', the running averages, and 'param_groups', the "
        f"settings), and {model} is a model, which loads the weights a model's state_dict() gives. Load the "
        "optimizer's state into an optimizer (opt.load_state_dict(…)) and the model's into the model; a "
        "checkpoint keeps the two side by side: {'model': model.state_dict(), 'opt': opt.state_dict()}."
    )


def _checkpoint_parts(keys: list[str], code: str | None) -> str | None:
    """A checkpoint of parts loaded whole, straight from the call that read it."""
    part = next((k for k in _WEIGHTS_PARTS if k in keys), None)
    loaded = re.search(r"([\w.]+)\.load_state_dict\((.+)\)\s*$", code or "")
    if part is None or loaded is None or any("." in k for k in keys):
        return None
    model, given = loaded.groups()
    return (
        f"{given} is a checkpoint of several parts, keyed {', '.join(repr(k) for k in keys)}, and {model}'s weights "
        f"are one of them, '{part}': load_state_dict took the parts' names for weight names. Load that part: "
        f"{model}.load_state_dict({given}['{part}'])."
    )


def _nonfinite_gradients(frame: FrameType | None) -> str:
    """clip_grad_norm_ refusing gradients that hold inf or NaN."""
    bad: list[str] = []
    scope = visible_names(frame)
    for name, value in scope.items():
        if isinstance(value, nn.Module) and not name.startswith("_"):
            for pname, p in value.named_parameters():
                if p.grad is not None and not torch.isfinite(p.grad).all():
                    bad.append(f"{name}.{pname}")
        elif (
            isinstance(value, torch.Tensor)
            and value.is_leaf
            and value.grad is not None
            and not torch.isfinite(value.grad).all()
        ):
            bad.append(name)
    loss = next(
        (
            n
            for n, v in scope.items()
            if isinstance(v, torch.Tensor) and v.numel() == 1 and not torch.isfinite(v).all()
        ),
        None,
    )
    grads = [f"{b}.grad" for b in dict.fromkeys(bad[:4])]
    listed = " and ".join(grads) if len(grads) < 3 else ", ".join(grads[:-1]) + f" and {grads[-1]}"
    which = f": {listed} hold{'s' if len(grads) == 1 else ''} inf or NaN" if bad else ""
    cause = (
        f" They came from {loss}, which is {loss_value(scope[loss])}: look in the forward pass for a division by 0, "
        "a log of 0 or an exp that overflows."
        if loss
        else " Look in the forward pass for a division by 0, a log of 0 or an exp that overflows."
    )
    return (
        f"The gradients' total norm is inf or NaN{which}. Clipping scales gradients down, and cannot make such "
        f"values finite, so it refuses.{cause} To skip a bad step instead, pass error_if_nonfinite=False, and "
        "step only when the norm it returns is finite (if torch.isfinite(total): opt.step())."
    )


def loss_value(t: torch.Tensor) -> str:
    """``inf``, ``-inf`` or ``nan``: the one non-finite number ``t`` holds, as Python prints it."""
    return str(float(t.detach().reshape(-1)[0]))


def _unscaled_backward(call: str, frame: FrameType | None) -> str:
    """``scaler.step(opt)`` after ``loss.backward()`` rather than ``scaler.scale(loss).backward()``."""
    scaler = next(
        (n for n, v in visible_names(frame).items() if isinstance(v, torch.amp.GradScaler)), "scaler"
    )
    return (
        f"{scaler}.{call}() follows {scaler}.scale(): it unscales gradients the scaled loss made, and this iteration "
        f"never scaled one. Call backward() on the scaled loss, {scaler}.scale(loss).backward(), then "
        f"{scaler}.step(opt) and {scaler}.update(), in that order, each iteration."
    )


def _one_cycle_spent(stepped: int, total: int, frame: FrameType | None) -> str:
    """OneCycleLR stepped more often than the total it was built for."""
    found = next(
        (
            (n, v)
            for n, v in visible_names(frame).items()
            if isinstance(v, torch.optim.lr_scheduler.OneCycleLR)
        ),
        None,
    )
    sched = found[0] if found else "the scheduler"
    return (
        f"OneCycleLR plans its learning rate over a fixed number of {sched}.step() calls, total_steps={total} (epochs "
        f"× steps_per_epoch where given those), and this was call {stepped}: the loop steps it more often than it "
        "was told. Build it with the loop's own counts, OneCycleLR(opt, max_lr=…, epochs=EPOCHS, "
        f"steps_per_epoch=len(loader)), and call {sched}.step() once per batch."
    )


def _collated_object(kind: str) -> str:
    """A sample part the default collate cannot batch (a __getitem__ without a return has its
    hint in explain_loaders.py, which comes first)."""
    rule = "it cannot stack: each part must be a tensor, a number, a NumPy array, or a dict or list of them."
    if kind == "NoneType":
        return (
            f"The DataLoader's default collate batches each part of the samples __getitem__ gives, and one part is "
            f"None, which {rule} Put a value in its place (a label as a number or tensor), or leave that part out "
            "of the sample."
        )
    return (
        f"The DataLoader's default collate batches each part of the samples __getitem__ returns, and one part is "
        f"an object of class {kind}, which {rule} Turn it into one in __getitem__ (a PIL image with torchvision's "
        "transforms.ToTensor()), or pass DataLoader(…, collate_fn=…) that batches it yourself."
    )


def _pooling_pair(code: str | None, frame: FrameType | None) -> str | None:
    """The (output, indices) pair of a pooling built with return_indices=True, used as a tensor."""
    scope = visible_names(frame)
    pools = [
        (name, sub_name, sub)
        for name, value in scope.items()
        if isinstance(value, nn.Module)
        for sub_name, sub in value.named_modules()
        if getattr(sub, "return_indices", False)
    ]
    if not pools:
        return None
    name, sub_name, pool = pools[0]
    where = f"{name}[{sub_name}]" if sub_name.isdigit() else f"{name}.{sub_name}" if sub_name else name
    kind = type(pool).__name__
    if isinstance(scope.get(name), nn.Sequential) and sub_name:
        return (
            f"{where}, {kind}(…, return_indices=True), returns a pair, (output, indices), and nn.Sequential hands that "
            "pair whole to the next layer, which takes one tensor. Leave return_indices out inside nn.Sequential; a "
            "model that needs the indices (for nn.MaxUnpool2d) calls the pooling in a forward() of its own: "
            "out, idx = self.pool(x)."
        )
    held = next(
        (n for n in re.findall(r"(?<![\w.])[^\W\d]\w*", code or "") if _pair_of_pool(scope.get(n))), None
    )
    if held is None:
        return None
    return (
        f"{held} is what {where}, built with return_indices=True, returns: a pair, (output, indices), not a tensor. "
        f"Unpack it where the pooling is called, {held}, indices = {where}(x), or build it without return_indices."
    )


def _pair_of_pool(value: object) -> bool:
    """Whether ``value`` is a (tensor, int64 indices of its shape) pair, as a pooling returns."""
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(t, torch.Tensor) for t in value)
        and value[1].dtype == torch.int64
        and value[0].shape == value[1].shape
    )


def leaf_view_write_hint(code: str | None, frame: FrameType | None) -> str | None:
    """``v += 1`` or ``v.mul_(2)`` for ``v`` a view (``w[:2]``, ``w[0]``) of a leaf that requires grad."""
    scope = visible_names(frame)
    for name in dict.fromkeys(re.findall(r"(?<![\w.])[^\W\d]\w*", code or "")):
        v = scope.get(name)
        base = getattr(v, "_base", None) if isinstance(v, torch.Tensor) else None
        if not (isinstance(base, torch.Tensor) and base.is_leaf and base.requires_grad):
            continue
        leaf = find_name(base, frame)
        if leaf is None or leaf == name:
            continue
        return (
            f"{name} is a view of {leaf}: it shares {leaf}'s memory, so writing into {name} in place writes into "
            f"{leaf}, a leaf that requires grad, which autograd refuses while it records. For new values computed "
            f"from {leaf}, work out of place ({name} = {name} + 1, or {name} = {name}.clone() first); to change "
            f"{leaf} itself (an update), write it under with torch.no_grad():."
        )
    return None
