"""A hidden ReLU whose every unit is 0 for every sample, to the end of the run (relu-units-dead).

``h = F.relu(self.fc1(x))`` passes no gradient back through a unit that is 0 (its input
negative) for a sample. When every unit is 0 for every sample of every batch, ``fc1.weight``
and ``fc1.bias`` get exactly 0 gradient, as does everything below them through this layer,
and no step can bring them back: the layer has stopped learning for good, and the loss settles
where the layers above can take it alone. Nothing raises. Learners cause it with a learning
rate too high (one big step knocks the biases far negative), a bias initialised very negative
(``nn.init.constant_(fc1.bias, -5)``), or inputs never centred or scaled.

NOTE [Dead ReLUs, cheaply]: the ReLU calls are seen where ops are recorded (the steps recorded
in full, the code before the first step), and each links its ReLU to the layer right below it
through the ReLU's node: a Linear's ``addmm``/``mm`` (through the ``view`` of a 3-D input), a
convolution, a batch norm. Only a ReLU whose output carries a graph and whose layer's
parameters all require grad is followed (an evaluation under no_grad, a frozen layer, a
``clamp(min=0)`` in data prep are not; nor a hinge loss ``F.relu(1 - y * s)``, whose input is
an arithmetic op, not a layer: all 0 is its success). From then on each optimizer step that
holds the layer reads one number: whether the gradient of its smallest parameter (the bias)
has any non-zero entry. At the end of the run a layer is said when its gradient was exactly 0
at each of its last :data:`_FEWEST_STEPS` steps or more (:data:`_FEWEST_BATCH_STEPS` when it
trained on batches that change from step to step: a unit alive for a few samples only can
miss a few batches), is exactly 0 in every parameter, and its units are seen 0 for every
sample: all of them at the first recorded step, or the first recorded batch of data run
through it (and the Linear layers and ReLUs between, which it links too) with the weights as
they are now. A gradient of 0 alone is not enough: a loss saturated on the samples a few live
units see, or a dead layer above, sends none back either. Only the topmost dead layer of a
stack is said (the ones below get no gradient through it). A layer that a few units of are
dead still gets gradient through the others and is left alone, and so is a run of fewer
steps (nothing was trained), a loop that steps by hand (no optimizer step to count), and a
ReLU first met after the steps recorded in full. A ReLU output with no element (an empty batch:
an expert of a mixture that no token was routed to) shows no unit at all and is not looked at:
the layer is followed from its first call on samples. Before the run's first optimizer step,
other data replaces the first (which was no batch trained on: a forward on zeros to check
shapes), and a unit above 0 for some sample of any call counts as alive.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .dead_relu_said import DeadLayer, dead_layer_said
from .kinds import Said

__all__ = ["RELU_OPS", "DeadRelus"]

RELU_OPS = frozenset({"relu", "relu_"})

_FEWEST_STEPS = 3  # zero-gradient steps up to the end of the run before it is said
_FEWEST_BATCH_STEPS = 20  # the same, for a layer trained on batches that change
# the nodes a layer's output comes from, and where its units lie in the output
_LINEAR_NODES = frozenset({"AddmmBackward0", "MmBackward0"})
_CHANNEL_NODES = frozenset({"ConvolutionBackward0", "NativeBatchNormBackward0", "CudnnBatchNormBackward0"})
_RESHAPES = frozenset({"ViewBackward0", "UnsafeViewBackward0"})  # a Linear on a 3-D input
# the saved input of each layer node, and the index of that input's node in next_functions
_SAVED_INPUT = {
    "AddmmBackward0": ("_saved_mat1", 1),
    "MmBackward0": ("_saved_self", 0),
    "ConvolutionBackward0": ("_saved_input", 0),
}

_Key = tuple[int, ...]  # the ids of a layer's parameters


class _Layer:
    """One layer below a ReLU, and the course of its gradient over the steps."""

    __slots__ = (
        "alive",
        "as_written",
        "batches",
        "below",
        "dead_since",
        "first_input",
        "input_at",
        "line",
        "loss_before",
        "lr_before",
        "params",
        "probe",
        "sample",
        "seen_at",
        "steps",
        "units",
    )

    def __init__(self, params: list[torch.Tensor], line: int | None, units: int, seen_at: int) -> None:
        self.params = [weakref.ref(p) for p in params]
        self.probe = weakref.ref(min(params, key=lambda p: p.numel()))  # the bias, where it has one
        self.line = line
        self.units = units
        self.seen_at = seen_at  # optimizer steps taken by then
        self.alive: int | None = None  # units above 0 for some sample when first seen (None: not counted)
        self.sample: torch.Tensor | None = None  # a Linear's 2-D input when first seen, if data (no graph)
        # that data input of any layer, and where it lies: a later batch given its freed memory
        # does not pass for it, as a set the snippet holds (the whole set each step) stays alive
        self.first_input: weakref.ref[torch.Tensor] | None = None
        self.input_at: tuple[int, tuple[int, ...]] | None = None
        self.batches: bool | None = None  # whether another data input came later (None: none seen)
        self.below: _Key | None = None  # the Linear whose ReLU makes this Linear's input
        self.dead_since: int | None = None  # the first step of the last run of 0 gradients
        self.steps = 0  # the steps of its optimizer so far
        self.lr_before: Any = None  # the learning rate of the last step with a gradient
        self.loss_before: float | None = None  # that step's loss
        self.as_written = False  # its weight used as written, x @ W (W: (in, out))

    def took(self, result: torch.Tensor, unit_dim: int, data: torch.Tensor | None, layer_node: Any) -> None:
        """Count the units alive in ReLU output ``result`` and keep its layer's ``data`` input."""
        self.alive = _alive_units(result, unit_dim, self.units)
        if data is not None:
            self.first_input, self.input_at = weakref.ref(data), (data.data_ptr(), tuple(data.shape))
            if data.dim() == 2 and type(layer_node).__name__ in _LINEAR_NODES:
                self.sample = data

    def retook(
        self,
        result: torch.Tensor,
        unit_dim: int,
        data: torch.Tensor | None,
        layer_node: Any,
        line: int | None,
    ) -> None:
        """Note a later call made before the run's first optimizer step: the units alive for
        some sample of any such call count, and other data replaces the first (which was no
        batch trained on: a forward on zeros to check shapes, a dummy input)."""
        alive = _alive_units(result, unit_dim, self.units)
        if alive is not None:
            self.alive = max(alive, self.alive or 0)
        if data is not None and (data.data_ptr(), tuple(data.shape)) != self.input_at:
            before, self.line = self.alive, line
            self.took(result, unit_dim, data, layer_node)
            self.alive = before

    def fed(self, data: torch.Tensor | None) -> None:
        """Note the data input of a later call: the same tensor each step, or batches."""
        if data is not None and self.first_input is not None and not self.batches:
            first = self.first_input()
            self.batches = first is None or (data.data_ptr(), tuple(data.shape)) != self.input_at


