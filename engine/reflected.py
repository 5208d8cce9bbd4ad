"""Tell ``4 * x`` from ``x * 4``: which operand of a ``*`` or ``+`` the snippet wrote first.

NOTE [Reflected products and sums]
Python runs ``4 * x`` as ``x.__rmul__(4)``, and PyTorch hands that to the tape mode as
``Tensor.mul(x, 4)``, exactly what ``x * 4`` hands it (``1 - x`` and ``2 / x`` come as
``__rsub__`` and ``__rdiv__``, which tell themselves apart). The app wrote ``y = x**3 - 4*x``
as ``x**3 - x * 4``. The snippet frame that runs the ``*`` is at a ``BINARY_OP``
instruction whose source position spans the whole ``4*x``; its left operand, parsed from
the snippet's own text, is a number literal (``4``, ``-0.5``) or a name bound to a Python
number, so the op is recorded as ``rmul`` (``radd``), as ``1 - x`` is recorded as ``rsub``.
Only ``*`` and ``+`` need this; on Python 3.10 (no source positions) the order is not told.
"""

from __future__ import annotations

import ast
import dis
import itertools
import numbers
from collections.abc import Sequence
from types import CodeType, FrameType

__all__ = ["OperandOrder"]

_BINARY_OP = dis.opmap.get("BINARY_OP")
_NUMBER = ("number", "")  # the left operand is a number literal
_UNSEEN = ("unseen", "")
# what is known of an operation's operands: _NUMBER, ("left", name) for a left operand that
# is a name, ("right", name) for another left operand (a call: np.float64(2.0)) and a right
# operand that is a name; None when neither tells
_Operands = tuple[str, str] | None


class OperandOrder:
    """Tells, for one recording, whether a ``*`` or ``+`` the snippet runs has its number on
    the left (NOTE [Reflected products and sums]). What it read of each instruction is kept
    for the recording, so a loop pays for parsing once."""

    def __init__(self, source_lines: Sequence[str]) -> None:
        self._source_lines = source_lines
        # (code, instruction offset) -> what the source says of the operands (_Operands)
        self._left_operands: dict[tuple[CodeType, int], _Operands] = {}

    def number_on_left(self, frame: FrameType | None, tensor: object) -> bool:
        """Whether the snippet line ``frame`` runs is at a ``number * tensor`` or ``number +
        tensor``. Call it only from within the op, for a ``mul`` or ``add`` whose first
        argument is ``tensor`` and second a Python number: a left operand that is a number
        literal or a name bound to a number, or any other expression (``np.float64(2.0)``,
        ``w.item()``) beside a right operand that is a name bound to ``tensor`` itself."""
        if frame is None or _BINARY_OP is None:
            return False
        key = (frame.f_code, frame.f_lasti)
        left = self._left_operands.get(key, _UNSEEN)
        if left is _UNSEEN:
            left = self._left_operands[key] = _left_operand(*key, self._source_lines)
        if left is None:
            return False
        if left == _NUMBER:
            return True
        side, name = left
        scope = frame.f_locals
        value = scope[name] if name in scope else frame.f_globals.get(name)
        if side == "right":
            return value is tensor
        return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _left_operand(code: CodeType, at: int, source_lines: Sequence[str]) -> _Operands:
    """What the source says of the operands of the binary operation at instruction offset
    ``at`` of ``code`` (None when that instruction is not one: ``x.mul(4)``,
    ``torch.add(x, 4)``)."""
    if not 0 <= at < len(code.co_code) or code.co_code[at] != _BINARY_OP:
        return None
    position = next(itertools.islice(code.co_positions(), at // 2, None), None)
    if position is None:
        return None
    line, end_line, col, end_col = position
    if line is None or end_line is None or col is None or end_col is None or not 0 < line <= end_line:
        return None
    if end_line > len(source_lines):
        return None
    # the columns count UTF-8 bytes
    lines = [text.encode() for text in source_lines[line - 1 : end_line]]
    lines[-1] = lines[-1][:end_col]
    lines[0] = lines[0][col:]
    try:
        tree = ast.parse(b"(" + b"\n".join(lines) + b")", mode="eval")
    except (SyntaxError, ValueError):
        return None
    node = tree.body
    if not isinstance(node, ast.BinOp):
        return None
    left = node.left
    if (
        isinstance(left, ast.UnaryOp)
        and isinstance(left.op, ast.USub | ast.UAdd)
        and isinstance(left.operand, ast.Constant)
    ):
        left = left.operand
    if isinstance(left, ast.Constant):
        number = left.value
        return _NUMBER if isinstance(number, int | float | complex) and not isinstance(number, bool) else None
    if isinstance(left, ast.Name):
        return ("left", left.id)
    if isinstance(node.right, ast.Name):
        return ("right", node.right.id)
    return None
