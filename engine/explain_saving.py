"""Hints for saving and loading a model: torch.save, torch.load, state_dict() and load_state_dict().

- A checkpoint whose every key has a prefix the model's keys lack (``"module.0.weight"`` for
  ``"0.weight"``): saved from a model wrapped in ``nn.DataParallel`` (or compiled, or kept as
  a submodule); strip it as it loads. The other way round (a wrapped model given a plain
  checkpoint): load into ``model.module``.
- ``size mismatch for 2.weight``: the key and both shapes (for a linear layer or an embedding,
  the layer each was built as); build the model as the checkpoint was, or leave those keys
  out with ``strict=False``.
- A whole model pickled by ``torch.save(model, …)``, which ``torch.load`` refuses since
  PyTorch 2.6 (``weights_only=True``): save and load the state_dict instead
  (``weights_only=False`` only as a last resort, for a file you made yourself).
- ``torch.save(model.state_dict, …)``, the method without its call: it pickles the model.
- ``torch.load(buf)`` of an ``io.BytesIO`` that ``torch.save`` just wrote: its position is
  at the end (an ``EOFError``); ``buf.seek(0)`` first.
- ``load_state_dict`` given a model (``other.state_dict()``), a path (``torch.load(path)``), or one
  tensor; keys under other names, or buffers the checkpoint lacks (explain_state_keys.py).
- ``load_state_dict`` given a whole checkpoint (``{"model": …, "opt": …}``), whose keys are
  its parts: load the part that holds the model's weights, ``ck["model"]``.
- an optimizer's ``load_state_dict`` given the model's weights (``KeyError: 'param_groups'``).
- ``model = model.load_state_dict(…)``: it returns the missing and unexpected keys, not the
  model, which the next line calls or asks for an attribute.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from .explain_reading import calls, shape
from .explain_state_keys import state_keys_hint, tensor_as_state
from .source import bound_to, is_a, is_module, line_matching, outer_scopes, quoted_code, visible_names

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["saving_hint"]

_LOADING = re.compile(r"Error\(s\) in loading state_dict for \w+:")
_KEYS = re.compile(r"(Missing|Unexpected) key\(s\) in state_dict: ((?:\"[^\"]*\"(?:, )?)+)")
_SIZE = re.compile(
    r"size mismatch for ([\w.]+): copying a param with shape torch\.Size\(\[([\d, ]*)\]\) from "
    r"checkpoint, the shape in current model is torch\.Size\(\[([\d, ]*)\]\)"
)
_GLOBAL = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")
_NOT_DICT = re.compile(r"Expected state_dict to be dict-like, got <class '([\w.]+)'>")
_REPORT = re.compile(r"'_IncompatibleKeys' object (?:is not callable|has no attribute '\w+')")
_METHOD_SAVED = re.compile(r"torch\.save\(\s*([^\W\d][\w.]*)\.state_dict\s*,\s*([^)]*)\)")
_WHY_PREFIX = {
    "module.": "a model wrapped in nn.DataParallel (or DistributedDataParallel), which keeps it as its .module",
    "_orig_mod.": "a model compiled with torch.compile, which keeps it as its ._orig_mod",
}


def saving_hint(exc: BaseException, rec: Recorder, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``) while the
    snippet saves or loads a model (see the module's docstring); ``None`` otherwise."""
    text = str(exc)
    if _LOADING.search(text):
        return (
            _prefixed(text, code, frame)
            or _resized(text, code, frame)
            or _checkpoint_given(text, code, frame)
            or _keys_differ(text, code, frame)
        )
    if "Weights only load failed" in text:
        return _method_saved(rec.statement_lines) or _model_saved(text, rec.statement_lines, code, frame)
    if isinstance(exc, EOFError):
        return _not_rewound(rec.statement_lines, code, frame)
    given = _NOT_DICT.search(text)
    if given:
        return _not_a_dict(given.group(1), code, frame)
    if _REPORT.search(text):
        return _report_used(rec.statement_lines, code, frame)
    if isinstance(exc, KeyError) and text == "'param_groups'":
        return _weights_into_optimizer(code, frame)
    return None


