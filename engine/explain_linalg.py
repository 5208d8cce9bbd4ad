"""Hints for linear algebra and complex numbers, naming the snippet's matrices as the line
writes them: ``solve`` of a singular matrix (``pinv``); backward() of a complex loss (``.real`` or ``.abs()``; ``eigh`` for a symmetric
matrix's real eigenvalues); ``torch.linalg.solve`` given the right-hand side as a row
(``b.mT``); ``cholesky`` of a matrix that is not positive-definite; a product of ``svd``'s full
``U`` (``full_matrices=False``); ``mse_loss`` of complex tensors; an op a sparse tensor does not
have (``to_dense()`` first)."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from types import FrameType

import torch

from .explain_reading import call_name, calls, shape
from .explain_seed import name_before
from .source import bound_to, line_matching

__all__ = ["linalg_hint"]

_COMPLEX_SEED = re.compile(
    r"grad can be implicitly created only for real scalar outputs but got torch\.(complex\d+)"
)
_SOLVE_SHAPES = re.compile(
    r"linalg\.solve: Incompatible shapes of A and B for the equation AX = B \((\d+)x(\d+) and (\d+)x(\d+)\)"
)
_SINGULAR = "The solver failed because the input matrix is singular"
_NOT_PD = (
    "linalg.cholesky: The factorization could not be completed because the input is not positive-definite"
)
_PRODUCT = re.compile(r"shapes cannot be multiplied \(\d+x(\d+) and (\d+)x\d+\)")
_SPARSE_OP = re.compile(r"Could not run 'aten::(\w+)' with arguments from the '(Sparse\w*)' backend")
_COMPLEX_LOSS = re.compile(r"\"(mse|l1)_cpu\" not implemented for 'Complex(?:Float|Double)'")


def linalg_hint(
    exc: BaseException, code: str | None, frame: FrameType | None, source_lines: Sequence[str]
) -> str | None:
    """The hint for error ``exc`` raised at a line reading ``code`` (in ``frame``) that the
    module's docstring lists; ``None`` for any other error."""
    text = str(exc)
    seed = _COMPLEX_SEED.search(text)
    if seed:
        return _complex_loss(seed.group(1), code, source_lines)
    solve = _SOLVE_SHAPES.search(text)
    if solve:
        n, _, rows, cols = (int(g) for g in solve.groups())
        return _solve_shapes(n, rows, cols, code)
    if _SINGULAR in text:
        called = next((c for c in calls(code) if call_name(c) == "solve" and len(c.args) >= 2), None)
        if called is not None:
            a, b = ast.unparse(called.args[0]), ast.unparse(called.args[1])
            return (
                f"{a} is singular (its determinant is 0: a row or column depends on the others), so {a} X = {b} has "
                f"no one solution. For the least-squares one take torch.linalg.pinv({a}) @ {b}; if {a} should be "
                f"invertible, look at how it is built (a small ridge, {a} + 1e-4 * torch.eye({a}.shape[-1]), makes it so)."
            )
    if _NOT_PD in text:
        return _not_positive_definite(code, frame)
    product = _PRODUCT.search(text)
    if product:
        return _full_svd(code, frame, source_lines)
    sparse = _SPARSE_OP.search(text)
    if sparse:
        return _sparse_op(sparse.group(1), code)
    loss = _COMPLEX_LOSS.search(text)
    if loss:
        called = next(
            (c for c in calls(code) if call_name(c) == f"{loss.group(1)}_loss" and len(c.args) >= 2), None
        )
        a, b = (ast.unparse(called.args[0]), ast.unparse(called.args[1])) if called else ("pred", "target")
        power = ".pow(2)" if loss.group(1) == "mse" else ""
        return (
            f"{loss.group(1)}_loss compares real numbers, and its input is complex. Take the distance between complex "
            f"numbers yourself, a real one: ({a} - {b}).abs(){power}.mean()."
        )
    return None


def _complex_loss(dtype: str, code: str | None, source_lines: Sequence[str]) -> str:
    """backward() of a complex number: a loss to minimise must be real."""
    loss = name_before(".backward(", code) or "the loss"
    eig = line_matching(source_lines, re.compile(r"\blinalg\.eig(?:vals)?\("))
    why = (
        f" torch.linalg.eig (line {eig[0]}) gives complex eigenvalues and vectors even for a real matrix; for a "
        "symmetric one, torch.linalg.eigh (eigvalsh) gives real ones."
        if eig
        else ""
    )
    return (
        f"{loss} is complex ({dtype}), and backward() starts from one real number: complex numbers have no order, so "
        f"there is no 'smaller' to descend to.{why} Make the loss real: {loss}.real, or {loss}.abs() (its size; "
        f".abs().pow(2) is smooth at 0)."
    )


