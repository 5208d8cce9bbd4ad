"""Hints for a snippet that does not compile because of how it was pasted: curly quotes, dashes
and invisible spaces from a word processor, a PDF or a chat app; a notebook's ``%`` and ``!``
lines; the ``>>>`` prompts of documentation; a whole paste indented. Python's message names
the character or says "invalid syntax"; the hint says where it came from and what to write.
"""

from __future__ import annotations

import re

__all__ = ["cell_label_hint", "syntax_hint"]

# a character pasted in place of one Python needs: (what it is, what to write)
_LOOKALIKES = {
    "\u201c": ("a curly quote “", 'a straight quote "'),
    "\u201d": ("a curly quote ”", 'a straight quote "'),
    "\u2018": ("a curly quote ‘", "a straight quote '"),
    "\u2019": ("a curly quote ’", "a straight quote '"),
    "\u2013": ("a dash –", "a minus sign -"),
    "\u2014": ("a dash —", "a minus sign -"),
    "\u2212": ("a minus sign − (U+2212)", "the keyboard's minus sign -"),
    "\u00d7": ("a times sign ×", "`*`"),
    "\u00f7": ("a division sign ÷", "`/`"),
}
# characters that show as a space, or as nothing, and are not Python's space
_INVISIBLE = {
    "\u00a0": "a non-breaking space (U+00A0)",
    "\u202f": "a narrow non-breaking space (U+202F)",
    "\u200b": "a zero-width space (U+200B)",
    "\u200c": "a zero-width non-joiner (U+200C)",
    "\u200d": "a zero-width joiner (U+200D)",
    "\u2060": "a word joiner (U+2060)",
    "\ufeff": "a zero-width no-break space (U+FEFF)",
}
_MAGIC = re.compile(r"\s*(%%?|!)\S")
_PROMPT = re.compile(r"\s*(>>>|\.\.\.)( |$)")
_CELL_LABEL = re.compile(r"\s*(In|Out)\s*\[\s*\d*\s*\]:")


def syntax_hint(exc: SyntaxError, source_lines: list[str]) -> str | None:
    """The hint for ``exc``, raised compiling the snippet whose lines are ``source_lines``;
    ``None`` where its cause is not one of pasting.

    >>> try:
    ...     compile("y = x – 1", "snippet.py", "exec")
    ... except SyntaxError as exc:
    ...     print(syntax_hint(exc, ["y = x – 1"]))
    A dash – came with the paste (word processors, PDFs and chat apps write them): Python needs a minus sign -. Retype it on line 1.
    """
    line = exc.lineno
    text = source_lines[line - 1] if line is not None and 0 < line <= len(source_lines) else ""
    return (
        _lookalike(exc, source_lines)
        or _invisible(exc, source_lines)
        or _magic(text, line)
        or _prompt(text, line)
        or cell_label_hint(text)
        or _indented(exc, source_lines)
    )


def _lines_with(chars: str, source_lines: list[str]) -> str:
    """The lines that hold any of ``chars``: "line 3" or "lines 3, 5 and 9" (the first ten)."""
    found = [str(i) for i, text in enumerate(source_lines, 1) if any(c in text for c in chars)][:10]
    if len(found) == 1:
        return f"line {found[0]}"
    return "lines " + ", ".join(found[:-1]) + f" and {found[-1]}"


def _lookalike(exc: SyntaxError, source_lines: list[str]) -> str | None:
    """A curly quote, a dash or a times sign where Python needs its own character."""
    found = re.search(r"invalid character '(.)'", str(exc.msg))
    if not found or found.group(1) not in _LOOKALIKES:
        return None
    what, write = _LOOKALIKES[found.group(1)]
    same = "".join(c for c, (_, w) in _LOOKALIKES.items() if w == write)
    lines = _lines_with(same, source_lines)
    return (
        f"{what[0].upper()}{what[1:]} came with the paste (word processors, PDFs and chat apps write "
        f"them): Python needs {write}. Retype {'it' if lines.startswith('line ') else 'them'} on {lines}."
    )


def _invisible(exc: SyntaxError, source_lines: list[str]) -> str | None:
    """A character that looks like a space, or like nothing, where Python sees neither."""
    found = re.search(r"invalid non-printable character U\+([0-9A-F]{4})", str(exc.msg))
    char = chr(int(found.group(1), 16)) if found else None
    if char not in _INVISIBLE:
        return None
    where = f" (column {exc.offset})" if exc.offset else ""
    lines = _lines_with(str(char), source_lines)
    also = "" if lines == f"line {exc.lineno}" else f" ({lines} have one)"
    return (
        f"Line {exc.lineno} holds {_INVISIBLE[str(char)]}{where}, which web pages, PDFs and chat apps "
        "paste and the editor shows as a space or not at all: Python reads it as neither. Delete it "
        f"and type a plain space where one belongs{also}."
    )


def _magic(text: str, line: int | None) -> str | None:
    """A notebook's ``%matplotlib inline``, ``%%time`` or ``!pip install`` line."""
    found = _MAGIC.match(text)
    if not found:
        return None
    command = text.strip()[:40]
    if found.group(1) == "!":
        return (
            f"Line {line} (`{command}`) is a notebook's shell command, not Python: delete it. Nothing "
            "can be installed where gradwalk runs snippets; PyTorch and NumPy are there, with Python's "
            "standard library."
        )
    return (
        f"Line {line} (`{command}`) is a Jupyter magic, not Python: delete it. gradwalk runs the "
        "snippet as a script, and charts the run itself (loss, gradient norms, memory)."
    )


def _prompt(text: str, line: int | None) -> str | None:
    """Code copied from an interactive session, with its ``>>>`` and ``...`` prompts."""
    if not _PROMPT.match(text):
        return None
    return (
        f"Line {line} starts with `{text.strip()[:3]}`, a prompt of Python's interactive shell copied "
        "with the code: remove the `>>> ` and `... ` at the start of each line, and the lines of "
        "output between them."
    )


def cell_label_hint(text: str) -> str | None:
    """The hint for a line ``text`` that starts with a notebook's ``In [3]:`` label (Python
    reads it as a name, or fails to compile it); ``None`` for any other line."""
    label = _CELL_LABEL.match(text)
    if not label:
        return None
    return (
        f"The line starts with `{label.group(0).strip()}`, a notebook's cell label copied with the "
        "code: remove the labels, and the `Out[…]:` lines."
    )


def _indented(exc: SyntaxError, source_lines: list[str]) -> str | None:
    """The whole paste indented (code copied from inside a function or a class)."""
    if not isinstance(exc, IndentationError) or "unexpected indent" not in str(exc.msg):
        return None
    code = [t for t in source_lines if t.strip() and not t.lstrip().startswith("#")]
    if not code or code[0].strip() != source_lines[(exc.lineno or 1) - 1].strip():
        return None  # an indent further down: Python's message says it
    depth = len(code[0]) - len(code[0].lstrip())
    if depth == 0 or any(len(t) - len(t.lstrip()) < depth for t in code):
        return None
    return (
        f"The whole snippet is indented by {depth} {'space' if depth == 1 else 'spaces'} (copied from "
        "inside a function or a class?), and a script's first line must start at the margin: select "
        f"all and press Shift+Tab, or remove {depth} from the start of every line."
    )
