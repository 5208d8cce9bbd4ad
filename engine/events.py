"""The one event contract: every event gradwalk records, as typed pydantic models.

Everything that crosses a boundary (engine -> worker -> server -> browser, a stored trace,
a static export) is a list of these events. Each model carries a literal ``type`` tag, and
the module ends with :data:`Event`, the discriminated union of them all. The frontend's
TypeScript types and the JSON Schema in ``engine/schema/`` are generated from this module
(``make schema``); ``tests/engine/test_schema.py`` fails when that copy is stale.

Conventions a consumer must know:

* ``seq`` numbers events of one run from 0 with no gaps; a client that saw ``seq = n``
  resumes from ``n + 1``.
* Tensors and graph nodes are named by small run-local integers (``TensorId``,
  ``NodeId``), never by Python ``id()``.
* Lines are 1-based line numbers in the snippet's source.
* Non-finite floats travel as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``.

This module imports pydantic only (no torch), so the server can validate frames cheaply.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "SCHEMA_VERSION",
    "BackwardCounted",
    "BackwardFinished",
    "BackwardStarted",
    "Counts",
    "Edge",
    "ErrorRaised",
    "Event",
    "FullValue",
    "GradAccumulated",
    "LimitReached",
    "Limits",
    "MemoryChanged",
    "MetricLogged",
    "NodeCreated",
    "NodeExecuted",
    "OpRecorded",
    "OptimizerStep",
    "OutputWritten",
    "ParamStat",
    "PitfallFound",
    "RunFinished",
    "RunStarted",
    "RunStatus",
    "SavedValue",
    "SummaryValue",
    "TensorFinal",
    "TensorIntroduced",
    "TensorNamed",
    "Trace",
    "Value",
    "event_adapter",
    "trace_adapter",
]

SCHEMA_VERSION = 1

TensorId = int
NodeId = int
GradMode = Literal["grad", "no_grad", "inference_mode"]
RunStatus = Literal["ok", "error", "timeout", "cancelled", "crashed", "limit"]
Number = float | int | bool


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")


# --- values ---------------------------------------------------------------------------


class FullValue(_Model):
    """A small tensor's values, whole: ``flat`` is row-major, reshape with ``shape``."""

    kind: Literal["full"] = "full"
    shape: list[int]
    flat: list[Number]


class SummaryValue(_Model):
    """A large tensor described by statistics; its elements never enter a trace.

    ``hist`` counts elements in ``len(hist)`` equal bins over ``[min, max]``, taken over an
    evenly strided sample of at most 256 elements (read it as a shape, not exact counts).
    Statistics are exact, over finite elements; ``nan`` and ``inf`` count the others.
    """

    kind: Literal["summary"] = "summary"
    shape: list[int]
    numel: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    norm: float | None
    nan: int = 0
    inf: int = 0
    hist: list[int] = Field(default_factory=list)
    of: Literal["value", "abs"] = Field(
        default="value",
        description="what the statistics are of: the elements, or (abs) each element's magnitude |z|, "
        "for a complex tensor, small ones too",
    )


Value = Annotated[FullValue | SummaryValue, Field(discriminator="kind")]


class Limits(_Model):
    """Caps on one run. The engine enforces the recording caps; the runner the rest.

    Past a recording cap the snippet keeps running, a ``limit`` event says what was
    dropped, and the counts in ``run_finished`` stay exact.
    """

    max_ops: int = Field(default=50_000, ge=0, description="ops recorded on the tape")
    max_nodes: int = Field(default=50_000, ge=0, description="grad_fn nodes recorded")
    max_events: int = Field(default=400_000, ge=100, description="events in one trace")
    max_value_elements: int = Field(
        default=64, ge=0, le=4096, description="tensors up to this size travel whole"
    )
    max_output_bytes: int = Field(default=256_000, ge=0, description="stdout+stderr kept")
    detail_steps: int = Field(
        default=3, ge=0, description="optimizer steps recorded in full detail at the start"
    )
    detail_every: int = Field(default=0, ge=0, description="also record every k-th step in full (0: never)")
    detail_calls: int = Field(
        default=10,
        ge=0,
        description="backward() calls recorded in full while no optimizer has stepped (a loop that steps "
        "by hand); each later one sends its loss and memory only (detail_every applies to them too)",
    )
    timeout_s: float = Field(
        default=10.0, gt=0, le=600, allow_inf_nan=False, description="wall-clock limit (runner)"
    )
    memory_mb: int = Field(default=1536, ge=256, le=65536, description="address-space limit (runner)")


# --- events ---------------------------------------------------------------------------


class _Event(_Model):
    seq: int = Field(default=0, ge=0, description="position in the run's stream, from 0, no gaps")
    t: float = Field(default=0.0, description="seconds since the run started")


