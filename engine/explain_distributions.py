"""Errors of torch.distributions, said in the snippet's terms: a value outside the support or
of another shape given to log_prob, a parameter outside its constraint (a scale not positive,
NaN, a covariance not positive definite, a Beta's concentration through its Dirichlet, a
Uniform's low not below its high), a MultivariateNormal given a vector where its covariance
matrix goes, rsample() of a discrete distribution, sample() of one built from integers. PyTorch's own
messages (an empty NotImplementedError; "Expected value argument ... to be within the support")
name none of the snippet's variables. Also the small readers of a line explain_tools.py shares.
"""

from __future__ import annotations

import ast
import inspect
import re
from types import FrameType
from typing import Any

import torch

from .explain_reading import call_name, calls, syntax_tree

__all__ = ["distribution_hint", "first_call", "lookup", "parsed_line"]


def distribution_hint(exc: BaseException, code: str | None, frame: FrameType | None) -> str | None:
    """The hint for ``exc`` raised at a line reading ``code`` (see the module's docstring);
    ``None`` for any other error."""
    text = str(exc)
    broadcast = _LOG_PROB_SHAPE.search(text)
    if broadcast:
        return _log_prob_shape(broadcast, code)
    support = _SUPPORT.search(text)
    if support:
        return _support(support, code)
    constraint = _CONSTRAINT.search(text)
    if constraint:
        return _constraint(constraint, code)
    matrix = _MATRIX_1D.search(text)
    if matrix:
        return _matrix_as_vector(matrix.group(1), code)
    if isinstance(exc, NotImplementedError) and ".rsample(" in (code or ""):
        return _no_rsample(code or "", frame)
    if "not implemented for '" in text and re.search(r"\.r?sample\(", code or ""):
        return _integer_distribution(code or "", frame)
    return None


_MATRIX_1D = re.compile(
    r"(covariance_matrix|scale_tril|precision_matrix) must be at least two-dimensional, with optional leading batch"
)


def _matrix_as_vector(param: str, code: str | None) -> str:
    """MultivariateNormal given a vector of variances (or scales) where a matrix goes."""
    given = _argument(code, "MultivariateNormal", param) or param
    diagonal = f"torch.diag({given})"
    return (
        f"MultivariateNormal's {param} is a (d, d) matrix, and {given} is a vector. For independent coordinates put "
        f"the vector on the diagonal, {param}={diagonal} (variances for covariance_matrix, standard deviations for "
        f"scale_tril); or use Independent(Normal(loc, scale), 1), which takes the scales as a vector."
    )


_SUPPORT = re.compile(
    r"Expected value argument \(Tensor of shape (\([\d, ]*\))\) to be within the support \((.+?)\) of the "
    r"distribution (\w+)\(.*?\), but found invalid values:\s*(.*)",
    re.S,
)


_CONSTRAINT = re.compile(
    r"Expected parameter (\w+) \(Tensor of shape (\([\d, ]*\))\) of distribution (\w+)\(.*?\) to satisfy the "
    r"constraint (.+?), but found invalid values:\s*(.*)",
    re.S,
)


_SUPPORTS = {
    "Boolean()": "0 or 1",
    "Simplex()": "probability vectors, non-negative and summing to 1",
    "Real()": "any finite number",
}


_LOG_PROB_SHAPE = re.compile(
    r"Value is not broadcastable with batch_shape\+event_shape: torch\.Size\(\[([\d, ]*)\]\) vs "
    r"torch\.Size\(\[([\d, ]*)\]\)"
)


_POSITIVE = re.compile(r"GreaterThan(?:Eq)?\(lower_bound=0\.0\)")


def parsed_line(code: str | None) -> ast.AST:
    """The statement ``code`` as a syntax tree; an empty module where it does not parse."""
    return syntax_tree(code) or ast.Module([], [])


def first_call(code: str | None, attr: str) -> ast.Call | None:
    """The first call of ``….attr(…)`` (or ``attr(…)``) at ``code``."""
    return next((call for call in calls(code) if call_name(call) == attr), None)


