"""Hints for what backward() (or torch.autograd.grad) was asked to start from: an output of
several numbers with no gradient for it, or a gradient whose shape is not the output's; and
the names a line's backward() or autograd.grad call is made on, for other hints."""

from __future__ import annotations

import re

__all__ = ["chain_root", "grad_output_of", "name_before", "seed_hint"]

# "torch.autograd.grad(out, x)": the output it differentiates
# a tensor as a line writes it: a name, then attributes, calls with plain arguments, indexing
_WRITTEN = r"([^\W\d]\w*(?:\.[^\W\d]\w*|\([^()]*\)|\[[^\[\]]*\])*)"
_RECEIVER = r"(?<![\w.)\]])" + _WRITTEN
_AUTOGRAD_GRAD_OF = re.compile(r"autograd\.grad\(\s*" + _WRITTEN)
_CHAIN = re.compile(r"([^\W\d][\w.]*?)((?:\.[^\W\d]\w*\([^()]*\))*)")
_GRAD_SHAPE_MISMATCH = re.compile(
    r"Mismatch in shape: grad_output\[0\] has a shape of torch\.Size\(\[(.*?)\]\) and output\[0\] "
    r"has a shape of torch\.Size\(\[(.*?)\]\)"
)


def seed_hint(text: str, code: str | None) -> str | None:
    """The hint for error message ``text`` about where a backward pass starts, raised at a
    line reading ``code``; ``None`` for any other error."""
    if "grad can be implicitly created only for scalar outputs" in text:
        return _non_scalar_hint(code)
    mismatch = _GRAD_SHAPE_MISMATCH.search(text)
    if mismatch:
        return _seed_shape_hint(code, *mismatch.groups())
    return None


def name_before(call: str, code: str | None) -> str | None:
    """What a call on the line is made on, as the line writes it: ``loss`` for ``.backward(``
    in ``loss.backward()``, ``g.sum()`` in ``g.sum().backward()``, ``out[0]``; ``None`` where
    it starts with no name (``(x * 3).numpy()``) or is ``torch.autograd`` itself."""
    found = re.search(_RECEIVER + re.escape(call), code or "")
    return found.group(1) if found and not found.group(1).endswith("autograd") else None


def grad_output_of(code: str | None) -> str | None:
    """The output ``torch.autograd.grad(out, x)`` on the line differentiates, as the line
    writes it (``out``, ``x.grad.sum()``), where it starts with a name."""
    found = _AUTOGRAD_GRAD_OF.search(code or "")
    return found.group(1) if found else None


def chain_root(expression: str) -> str | None:
    """The dotted name a chain of method calls starts from: ``g`` for ``g.sum()``,
    ``x.grad`` for ``x.grad.pow(2).sum()``, ``loss`` for ``loss``; ``None`` where the
    expression calls or indexes something else (``model(x).sum()``, ``out[0]``)."""
    found = _CHAIN.fullmatch(expression)
    return found.group(1) if found else None


def _non_scalar_hint(code: str | None) -> str:
    """backward() or autograd.grad of a tensor of several numbers without a gradient for it."""
    if "autograd.grad" in (code or ""):
        out = grad_output_of(code) or "out"
        return (
            f"torch.autograd.grad of {out}, a tensor of several numbers, needs a gradient to start "
            f"from: reduce it first ({out}.sum()), or pass grad_outputs=torch.ones_like({out}) "
            "(the gradient of its sum)."
        )
    out = name_before(".backward(", code) or "out"
    return (
        f"backward() without an argument needs a single number (a scalar loss), and {out} holds "
        f"several. Reduce it first (loss = {out}.sum() or {out}.mean()) or pass a gradient: "
        f"{out}.backward(torch.ones_like({out}))."
    )


def _seed_shape_hint(code: str | None, given: str, wanted: str) -> str:
    """backward(gradient) or autograd.grad(out, x, grad_outputs) given a gradient whose shape
    is not the output's (shapes as PyTorch's message writes them, ``5, 2``)."""

    def shape(dims: str) -> str:
        return f"({dims},)" if dims and "," not in dims else f"({dims})"

    if "autograd.grad" in (code or ""):
        out = grad_output_of(code) or "out"
        fix = f"grad_outputs=torch.ones_like({out}) (the gradient of {out}.sum())"
        bare = f"torch.autograd.grad({out}.sum(), …) without grad_outputs"
    else:
        out = name_before(".backward(", code) or "out"
        fix = f"torch.ones_like({out}) (the gradient of {out}.sum())"
        bare = "backward() without a gradient"
    return (
        f"The gradient to start from must have the shape of {out}, {shape(wanted)}; the one passed has "
        f"{shape(given)}. Pass {fix}, or reduce {out} to a scalar loss first and call {bare}."
    )