class RunStarted(_Event):
    """A run began: what is being run and where."""

    type: Literal["run_started"] = "run_started"
    source: str
    filename: str = "snippet.py"
    device: str = "cpu"
    torch_version: str = ""
    python_version: str = ""
    cuda_available: bool = False
    limits: Limits = Field(default_factory=Limits)
    schema_version: int = SCHEMA_VERSION


class Counts(_Model):
    """Exact totals of a run, including what a cap kept out of the trace."""

    ops: int = 0
    nodes: int = 0
    tensors: int = 0
    backward_calls: int = 0
    optimizer_steps: int = 0
    events: int = 0
    dropped_ops: int = 0
    dropped_nodes: int = 0
    dropped_events: int = 0
    unrecorded: int = Field(
        default=0,
        ge=0,
        description="observations gradwalk gave up on (a tensor it could not read, a detector or "
        "metric that failed); the run itself was not affected",
    )


class RunFinished(_Event):
    """The run ended; always the last event of a trace."""

    type: Literal["run_finished"] = "run_finished"
    status: RunStatus
    message: str = ""
    duration_s: float = 0.0
    counts: Counts = Field(default_factory=Counts)


class TensorIntroduced(_Event):
    """A tensor appeared for the first time (as an op's input or output, or a backward root)."""

    type: Literal["tensor"] = "tensor"
    id: TensorId
    name: str | None = Field(default=None, description="snippet variable or qualified parameter name")
    param_name: str | None = Field(default=None, description="name inside its module, e.g. fc1.weight")
    shape: list[int]
    dtype: str
    device: str
    requires_grad: bool
    is_leaf: bool
    is_param: bool = False
    grad_fn: NodeId | None = None
    op: int | None = Field(default=None, description="index of the op that produced it")
    line: int | None = None
    value: Value | None = None
    version_of: TensorId | None = Field(
        default=None,
        description="the id this tensor is a new version of: the same object, changed in place "
        "(by an op, by backward adding into a .grad, or by code not recorded), or the object "
        "that took its place in a module (a buffer a conversion replaced)",
    )


class TensorNamed(_Event):
    """A name became known for a tensor (the variable it was bound to), or, with ``name``
    None, a name given before no longer holds (a function's local that the module level
    later bound to another tensor: NOTE [A local name that hides another tensor])."""

    type: Literal["tensor_named"] = "tensor_named"
    id: TensorId
    name: str | None
    param_name: str | None = None


class OpConstant(_Model):
    """A Python number passed to an op: ``4`` in ``4 * x``, ``0.1`` in ``h + 0.1``."""

    position: int = Field(description="index among the op's positional arguments (self is 0 for methods)")
    value: Number


class OpKeyword(_Model):
    """A Python number passed to an op by keyword: ``dim=1`` in ``x.sum(dim=1)``."""

    name: str
    value: Number


class OpArgument(_Model):
    """An argument that is neither a tensor nor a Python number, as text a call could write, for
    reading only: ``torch.float64`` in ``x.to(torch.float64)``, ``'ij,jk->ik'`` in
    ``torch.einsum``, ``(0, 1)`` in ``x.sum(dim=(0, 1))``, ``'sum'`` in ``reduction='sum'``,
    ``1:3`` in ``x[1:3]`` (a slice reads as in a subscript). A subscript's key that holds
    tensors writes each as ``⬚``: they are the op's inputs after the subscripted tensor, in
    order (``(range(8), ⬚)`` in ``probs[range(8), Y]``; a long key ending ``…`` writes fewer)."""

    position: int | None = Field(
        default=None, description="index among the positional arguments; None for a keyword"
    )
    name: str | None = Field(
        default=None, description="the keyword it was passed by; None for a positional one"
    )
    text: str
    after: int | None = Field(
        default=None,
        description="for a keyword: how many of the op's keywords that were numbers (OpRecorded.keywords) "
        "came before it in the call; None in traces older than this field (read it after them all)",
    )


