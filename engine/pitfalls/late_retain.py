"""``retain_grad()`` called after the backward() it was meant for (retain-grad-after-backward).

``y.retain_grad()`` asks the backward() calls that run *after* it to keep the gradient that
reaches ``y``, a tensor that is not a leaf. Called once ``loss.backward()`` has already gone
through ``y``, it keeps nothing: ``y.grad`` stays ``None``, with no warning (the warning of a
non-leaf's ``.grad`` is what the call silences). Told at the end of the run, at the
``retain_grad()`` line, when the tensor's node had run in a walk recorded in full before the
call and no later walk ran it again (a second ``backward()`` through a retained graph would
fill ``.grad``, and is not told), unless an earlier ``retain_grad()`` on it came before that
walk (a call repeated after backward, in a loop or to be sure, changes nothing: ``.grad`` is
filled).
"""

from __future__ import annotations

from typing import NamedTuple

from ..source import quoted_code

__all__ = ["LateRetains"]


class _Late(NamedTuple):
    name: str  # the tensor's name in the snippet, or "the tensor"
    line: int | None  # the retain_grad() call's
    made_at: int | None  # the line that made the tensor (its node's)


class LateRetains:
    """The ``retain_grad()`` calls that came after their tensor's backward (see the module's
    docstring). Feed it every node run (:meth:`ran`) and every call (:meth:`called`)."""

    def __init__(self) -> None:
        self._ran: dict[int, int | None] = {}  # node id -> the line that made it, once run
        self._late: dict[int, _Late] = {}  # by node id, until a walk runs it again
        self._retained: set[int] = set()  # node ids whose retain_grad() came before any walk ran them

    def ran(self, nid: int, line: int | None) -> None:
        """Node ``nid``, made at ``line``, ran in a recorded backward walk."""
        self._ran[nid] = line
        if self._late:
            self._late.pop(nid, None)

    def called(self, nid: int | None, name: str | None, line: int | None) -> None:
        """``retain_grad()`` was called at ``line`` on a tensor that is not a leaf, named
        ``name``, whose ``grad_fn`` is node ``nid`` (None: not recorded)."""
        if nid is None or nid in self._retained:
            return
        if nid in self._ran:
            self._late[nid] = _Late(name or "the tensor", line, self._ran[nid])
        else:
            self._retained.add(nid)

    def reports(self, source_lines: list[str]) -> list[tuple[int | None, str, str, str]]:
        """``(line, title, message, fix)`` of each call no later walk made good, at the end of
        the run; ``source_lines``: the snippet's, to quote."""
        found = []
        for late in self._late.values():
            n = late.name
            made = quoted_code(source_lines, late.made_at)
            where = f" (line {late.made_at}: {made})" if made else ""
            found.append(
                (
                    late.line,
                    f"{n}.retain_grad() comes after the backward() that went through {n}",
                    f"retain_grad() asks the backward() calls that run after it to keep the gradient "
                    f"that reaches {n}. Here backward() had already gone through {n} when "
                    f"{n}.retain_grad() was called, and no backward() went through it since, so "
                    f"{n}.grad stays None (and the warning about a non-leaf's .grad is silenced).",
                    f"Call {n}.retain_grad() right after {n} is computed{where}, before backward().",
                )
            )
        return found