def _keys_differ(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """:func:`state_keys_hint` of the line's ``load_state_dict`` call."""
    call = _call(code, "load_state_dict")
    return state_keys_hint(text, call[0], call[1], frame) if call else None


def _call(code: str | None, method: str) -> tuple[str, str] | None:
    """``(what .method( is called on, its first argument)`` on the line, as the line writes them."""
    source = (code or "").strip()
    for node in calls(source):
        if isinstance(node.func, ast.Attribute) and node.func.attr == method:
            owner = ast.get_source_segment(source, node.func.value)
            first = ast.get_source_segment(source, node.args[0]) if node.args else None
            if owner and first:
                return owner, first
    return None


def _keys(text: str, kind: str) -> list[str]:
    """The keys the message lists as ``Missing`` or ``Unexpected``."""
    return re.findall(r"\"([^\"]*)\"", next((m[2] for m in _KEYS.finditer(text) if m[1] == kind), ""))


def _prefixed(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """Every key of the checkpoint has a prefix that the model's lack, or the other way round."""
    missing, unexpected = _keys(text, "Missing"), _keys(text, "Unexpected")
    call = _call(code, "load_state_dict")
    if not missing or not unexpected or call is None:
        return None
    owner, state = call
    prefix = _shared_prefix(unexpected, missing)
    if prefix:
        why = _WHY_PREFIX.get(prefix, f"a model that held this one as its submodule {prefix[:-1]}")
        return (
            f"Every key of this checkpoint starts with {prefix!r} ({unexpected[0]!r} for {missing[0]!r}): it was "
            f"saved from {why}, so none of its names match {owner}'s. Strip the prefix as you load: "
            f"{owner}.load_state_dict({{k.removeprefix({prefix!r}): v for k, v in {state}.items()}})."
        )
    if _shared_prefix(missing, unexpected) == "module." and is_module(bound_to(f"{owner}.module", frame)):
        return (
            f"{owner} wraps the model (nn.DataParallel), so each of its keys starts with 'module.' "
            f"({missing[0]!r}), and this checkpoint was saved from the bare model ({unexpected[0]!r}). Load it "
            f"into the model inside: {owner}.module.load_state_dict({state})."
        )
    return None


def _checkpoint_given(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """A checkpoint dict (``{"model": state, "opt": …}``) given whole where one of its entries
    holds the model's weights: the message's unexpected keys are the checkpoint's parts."""
    call = _call(code, "load_state_dict")
    unexpected = _keys(text, "Unexpected")
    if call is None or not unexpected:
        return None
    owner, state = call
    checkpoint = bound_to(state, frame)
    model = bound_to(owner, frame)
    if not isinstance(checkpoint, dict) or not is_module(model) or not hasattr(model, "state_dict"):
        return None
    wanted = set(_keys(text, "Missing"))
    part = next(
        (
            k
            for k in unexpected
            if isinstance(checkpoint.get(k), dict) and wanted and wanted <= set(checkpoint[k])
        ),
        None,
    )
    if part is None:
        return None
    others = [k for k in checkpoint if k != part]
    rest = (
        f" ({', '.join(repr(k) for k in others[:4])} hold{'s' if len(others) == 1 else ''} the rest)"
        if others
        else ""
    )
    return (
        f"{state} is a checkpoint of several parts, keyed {', '.join(repr(k) for k in checkpoint)}, and {owner}'s "
        f"weights are one of them, {state}[{part!r}]{rest}: load_state_dict took the parts' names for weight names. "
        f"Load that part: {owner}.load_state_dict({state}[{part!r}])."
    )


def _weights_into_optimizer(code: str | None, frame: FrameType | None) -> str | None:
    """``opt.load_state_dict(model.state_dict())``: a model's weights where an optimizer's
    state goes (its step counts and running averages, and its ``param_groups``)."""
    call = _call(code, "load_state_dict")
    if call is None or not is_a(bound_to(call[0], frame), torch.optim.Optimizer):
        return None
    opt, given = call
    return (
        f"{opt} is an optimizer, and its load_state_dict takes what an optimizer's state_dict() gave (its settings "
        f"under 'param_groups' and its running averages under 'state'); {given} has no 'param_groups': it holds "
        f"a model's weights, which the model loads, model.load_state_dict(…). Save {opt}.state_dict() beside the "
        f"model's, and load each into its own."
    )


def _shared_prefix(longer: list[str], shorter: list[str]) -> str | None:
    """The first part (``module.``) every key of ``longer`` starts with, where stripping it
    gives exactly the keys ``shorter``."""
    prefix = longer[0].split(".", 1)[0] + "."
    if len(prefix) == len(longer[0]) + 1 or not all(k.startswith(prefix) for k in longer):
        return None
    return prefix if sorted(k[len(prefix) :] for k in longer) == sorted(shorter) else None


def _shape(dims: str) -> str:
    """``"10, 4"`` (a shape in PyTorch's message) as Python prints it: ``(10, 4)``."""
    return shape([d.strip() for d in dims.split(",") if d.strip()])


def _resized(text: str, code: str | None, frame: FrameType | None) -> str | None:
    """``size mismatch for …``: the model is built with other sizes than the checkpoint's."""
    mismatches = _SIZE.findall(text)
    call = _call(code, "load_state_dict")
    if not mismatches or call is None:
        return None
    owner, state = call
    key, saved, built = mismatches[0]
    shifted = _layers_shifted(text, owner, state, (key, saved, built))
    if shifted:
        return shifted
    keys = tuple(k for k, _, _ in mismatches)
    others = "".join(f", and {k} {_shape(s)} where it is {_shape(b)}" for k, s, b in mismatches[1:4])
    was, now, where = _layer_sizes(bound_to(owner, frame), key, saved)
    layer = f" Its layer {where} was saved as {was}, and {owner} builds it as {now}." if was else ""
    build = f"with {was} there" if was else "with the sizes the checkpoint was saved with"
    return (
        f"The checkpoint and {owner} differ in size: the checkpoint's {key} is {_shape(saved)} where {owner}'s is "
        f"{_shape(built)}{others}.{layer} Build {owner} {build}, or, to train that layer anew (another number of classes), load "
        f"the rest without those keys: {owner}.load_state_dict({{k: v for k, v in {state}.items() if k not in "
        f"{keys!r}}}, strict=False)."
    )


def _layers_shifted(text: str, owner: str, state: str, first: tuple[str, str, str]) -> str | None:
    """Sizes that differ beside keys one side lacks: other layers (a layer added or taken out
    renumbers those after it in an nn.Sequential), not the same layers built other sizes."""
    extra, lacking = _keys(text, "Unexpected"), _keys(text, "Missing")
    if not extra and not lacking:
        return None
    key, saved, built = first
    has = f"keys {owner} lacks ({', '.join(extra[:3])}{', …' if len(extra) > 3 else ''})" if extra else ""
    lacks = (
        f"lacks keys {owner} has ({', '.join(lacking[:3])}{', …' if len(lacking) > 3 else ''})"
        if lacking
        else ""
    )
    return (
        f"The checkpoint and {owner} are made of other layers, not the same layers in other sizes: the checkpoint has "
        f"{' and '.join(p for p in (has, lacks) if p)}, and where their names line up the shapes differ ({key} is "
        f"{_shape(saved)} in the checkpoint, {_shape(built)} in {owner}): a layer added or taken out renumbers the "
        f"layers after it. Build {owner} with the layers the saved model had (compare list({state}.keys()) with "
        f"list({owner}.state_dict().keys())); leaving the mismatched keys out with strict=False would load only the "
        "layers before the first change and silently skip the rest."
    )


def _layer_sizes(model: Any, key: str, saved: str) -> tuple[str, str, str]:
    """How the layer holding ``key`` was built in the checkpoint, how it is built now, and
    its name, for a linear layer or an embedding; ``("", "", "")`` for other layers."""
    where, _, name = key.rpartition(".")
    if not is_module(model) or name != "weight" or not where:
        return "", "", ""
    try:
        layer = model.get_submodule(where)
    except AttributeError:
        return "", "", ""
    rows, _, cols = saved.partition(",")
    if is_a(layer, torch.nn.Linear) and cols.strip():
        now = f"nn.Linear({layer.in_features}, {layer.out_features})"
        return f"nn.Linear({cols.strip()}, {rows.strip()})", now, where
    if is_a(layer, torch.nn.Embedding) and cols.strip():
        now = f"nn.Embedding({layer.num_embeddings}, {layer.embedding_dim})"
        return f"nn.Embedding({rows.strip()}, {cols.strip()})", now, where
    return "", "", ""


def _method_saved(source_lines: list[str]) -> str | None:
    """``torch.save(model.state_dict, …)``: the method, not the dict it returns."""
    found = line_matching(source_lines, _METHOD_SAVED)
    saved = _METHOD_SAVED.search(found[1]) if found else None
    if found is None or saved is None:
        return None
    at, (model, rest) = found[0], saved.groups()
    return (
        f"Line {at} saves {model}.state_dict without its call: the method itself, which pickles as the model it "
        f"belongs to, and torch.load (weights_only=True by default since PyTorch 2.6) refuses to rebuild a model. "
        f"Call it, so the dict of tensors is saved: torch.save({model}.state_dict(), {rest.strip()})."
    )


def _model_saved(text: str, source_lines: list[str], code: str | None, frame: FrameType | None) -> str | None:
    """The file holds a whole model (its class is what ``torch.load`` refuses)."""
    named = _GLOBAL.search(text)
    cls = _model_class(named.group(1), frame) if named else None
    if cls is None:
        return None
    saves = re.compile(r"torch\.save\(\s*((?:(?!\.state_dict\(\)).)+?)\s*,\s*([^)]+)\)")
    found = line_matching(source_lines, saves)
    made = saves.search(found[1]) if found else None
    where = (
        f" by line {found[0]} ({quoted_code(source_lines, found[0]) or made.group(0)})"
        if found and made
        else ""
    )
    save = (
        f"torch.save({made.group(1)}.state_dict(), {made.group(2).strip()})"
        if made
        else "torch.save(model.state_dict(), …)"
    )
    loaded = re.match(r"^\s*([^\W\d]\w*)\s*=\s*(torch\.load\(.*\))\s*$", code or "")
    name, load = loaded.groups() if loaded else ("model", "torch.load(…)")
    try:
        takes = any(
            p.default is p.empty and p.kind != p.VAR_POSITIONAL
            for p in inspect.signature(cls).parameters.values()
        )
    except (TypeError, ValueError):
        takes = True
    return (
        f"This file holds a whole {cls.__name__}, pickled{where}: since PyTorch 2.6 torch.load loads only tensors "
        f"and plain containers by default (weights_only=True), and will not rebuild a class of your code. Save the "
        f"weights instead, {save}, and load them into a model you build: {name} = {cls.__name__}"
        f"({'…' if takes else ''}); {name}.load_state_dict({load}). (weights_only=False would rebuild the whole "
        "model, but runs whatever code the file names: a last resort, for a file you made yourself.)"
    )


def _model_class(dotted: str, frame: FrameType | None) -> type | None:
    """The model class a message names ``module.Class`` (the snippet's own for ``__main__``);
    ``None`` for a class that is no ``nn.Module``, or none found."""
    module, _, name = dotted.rpartition(".")
    scopes = outer_scopes(frame)
    found = scopes[0].get(name) if module == "__main__" and scopes else None
    cls = found or getattr(sys.modules.get(module), name, None)
    return cls if inspect.isclass(cls) and issubclass(cls, torch.nn.Module) else None


def _not_rewound(source_lines: list[str], code: str | None, frame: FrameType | None) -> str | None:
    """``torch.load(buf)`` of a BytesIO whose position torch.save left at its end."""
    loaded = re.search(r"torch\.load\(\s*([^\W\d][\w.]*)\s*[,)]", code or "")
    buf = bound_to(loaded.group(1), frame) if loaded else None
    if loaded is None or not is_a(buf, io.BytesIO) or buf.closed:
        return None
    size = len(buf.getvalue())
    if size == 0 or buf.tell() != size:
        return None
    name = loaded.group(1)
    saved = line_matching(source_lines, re.compile(rf"torch\.save\(.*\b{re.escape(name)}\s*\)"))
    by = f"torch.save at line {saved[0]}" if saved else "What was written into it"
    return (
        f"{by} left {name}'s position at the end of the {size} bytes it wrote, and torch.load({name}) reads from "
        f"the position on: it found nothing. Rewind it first, {name}.seek(0), then torch.load({name})."
    )


def _not_a_dict(given: str, code: str | None, frame: FrameType | None) -> str | None:
    """``load_state_dict`` given a model or a path instead of the dict of tensors."""
    call = _call(code, "load_state_dict")
    if call is None:
        return None
    owner, state = call
    if given == "str":
        return (
            f"{owner}.load_state_dict takes the dict of tensors, and {state} is a string, a file's path: load the "
            f"file first, {owner}.load_state_dict(torch.load({state}))."
        )
    tensor = tensor_as_state(given, owner, state)
    if tensor:
        return tensor
    cls = _model_class(given, frame)
    if cls is None:
        return None
    return (
        f"{owner}.load_state_dict takes the dict of tensors a model's state_dict() returns, and {state} is a "
        f"model itself (a {cls.__name__}). Take its state_dict: {owner}.load_state_dict({state}.state_dict())."
    )


def _report_used(source_lines: list[str], code: str | None, frame: FrameType | None) -> str | None:
    """``model = model.load_state_dict(…)``: the name now holds the report of the keys."""
    seen = visible_names(frame)
    used = re.findall(r"(?<![\w.])[^\W\d]\w*", code or "")
    name = next((n for n in used if type(seen.get(n)).__name__ == "_IncompatibleKeys"), None)
    if name is None:
        return None
    assigned = re.compile(rf"^\s*{name}\s*=\s*(.+?)\.load_state_dict\((.*)\)\s*$")
    found = line_matching(source_lines, assigned)
    made = assigned.search(found[1]) if found else None
    if found is None or made is None:
        return None
    at, (owner, state) = found[0], made.groups()
    if owner == name:
        fix = f"drop the assignment, {name}.load_state_dict({state})"
    elif re.fullmatch(r"[^\W\d][\w.]*", owner):
        fix = f"call {owner}.load_state_dict({state}) on its own and use {owner}"
    else:
        fix = f"build the model first, {name} = {owner}, then {name}.load_state_dict({state})"
    return (
        f"Line {at} sets {name} to what load_state_dict returns: a report of the missing and unexpected keys "
        f"(_IncompatibleKeys), not the model: it loads the weights into the model in place, and returns "
        f"that report. Keep the model: {fix}."
    )