class DeadRelus:
    """The layers below the ReLUs of one run, and their gradients at each step.

    ``name_of(p)`` is the parameter's qualified name (``fc1.bias``) or None; ``steps_taken()``
    the optimizer steps of the run so far.
    """

    def __init__(self, name_of: Callable[[torch.Tensor], str | None], steps_taken: Callable[[], int]) -> None:
        self._name_of = name_of
        self._steps_taken = steps_taken
        self._layers: dict[_Key, _Layer] = {}
        self._stepped = False  # whether any optimizer has stepped yet
        # id(opt) -> (the optimizer, how many parameters it stepped, each one's place by id)
        self._held: dict[int, tuple[weakref.ref[torch.optim.Optimizer], int, dict[int, int]]] = {}

    def saw(self, result: Any, line: int | None) -> None:
        """Look at the output ``result`` of a ReLU run from snippet ``line``."""
        node = getattr(result, "grad_fn", None) if isinstance(result, torch.Tensor) else None
        if node is None or type(node).__name__ != "ReluBackward0":
            return
        below = _layer_below(node)
        if below is None:
            return
        params, unit_dim, layer_node, as_written = below
        key = tuple(map(id, params))
        known = self._known(key, params)
        data = _data_input(layer_node)
        if known is not None:
            if not self._stepped and result.numel():
                known.retook(result, unit_dim, data, layer_node, line)
            else:
                known.fed(data)
            return
        units = params[0].shape[1 if as_written else 0] if params[0].dim() else 0
        if units < 2 or not all(p.requires_grad for p in params) or result.numel() == 0:
            return  # (an empty batch, an expert no token was routed to, shows no unit at all)
        layer = self._layers[key] = _Layer(params, line, units, self._steps_taken())
        layer.as_written = as_written
        layer.took(result, unit_dim, data, layer_node)
        layer.below = self._linear_below(layer_node)

    def stepped(
        self,
        opt: torch.optim.Optimizer,
        params: list[torch.Tensor],
        step: int,
        lr: Any,
        loss: float | None,
        stats: list[dict[str, Any]] | None = None,
    ) -> None:
        """Read, after ``opt``'s step ``step`` over ``params`` (with ``lr`` and the ``loss``
        its gradients came from), whether each layer it steps got any gradient; ``stats``:
        the step's per-parameter norms (training.py's entries, in the order of ``params``).

        A gradient whose norm the step measured above 0 (or NaN) has a nonzero element; only
        one measured at 0, or not measured, is counted element by element (a float32 sum of
        squares can underflow to 0). Counting costs a kernel call each step, ~18 us within a
        step of an MLP's training loop (its code cold in the caches), 1 us in a loop of its own.
        """
        self._stepped = True
        if not self._layers:
            return
        held = self._held.get(id(opt))
        if held is None or held[0]() is not opt or held[1] != len(params):
            held = self._held[id(opt)] = (
                weakref.ref(opt),
                len(params),
                {id(p): i for i, p in enumerate(params)},
            )
        norms = stats if stats is not None and len(stats) == len(params) else None
        for layer in self._layers.values():
            probe = layer.probe()
            if probe is None or (at := held[2].get(id(probe))) is None:
                continue
            layer.steps = step
            grad = probe.grad
            norm = norms[at]["grad_norm"] if norms is not None else None
            if (
                grad is None
                or grad.is_sparse
                or (norm is not None and norm != 0.0)
                or torch.count_nonzero(grad).item()
            ):
                layer.dead_since = None
                layer.lr_before, layer.loss_before = lr, loss
            elif layer.dead_since is None:
                layer.dead_since = step

    def reports(self, loss: float | None) -> list[Said]:
        """relu-units-dead for the topmost layer of each stack whose units are all dead, its
        gradient exactly 0 at its last steps (``loss``: the run's last loss)."""
        dead = {key: chain for key, chain in ((key, self._dead_chain(key)) for key in self._layers) if chain}
        below_others = {id(layer) for chain in dead.values() for layer in chain[1:]}
        said = []
        for chain in dead.values():
            layer = chain[0]
            if id(layer) in below_others:
                continue
            params = [p for p in (r() for r in layer.params) if p is not None]
            names = [self._name_of(p) or f"a parameter of shape {tuple(p.shape)}" for p in params]
            facts = DeadLayer(
                layer.line,
                layer.units,
                layer.dead_since or 1,
                layer.steps,
                chain[-1].batches is not False,
                layer.alive,
                layer.seen_at,
                layer.lr_before,
                layer.loss_before,
                layer.first_input is not None,
            )
            said.append(dead_layer_said(facts, params, names, loss))
        return said

    def _known(self, key: _Key, params: list[torch.Tensor]) -> _Layer | None:
        known = self._layers.get(key)
        if known is not None and all(r() is p for r, p in zip(known.params, params, strict=True)):
            return known
        return None

    def _linear_below(self, layer_node: Any) -> _Key | None:
        """The known Linear whose ReLU's output is the input of Linear node ``layer_node``."""
        saved = _SAVED_INPUT.get(type(layer_node).__name__)
        if saved is None or type(layer_node).__name__ not in _LINEAR_NODES:
            return None
        relu = layer_node.next_functions[saved[1]][0]
        if type(relu).__name__ != "ReluBackward0":
            return None
        below = _layer_below(relu)
        if below is None or type(below[2]).__name__ not in _LINEAR_NODES:
            return None
        known = self._known(tuple(map(id, below[0])), below[0])
        return tuple(map(id, below[0])) if known is not None else None

    def _dead_chain(self, key: _Key) -> list[_Layer] | None:
        """The layer of ``key`` and the Linear layers below it down to the data, top first,
        when its gradient was 0 to the end and its units are seen 0 for every sample; else None."""
        layer = self._layers[key]
        if layer.dead_since is None or layer.steps - layer.dead_since + 1 < _FEWEST_STEPS:
            return None
        params = [r() for r in layer.params]
        if any(p is None or p.grad is None or p.grad.is_sparse or bool(p.grad.any()) for p in params):
            return None
        chain = [layer]
        while chain[-1].below is not None and len(chain) <= len(self._layers):
            next_below = self._layers.get(chain[-1].below)
            if next_below is None:
                break
            chain.append(next_below)
        if chain[-1].batches is not False and layer.steps - layer.dead_since + 1 < _FEWEST_BATCH_STEPS:
            return None
        if layer.alive == 0 and layer.dead_since == 1:
            return chain  # every unit 0 for every sample when first seen, and no gradient since
        return chain if _dead_through(chain) else None


