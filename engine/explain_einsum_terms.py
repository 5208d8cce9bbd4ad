"""Hints for an einsum equation that does not fit how it is called (explain_factories.py has
a term with the wrong number of letters for its operand, and a letter of two sizes):

- more or fewer operands than the equation has terms (``'ij,jk->ik'`` given one tensor);
- an output letter no input term has (``'ij,jk->il'``): the letter it likely meant;
- a letter written twice in the output (``'ij->ii'``);
- a character that is no letter (``'i1->i'``).

Each quotes the snippet's equation and operands; ``None`` for any other error."""

from __future__ import annotations

import ast
import re
from collections import Counter

from .explain_reading import find_call

__all__ = ["einsum_terms_hint"]

_COUNT = re.compile(r"einsum\(\): (fewer|more) operands were provided than specified in the equation")
_UNKNOWN = re.compile(
    r"einsum\(\): output subscript (\w) does not appear in the equation for any input operand"
)
_TWICE = re.compile(r"einsum\(\): output subscript (\w) appears more than once in the output")
_INVALID = re.compile(r"einsum\(\): invalid subscript given at index (\d+) in the equation string")


def einsum_terms_hint(text: str, code: str | None) -> str | None:
    """The hint for error ``text`` at a line reading ``code`` that the module's docstring lists."""
    if "einsum(): " not in text:  # (every error below is einsum's: read the line only then)
        return None
    call = find_call(code, ("einsum",), ())
    args = call["call"].args if call else []
    if not args or not isinstance(args[0], ast.Constant) or not isinstance(args[0].value, str):
        return None
    equation = args[0].value
    inputs, _, output = equation.replace(" ", "").partition("->")
    terms = inputs.split(",")
    operands = args[1:]
    if len(operands) == 1 and isinstance(operands[0], ast.List | ast.Tuple):
        operands = list(operands[0].elts)  # einsum('…', [a, b])
    names = [ast.unparse(a) for a in operands]
    start = f"In torch.einsum({equation!r}, {', '.join(names)})"
    count = _COUNT.search(text)
    if count:
        return (
            f"{start} the equation has {len(terms)} input term{'s' if len(terms) != 1 else ''} "
            f"({', '.join(repr(t) for t in terms)}), one per operand in order, and it was given {len(names)} "
            f"operand{'s' if len(names) != 1 else ''}. Pass one tensor per term, or write a term for each "
            "tensor you pass."
        )
    unknown = _UNKNOWN.search(text)
    if unknown:
        return _unknown_letter(start, unknown.group(1), terms, output, equation)
    twice = _TWICE.search(text)
    if twice:
        letter = twice.group(1)
        diagonal = "".join(dict.fromkeys(output))
        return (
            f"{start} each letter of the output ({output!r}) names one dimension of the result, and {letter!r} is "
            f"there twice. Write each once ('{inputs}->{diagonal}'); for a matrix with a vector on its diagonal "
            "take torch.diag_embed of the result."
        )
    invalid = _INVALID.search(text)
    if invalid:
        at = int(invalid.group(1))
        bad = equation[at] if at < len(equation) else "?"
        return (
            f"{start} each dimension is named by a letter (a-z, A-Z), and {bad!r} at index {at} is not one: "
            "a dimension of size 1 needs a letter too. Use letters only, '...' for dimensions carried along as "
            "they are."
        )
    return None


def _unknown_letter(start: str, letter: str, terms: list[str], output: str, equation: str) -> str:
    """An output letter that no input term has: the input letter left out of both the output
    and the sums (it appears once) is the likely one meant."""
    seen = Counter("".join(terms))
    spare = [c for c in dict.fromkeys("".join(terms)) if seen[c] == 1 and c not in output]
    letters = ", ".join(dict.fromkeys("".join(terms)))
    fix = (
        f" Likely {spare[0]!r} is meant: {equation.replace(' ', '').rsplit('->', 1)[0]}->{output.replace(letter, spare[0])}."
        if len(spare) == 1
        else ""
    )
    return (
        f"{start} the output {output!r} names {letter!r}, and no input term has it: the result's dimensions are "
        f"the inputs' ({letters} here), each output letter one of them; a letter left out of the output is "
        f"summed over.{fix}"
    )
