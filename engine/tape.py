"""Record the forward tape: every tensor operation at the Python API level, in order.

A ``TorchFunctionMode`` sees each call to ``torch.*``, tensor methods and operators,
``torch.nn.functional`` and factory functions before PyTorch dispatches it. While the mode
handles one call it is disabled, so an op that calls other ops inside (``F.cross_entropy``
-> ``log_softmax`` + ``nll_loss``) is recorded once, with every node it created.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from types import CodeType, FrameType, FunctionType
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import TorchFunctionMode

from .dispatch import modes_aside
from .op_arguments import tensors_in
from .pitfalls import WATCHED_OPS
from .running_stats import NORM_OPS
from .source import SNIPPET_FILENAME, snippet_frames
from .tracebacks import drop_gradwalk_frames

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["TapeMode", "op_names", "tensors_in"]

_INPLACE_DUNDERS = {
    "__iadd__",
    "__isub__",
    "__imul__",
    "__itruediv__",
    "__ifloordiv__",
    "__ipow__",
    "__imatmul__",
    "__iand__",
    "__ior__",
    "__ixor__",
    "__ilshift__",
    "__irshift__",
    "__setitem__",
}
_api_cache: dict[Any, tuple[str, str, bool]] = {}
_tracing_state = torch._C._get_tracing_state
# NOTE [Transposes read as attributes]
# ``w.T`` is an attribute read, not a call: the mode sees the property's ``__get__``, which
# it passes through for every other attribute (``.grad``, ``.shape``, ``.data``). These four
# make a new tensor with its own grad_fn (``PermuteBackward0``, ``TransposeBackward0``), which
# would otherwise be filed under the next op that uses it (``x @ w.T`` under matmul, with
# ``w.T`` an unnamed ``t2``), so they are recorded as ops named ``T``, ``mT``, ``H``, ``mH``.
# A complex tensor's ``.real`` and ``.imag`` likewise (``ViewAsRealBackward0`` and
# ``SelectBackward0``, which were filed under ``sum`` in ``(z * z.conj()).real.sum()``).
_ATTRIBUTE_OPS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# ``Tensor.data``, whose reads the tensor table notes (NOTE [Changed through .data] in tensors.py)
_DATA = torch._C.TensorBase.__dict__["data"]
# the attribute writes recorded as ops (NOTE [Attribute writes] in attributes.py)
_RECORDED_WRITES = frozenset({"requires_grad", "data"})


# NOTE [Errors leave without the mode's frame]
# An op that raises passes its error out through the tape mode's handler, whose frames
# Python adds to the error's traceback. Without gradwalk the failing op's own frame (or the
# snippet's line, for an op written in C) is the last: a snippet that prints
# ``traceback.format_exc()``, logs with ``logging.exception`` or reads
# ``traceback.extract_tb(e.__traceback__)[-1]`` showed ``engine/tape.py, line 178, in
# __torch_function__`` instead. ``TapeMode.__torch_function__`` therefore only calls the
# handler (``_handle``) and, whatever it raises, drops gradwalk's frames from the traceback
# before re-raising with a bare ``raise`` (which adds no entry), as gradwalk's wrappers do
# (NOTE [Errors leave without gradwalk's frames] in tracebacks.py). Frames PyTorch adds to
# hand a Python-level op to the mode (``handle_torch_function``) stay: they are above the
# mode's, out of its reach, unless a wrapper of gradwalk's is above them (``loss.backward()``).


def name_op(func: Callable[..., Any], short: str, api: str, *, inplace: bool) -> None:
    """Have :func:`op_names` read ``func`` (a stand-in for an op that is no function, such
    as an attribute write) as ``(short, api, inplace)``."""
    _api_cache[func] = (short, api, inplace)


def op_names(func: Callable[..., Any]) -> tuple[str, str, bool]:
    """Return ``(short name, api name, in-place)`` for a function the mode saw."""
    cached = _api_cache.get(func)
    if cached is not None:
        return cached
    raw = getattr(func, "__name__", None) or repr(func)
    qual = getattr(func, "__qualname__", raw)
    module = getattr(func, "__module__", None) or ""
    owner = qual.rsplit(".", 1)[0] if "." in qual else ""
    prop = _attribute_op(func) if raw == "__get__" else None
    if prop is not None:
        raw, api = prop, f"Tensor.{prop}"  # NOTE [Transposes read as attributes]
    elif owner in ("TensorBase", "Tensor"):
        api = f"Tensor.{raw}"
    elif owner == "_VariableFunctionsClass" or module == "torch":
        api = f"torch.{raw}"
    elif module == "torch.nn.functional":
        api = f"F.{raw}"
    elif module.startswith("torch.") and getattr(torch, raw, None) is func:
        # torch.einsum, torch.split (defined in torch.functional); torch.unique and torch.lu,
        # made by boolean_dispatch (qualified name ``boolean_dispatch.<locals>.fn``)
        api = f"torch.{raw}"
    elif module.startswith("torch.") and owner == "":
        api = f"{module.removeprefix('torch.')}.{raw}"
    else:
        api = qual
    inplace = raw in _INPLACE_DUNDERS or (raw.endswith("_") and not raw.endswith("__"))
    short = raw.strip("_")
    if raw.startswith("__i") and raw in _INPLACE_DUNDERS and raw != "__setitem__":
        short = raw[3:-2] + "_"
    result = (short or raw, api, inplace)
    with contextlib.suppress(TypeError):
        _api_cache[func] = result
    return result


def _attribute_op(func: Any) -> str | None:
    """The attribute (``"T"``, ``"real"``, …: NOTE [Transposes read as attributes]) whose ``__get__`` ``func`` is, when it makes a node; else None."""
    name = getattr(getattr(func, "__self__", None), "__name__", None)
    return name if name in _ATTRIBUTE_OPS else None


# NOTE [Tensor methods the snippet replaced]
# A Tensor method written in Python (``split``, ``norm``, ``backward``, ``__format__`` ...)
# asks for torch-function handling by looking itself up on the class at call time:
# ``handle_torch_function(Tensor.split, ...)``. A snippet that replaced it with a wrapper of
# its own (``torch.Tensor.split = counted``, the wrapper calling the original) had the
# wrapper called again here, from inside the original, under the tape mode: every side
# effect of the wrapper happened twice per call. The original is the method whose code
# asked, found among the class's Python methods as they were when gradwalk was imported.
# (a code several methods share, a decorator's wrapper, names none of them)


def _python_methods() -> dict[CodeType, FunctionType]:
    found: dict[CodeType, FunctionType] = {}
    shared: set[CodeType] = set()
    for f in vars(torch.Tensor).values():
        if isinstance(f, FunctionType):
            if f.__code__ in found:
                shared.add(f.__code__)
            found[f.__code__] = f
    return {code: f for code, f in found.items() if code not in shared}


_PY_METHODS = _python_methods()


def _method_replaced(func: Any) -> Any:
    """The Tensor method whose call asked for ``func``, a snippet function standing in its
    place on the class (NOTE [Tensor methods the snippet replaced]); else ``func`` itself."""
    frame: FrameType | None = sys._getframe(
        3
    )  # _handle <- __torch_function__ <- handle_torch_function <- the method
    for _ in range(3):
        if frame is None:
            break
        original = _PY_METHODS.get(frame.f_code)
        if original is not None:
            return original
        frame = frame.f_back
    return func


class TapeMode(TorchFunctionMode):
    """The mode that feeds every op of the snippet to the recorder."""

    def __init__(self, rec: Recorder) -> None:
        super().__init__()
        self._rec = rec
        # nonzero on a thread inside a library call recorded as one op (a DataLoader's
        # batch: NOTE [Library calls as one op] in library_calls.py)
        self._making = rec.library_calls.making

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        try:
            return self._handle(func, args, kwargs or {})
        except BaseException as exc:
            drop_gradwalk_frames(exc)  # NOTE [Errors leave without the mode's frame]
            raise

    def _handle(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the op ``func(*args, **kwargs)`` and hand it to the recorder."""
        rec = self._rec
        code = getattr(func, "__code__", None)
        if code is not None and code.co_filename == SNIPPET_FILENAME:
            func = _method_replaced(func)
        # gradwalk's own work (rec.mute()) never comes here: the mute switches torch-function
        # handling off for its thread (NOTE [Muted work skips the mode] in mute.py)
        if not rec.active or self._making.depth or _tracing_state() is not None:
            # not active: a snippet's thread that outlived the run (NOTE [Threads] in
            # threads.py); making: a library call, recorded as one op once it returns (NOTE
            # [Library calls as one op] in library_calls.py); tracing: torch.jit.trace records the ops into
            # its graph, and gradwalk's reads of them (tolist, item) would be recorded too
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name == "__set__":
            attribute = getattr(getattr(func, "__self__", None), "__name__", None)
            # NOTE [Attribute writes] in attributes.py
            write = None
            if attribute in _RECORDED_WRITES and rec.detail and not rec.in_optimizer and len(args) == 2:
                with rec.serial, torch._C.DisableTorchFunctionSubclass(), modes_aside():
                    write = rec.attribute_write(attribute, args[0], args[1])
            result = func(*args, **kwargs)
            if write is not None:
                with rec.serial, torch._C.DisableTorchFunctionSubclass(), modes_aside():
                    rec.on_op(*write)
            return result
        if name == "__get__" and _attribute_op(func) is None:
            if getattr(func, "__self__", None) is _DATA and rec.detail and not rec.in_optimizer and args:
                alias = func(*args, **kwargs)
                reader = sys._getframe(2)  # the code that read .data (the descriptor calls this mode)
                # NOTE [Changed through .data] in tensors.py
                with rec.serial, torch._C.DisableTorchFunctionSubclass(), modes_aside():
                    rec.tensors.data_read(args[0], alias, reader)
                return alias
            return func(*args, **kwargs)  # an attribute, not an op
        # A tensor subclass with its own __torch_function__ sees the op, and none of
        # gradwalk's reads of the op's tensors (their versions, values, shapes), nor of
        # others' in an op of plain tensors (a subclass parameter's .grad, read to name a
        # tensor read off it): subclass dispatch is off for them whatever the op's types
        aside = torch._C.DisableTorchFunctionSubclass
        # the first operand's version before the op: an op that hands it back unchanged is
        # not in-place (NOTE [Handed back] in op_recorder.py)
        first = args[0] if args else None
        first_version = None
        if isinstance(first, torch.Tensor):
            try:
                if type(first) is torch.Tensor:  # no handler of its own to keep the read from
                    first_version = first._version
                else:
                    with aside():
                        first_version = first._version
            except RuntimeError:  # an inference tensor has no version counter
                pass
            if first_version is not None and op_names(func)[2] and rec.detail and not rec.in_optimizer:
                with rec.serial, aside(), modes_aside():
                    rec.tensors.before_change(first)
        if name in NORM_OPS and rec.detail and not rec.in_optimizer:
            with rec.serial, aside(), modes_aside():
                try:
                    rec.running_stats.before(op_names(func)[1], args, kwargs)  # NOTE [Running statistics]
                except Exception:
                    rec.observation_failed()
        try:
            result = func(*args, **kwargs)
        except Exception as exc:
            # its tensors in call order, those in a list (torch.cat) and those passed by keyword
            # too (torch.matmul(a, other=b))
            operands = [
                t
                for a in args
                for t in (a if isinstance(a, list | tuple) else (a,))
                if isinstance(t, torch.Tensor)
            ]
            operands += [v for v in kwargs.values() if isinstance(v, torch.Tensor)]
            rec.failed_op = (name, operands)
            rec.failed_op_error = (id(exc), str(exc))  # NOTE [The op an error came from]
            raise
        with rec.serial, aside(), modes_aside():
            return self._observe(func, name, args, kwargs, result, first, first_version)

    def _observe(
        self,
        func: Any,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: Any,
        first: Any,
        first_version: int | None,
    ) -> Any:
        """Show the op that ran to the detectors and, in full detail, record it; return ``result``."""
        rec = self._rec
        if not rec.active:
            return result  # the run ended while a snippet's thread ran this op (NOTE [Threads])
        if rec.in_optimizer and not rec.training.inside_step():
            rec.in_optimizer = False  # a step raised and the snippet caught it: its ops are its own
        frames = None
        if name in WATCHED_OPS and not rec.in_optimizer:
            frames = snippet_frames()  # looked up once for the detectors and the tape
            with rec.mute():
                rec.pitfalls.on_op(name, args, result, frames[1], kwargs, frames[0])
        if rec.in_optimizer or not rec.detail:
            return result
        if name == "register_hook" and isinstance(first, torch.Tensor):
            frames = frames or snippet_frames()
            with rec.mute():
                rec.pitfalls.on_hook(first, frames[1], result)
            rec.on_hook(first, frames)  # returns a handle, not a tensor: no op of the tape
        elif name == "retain_grad" and isinstance(first, torch.Tensor):
            with rec.mute():
                rec.pitfalls.on_retain_grad(first, (frames or snippet_frames())[1])
        outputs: list[torch.Tensor] = []
        if name == "__setitem__" and isinstance(first, torch.Tensor):
            outputs.append(first)  # `y[0] = 0` returns None: what it made is y's new version
        else:
            tensors_in(result, outputs)
        if outputs:
            inputs: list[torch.Tensor] = []
            try:
                # a snippet's own sequence type may refuse to be iterated (PyTorch reads it by index)
                tensors_in(args, inputs)
                if kwargs:
                    tensors_in(tuple(kwargs.values()), inputs)
                rec.on_op(func, inputs, outputs, args, frames, first_version, kwargs=kwargs)
            except Exception:
                rec.observation_failed()  # the op ran; only its record is lost
        return result