def _dead_through(chain: Sequence[_Layer]) -> bool:
    """Whether the bottom layer's data, run through the Linear layers and ReLUs of ``chain``
    (top first) with the values their parameters have now, leaves every unit of the top 0."""
    h = chain[-1].sample
    if h is None or h.dim() != 2 or h.shape[0] == 0:
        return False
    with torch.no_grad():
        for layer in reversed(chain):
            params = [r() for r in layer.params]
            if any(p is None for p in params) or params[0] is None or params[0].dim() != 2:
                return False
            weight = params[0].T if layer.as_written else params[0]  # as a Linear holds it: (out, in)
            if h.shape[1] != weight.shape[1]:
                return False
            bias = params[1] if len(params) > 1 else None
            h = torch.nn.functional.relu(torch.nn.functional.linear(h.to(weight.dtype), weight, bias))
        return not bool(h.any())


def _layer_below(node: Any) -> tuple[list[torch.Tensor], int, Any, bool] | None:
    """The parameters of the layer whose output ReLU node ``node`` takes (weight first), the
    dim of that output its units lie on, the layer's node, and whether its weight is used as
    written (``x @ W``, ``W`` of shape (in, out)) rather than as a Linear's (out, in); None when
    the ReLU's input is not a layer's."""
    below = _input_node(node)
    name = type(below).__name__
    if name in _RESHAPES:
        below = _input_node(below)
        name = type(below).__name__
        if name not in _LINEAR_NODES:
            return None
    if name in _LINEAR_NODES:
        unit_dim = -1
    elif name in _CHANNEL_NODES:
        unit_dim = 1
    else:
        return None
    found: list[torch.Tensor] = []
    as_written = False
    for child, _ in below.next_functions:
        transposed = child is not None and type(child).__name__ == "TBackward0"
        if transposed:  # a Linear's weight.T
            child = child.next_functions[0][0]
        variable = getattr(child, "variable", None)
        if isinstance(variable, torch.nn.Parameter):
            if name in _LINEAR_NODES and variable.dim() == 2 and not transposed:
                as_written = True  # x @ W written out: W is (in, out), not a Linear's (out, in)
            found.append(variable)
    found.sort(key=lambda p: -p.dim())  # the weight before the bias
    return (found, unit_dim, below, as_written) if found else None


def _input_node(node: Any) -> Any:
    """The node that made the first input of autograd node ``node`` (None for a leaf)."""
    return node.next_functions[0][0] if node.next_functions else None


def _data_input(layer_node: Any) -> torch.Tensor | None:
    """The input of a Linear's or a convolution's node ``layer_node`` when it carries no graph
    (data, not a layer's output), read while its forward's saved tensors are held; else None."""
    saved = _SAVED_INPUT.get(type(layer_node).__name__)
    if saved is None:
        return None
    try:
        data = getattr(layer_node, saved[0])
    except (AttributeError, RuntimeError):  # freed by a backward() already
        return None
    return data if isinstance(data, torch.Tensor) and not data.requires_grad else None


def _alive_units(result: torch.Tensor, unit_dim: int, units: int) -> int | None:
    """How many of the ``units`` on ``unit_dim`` of ReLU output ``result`` are above 0 for some
    sample (None when the output is not laid out so)."""
    if result.dim() < 2 or result.shape[unit_dim] != units:
        return None
    with torch.no_grad():
        positive = (result.detach() > 0).movedim(unit_dim, 0).reshape(units, -1)
        return int(positive.any(1).sum())