def _solve_shapes(n: int, rows: int, cols: int, code: str | None) -> str | None:
    """``torch.linalg.solve(A, b)`` whose ``b`` does not have ``A``'s rows first."""
    called = next((c for c in calls(code) if call_name(c) == "solve" and len(c.args) >= 2), None)
    if called is None:
        return None
    a, b = ast.unparse(called.args[0]), ast.unparse(called.args[1])
    start = (
        f"torch.linalg.solve({a}, {b}) solves {a} X = {b}, so {b} must have {a}'s {n} rows first: a vector of {n}, "
        f"or ({n}, k) for k right-hand sides as columns, and {b} is ({rows}, {cols})."
    )
    if cols != n:
        return f"{start} Check that {b} belongs to this {a}."
    fix = (
        f"it as a vector, {b}.squeeze(0)" if rows == 1 else f"{b}.mT, and take .mT of the result for X's rows"
    )
    return f"{start} It holds its right-hand sides as rows: pass {fix}."


def _not_positive_definite(code: str | None, frame: FrameType | None) -> str | None:
    """``torch.linalg.cholesky(A)`` of a matrix that is not symmetric positive-definite."""
    called = next((c for c in calls(code) if call_name(c) in ("cholesky", "cholesky_ex") and c.args), None)
    if called is None:
        return None
    a = ast.unparse(called.args[0])
    value = bound_to(a, frame)
    n = value.shape[-1] if isinstance(value, torch.Tensor) and value.dim() >= 2 else None
    symmetric = isinstance(value, torch.Tensor) and n is not None and bool(torch.allclose(value, value.mT))
    what = "" if symmetric or n is None else f" {a} is not even symmetric, and"
    eye = f"torch.eye({n})" if n is not None else f"torch.eye({a}.shape[-1])"
    return (
        f"Cholesky factors only a symmetric positive-definite matrix (a covariance, a kernel matrix):{what} one of "
        f"its leading minors is not positive. Build such a matrix from {a}: {a} @ {a}.mT + 1e-3 * {eye} is one "
        f"(the small diagonal keeps it positive-definite when {a} has dependent rows)."
    )


def _full_svd(code: str | None, frame: FrameType | None, source_lines: Sequence[str]) -> str | None:
    """A product of ``U`` from ``torch.linalg.svd(A)``, square by default, with ``S`` or ``Vh``."""
    made = line_matching(
        source_lines, re.compile(r"=\s*torch\.linalg\.svd\((?![^)]*full_matrices\s*=\s*False)")
    )
    if made is None:
        return None
    targets = [t.strip() for t in made[1].split("=", 1)[0].split(",")]
    used = [t for t in targets if re.search(rf"\b{re.escape(t)}\b", code or "")]
    values = [bound_to(t, frame) for t in targets]
    if len(targets) != 3 or not used or not all(isinstance(v, torch.Tensor) for v in values):
        return None
    u, s, vh = targets
    sizes = ", ".join(f"{t} {shape(v.shape)}" for t, v in zip(targets, values, strict=True))
    call = re.search(r"torch\.linalg\.svd\(.*\)", made[1])
    written = call.group(0) if call else "torch.linalg.svd(A)"
    return (
        f"{written} (line {made[0]}) returns full square {u} and {vh} by default, larger than {s} has values for: "
        f"{sizes}. Pass full_matrices=False, {written[:-1]}, full_matrices=False), for the reduced ones that "
        f"multiply back to the matrix: {u} @ torch.diag({s}) @ {vh}."
    )


def _sparse_op(op: str, code: str | None) -> str | None:
    """``A.view(…)`` of a sparse tensor: an op with no sparse version."""
    called = re.search(rf"([^\W\d][\w.]*)\.{re.escape(op)}_?\(", code or "")
    if called is None:
        return None
    a = called.group(1)
    return (
        f"{a} is a sparse tensor, and {op} has no sparse version: a sparse tensor supports few ops (torch.sparse.mm "
        f"and @, sums, elementwise arithmetic, to_dense). Make it dense first, {a}.to_dense().{op}(…), or keep it "
        "sparse and reach the same result with an op it has."
    )
