"""Errors of PyTorch's training tools, said in the snippet's terms: torch.distributions (in
explain_distributions.py); an optimizer's parameter groups sharing parameters, a list mixing
tensors and group dicts, a hyperparameter given as a string (at the optimizer or, in a group,
at its step), a parameters() generator read twice; a GradScaler unscaled twice between
updates, never updated, or stepped with the loss; token embeddings plus a positional table of
another length or width; a 3-D key_padding_mask. PyTorch's own messages ("some parameters
appear in more than one parameter group"; "'<=' not supported between instances of 'float'
and 'str'") name none of the snippet's variables.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Sequence
from types import FrameType

import torch

from .explain_distributions import distribution_hint, first_call, lookup, parsed_line

__all__ = ["tools_hint"]

_STR_FLOAT = re.compile(r"not supported between instances of '(?:float' and 'str|str' and 'float)'")
_PADDING_3D = re.compile(r"expected `(\w*key_padding_mask)` to be `None` or 2-D but found 3-D tensor")


def tools_hint(
    exc: BaseException,
    code: str | None,
    frame: FrameType | None,
    source_lines: Sequence[str],
    failed: tuple[str, list[torch.Tensor]] | None = None,
) -> str | None:
    """The hint for ``exc`` raised at a line reading ``code`` (see the module's docstring),
    by the op ``failed`` where the tape saw it; ``None`` for any other error."""
    text = str(exc)
    if "must match the size of tensor b" in text and failed is not None:
        return _positional(failed, code)
    if re.fullmatch(r"(?:max|avg)_pool1d\(\) Invalid computed output size: -?\d+|.*pool1d.*too small", text):
        return _short_pool(code, frame)
    if _PADDING_3D.search(text):
        return _padding_3d(code, frame)
    distribution = distribution_hint(exc, code, frame)
    if distribution:
        return distribution
    if text == "optimizer got an empty parameter list":
        return _spent_generator(code, frame, source_lines)
    if text == "some parameters appear in more than one parameter group":
        return _shared_groups(code, frame)
    if text == "optimizer can only optimize Tensors, but one of the params is dict":
        return _mixed_groups(code)
    if ("'str'" in text and ".step(" in (code or "")) and isinstance(exc, TypeError):
        stepped = _string_in_groups(code or "", frame)
        if stepped:
            return stepped
    if _STR_FLOAT.search(text):
        return _string_hyperparameter(code, frame)
    if "unscale_() has already been called on this optimizer since the last update()" in text:
        return _unscaled_twice(code, source_lines)
    if "unscale_() is being called after step()" in text:
        return _unscaled_twice(code, source_lines, after_step=True)
    if "'Tensor' object has no attribute 'param_groups'" in text and ".step(" in (code or ""):
        return _scaler_step_of_loss(code or "", frame)
    return None


_POSITIONAL = re.compile(r"pos|\bpe\b|\bpe\[|\bpe_", re.I)


def _positional(failed: tuple[str, list[torch.Tensor]], code: str | None) -> str | None:
    """Token embeddings (N, T, E) plus a positional table (1, P, E') or (P, E') of another
    length or width."""
    op, operands = failed
    add = next(
        (n for n in ast.walk(parsed_line(code)) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add)),
        None,
    )
    if op not in ("add", "add_") or len(operands) != 2 or add is None:
        return None
    written = [ast.unparse(add.left), ast.unparse(add.right)]
    order = [0, 1] if operands[0].dim() == 3 else [1, 0]
    (x, xs), (table, ts) = ((operands[i], written[i]) for i in order)
    if x.dim() != 3 or table.dim() not in (2, 3) or (table.dim() == 3 and table.shape[0] != 1):
        return None
    if not _POSITIONAL.search(ts) or _POSITIONAL.search(xs):
        return None
    _n, steps, width = x.shape
    places, wide = table.shape[-2], table.shape[-1]
    shown = tuple(table.shape)
    if wide != width:
        return (
            f"{xs} is (batch, length, width) = {tuple(x.shape)} and the positional table {ts} is {shown}, "
            f"{wide} wide: a position's encoding is added to its token's embedding, so both must be d_model wide. "
            f"Build them with one d_model: the embedding {wide} wide (nn.Embedding(vocab, {wide})) or the table "
            f"{width} wide."
        )
    if places == steps:
        return None
    cut = f"{ts}[:, :{steps}]" if table.dim() == 3 else f"{ts}[:{steps}]"
    if places > steps:
        return (
            f"{xs} holds sequences of {steps} tokens, {tuple(x.shape)}, and the positional table {ts}, {shown}, "
            f"holds {places} positions: add only the first {steps}, {cut} ({steps} being the sequence's own length, "
            "x.size(1))."
        )
    return (
        f"{xs} holds sequences of {steps} tokens, {tuple(x.shape)}, and the positional table {ts}, {shown}, holds "
        f"only {places} positions: build it with max_len of at least {steps} (the longest sequence it will see), "
        f"or cut the sequences to {places} tokens."
    )


def _short_pool(code: str | None, frame: FrameType | None) -> str | None:
    """A 1-D pooling whose window is longer than its input's last dimension."""
    for node in ast.walk(parsed_line(code)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        layer, given = lookup(ast.unparse(node.func), frame), ast.unparse(node.args[0])
        x = lookup(given, frame)
        if not isinstance(layer, torch.nn.MaxPool1d | torch.nn.AvgPool1d) or not isinstance(x, torch.Tensor):
            continue
        window = layer.kernel_size if isinstance(layer.kernel_size, int) else layer.kernel_size[0]
        name = ast.unparse(node.func)
        swapped = (
            f" It reads (N, C, L): if {given} is (batch, length, channels), move the channels first, "
            f"{name}({given}.transpose(1, 2)) (and back after)."
            if x.dim() == 3 and x.shape[1] >= window
            else ""
        )
        return (
            f"{name}, nn.{type(layer).__name__}({window}), slides a window of {window} along the last dimension of "
            f"{given}, {tuple(x.shape)}, which is only {x.shape[-1]} long, so no window fits.{swapped} Otherwise "
            "use a smaller window, padding, or a longer input."
        )
    return None


def _padding_3d(code: str | None, frame: FrameType | None) -> str:
    tree = parsed_line(code)
    given = next(
        (
            ast.unparse(k.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            for k in n.keywords
            if k.arg and k.arg.endswith("key_padding_mask")
        ),
        "the mask",
    )
    mask = lookup(given, frame)
    ones = [d for d, n in enumerate(mask.shape) if n == 1] if isinstance(mask, torch.Tensor) else []
    fix = f" Drop its extra dimension: {given}.squeeze({ones[-1]})." if len(ones) >= 1 else ""
    shape = f" is {tuple(mask.shape)}" if isinstance(mask, torch.Tensor) else " is 3-D"
    return (
        f"key_padding_mask is (batch, key length), one flag per key of each sequence, and {given}{shape}.{fix} "
        "(A mask per query and key, (batch × heads, length, length), goes in attn_mask instead.)"
    )


def _group_params(code: str | None) -> tuple[list[str], list[str]]:
    """What ``code``'s optimizer call lists: the ``"params"`` of each group dict, and the
    entries of the list that are not dicts."""
    groups: list[str] = []
    bare: list[str] = []
    for node in ast.walk(parsed_line(code)):
        if isinstance(node, ast.List) and any(isinstance(e, ast.Dict) for e in node.elts):
            for e in node.elts:
                if isinstance(e, ast.Dict):
                    for k, v in zip(e.keys, e.values, strict=True):
                        if isinstance(k, ast.Constant) and k.value == "params":
                            groups.append(ast.unparse(v))
                else:
                    bare.append(ast.unparse(e))
    return groups, bare


def _inside(part: str, whole: str, frame: FrameType | None) -> bool:
    """Whether the parameters ``part`` lists are among ``whole``'s (model[1].parameters() of
    model.parameters(), or head.parameters() where head is one of model's modules)."""
    model = whole.split(".")[0]
    if re.match(rf"{model}\b", part):
        return True
    outer, inner = lookup(model, frame), lookup(part.split(".")[0], frame)
    return isinstance(outer, torch.nn.Module) and any(m is inner for m in outer.modules())


def _shared_groups(code: str | None, frame: FrameType | None) -> str:
    groups, _ = _group_params(code)
    whole = next((g for g in groups if re.fullmatch(r"[^\W\d]\w*\.parameters\(\)", g)), None)
    part = next((g for g in groups if g != whole and whole and _inside(g, whole, frame)), None)
    if whole and part:
        model = whole.split(".")[0]
        return (
            f"An optimizer keeps each parameter in one group only, and {whole} already holds every parameter "
            f"of {model}, {part}'s among them, so they sit in two groups. Give the first group the rest: "
            f"special = {{id(p) for p in {part}}}, then {{'params': [p for p in {whole} if id(p) not in special]}}."
        )
    listed = " and ".join(groups) if len(groups) > 1 else "the groups"
    return (
        f"An optimizer keeps each parameter in one group only, and {listed} share some. Split them so each "
        "parameter is listed once (collect one group's ids, {id(p) for p in …}, and leave those out of the other)."
    )


def _mixed_groups(code: str | None) -> str:
    _, bare = _group_params(code)
    if bare:
        wrapped = ", ".join(f"{{'params': [{b}]}}" for b in bare)
        return (
            f"An optimizer takes either tensors (one group) or group dicts, not both in one list, and "
            f"{', '.join(bare)} is a tensor beside the group dicts. Give it a group of its own: {wrapped}."
        )
    return (
        "An optimizer takes either tensors (one group) or group dicts, not both in one list: wrap each bare "
        "tensor in a group of its own, {'params': [t]}."
    )


def _string_hyperparameter(code: str | None, frame: FrameType | None) -> str | None:
    for node in ast.walk(parsed_line(code)):
        if not isinstance(node, ast.Call) or not _optimizer_call(node):
            continue
        for kw in node.keywords:
            value = (
                kw.value.value if isinstance(kw.value, ast.Constant) else lookup(ast.unparse(kw.value), frame)
            )
            if kw.arg and isinstance(value, str):
                written = ast.unparse(kw.value)
                if written != repr(value):
                    written = f"{written} = {value!r}"
                try:
                    number = repr(float(value))
                except ValueError:
                    return None
                return (
                    f"{kw.arg} is given as a string, {written}, and the optimizer checks it against 0 as a "
                    f"number. Pass the number, {kw.arg}={number} (read from a config file or the command line, "
                    f"convert it: float({ast.unparse(kw.value)}))."
                )
    return None


def _spent_generator(code: str | None, frame: FrameType | None, source_lines: Sequence[str]) -> str | None:
    """An optimizer given a generator (params = model.parameters()) that something read before."""
    call = next(
        (n for n in ast.walk(parsed_line(code)) if isinstance(n, ast.Call) and _optimizer_call(n)), None
    )
    if call is None or not call.args or not isinstance(call.args[0], ast.Name):
        return None
    name = call.args[0].id
    if not inspect.isgenerator(lookup(name, frame)):
        return None
    made = next(
        (
            (i, m.group(1))
            for i, line in enumerate(source_lines, 1)
            if (m := re.match(rf"\s*{name}\s*=\s*(.+?)\s*$", line))
        ),
        None,
    )
    at, source = made if made else (None, "model.parameters()")
    readers = [
        i
        for i, line in enumerate(source_lines, 1)
        if at is not None
        and i > at
        and re.search(rf"\b{name}\b", line)
        and line.strip() != (code or "").strip()
    ]
    before = f" (line {readers[0]})" if readers else ""
    return (
        f"{name} is a generator, {source}{f' (line {at})' if at else ''}, and it gives its items once: what read it "
        f"before{before} took them all, so this optimizer found none. Call {source} afresh for each optimizer, "
        f"or keep a list, {name} = list({source})."
    )


def _string_in_groups(code: str, frame: FrameType | None) -> str | None:
    """opt.step() of an optimizer one of whose groups holds a hyperparameter as a string."""
    call = first_call(code, "step")
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    opt_name = ast.unparse(call.func.value)
    opt = lookup(opt_name, frame)
    if not isinstance(opt, torch.optim.Optimizer):
        return None
    for i, group in enumerate(opt.param_groups):
        for key, value in group.items():
            if isinstance(value, str):
                return (
                    f"{opt_name}'s parameter group {i} holds {key} as a string, {value!r}, and step() computes with it "
                    f"as a number. Write the number where the group is made, '{key}': {value} (or float(...) of "
                    "a value read from a config)."
                )
    return None


def _optimizer_call(node: ast.Call) -> bool:
    """Whether ``node`` builds an optimizer or a scheduler (torch.optim.Adam(…), SGD(…))."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name[:1].isupper() and (hasattr(torch.optim, name) or hasattr(torch.optim.lr_scheduler, name))


def _unscaled_twice(code: str | None, source_lines: Sequence[str], after_step: bool = False) -> str:
    call = first_call(code, "unscale_")
    scaler = ast.unparse(call.func.value) if call and isinstance(call.func, ast.Attribute) else "scaler"
    opt = ast.unparse(call.args[0]) if call and call.args else "optimizer"
    lines = [i for i, s in enumerate(source_lines, 1) if f"{scaler}.unscale_(" in s]
    updates = any(f"{scaler}.update()" in s for s in source_lines)
    if not updates and (after_step or len(lines) < 2):
        return (
            f"{scaler}.unscale_({opt}) found {opt} already unscaled (or stepped) since the last {scaler}.update(), "
            f"and this snippet never calls {scaler}.update(), which readies the scaler for the next iteration. "
            f"End each iteration with "
            f"{scaler}.step({opt}) and then {scaler}.update()."
        )
    where = f" (lines {', '.join(map(str, lines))})" if len(lines) > 1 else ""
    return (
        f"{scaler}.unscale_({opt}) may run once per optimizer between {scaler}.update() calls, and it ran twice"
        f"{where}: keep the one before the clipping (or whatever reads the gradients); {scaler}.step({opt}) "
        "skips the unscaling it was already given."
    )


def _scaler_step_of_loss(code: str, frame: FrameType | None) -> str | None:
    call = first_call(code, "step")
    if call is None or not isinstance(call.func, ast.Attribute) or not call.args:
        return None
    scaler = ast.unparse(call.func.value)
    if not isinstance(lookup(scaler, frame), torch.amp.GradScaler):
        return None
    given = ast.unparse(call.args[0])
    opt = (
        next(
            (
                n
                for n, v in (frame.f_globals | frame.f_locals).items()
                if isinstance(v, torch.optim.Optimizer)
            ),
            "optimizer",
        )
        if frame
        else "optimizer"
    )
    return (
        f"{scaler}.step() takes the optimizer, {scaler}.step({opt}), not {given}: it unscales {opt}'s gradients "
        f"and calls {opt}.step(). The loss goes through {scaler}.scale({given}).backward() before it."
    )