def _support(found: re.Match[str], code: str | None) -> str:
    _shape, support, dist, values = found.groups()
    call = first_call(code, "log_prob")
    who = (
        ast.unparse(call.func.value) if call and isinstance(call.func, ast.Attribute) else "the distribution"
    )
    value = ast.unparse(call.args[0]) if call and call.args else "the value"
    bounds = re.fullmatch(r"IntegerInterval\(lower_bound=(-?\d+), upper_bound=(-?\d+)\)", support)
    if bounds:
        low, high = bounds.groups()
        meaning = f"whole numbers from {low} to {high}"
        if dist == "Categorical":
            meaning = f"class indices from {low} to {high} (one per category, counted from 0)"
    else:
        interval = re.fullmatch(r"(?:Half[Oo]pen)?Interval\(lower_bound=(\S+), upper_bound=(\S+)\)", support)
        meaning = (
            f"numbers from {interval.group(1)} to {interval.group(2)}"
            if interval
            else _SUPPORTS.get(support, "")
        )
    advice = (
        f" A {dist} scores outcomes 0 or 1: pass the observed 0/1 labels; to compare probabilities with soft "
        "targets use F.binary_cross_entropy(probs, target)."
        if dist in ("Bernoulli", "Binomial") or support == "Boolean()"
        else f" Pass values {dist} can produce."
    )
    return (
        f"{who}.log_prob({value}) scores values {dist} can produce, its support, {support}{': ' if meaning else ''}{meaning}; "
        f"{value} holds values outside it ({' '.join(values.split())[:80]}), whose probability is 0."
        f"{advice} (validate_args=False only silences the check: the numbers it returns there mean nothing.)"
    )


def _log_prob_shape(found: re.Match[str], code: str | None) -> str:
    value, shape = (f"({s})" for s in found.groups())
    call = first_call(code, "log_prob")
    who = (
        ast.unparse(call.func.value) if call and isinstance(call.func, ast.Attribute) else "the distribution"
    )
    given = ast.unparse(call.args[0]) if call and call.args else "the value"
    return (
        f"{who}.log_prob({given}) scores each value against its own component, so {given} must have {who}'s "
        f"shape, batch_shape + event_shape = {shape} (or broadcast to it), and it is {value}. Pass values shaped "
        f"as {who}.sample() is, or build {who} with parameters of the shape of {given}."
    )


def _constraint(found: re.Match[str], code: str | None) -> str:
    param, _shape, dist, constraint, values = found.groups()
    given = _argument(code, dist, param) or param
    called = _distribution_called(code)
    if called and called[0] != dist:  # Beta builds a Dirichlet, and its message names that
        return (
            f"{called[0]} builds a {dist} of its parameters ({called[1]}), whose {param} must satisfy {constraint}, "
            f"and some values do not ({' '.join(values.split())[:80]}). Give {called[0]} parameters that do "
            "(for a network's output, F.softplus(raw) + 1e-5 is positive)."
        )
    seen = " ".join(values.split())[:80]
    if "nan" in seen:
        return (
            f"{dist}'s {param} ({given}) holds NaN ({seen}), and its constraint, {constraint}, rules NaN out: "
            "the numbers it was computed from went NaN first (a diverging training run, a log or division at 0). "
            "Find where with torch.autograd.set_detect_anomaly(True), or lower the learning rate."
        )
    if constraint == "PositiveDefinite()":
        return (
            f"{dist}'s {param} must be positive definite (symmetric, its eigenvalues above 0), and {given} is not. "
            f"Build one from any square matrix A as A @ A.T + 1e-3 * torch.eye(n), or pass scale_tril= a lower "
            "triangular matrix with a positive diagonal."
        )
    if dist == "Uniform" and param in ("low", "high"):
        low, high = (_argument(code, dist, p) or p for p in ("low", "high"))
        return (
            f"Uniform(low, high) draws between low and high, so low must be below high, and here low={low} is not "
            f"below high={high} ({seen} where it fails). Swap them: Uniform({high}, {low}) (or give high above low)."
        )
    fix = (
        f" Make it positive: F.softplus({given}) + 1e-5 or {given}.exp() for a network's output, or "
        f"{given}.abs() for numbers that are a spread whatever their sign."
        if _POSITIVE.search(constraint)
        else ""
    )
    return f"{dist}'s {param} must satisfy {constraint}, and {given} holds values that do not ({seen}).{fix}"


