"""Where a warning raised during an op belongs, and whether it was shown there already.

# NOTE [Warnings raised through the tape mode]
While the tape mode handles an op, a warning names one of gradwalk's frames: PyTorch's C++
warnings the Python frame that called into C++ (the tape mode's ``func(*args)``), and a
Python one with ``stacklevel=2`` inside a function PyTorch dispatches through the mode
(``F.mse_loss``) that same frame, as the mode calls the function's body. Two things then go
wrong unless they are put right here:

- the place: the warning belongs to the frame that called the op, as without gradwalk: the
  snippet's line, or a library's (``torch/nn/modules/loss.py`` for ``nn.MSELoss``). For a
  function PyTorch dispatches in Python, the frame above the dispatch is the function's own
  first call (``return handle_torch_function(...)``); the op's caller is the one above it.
- showing it once per place: Python keeps the places it showed a warning at in the
  registry of the module it names (gradwalk's tape mode, whatever the snippet's line), so
  the same text from two lines of the snippet showed once. Gradwalk forgets the tape
  mode's entries and keeps its own, by the real place, under the action Python's filters
  give the warning there.

Both are put right in the hook Python calls for each warning it shows and for each one a
``catch_warnings(record=True)`` keeps (``warnings._showwarnmsg``, replaced while recording by
``CapturedOutput._show_message``), so a snippet that records warnings reads the real place too.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from types import FrameType
from typing import Any

import torch

__all__ = ["ENGINE_DIR", "Shown", "caller_of_op"]

ENGINE_DIR = str(Path(__file__).parent)
_TAPE_FILE = str(Path(__file__).with_name("tape.py"))
_OVERRIDES_FILE = torch.overrides.__file__
_TAPE_MODULE = f"{__package__}.tape"  # whose registry keyed warnings by gradwalk's line


def caller_of_op() -> FrameType | None:
    """The frame that called the op the tape mode is handling (NOTE [Warnings raised
    through the tape mode]), or ``None`` outside the tape mode."""
    f: FrameType | None = sys._getframe(2)
    while f is not None and f.f_code.co_filename != _TAPE_FILE:
        f = f.f_back
    if f is None:
        return None
    func = f.f_locals.get("func")
    while f is not None and (
        f.f_code.co_filename.startswith(ENGINE_DIR) or f.f_code.co_filename == _OVERRIDES_FILE
    ):
        f = f.f_back
    code = getattr(func, "__code__", None)
    if f is not None and code is not None and f.f_code is code:
        f = f.f_back  # the function's own first call, which dispatched it to the mode
    return f


def _action(text: str, category: type[Warning], module: str, lineno: int) -> str:
    """The action Python's warning filters give this warning at this place."""
    for action, msg, cat, mod, ln in warnings.filters:
        if (
            (msg is None or msg.match(text))
            and issubclass(category, cat)
            and (mod is None or mod.match(module))
            and (ln == 0 or ln == lineno)
        ):
            return str(action)
    return str(getattr(warnings, "defaultaction", "default"))  # not in the stubs


class Shown:
    """The places warnings raised through the tape mode were shown at, by their real place."""

    def __init__(self) -> None:
        self._seen: set[tuple[Any, ...]] = set()

    def first(self, message: Any, category: type[Warning], filename: str, lineno: int, module: str) -> bool:
        """Whether to show ``message`` at ``filename:lineno`` (in module ``module``), as
        Python's filters would there; forgets the tape mode's own registry entry."""
        tape = sys.modules.get(_TAPE_MODULE)
        registry = getattr(tape, "__warningregistry__", None)
        if isinstance(registry, dict):
            registry.clear()
        text = str(message)
        action = _action(text, category, module, lineno)
        if action == "ignore":
            return False
        if action == "always":
            return True
        if action == "once":
            key: tuple[Any, ...] = (text, category)
        elif action == "module":
            key = (text, category, filename)
        else:
            key = (text, category, filename, lineno)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True