class OpRecorded(_Event):
    """One forward operation at the Python API level, in execution order."""

    type: Literal["op"] = "op"
    index: int
    name: str = Field(description="short name, e.g. mul, linear, cross_entropy")
    api: str = Field(description="what was called, e.g. Tensor.__rmul__, torch.tanh, F.linear")
    inputs: list[TensorId]
    outputs: list[TensorId]
    line: int | None = None
    top_line: int | None = Field(default=None, description="the module-level line that led here")
    module_path: str | None = None
    grad_mode: GradMode = "grad"
    inplace: bool = Field(
        default=False,
        description="the op wrote into an input (add_, F.relu(x, inplace=True)); one that hands an input back "
        "unchanged (x.float() of a float tensor) is not in-place, and its output keeps the input's id",
    )
    nodes: list[NodeId] = Field(default_factory=list, description="grad_fn nodes this op created")
    constants: list[OpConstant] = Field(
        default_factory=list,
        description="Python numbers among the positional arguments; the other positions hold the inputs, in order, "
        "or an argument of `arguments`",
    )
    keywords: list[OpKeyword] = Field(
        default_factory=list,
        description="Python numbers passed by keyword (dim=1, keepdim=True, p=0.5), in the order given",
    )
    arguments: list[OpArgument] = Field(
        default_factory=list,
        description="the other arguments with a short text (a dtype, a string, a tuple of numbers), positional "
        "ones first; absent when there are none. Positions neither these nor constants hold are the inputs'",
    )
    input_positions: list[int | str] | None = Field(
        default=None,
        description="for each input, where the call passed it: the index of the positional argument that held it "
        "(the tensors of one list share one) or the keyword's name; only where an argument that is not a tensor "
        "comes before a tensor (x.gather(1, idx)) or a tensor was passed by keyword (F.layer_norm(x, (8,), "
        "weight=w)); absent otherwise: the inputs come first, in order",
    )


class Edge(_Model):
    """A ``next_functions`` entry: gradient for this node's input ``input_nr`` flows to ``node``."""

    node: NodeId | None
    input_nr: int


class SavedValue(_Model):
    """Something a node saved for backward."""

    name: str
    tensor: TensorId | None = None
    shape: list[int] | None = None
    dtype: str | None = None
    bytes: int = 0
    scalar: str | None = Field(default=None, description="repr of a non-tensor saved value")


class NodeCreated(_Event):
    """A ``grad_fn`` node entered the graph."""

    type: Literal["node"] = "node"
    id: NodeId
    name: str = Field(description="type(node).__name__, e.g. MulBackward0, AccumulateGrad")
    op: int | None = None
    line: int | None = None
    module_path: str | None = None
    edges: list[Edge] = Field(default_factory=list)
    tensor: TensorId | None = Field(default=None, description="output tensor, or the leaf of AccumulateGrad")
    saved: list[SavedValue] = Field(default_factory=list)
    saved_bytes: int = 0
    grad_shapes: list[list[int]] | None = Field(
        default=None,
        description="shape of each gradient the node receives (an edge's input_nr picks one), "
        "when ``tensor`` does not tell it: the node's op made several outputs, or a tensor "
        "made inside the op and never recorded (the weight.t() of F.linear)",
    )


class MemoryChanged(_Event):
    """Bytes held by tensors saved for backward changed (distinct storages counted once)."""

    type: Literal["memory"] = "memory"
    saved_bytes: int
    delta: int
    cuda_allocated: int | None = None
    line: int | None = None


class BackwardStarted(_Event):
    """A backward call began."""

    type: Literal["backward_started"] = "backward_started"
    index: int
    api: Literal["Tensor.backward", "autograd.backward", "autograd.grad"]
    roots: list[TensorId]
    seed: list[Value | None]
    retain_graph: bool
    create_graph: bool = False
    line: int | None = None


class NodeExecuted(_Event):
    """The autograd engine ran one node, in the engine's real order.

    ``grad_in`` are the gradients arriving for the node's outputs; ``grad_out`` the
    gradients it sends along its edges (aligned with the node's ``edges``).
    """

    type: Literal["node_executed"] = "node_executed"
    backward: int
    step: int
    node: NodeId
    grad_in: list[Value | None]
    grad_out: list[Value | None]


class GradAccumulated(_Event):
    """A gradient was added into a leaf's ``.grad``: ``before + added = after``, unless a
    ``register_post_accumulate_grad_hook`` changed ``.grad`` (``after`` is what it left)."""

    type: Literal["grad_accumulated"] = "grad_accumulated"
    backward: int
    step: int
    tensor: TensorId
    node: NodeId
    before: Value | None
    added: Value | None
    after: Value | None


class BackwardFinished(_Event):
    """A backward call returned (or raised)."""

    type: Literal["backward_finished"] = "backward_finished"
    index: int
    nodes_executed: int
    graph_freed: bool
    ok: bool = True


class TensorFinal(_Event):
    """A named leaf or parameter, or a tensor that called ``retain_grad()``, as the run left
    it: its value and its ``.grad``."""

    type: Literal["tensor_final"] = "tensor_final"
    id: TensorId
    name: str
    value: Value | None
    grad: Value | None


class ParamStat(_Model):
    tensor: TensorId
    name: str
    grad_norm: float | None
    update_norm: float
    param_norm: float