def _argument(code: str | None, dist: str, param: str) -> str | None:
    """How ``code``'s call of ``dist`` writes its ``param`` argument."""
    call = first_call(code, dist)
    if call is None:
        return None
    for kw in call.keywords:
        if kw.arg == param:
            return ast.unparse(kw.value)
    cls = getattr(torch.distributions, dist, None)
    try:
        names = [n for n in inspect.signature(cls).parameters if n != "self"] if cls else []
    except (TypeError, ValueError):
        return None
    if param in names and names.index(param) < len(call.args):
        return ast.unparse(call.args[names.index(param)])
    return None


def _distribution_called(code: str | None) -> tuple[str, str] | None:
    """The torch.distributions class ``code`` calls, and its arguments as written."""
    for node in calls(code):
        name = call_name(node)
        cls = getattr(torch.distributions, name, None)
        if isinstance(cls, type) and issubclass(cls, torch.distributions.Distribution):
            return name, ", ".join(ast.unparse(a) for a in node.args) or "its parameters"
    return None


def lookup(expr: str, frame: FrameType | None) -> Any:
    if frame is None or not re.fullmatch(r"[^\W\d]\w*", expr):
        return None
    return frame.f_locals.get(expr, frame.f_globals.get(expr))


def _no_rsample(code: str, frame: FrameType | None) -> str | None:
    call = first_call(code, "rsample")
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    who = ast.unparse(call.func.value)
    dist = lookup(who, frame)
    if not isinstance(dist, torch.distributions.Distribution) or dist.has_rsample:
        return None
    kind = type(dist).__name__
    relaxed = {
        "Categorical": "RelaxedOneHotCategorical(torch.tensor(0.5), logits=…).rsample() (Gumbel-softmax)",
        "OneHotCategorical": "RelaxedOneHotCategorical(torch.tensor(0.5), logits=…).rsample() (Gumbel-softmax)",
        "Bernoulli": "RelaxedBernoulli(torch.tensor(0.5), logits=…).rsample()",
    }.get(kind)
    return (
        f"{kind} has no rsample(): its samples are discrete, so no reparameterisation carries a gradient "
        f"through them back to its parameters. Draw with {who}.sample() and train with the score-function "
        f"loss, -({who}.log_prob(a) * reward).mean() (REINFORCE)"
        + (f", or use a relaxed distribution, torch.distributions.{relaxed}." if relaxed else ".")
    )


def _integer_distribution(code: str, frame: FrameType | None) -> str | None:
    """sample() of a distribution built from integer tensors."""
    call = next(
        (
            n
            for n in ast.walk(parsed_line(code))
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("sample", "rsample")
        ),
        None,
    )
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    who = ast.unparse(call.func.value)
    dist = lookup(who, frame)
    if not isinstance(dist, torch.distributions.Distribution):
        return None
    ints = [
        name
        for name in getattr(type(dist), "arg_constraints", {})
        if isinstance(t := dist.__dict__.get(name), torch.Tensor) and not t.is_floating_point()
    ]
    if not ints:
        return None
    return (
        f"{who} is a {type(dist).__name__} whose {' and '.join(ints)} {'are' if len(ints) > 1 else 'is'} integer "
        f"tensors (torch.tensor of whole numbers, [0, 1], is int64), and drawing from it needs floats. Build it "
        "from floats: torch.tensor([0.0, 1.0]), or .float() of the tensors."
    )
