"""The op events: one op PyTorch ran, recorded with its tensors, the graph nodes it created
and the memory it saved.

:class:`OpRecorder` is the recorder's part behind :meth:`Recorder.on_op
<engine.recorder.Recorder.on_op>`, which the tape mode (tape.py), custom Functions
(functions.py) and library calls (library_calls.py) call. It counts the ops in the
recorder's ``ops`` and, past ``Limits.max_ops``, ``dropped_ops``.
"""

from __future__ import annotations

from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from .op_arguments import SUBSCRIPT_OPS, input_positions, op_constants
from .op_keywords import named_positionals, op_keywords
from .running_stats import NORM_OPS
from .source import snippet_frames
from .tape import op_names
from .tensor_facts import version_of

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["OpRecorder"]

# `4 * x` and `3 + x` reach the mode as mul(x, 4) and add(x, 3): recorded as what Python ran
_COMMUTATIVE = {"mul": ("rmul", "Tensor.__rmul__"), "add": ("radd", "Tensor.__radd__")}


def _unchanged(t: torch.Tensor, args: tuple[Any, ...], before: int | None) -> bool:
    """Whether an op's output ``t``, one of its inputs, is that input handed back unchanged.

    # NOTE [Handed back]
    # An op whose output is its input object either wrote into it (``F.relu(x,
    # inplace=True)``: in-place, a new version with a new id) or handed it back untouched
    # (``x.float()`` of a float tensor, ``x.to(device)`` on its device, ``x.contiguous()``,
    # dropout with p=0 or in eval): not in-place, and the same id. The version counter tells
    # them apart; the tape mode reads the first argument's before the op runs, as the
    # operand these ops hand back. Anything else (another argument, an inference tensor,
    # which has no version counter) counts as written, as before.
    """
    return before is not None and bool(args) and args[0] is t and version_of(t) == before


class OpRecorder:
    """Record the ops of one run (see the module's docstring); ``rec``: the run's recorder."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._max_ops = rec.limits.max_ops

    def record(
        self,
        func: Any,
        inputs: list[torch.Tensor],
        outputs: list[torch.Tensor],
        args: tuple[Any, ...] = (),
        frames: tuple[FrameType | None, int | None, int | None, bool] | None = None,
        first_version: int | None = None,
        fresh_outputs: bool = False,
        kwargs: dict[str, Any] | None = None,
        handed_back: set[int] | None = None,
        replacing: dict[int, torch.Tensor] | None = None,
    ) -> None:
        """Record one op; the arguments are :meth:`Recorder.on_op`'s, which calls this."""
        rec = self._rec
        frame, line, top_line, in_setup = frames or snippet_frames()
        if in_setup:
            return
        index = rec.ops
        rec.ops += 1
        if index >= self._max_ops:
            if rec.dropped_ops == 0:
                rec.emit(
                    {
                        "type": "limit",
                        "what": "ops",
                        "cap": self._max_ops,
                        # their graph nodes go too (counted in run_finished's dropped_nodes);
                        # shown after "limit: ops" (it read "limit: ops ops past 50 ...")
                        "message": f"the first {self._max_ops:,} ops were recorded; those after them, "
                        "and the graph nodes they make, are counted, not recorded",
                    }
                )
            rec.dropped_ops += 1
            if torch.is_grad_enabled():
                rec.graph.discover(outputs, record=False)  # counted, so counts.nodes stays exact
            return
        short, api, inplace = op_names(func)
        texts: list[dict[str, Any]] = []  # OpRecorded.arguments
        constants = op_constants(args, texts, subscript=short in SUBSCRIPT_OPS)
        if (
            short in _COMMUTATIVE
            and len(args) == 2
            and len(constants) == 1
            and constants[0]["position"] == 1
            and rec.operand_order.number_on_left(frame, args[0])
        ):
            short, api = _COMMUTATIVE[short]  # `4 * x` (NOTE [Reflected products and sums])
        named = named_positionals(func, args, constants, texts)
        ensure = rec.tensors.ensure
        changed = {id(t) for t in outputs}  # inputs among them: the op's version, not off the tape
        if short in NORM_OPS:  # and the running statistics it updates (NOTE [Running statistics])
            changed.update(id(t) for t in rec.running_stats.updated(api, args, kwargs or {}))
        in_ids = [ensure(t, line=line, frame=frame, changing=id(t) in changed) for t in inputs]
        if torch.is_grad_enabled():
            mode = "grad"
            pending = rec.graph.discover(outputs)
        else:
            mode = "inference_mode" if torch.is_inference_mode_enabled() else "no_grad"
            pending = []
        path = rec.modules.current_path
        out_ids = []
        owners: list[torch.Tensor] = []
        aliased = False
        input_objs = {id(t) for t in inputs} if inputs else ()
        for t in outputs:
            is_input = id(t) in input_objs
            if (
                is_input
                and not inplace
                and ((handed_back is not None and id(t) in handed_back) or _unchanged(t, args, first_version))
            ):
                out_ids.append(ensure(t))  # handed back as it was: the same tensor, the same id
                continue
            aliased = aliased or is_input
            if is_input:  # changed in place: a new version
                tid = rec.tensors.new_version(t, op=index, line=line, by=api, path=path)
                out_ids.append(tid)
                owner = rec.tensors.data_owner(tid, t)
                if owner is not None and all(owner is not o for o in outputs):
                    owners.append(owner)  # NOTE [Changed through .data] in tensors.py
            elif replacing and id(t) in replacing:
                of = replacing[id(t)]
                out_ids.append(rec.tensors.new_version(t, op=index, line=line, by=api, path=path, of=of))
            else:
                out_ids.append(ensure(t, op=index, line=line, fresh=fresh_outputs or inplace))
        made_ids = list(out_ids)  # the op's own outputs, which made the graph's nodes
        if rec.pitfalls.enabled:  # NOTE [Penalties off the graph] in pitfalls/penalties.py
            rec.pitfalls.penalties.after_op(short, inputs, in_ids, outputs, made_ids, line)
            if rec.pitfalls.unfilled.watching:  # parameter-never-initialised (uninitialised.py)
                rec.pitfalls.unfilled.after_op(short, inplace, args, inputs, outputs, line, frame)
        for owner in owners:
            out_ids.append(rec.tensors.new_version(owner, op=index, line=line, by=api, path=path))
        if short in NORM_OPS:  # NOTE [Running statistics] in running_stats.py
            out_ids += rec.running_stats.after(api, args, kwargs or {}, index, line, path)
        if pending:
            rec.graph.emit(pending, index, line, path, (inputs, in_ids, outputs, made_ids))
        event = {
            "type": "op",
            "index": index,
            "name": short,
            "api": api,
            "inputs": in_ids,
            "outputs": out_ids,
            "line": line,
            "top_line": top_line,
            "module_path": path,
            "grad_mode": mode,
            "inplace": inplace or aliased,
            "nodes": [nid for _, nid, _ in pending],
            "constants": constants,
            "keywords": named + op_keywords(func, kwargs, texts, len(named)) if kwargs else named,
        }
        if texts:
            event["arguments"] = texts
        if constants or texts or kwargs:  # x.gather(1, idx); F.layer_norm(x, (8,), weight=w)
            positions = input_positions(args, kwargs, len(inputs))
            if positions is not None:
                event["input_positions"] = positions
        rec.emit(event)
        memory = rec.memory
        if memory.recent:
            memory.recent.clear()
        if abs(memory.saved_bytes - memory.reported) > max(4096, memory.reported >> 3):
            rec.report_memory(line)
