"""Where the snippet makes a tensor from uninitialised memory, read from its source
(parameter-never-initialised: the detector is uninitialised.py).

# NOTE [Makers the tape cannot see]
# ``torch.empty``, ``torch.empty_like``, ``x.new_empty`` and ``torch.empty_strided`` are
# torch functions: the tape sees them run, with their arguments and the tensor they made.
# ``torch.Tensor(3, 2)`` and ``torch.FloatTensor(3, 2)`` are class calls, which no
# ``TorchFunctionMode`` sees: the tensor they make is met first as an op's input. For those
# the snippet's source says where the tensor went (``self.weight = nn.Parameter(…)`` in
# class ``MyLinear``, ``W = …`` at the module level), and the detector recognises the tensor
# at its first op by that target. A call whose one argument may be a list of values
# (``torch.Tensor(data)``) counts only where the source shows the argument is a size.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from ..source import parsed_source

__all__ = ["VISIBLE_MAKERS", "MakerSite", "maker_sites", "written_through_numpy"]

# the ops (the tape's short names) that hand back memory as the allocator left it
VISIBLE_MAKERS = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new"})
_VISIBLE_CALLS = {"empty", "empty_like", "new_empty", "empty_strided", "new"}
_LEGACY_TYPES = frozenset(
    {
        "Tensor",
        "FloatTensor",
        "DoubleTensor",
        "HalfTensor",
        "BFloat16Tensor",
        "LongTensor",
        "IntTensor",
        "ShortTensor",
        "CharTensor",
        "ByteTensor",
        "BoolTensor",
    }
)
_SOURCE_HINT = re.compile(r"empty|Tensor\s*\(|\.new\s*\(")
# a name that holds a size where a parameter is so named (``n_out``, ``hidden_size``, ``dim``)
_SIZE_NAME = re.compile(
    r"^(?:n|d|k|dim|size|n_\w+|num_\w+|in_\w+|out_\w+|hidden\w*|\w+_(?:size|dim|features|units|in|out|channels))$"
)
_VALUE_NODES = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.Dict, ast.Set)


class MakerSite(NamedTuple):
    """One call of the snippet's that makes a tensor from uninitialised memory.

    ``lines``: the snippet lines the call spans (an op run from any of them is this call's);
    ``code``: the call as written; ``visible``: the tape sees it run (``torch.empty``), else
    it is a class call (NOTE [Makers the tape cannot see]) and ``target`` says where its
    tensor went: ``self.weight`` inside class ``owner``, or a name, assigned in ``function``
    (``None``: at the module level).
    """

    line: int
    lines: frozenset[int]
    code: str
    visible: bool
    target: str | None
    owner: str | None
    function: str | None


def maker_sites(source: str) -> list[MakerSite]:
    """The snippet's calls that make a tensor from uninitialised memory, in source order;
    empty (and cheap) for a snippet that writes none of their names."""
    if not _SOURCE_HINT.search(source):
        return []
    tree = parsed_source(source)
    if tree is None:
        return []
    found: list[MakerSite] = []
    _walk(tree, source, None, None, None, found, tree)
    return sorted(found, key=lambda s: s.line)


def _walk(
    node: ast.AST,
    source: str,
    owner: str | None,
    function: ast.FunctionDef | ast.AsyncFunctionDef | None,
    target: str | None,
    found: list[MakerSite],
    tree: ast.Module,
) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            _walk(child, source, child.name, None, None, found, tree)
            continue
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            _walk(child, source, owner, child, None, found, tree)
            continue
        here = target
        if isinstance(child, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = child.targets if isinstance(child, ast.Assign) else [child.target]
            here = ast.unparse(targets[0]) if len(targets) == 1 else None
        if isinstance(child, ast.Call):
            registered = _registered(child)
            if registered is not None:
                here = f"self.{registered}"
            site = _site(child, source, owner, function, here, tree)
            if site is not None:
                found.append(site)
        _walk(child, source, owner, function, here, found, tree)


def _registered(call: ast.Call) -> str | None:
    """The attribute ``self.register_parameter("weight", …)`` (or ``register_buffer``) names."""
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in ("register_parameter", "register_buffer")
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ):
        return call.args[0].value
    return None


def _site(
    call: ast.Call,
    source: str,
    owner: str | None,
    function: ast.FunctionDef | ast.AsyncFunctionDef | None,
    target: str | None,
    tree: ast.Module,
) -> MakerSite | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in _VISIBLE_CALLS:
        if name == "new" and not _sizes(call.args, function or tree):
            return None  # x.new([1, 2]) copies values
        visible = True
    elif name in _LEGACY_TYPES and _torch_owned(func) and _sizes(call.args, function or tree):
        visible = False
    else:
        return None
    end = call.end_lineno or call.lineno
    code = ast.get_source_segment(source, call) or ast.unparse(call)
    fn = function.name if function is not None else None
    owned = owner if target is not None and target.startswith("self.") else None
    return MakerSite(call.lineno, frozenset(range(call.lineno, end + 1)), code, visible, target, owned, fn)


def _torch_owned(func: ast.expr) -> bool:
    """Whether a class call reads ``torch.X``, ``torch.cuda.X`` or a bare imported ``X``."""
    if isinstance(func, ast.Name):
        return True
    if isinstance(func, ast.Attribute):
        base = ast.unparse(func.value)
        return base in ("torch", "torch.cuda", "th")
    return False


def _sizes(args: list[ast.expr], scope: ast.AST) -> bool:
    """Whether a legacy constructor's (or ``x.new``'s) positional ``args`` are sizes, not
    values: two or more that are no list, one int, a shape, a starred list, or a name that
    the source shows holds a size."""
    if not args or any(isinstance(a, _VALUE_NODES) for a in args):
        return False
    if len(args) >= 2 or isinstance(args[0], ast.Starred):
        return True
    (arg,) = args
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, int) and not isinstance(arg.value, bool)
    if isinstance(arg, ast.Attribute) and arg.attr == "shape":
        return True
    if isinstance(arg, ast.Call):
        called = arg.func.attr if isinstance(arg.func, ast.Attribute) else getattr(arg.func, "id", "")
        return called in ("size", "Size", "len")
    if isinstance(arg, ast.Name):
        return _names_a_size(arg.id, scope)
    return False


def _names_a_size(name: str, scope: ast.AST) -> bool:
    """Whether ``name``, one argument of a legacy constructor, holds a size: assigned an int
    (or an expression of ints) in ``scope`` (a function, or the snippet), or a parameter of
    the function named as sizes are."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return _int_expression(node.value)
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = scope.args
        parameters = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
        return name in parameters and bool(_SIZE_NAME.match(name))
    return False


