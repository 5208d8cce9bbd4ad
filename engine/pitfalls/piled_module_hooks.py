"""A module hook registered anew on every iteration (hook-registered-in-loop, module hooks).

``model.layer4.register_forward_hook(save_activation)`` adds a hook to the module for good: it
stays until its handle's ``remove()``. Inside the batch loop (Grad-CAM, feature extraction,
activation logging) each iteration adds one more, and every forward then runs them all in a
row: by the k-th iteration the activation is saved k times (a list of them grows k-fold, and
memory with it), a hook that scales the output scales it k times, each forward gets slower,
and nothing raises. The same holds for ``register_forward_pre_hook`` and, in each backward(),
``register_full_backward_hook`` and ``register_full_backward_pre_hook``.

Told by a module that holds two or more hooks of one kind, registered from the same snippet
line with the same function (a closure or lambda made afresh each time counts as the same:
its code is) and not removed: ``handle.remove()``, or anything else that takes the handle's
id out of the module's hook dict, takes one off. Silent: a hook registered once above the
loop, one removed in the iteration that registered it (by hand or by a ``with`` helper), a
hook on a module the loop builds afresh (one per module), one line hooking each layer of a
model in turn, and a loop that hooks one module with several different functions.
engine/library_calls.py shows the snippet's own calls of these methods (not those library
code makes, such as ``spectral_norm``'s pre-hook) to :meth:`PiledModuleHooks.registered`.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Sequence

from torch import nn

from ..explain_seed import name_before
from ..source import StatementLines, indentation, without_comment
from .piled_hooks import still_held

__all__ = ["MODULE_HOOKS", "PiledModuleHooks"]

#: each method watched -> (the module's dict its hooks live in, the pass they run in, how they run)
MODULE_HOOKS: dict[str, tuple[str, str, str]] = {
    "register_forward_hook": (
        "_forward_hooks",
        "forward",
        "after each forward, each on the output the one before returned: a hook that saves the "
        "activation saves it k times (a list of them grows k-fold, and memory with it), one that "
        "changes the output changes it k times",
    ),
    "register_forward_pre_hook": (
        "_forward_pre_hooks",
        "forward",
        "before each forward, each on the input the one before returned: a hook that changes the "
        "input changes it k times, one that saves or logs it does so k times",
    ),
    "register_full_backward_hook": (
        "_backward_hooks",
        "backward",
        "in each backward(), each on the input gradients the one before returned: a hook that "
        "scales or clips them does so k times, one that saves them saves them k times",
    ),
    "register_full_backward_pre_hook": (
        "_backward_pre_hooks",
        "backward",
        "in each backward(), each on the output gradients the one before returned: a hook that "
        "scales or clips them does so k times, one that saves them saves them k times",
    ),
}
_LOOP = re.compile(r"(?:async\s+)?(?:for|while)\b")
_SCOPE = re.compile(r"(?:async\s+)?(?:def|class)\b")
_HANDLE = re.compile(r"([^\W\d][\w.]*)\s*=(?!=)\s*(.+)")


class PiledModuleHooks:
    """Counts the hooks each module got from each snippet line; see the module's docstring."""

    def __init__(self) -> None:
        # id(module) -> (a weak reference that tells a reused id apart,
        #                {(method, line, the hook's code): its hooks' handle ids})
        self._hooked: dict[int, tuple[weakref.ref[nn.Module], dict[tuple[str, int, object], list[int]]]] = {}

    def registered(
        self,
        module: nn.Module,
        method: str,
        hook: object,
        line: int | None,
        handle: object,
        source_lines: Sequence[str],
        path: str | None = None,
    ) -> tuple[str, str, str] | None:
        """Look at ``module.<method>(hook)`` (a key of :data:`MODULE_HOOKS`) just run from
        snippet ``line`` (``handle``: what it returned; ``path``: the run's name for the
        module, where the line names none); return ``(title, message, fix)`` when the hooks the
        same line registered on this module before, with the same function, are still on it."""
        if line is None or method not in MODULE_HOOKS:
            return None
        entry = self._hooked.get(id(module))
        if entry is None or entry[0]() is not module:
            entry = (weakref.ref(module), {})
            self._hooked[id(module)] = entry
        table, when, how = MODULE_HOOKS[method]
        hooks = getattr(module, table, None) or {}
        held = still_held(entry[1], (method, line, _code_of(hook)), hooks, handle)
        if held < 2:
            return None  # the first, or the one before was removed (h.remove() each iteration)
        code = without_comment(source_lines[line - 1]).strip() if 0 < line <= len(source_lines) else ""
        name = name_before(f".{method}(", code) or path or f"this {type(module).__name__}"
        named = getattr(hook, "__name__", None)
        fn = named if isinstance(named, str) and named.isidentifier() else None
        runs = fn or "the hook"
        call = f"{name}.{method}({fn or '…'})"
        kept = _HANDLE.fullmatch(code)
        handle_name = kept.group(1) if kept else "h"
        registering = code if code.startswith(f"{name}.{method}(") else call  # the call alone
        loop = _loop_above(source_lines, line)
        above = (
            f"move {code or call} before line {loop}" if loop is not None else "move it up before the loop"
        )
        removing = (
            f"call {handle_name}.remove() at the end of each iteration"
            if kept
            else f"keep its handle, h = {registering}, and call h.remove() at the end of each iteration"
        )
        return (
            f"{method} runs on every iteration: the hooks on {name} pile up",
            f"{call} adds a hook that stays until its handle's remove(), and {name} outlives the loop: "
            f"each pass through line {line} adds one more, so after its second {name} holds {held} of them "
            f"and runs {runs} {held} times per {when}: k times by the k-th iteration. They run in a "
            f"row {how}; every {when} gets slower as the run goes on, and nothing raises.",
            f"Register the hook once, above the loop: {above}. Or {removing}, once the {when} that "
            "needs it has run.",
        )


def _code_of(hook: object) -> object:
    """What tells hooks apart: the function's code (a lambda or closure made afresh each
    iteration is the same hook), a callable object's class, a partial's function."""
    while isinstance(hook, functools.partial):
        hook = hook.func
    hook = getattr(hook, "__func__", hook)  # a bound method: its function
    return getattr(hook, "__code__", None) or type(hook)


def _loop_above(source_lines: Sequence[str], line: int) -> int | None:
    """The line of the innermost ``for`` or ``while`` whose body holds snippet ``line``, in
    the same function (read by indentation); ``None`` where there is none."""
    if not 0 < line <= len(source_lines):
        return None
    inner = indentation(source_lines[line - 1])
    for at in range(line - 1, 0, -1):
        text = without_comment(source_lines[at - 1])
        if not text.strip() or indentation(text) >= inner:
            continue
        inner = indentation(text)
        if _LOOP.match(text.strip()):  # (a header written on several lines: its first)
            return source_lines.first(at) if isinstance(source_lines, StatementLines) else at
        if _SCOPE.match(text.strip()):
            return None
    return None