class OptimizerStep(_Event):
    """An optimizer finished ``step()``, with its training metrics."""

    type: Literal["optimizer_step"] = "optimizer_step"
    optimizer: str = Field(description="the optimizer's label, e.g. opt (SGD)")
    step: int = Field(description="1-based step of this optimizer")
    loss: float | None = Field(default=None, description="root of the last backward, when scalar")
    lr: list[float] = Field(default_factory=list, description="per param group")
    grad_norm: float | None = None
    update_norm: float = 0.0
    param_norm: float = 0.0
    params: list[ParamStat] = Field(default_factory=list)
    graph_bytes: int = Field(default=0, description="bytes held by tensors saved for backward after the step")
    graph_peak_bytes: int = Field(
        default=0,
        description="the most bytes saved tensors held at any moment since the previous optimizer step "
        "(or the run's start): with graph_bytes, each step's rise and fall",
    )
    cuda_allocated: int | None = None
    wall_s: float = 0.0
    detail: bool = Field(default=False, description="this step's tape, graph and backward were recorded")
    line: int | None = None


class BackwardCounted(_Event):
    """A backward() call of a loop that steps by hand, recorded metrics-only: no optimizer has
    stepped and the first ``Limits.detail_calls`` calls were recorded in full (NOTE [Loops that
    step by hand] in engine/hand_loops.py). No tape, graph or walk: its loss and memory."""

    type: Literal["backward_counted"] = "backward_counted"
    index: int = Field(description="0-based among all backward calls, as backward_started's")
    loss: float | None = Field(default=None, description="the root's value, when it has one element")
    graph_bytes: int = Field(default=0, description="bytes held by tensors saved for backward after the call")
    graph_peak_bytes: int = Field(
        default=0, description="the most bytes saved tensors held at any moment since the previous such event"
    )
    wall_s: float = Field(default=0.0, description="seconds since the previous backward call returned")
    line: int | None = None


class MetricLogged(_Event):
    """A metric the snippet logged with ``gradwalk.log(name, value)``."""

    type: Literal["metric"] = "metric"
    name: str
    value: float
    step: int | None = None
    line: int | None = None


class PitfallFound(_Event):
    """A silent mistake, explained."""

    type: Literal["pitfall"] = "pitfall"
    kind: str
    line: int | None = None
    title: str
    message: str
    fix: str
    tensors: list[TensorId] = Field(default_factory=list)
    nodes: list[NodeId] = Field(default_factory=list)
    # set when it was found in an iteration recorded metrics-only, as ErrorRaised's: the
    # optimizer steps done before it (``Limits.detail_every = metrics_only_after + 1`` records
    # that iteration in full, where a node-level detector can name the node)
    metrics_only_after: int | None = None


class HookRegistered(_Event):
    """The snippet hooked a tensor's gradient (``y.register_hook(fn)``): in backward, ``fn``
    sees the gradient that reaches the tensor and may return another in its place."""

    type: Literal["hook_registered"] = "hook_registered"
    tensor: TensorId
    line: int | None = None


class OutputWritten(_Event):
    """Text the snippet wrote to stdout or stderr."""

    type: Literal["output"] = "output"
    stream: Literal["stdout", "stderr"]
    text: str


class ErrorRaised(_Event):
    """An exception escaped the snippet."""

    type: Literal["error"] = "error"
    exc_type: str
    message: str
    line: int | None = None
    traceback: str = ""
    hint: str | None = None
    # the graph node the error is about, where known: the node whose saved tensor was
    # changed in place, the node whose gradient anomaly mode found NaN
    node: int | None = None
    # set when the error came while only metrics were being recorded: the optimizer steps
    # done by then (the iteration that failed has no tape, graph or walk in the trace; run
    # again with ``Limits.detail_every = metrics_only_after + 1`` to record it in full)
    metrics_only_after: int | None = None
    # the same for a loop that steps by hand (no optimizer): the backward() calls done by then
    # (``Limits.detail_every = metrics_only_calls + 1`` records the failing iteration in full)
    metrics_only_calls: int | None = None


class LimitReached(_Event):
    """A recording cap was reached; what follows of that kind is counted, not recorded."""

    type: Literal["limit"] = "limit"
    what: Literal["ops", "nodes", "events", "output"]
    cap: int
    message: str


Event = Annotated[
    RunStarted
    | RunFinished
    | TensorIntroduced
    | TensorNamed
    | OpRecorded
    | NodeCreated
    | MemoryChanged
    | BackwardStarted
    | NodeExecuted
    | GradAccumulated
    | BackwardFinished
    | TensorFinal
    | OptimizerStep
    | BackwardCounted
    | MetricLogged
    | PitfallFound
    | HookRegistered
    | OutputWritten
    | ErrorRaised
    | LimitReached,
    Field(discriminator="type"),
]


class Trace(_Model):
    """A run's source and its ordered events: what is stored, streamed and exported."""

    format: Literal["gradwalk-trace"] = "gradwalk-trace"
    version: int = SCHEMA_VERSION
    source: str
    events: list[Event]


event_adapter: TypeAdapter[Event] = TypeAdapter(Event)
trace_adapter: TypeAdapter[Trace] = TypeAdapter(Trace)