def _int_expression(node: ast.expr) -> bool:
    """Whether ``node`` is an int, or arithmetic of ints and names (``2 * hidden``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return _int_expression(node.left) and (
            _int_expression(node.right) or isinstance(node.right, ast.Name)
        )
    return False


def written_through_numpy(source: str, names: set[str]) -> bool:
    """Whether the snippet writes into the NumPy array ``x.numpy()`` hands back, for ``x``
    one of ``names`` (``t.numpy()[:] = arr``, ``np.copyto(t.numpy(), arr)``, or an alias
    ``a = t.numpy()`` written so): a write the tape cannot see, which moves no version."""
    tree = parsed_source(source) if ".numpy()" in source else None
    if tree is None:
        return False
    arrays = {f"{name}.numpy()" for name in names}
    for node in ast.walk(tree):  # the aliases: ``a = t.numpy()``
        if isinstance(node, ast.Assign) and ast.unparse(node.value) in arrays:
            arrays |= {ast.unparse(t) for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        written: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            written = [t.value for t in targets if isinstance(t, ast.Subscript)]
            written += [node.target] if isinstance(node, ast.AugAssign) else []
        elif isinstance(node, ast.Call):
            called = ast.unparse(node.func)
            written = node.args[:1] if called.endswith("copyto") else []
            written += [k.value for k in node.keywords if k.arg == "out"]
        if any(ast.unparse(w) in arrays for w in written):
            return True
    return False
