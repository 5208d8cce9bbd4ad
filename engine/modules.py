"""Track which ``nn.Module`` is running, and the names of modules and parameters.

Global forward hooks keep a stack of running modules. The outermost module gets the
snippet variable it is bound to (``net``); submodules get their registered path
(``net.fc1``); a module kept in a plain Python list, which ``nn.Module`` does not
register, is still found through its parent's attributes (``net.layers[0]``). A module
called on its own that a module the snippet binds contains is named inside it (``seq.0``
for ``for layer in seq: h = layer(h)``; see NOTE [Names under a container]).

# NOTE [Light module tracking]
A global module hook sends every call of every module down ``nn.Module``'s slow path
(~30 us a call here), which dominated metrics-only training steps. While the tape is off
nothing needs the running-module stack, so the global hooks are swapped for per-module
hooks on just the modules the pitfall detectors must see (root models with parameters,
dropout and batch norm) among those met so far. A model first called in a metrics-only
step is found among the snippet's variables when its parameters need names
(:meth:`ModuleTracker.name_roots_in`), and hooked then. A per-module hook lives in the
snippet's module, so it must survive what a snippet does to its modules: see :class:`_LightHook`.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.modules import module as _module_mod

from .source import is_a, is_module, named_tensors, outer_scopes, snippet_frame, submodules
from .values import has_storage

if TYPE_CHECKING:
    from torch.utils.hooks import RemovableHandle

    from .recorder import Recorder

__all__ = ["ModuleTracker"]


class ModuleTracker:
    """The running-module stack and the names of modules and parameters."""

    @functools.cached_property
    def loop_names(self) -> frozenset[str]:
        """The snippet's loop variables (see :func:`_holder_in`), found once."""
        return loop_targets("\n".join(self._rec.source_lines))

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._stack: list[nn.Module] = []
        self._paths: dict[int, str] = {}
        self._params: dict[int, tuple[str, str]] = {}
        self._roots: dict[int, str] = {}
        self._param_refs: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}
        # buffers' names (``net.bn.running_mean``), by id, with the buffer itself to check
        # that the id is still its (a module may rebind a buffer and free the old one)
        self._buffers: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}
        # ids of modules and parameters named provisionally: after their class or a
        # function's local (NOTE [Names under a container])
        self._provisional: set[int] = set()
        # modules named while torch.func held wrapped tensors in their parameters' places
        # (NOTE [Parameters under torch.func]), their own parameters to be named later
        self._swapped: dict[int, weakref.ref[nn.Module]] = {}
        self._handles: list[RemovableHandle] = []
        self._light_handles: list[RemovableHandle] = []
        # NOTE [Modules held weakly]: every module named so far, weakly: the snippet's `del
        # model` frees it (and its parameters' memory) as without gradwalk. When one goes, the
        # names kept by its id go with it (`_forget`), so a new module given its id is named anew
        self.modules: dict[int, weakref.ref[nn.Module]] = {}

    def install(self) -> None:
        self._handles.append(_module_mod.register_module_forward_pre_hook(self._pre))
        self._handles.append(_module_mod.register_module_forward_hook(self._post, always_call=True))

    def remove(self) -> None:
        for h in (*self._handles, *self._light_handles):
            h.remove()
        self._handles.clear()
        self._light_handles.clear()

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Take gradwalk's module hooks off for the block and put them back after (NOTE
        [PyTorch's own compiles] in eager.py: TorchDynamo would trace into them). Module
        calls in the block are not tracked."""
        light = not self._handles
        self.remove()
        try:
            yield
        finally:
            if light:
                for module in self._live_modules():
                    self._hook_light(module)
            else:
                self.install()

    def set_light(self, light: bool) -> None:
        """Track every module call (``False``) or only what the detectors need (``True``).

        See NOTE [Light module tracking]. Only called while installed.
        """
        if light and self._handles:
            self.remove()
            self._stack.clear()
            for module in self._live_modules():
                self._hook_light(module)
        elif not light and not self._handles:
            self.remove()
            self.install()

    def _live_modules(self) -> list[nn.Module]:
        """The modules named so far that are still alive."""
        return [m for m in (ref() for ref in list(self.modules.values())) if m is not None]

    def _forget(self, key: int, ref: weakref.ref[Any]) -> None:
        """Drop the names kept by ``key``, the id of a module or parameter that ``ref`` held
        and that has just been freed (NOTE [Modules held weakly]); ids taken since by another
        object are left as they are."""
        if self.modules.get(key) is ref:
            del self.modules[key]
            self._paths.pop(key, None)
            self._roots.pop(key, None)
            self._provisional.discard(key)
        elif self._param_refs.get(key, (None,))[0] is ref:
            del self._param_refs[key]
            self._params.pop(key, None)
            self._provisional.discard(key)

    def _hook_light(self, module: nn.Module) -> None:
        # a light hook on ``module`` (not its children) when the detectors need its calls
        if self._rec.pitfalls.needs_calls_of(module, id(module) in self._roots):
            self._light_handles.append(module.register_forward_pre_hook(_LightHook(self)))

    def _light_pre(self, module: nn.Module, args: Any) -> None:
        rec = self._rec
        with rec.mute():
            rec.pitfalls.on_module_call(module, id(module) in self._roots)

    @property
    def current_path(self) -> str | None:
        """The path of the innermost running module, or ``None`` outside any module."""
        return self._paths.get(id(self._stack[-1])) if self._stack else None

    @property
    def current(self) -> nn.Module | None:
        return self._stack[-1] if self._stack else None

    def path_of(self, module: nn.Module) -> str | None:
        return self._paths.get(id(module))

    def param_name(self, p: torch.Tensor) -> tuple[str | None, str | None]:
        """Return ``(qualified name, name inside its root module)`` of a parameter."""
        found = self._params.get(id(p))
        if found is None and self._swapped:
            self.name_swapped()
            found = self._params.get(id(p))
        return found or (None, None)

    def buffer_name(self, t: torch.Tensor) -> str | None:
        """Return the qualified name of a module's buffer (``net.bn.running_mean``), or ``None``."""
        found = self._buffers.get(id(t))
        return found[1] if found is not None and found[0]() is t else None

    def reread(self, module: nn.Module) -> None:
        """Name the parameters and buffers ``module`` holds now, if it has a path: a conversion
        (``model.double()``, engine/library_calls.py) puts new buffer tensors in their places,
        and new parameters too under ``torch.__future__``'s overwrite flag."""
        path = self._paths.get(id(module))
        if path is not None:
            self._register_params(module, path, id(module) in self._provisional)

    def name_if_new(self, module: nn.Module) -> None:
        """Name ``module``, met outside any other module (called on its own, or converted by
        ``model.double()`` before its first call), if it has no name yet, so that the tensors
        it holds are met under their names."""
        if id(module) not in self._paths and not self._stack:
            self._name_new_root(module, snippet_frame()[0])

    def name_swapped(self) -> None:
        """Name the parameters of modules that torch.func had swapped out when the modules
        were named, now that the modules hold their own again (NOTE [Parameters under
        torch.func])."""
        for key, ref in list(self._swapped.items()):
            module = ref()
            path = self._paths.get(key)
            # gone, or its own parameters back and named
            if (
                module is None
                or path is None
                or not self._register_params(module, path, key in self._provisional)
            ):
                del self._swapped[key]

    def name_root(self, module: nn.Module, root_name: str, *, provisional: bool = False) -> None:
        """Register ``module`` and all it contains under the snippet name ``root_name``.

        ``provisional``: the name is a fallback (a class name, a function's local), which a
        later name from the snippet's module level replaces.
        """
        if id(module) in self._roots and id(module) not in self._provisional:
            return
        self._roots[id(module)] = root_name
        self._register(module, root_name, provisional)

    def name_roots_in(self, frame: FrameType | None) -> None:
        """Name the models bound in ``frame`` that no forward has introduced yet.

        Metrics-only steps run without the global hooks (NOTE [Light module tracking]), so a
        model first called there is found this way, when its parameters need names.
        """
        if frame is None:
            return
        scopes = [frame.f_locals] if frame.f_locals is frame.f_globals else [frame.f_globals, frame.f_locals]
        for scope in scopes:
            for key, value in list(scope.items()):
                if is_module(value) and not key.startswith("_") and id(value) not in self._paths:
                    named = self._name_new_root(value, frame)
                    if not self._handles:  # light: hook what the detectors need in it
                        for _, sub in submodules(named):
                            self._hook_light(sub)

    def name_in_scope(self, scope: dict[str, Any]) -> None:
        """Name the modules ``scope`` (the snippet's module level, at the end of the run)
        binds that have no name yet or a provisional one, and so their parameters."""
        self.name_swapped()
        for key, value in list(scope.items()):
            if not is_module(value) or key.startswith("_"):
                continue
            if id(value) not in self._paths or id(value) in self._provisional:
                holder, name = _holder_in(value, scope, self.loop_names) or (value, key)
                self._name_under(value, holder, name, provisional=False)

    def _name_new_root(self, module: nn.Module, frame: FrameType | None) -> nn.Module:
        """Name ``module``, called outside any other module, and all it holds; return the
        module named as a root (its container, when one is found).

        # NOTE [Names under a container]
        # A module called on its own is named after the outermost module that a scope of
        # the snippet binds and that contains it, the module level's first: the layers of
        # `for layer in seq: h = layer(h)`, or of `checkpoint_sequential(seq, ...)`, are
        # `seq.0` and `seq.2` (by their own variable both were `layer`, and their parameters'
        # names clashed; with none, `Linear`), as `seq(x)` would name them. Else it is named
        # after its class. A class name or a function's local is provisional: a module the
        # snippet's module level binds, met later or at the end of the run, replaces it, with
        # its parameters' names (a parametrization run while `sn = P.spectral_norm(...)` is
        # still being built becomes `sn.parametrizations.weight`).
        """
        for depth, scope in enumerate(outer_scopes(frame)):
            found = _holder_in(module, scope, self.loop_names)
            if found is not None:
                holder, name = found
                self._name_under(module, holder, name, provisional=depth > 0)
                self._roots.setdefault(id(module), self._paths[id(module)])
                return holder
        self.name_root(module, type(module).__name__, provisional=True)
        return module

    def _name_under(self, module: nn.Module, holder: nn.Module, name: str, *, provisional: bool) -> None:
        """Name ``module`` inside ``holder`` (which is or contains it), bound to ``name``."""
        if id(holder) not in self._paths or id(holder) in self._provisional:
            self.name_root(holder, name, provisional=provisional)
        if module is not holder and (id(module) not in self._paths or id(module) in self._provisional):
            # added to its holder after the holder was named
            self._register(module, f"{self._paths[id(holder)]}.{_path_in(holder, module)}", provisional)

    def all_params(self) -> list[tuple[torch.Tensor, str]]:
        """Return every parameter of the modules seen so far, with its qualified name."""
        found: list[tuple[torch.Tensor, str]] = []
        for ref, name in list(self._param_refs.values()):
            p = ref()
            if p is not None:
                found.append((p, name))
        return found

    def _pre(self, module: nn.Module, args: Any) -> None:
        rec = self._rec
        with rec.mute():
            rec.pitfalls.on_module_call(module, not self._stack)
        if self._stack and id(module) not in self._paths:
            parent = self._stack[-1]
            parent_path = self._paths.get(id(parent), type(parent).__name__)
            self._name_child(parent, module, parent_path)
        else:
            self.name_if_new(module)
        self._stack.append(module)

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._stack and self._stack[-1] is module:
            self._stack.pop()

    def _name_child(self, parent: nn.Module, module: nn.Module, parent_path: str) -> None:
        attr = None
        for key, value in vars(parent).items():
            if isinstance(value, list | tuple):
                for i, item in enumerate(value):
                    if item is module:
                        attr = f"{key}[{i}]"
                        break
            if attr:
                break
        # under a provisional parent, or by its class, the name is provisional too
        provisional = attr is None or id(parent) in self._provisional or id(parent) not in self._paths
        self._register(module, f"{parent_path}.{attr or type(module).__name__}", provisional)

    def _register(self, module: nn.Module, path: str, provisional: bool) -> None:
        """Give ``module`` the path ``path`` and its submodules and parameters theirs, except
        where a name that is not provisional is known already."""
        for sub_name, sub in submodules(module):
            if id(sub) not in self._paths or id(sub) in self._provisional:
                self._paths[id(sub)] = f"{path}.{sub_name}" if sub_name else path
                self.modules[id(sub)] = weakref.ref(sub, functools.partial(self._forget, id(sub)))
                self._mark(sub, provisional)
        if self._register_params(module, path, provisional):
            self._swapped[id(module)] = weakref.ref(module)

    def _register_params(self, module: nn.Module, path: str, provisional: bool) -> bool:
        """Name the parameters of ``module`` (whose path is ``path``); return whether any was
        a torch.func wrapper, left unnamed.

        # NOTE [Parameters under torch.func]
        # `functional_call(model, params, x)` puts the tensors of `params` in the places of
        # the module's parameters while it runs; under `grad` or `vmap` these are functorch's
        # wrapped tensors, so a module first met there lists wrappers as its parameters. A
        # wrapper is no parameter of the snippet's: it takes no name (the real parameter
        # keeps `model.weight`, and its final grad), and the module is kept in `_swapped`
        # until its own parameters are back and named (`param_name` on a miss, and at the end
        # of the run).
        """
        _root_name, _, rel = path.partition(".")
        swapped = False
        for p_name, p in named_tensors(module, "_parameters"):
            if not has_storage(p):
                swapped = True
                continue
            self._add_param(p, f"{path}.{p_name}", f"{rel}.{p_name}" if rel else p_name, provisional)
        for b_name, b in named_tensors(module, "_buffers"):
            if has_storage(b):
                self._add_buffer(b, f"{path}.{b_name}", provisional)
        return swapped

    def _add_buffer(self, b: torch.Tensor, name: str, provisional: bool) -> None:
        """Name a module's buffer (BatchNorm's ``running_mean``): the tape reads
        ``batch_norm h, net.bn.running_mean, …`` rather than an id. It stays no parameter."""
        known = self._buffers.get(id(b))
        if known is not None and known[0]() is b and id(b) not in self._provisional:
            return
        self._mark(b, provisional)
        self._buffers[id(b)] = (weakref.ref(b), name)
        self._rec.tensors.rename(b, name)

    def _mark(self, obj: object, provisional: bool) -> None:
        if provisional:
            self._provisional.add(id(obj))
        else:
            self._provisional.discard(id(obj))

    def _add_param(self, p: torch.Tensor, name: str, param_name: str, provisional: bool) -> None:
        if id(p) in self._params and id(p) not in self._provisional:
            return
        self._mark(p, provisional)
        self._params[id(p)] = (name, param_name)
        self._param_refs[id(p)] = (weakref.ref(p, functools.partial(self._forget, id(p))), name)
        self._rec.tensors.rename(p, name, param_name)


# a plain list, tuple or dict of modules longer than this is not looked into for names
_MAX_HELD = 256


def loop_targets(source: str) -> frozenset[str]:
    """The names ``source`` binds as ``for`` loop or comprehension targets (``layer`` in
    ``for layer in layers``); empty when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    targets = [n.target for n in ast.walk(tree) if isinstance(n, ast.For | ast.AsyncFor | ast.comprehension)]
    return frozenset(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))


def _holder_in(
    module: nn.Module, scope: dict[str, Any], loop_names: frozenset[str] = frozenset()
) -> tuple[nn.Module, str] | None:
    """Return ``(holder, its name)``: the module in ``scope`` that is or contains ``module``,
    the outermost one (the deepest path to ``module``) where several do; ``None`` if none.

    A module held in a plain list, tuple or dict the scope binds counts as bound, by its
    place (``layers[0]`` for ``layers = [nn.Linear(3, 3), nn.Linear(3, 1)]``). Among equal
    paths a variable's own name comes first (``net_a`` over ``nets[0]``), then the place in
    a container, then a loop variable (one of ``loop_names``), which is bound to each of the
    container's modules in turn: by it, both layers of ``for layer in layers`` were
    ``layer``.
    """
    best: tuple[nn.Module, str] | None = None
    rank = (-1, -1)
    for key, value in list(scope.items()):
        if key.startswith("_"):
            continue
        if is_module(value):
            candidates: Any = ((value, key),)
            preference = 0 if key in loop_names else 2
        elif is_a(value, list | tuple | dict) and 0 < len(value) <= _MAX_HELD:
            items = value.items() if isinstance(value, dict) else enumerate(value)
            candidates = ((item, f"{key}[{i!r}]") for i, item in items if is_module(item))
            preference = 1
        else:
            continue
        for holder, name in candidates:
            path = _path_in(holder, module)
            if path is not None:
                found = (path.count(".") + 1 if path else 0, preference)
                if found > rank:
                    best, rank = (holder, name), found
    return best


def _path_in(holder: nn.Module, module: nn.Module) -> str | None:
    """The path of ``module`` inside ``holder`` (``""`` for itself), or ``None``."""
    if holder is module:
        return ""
    for name, sub in submodules(holder):
        if sub is module:
            return name
    return None


class _LightHook:
    """The forward pre-hook that light tracking puts on a module (NOTE [Light module tracking]).

    It sits in the snippet's module, so whatever the snippet does with the module meets it.
    A bound method of the tracker led ``copy.deepcopy(model)`` and ``torch.save(model)``
    into the whole recorder, and both failed. A deep copy shares this hook (the copy's calls
    are watched too). A pickle holds ``{}.get`` in its place, which hands the module's
    inputs back unchanged, so a model saved while recording loads anywhere.
    """

    __slots__ = ("_tracker",)

    def __init__(self, tracker: ModuleTracker) -> None:
        self._tracker = weakref.ref(tracker)

    def __call__(self, module: nn.Module, args: Any) -> None:
        tracker = self._tracker()
        if tracker is not None:
            tracker._light_pre(module, args)

    def __deepcopy__(self, memo: dict[int, Any]) -> _LightHook:
        return self

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return getattr, ({}, "get")
